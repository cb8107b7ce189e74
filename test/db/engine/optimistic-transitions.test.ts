// The optimistic transitions: a complete read without locks and written by one guarded
// statement (engine/tasks.ts completeOptimistically), a start written in one statement
// against the definition this node last used (engine/instances.ts startOptimistically).
// These tests take the window between the read and the write apart: whatever moves in
// it, the guarded write raises BT409 and leaves nothing behind, and the call then takes
// the transactional path.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emptyEffects } from '../../../runtime/model/effects.ts';
import { readTaskTransition } from '../../../runtime/store/instances.ts';
import { TRANSITION_GUARD_LOST, writeTransitions } from '../../../runtime/store/transition-writer.ts';
import { parallelBpmn, singleTaskBpmn } from '../../support/bpmn.ts';
import { complete, deploy, fetchOne, historyKinds, start, waitForStatus } from '../../support/flows.ts';
import { startTestServer, type TestServer } from '../../support/server.ts';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
  await deploy(t.api, singleTaskBpmn('opt-single', 'opt-single'));
  await deploy(t.api, parallelBpmn('opt-join', 'opt-a', 'opt-b'));
});
afterAll(async () => {
  await t.close();
});

async function counts(instanceId: string): Promise<{ events: number; revision: number; taskState: string }> {
  const { rows } = await t.db.pool.query(
    `select (select count(*)::int from events where instance_id = $1) as events,
            (select revision from instances where id = $1) as revision,
            (select string_agg(state, ',' order by step_id) from external_tasks where instance_id = $1) as "taskState"`,
    [instanceId],
  );
  return rows[0];
}

/** A guarded write of a made-up completion from what `read` saw. */
async function writeFrom(
  read: NonNullable<Awaited<ReturnType<typeof readTaskTransition>>>,
  holder: { workerId: string; lockToken: string },
) {
  const fx = emptyEffects();
  fx.events.push({ kind: 'task:completed', stepId: read.task.step_id, taskId: read.task.id, data: {} });
  return writeTransitions(t.db.pool, [
    {
      instance: read.instance,
      effects: fx,
      status: 'running',
      variables: read.instance.variables,
      guard: { revision: read.instance.revision, completes: { taskId: read.task.id, ...holder } },
    },
  ]);
}

describe('optimistic complete', () => {
  it('given an instance that moved between the read and the guarded write, then the write raises BT409 and writes nothing', async () => {
    const id = await start(t.api, 'opt-join');
    const a = await fetchOne(t.api, 'w', 'opt-a');
    const b = await fetchOne(t.api, 'w', 'opt-b');
    const stale = (await readTaskTransition(t.db.pool, a.id))!;
    expect(stale.task).toMatchObject({ state: 'locked', worker_id: 'w', lock_token: a.lockToken });
    // Branch b completes in the window: the instance's revision moves on.
    expect((await complete(t.api, b, 'w')).status).toBe(204);
    const before = await counts(id);
    await expect(writeFrom(stale, { workerId: 'w', lockToken: a.lockToken })).rejects.toMatchObject({
      code: TRANSITION_GUARD_LOST,
    });
    expect(await counts(id)).toEqual(before);
    // The real complete of a, read afresh, still goes through and the join fires once.
    expect((await complete(t.api, a, 'w')).status).toBe(204);
    await waitForStatus(t.api, id, 'completed');
    const kinds = await historyKinds(t.api, id);
    expect(kinds.filter((k) => k === 'task:completed')).toHaveLength(2);
    expect(kinds.filter((k) => k === 'instance:completed')).toHaveLength(1);
  });

  it("given a lease that expired and went to another worker in the window, then the first holder's write raises BT409 and the heir keeps the task", async () => {
    const id = await start(t.api, 'opt-single');
    const first = await fetchOne(t.api, 'w1', 'opt-single', 60_000);
    const stale = (await readTaskTransition(t.db.pool, first.id))!;
    // The lease runs out and another worker locks the task: a new token, same instance revision.
    await t.db.pool.query(`update external_tasks set lock_expires_at = now() - interval '1 second' where id = $1`, [first.id]);
    await t.db.pool.query(
      `update external_tasks set state = 'ready', worker_id = null, lock_token = null, lock_expires_at = null where id = $1`,
      [first.id],
    );
    const heir = await fetchOne(t.api, 'w2', 'opt-single');
    const before = await counts(id);
    expect(before.taskState).toBe('locked');
    await expect(writeFrom(stale, { workerId: 'w1', lockToken: first.lockToken })).rejects.toMatchObject({
      code: TRANSITION_GUARD_LOST,
    });
    expect(await counts(id)).toEqual(before);
    // Through the API the late holder gets 409 and the heir completes.
    expect((await complete(t.api, first, 'w1')).status).toBe(409);
    expect((await complete(t.api, heir, 'w2')).status).toBe(204);
    await waitForStatus(t.api, id, 'completed');
  });

  it('given a complete repeated by its holder, then the repeat is a no-op 204 and history holds one task:completed', async () => {
    const id = await start(t.api, 'opt-single');
    const task = await fetchOne(t.api, 'w', 'opt-single');
    const [r1, r2] = await Promise.all([complete(t.api, task, 'w'), complete(t.api, task, 'w')]);
    expect([r1.status, r2.status]).toEqual([204, 204]);
    expect((await complete(t.api, task, 'w')).status).toBe(204);
    await waitForStatus(t.api, id, 'completed');
    expect((await historyKinds(t.api, id)).filter((k) => k === 'task:completed')).toHaveLength(1);
  });

  it('given a newer version deployed after this node started the key, then the next start uses the newer version, and an explicit version still gets its own', async () => {
    const v1 = await deploy(t.api, singleTaskBpmn('opt-versions', 'opt-v1'));
    const first = await start(t.api, 'opt-versions');
    // Version 2 arrives behind this node's back (as from another node): its start cache is not told.
    await t.db.pool.query(
      `insert into definitions (key, version, fingerprint, xml_sha256, xml, plan, deployment_id, resource_name)
                           select key, 2, fingerprint || '-2', xml_sha256 || '-2', xml, plan, deployment_id, resource_name
                             from definitions where id = $1`,
      [v1.id],
    );
    const second = await start(t.api, 'opt-versions');
    const pinned = await t.api.post('/api/instances', { definitionKey: 'opt-versions', version: 1 });
    expect(pinned.status).toBe(201);
    const { rows } = await t.db.pool.query('select id, definition_version from instances where id = any($1)', [
      [first, second, pinned.body.id],
    ]);
    const version = (id: string) => rows.find((r) => r.id === id)?.definition_version;
    expect([version(first), version(second), version(pinned.body.id)]).toEqual([1, 2, 1]);
  });

  it('given starts with a business key already taken, then each answers the existing instance and nothing else is written', async () => {
    const id = await start(t.api, 'opt-single', { businessKey: 'opt-bk' });
    const before = await counts(id);
    for (let i = 0; i < 3; i++) {
      const again = await t.api.post('/api/instances', { definitionKey: 'opt-single', businessKey: 'opt-bk' });
      expect([again.status, again.body.id]).toEqual([200, id]);
    }
    expect(await counts(id)).toEqual(before);
    const { rows } = await t.db.pool.query(`select count(*)::int as n from instances where business_key = 'opt-bk'`);
    expect(rows[0].n).toBe(1);
  });
});
