// Migrating running instances to another version through the HTTP API against a real PostgreSQL:
// an open task moves with its worker's lock, a step added before the instance's position is
// skipped and one added after it runs, a renamed element moves by an explicit mapping with its
// new topic, a timer keeps its due time, and every refusal names the element and changes nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  buildBpmn,
  inlineDefinitions,
  inlineFlow as flow,
  inlineTask as task,
  type FlowSpec,
  type NodeSpec,
} from '../../support/bpmn.ts';
import { complete, deploy, fetchOne, fetchTasks, historyKinds, instanceOf, start, waitForStatus } from '../../support/flows.ts';
import { startTestServer, waitFor, type TestServer } from '../../support/server.ts';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t?.close();
});

/** start -> each of `tasks` in turn -> end, with `extra` elements beside them */
function sequence(key: string, tasks: string[], extra: string[] = []): string {
  const ids = ['start', ...tasks, 'end'];
  return inlineDefinitions(key, [
    '<bpmn:startEvent id="start" />',
    ...tasks.map((id) => task(id, key)),
    '<bpmn:endEvent id="end" />',
    ...ids.slice(1).map((id, i) => flow(`f_${ids[i]}_${id}`, ids[i]!, id)),
    ...extra,
  ]);
}

const migrate = (id: string, body: Record<string, unknown>) => t.api.post(`/api/instances/${id}/migrate`, body);

function statusOf(detail: any, stepId: string): string | undefined {
  return detail.steps.find((s: { stepId: string }) => s.stepId === stepId)?.status;
}

describe('instance migration', () => {
  it('given a held task and a new version with a step after it, then the task moves with its lock, and the new step runs after it', async () => {
    await deploy(t.api, sequence('mig-after', ['a', 'b']));
    const id = await start(t.api, 'mig-after');
    const held = await fetchOne(t.api, 'w', 'mig-after-a');
    await deploy(t.api, sequence('mig-after', ['a', 'audit', 'b']));

    const dry = await migrate(id, { version: 2, dryRun: true });
    expect(dry.status, JSON.stringify(dry.body)).toBe(200);
    expect(dry.body).toMatchObject({ dryRun: true, fromVersion: 1, toVersion: 2, open: { a: 'a' } });
    expect((await instanceOf(t.api, id)).version).toBe(1);

    const moved = await migrate(id, { version: 2 });
    expect(moved.body).toMatchObject({ dryRun: false, status: 'running', open: { a: 'a' }, untaken: [] });
    expect((await instanceOf(t.api, id)).version).toBe(2);
    expect((await complete(t.api, held, 'w')).status).toBe(204);
    expect((await complete(t.api, await fetchOne(t.api, 'w', 'mig-after-audit'), 'w')).status).toBe(204);
    expect((await complete(t.api, await fetchOne(t.api, 'w', 'mig-after-b'), 'w')).status).toBe(204);
    await waitForStatus(t.api, id, 'completed');
    const events = (await t.api.get(`/api/instances/${id}/history`)).body.items as { kind: string; data: any }[];
    expect(events.find((e) => e.kind === 'instance:migrated')?.data).toMatchObject({
      fromVersion: 1,
      toVersion: 2,
      open: { a: 'a' },
    });
  });

  it('given a new version with a step before the instance position, then that step is skipped and the instance goes on where it was', async () => {
    await deploy(t.api, sequence('mig-before', ['a', 'b']));
    const id = await start(t.api, 'mig-before');
    expect((await complete(t.api, await fetchOne(t.api, 'w', 'mig-before-a'), 'w')).status).toBe(204);
    await deploy(t.api, sequence('mig-before', ['a', 'audit', 'b']));

    const moved = await migrate(id, { version: 2 });
    expect(moved.body).toMatchObject({ open: { b: 'b' }, untaken: ['f_a_audit'] });
    const detail = await instanceOf(t.api, id);
    expect(statusOf(detail, 'audit')).toBe('skipped');
    expect(statusOf(detail, 'a')).toBe('completed');
    expect((await complete(t.api, await fetchOne(t.api, 'w', 'mig-before-b'), 'w')).status).toBe(204);
    await waitForStatus(t.api, id, 'completed');
    const audit = await t.db.pool.query(`select 1 from external_tasks where instance_id = $1 and step_id = 'audit'`, [id]);
    expect(audit.rowCount).toBe(0);
    expect(await historyKinds(t.api, id)).toContain('instance:migrated');
  });

  it('given a new parallel branch beside the open one, then the migration is refused naming the join, and an exclusive branch is skipped instead', async () => {
    const split = (key: string, kind: 'parallel' | 'exclusive', branches: string[]) =>
      inlineDefinitions(key, [
        '<bpmn:startEvent id="start" />',
        `<bpmn:${kind}Gateway id="split" />`,
        ...branches.map((b) => task(b, key)),
        `<bpmn:${kind}Gateway id="join" />`,
        '<bpmn:endEvent id="end" />',
        flow('f0', 'start', 'split'),
        ...branches.flatMap((b, i) => [
          kind === 'exclusive' && i > 0
            ? `<bpmn:sequenceFlow id="in_${b}" sourceRef="split" targetRef="${b}"><bpmn:conditionExpression xsi:type="bpmn:tFormalExpression">\${false}</bpmn:conditionExpression></bpmn:sequenceFlow>`
            : flow(`in_${b}`, 'split', b),
          flow(`out_${b}`, b, 'join'),
        ]),
        flow('f9', 'join', 'end'),
      ]);
    await deploy(t.api, split('mig-branch', 'parallel', ['a']));
    const id = await start(t.api, 'mig-branch');
    await deploy(t.api, split('mig-branch', 'parallel', ['a', 'c']));
    const refused = await migrate(id, { version: 2, dryRun: true });
    expect(refused.status).toBe(400);
    expect(refused.body.details.problems).toEqual([expect.objectContaining({ elementId: 'join' })]);

    await deploy(t.api, split('mig-branch2', 'exclusive', ['a']));
    const other = await start(t.api, 'mig-branch2');
    await deploy(t.api, split('mig-branch2', 'exclusive', ['a', 'c']));
    const moved = await migrate(other, { version: 2 });
    expect(moved.status, JSON.stringify(moved.body)).toBe(200);
    expect(moved.body.untaken).toEqual(['in_c']);
    expect(statusOf(await instanceOf(t.api, other), 'c')).toBe('skipped');
    expect((await complete(t.api, await fetchOne(t.api, 'w', 'mig-branch2-a'), 'w')).status).toBe(204);
    const done = await waitForStatus(t.api, other, 'completed');
    expect(statusOf(done, 'join')).toBe('completed');
  });

  it('given an element renamed in the new version, then an explicit mapping moves the open task, which takes the new topic', async () => {
    await deploy(t.api, sequence('mig-rename', ['a', 'b']));
    const id = await start(t.api, 'mig-rename');
    expect((await complete(t.api, await fetchOne(t.api, 'w', 'mig-rename-a'), 'w')).status).toBe(204);
    await deploy(t.api, sequence('mig-rename', ['a', 'b2']));
    const before = (await instanceOf(t.api, id)).tasks[0];

    const unmapped = await migrate(id, { version: 2 });
    expect(unmapped.status).toBe(400);
    expect(unmapped.body.details.problems).toEqual([expect.objectContaining({ elementId: 'b' })]);
    expect(unmapped.body.message).toContain('map it');

    const moved = await migrate(id, { version: 2, mapping: { b: 'b2' } });
    expect(moved.status, JSON.stringify(moved.body)).toBe(200);
    expect(moved.body.open).toEqual({ b: 'b2' });
    const task2 = await fetchOne(t.api, 'w', 'mig-rename-b2');
    expect(task2.id).toBe(before.id);
    expect(task2.stepId).toBe('b2');
    expect((await complete(t.api, task2, 'w')).status).toBe(204);
    await waitForStatus(t.api, id, 'completed');
  });

  it('given an open task whose boundary timer the new version drops, then the timer ends and the task goes on without it', async () => {
    const boundary =
      '<bpmn:boundaryEvent id="late" attachedToRef="a"><bpmn:timerEventDefinition><bpmn:timeDuration>PT1H</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:boundaryEvent>';
    await deploy(
      t.api,
      sequence('mig-drop', ['a'], [boundary, '<bpmn:endEvent id="late_end" />', flow('f_late', 'late', 'late_end')]),
    );
    const id = await start(t.api, 'mig-drop');
    await deploy(t.api, sequence('mig-drop', ['a']));
    const moved = await migrate(id, { version: 2 });
    expect(moved.body).toMatchObject({ open: { a: 'a' }, endedWaits: ['late'] });
    const timers = await t.db.pool.query(`select state from timers where instance_id = $1`, [id]);
    expect(timers.rows.map((r: { state: string }) => r.state)).toEqual(['canceled']);
    expect(statusOf(await instanceOf(t.api, id), 'late')).toBeUndefined();
    expect((await complete(t.api, await fetchOne(t.api, 'w', 'mig-drop-a'), 'w')).status).toBe(204);
    await waitForStatus(t.api, id, 'completed');
  });

  it('given a waiting timer, then it moves with its due time kept', async () => {
    const timer = (key: string, after: string) =>
      inlineDefinitions(key, [
        '<bpmn:startEvent id="start" />',
        '<bpmn:intermediateCatchEvent id="wait"><bpmn:timerEventDefinition><bpmn:timeDuration>PT1H</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:intermediateCatchEvent>',
        task(after, key),
        '<bpmn:endEvent id="end" />',
        flow('f1', 'start', 'wait'),
        flow('f2', 'wait', after),
        flow('f3', after, 'end'),
      ]);
    await deploy(t.api, timer('mig-timer', 'x'));
    const id = await start(t.api, 'mig-timer');
    const rows = async () =>
      (await t.db.pool.query(`select step_id, state, due_at from timers where instance_id = $1`, [id])).rows as any[];
    const [before] = await rows();
    await deploy(t.api, timer('mig-timer', 'y'));
    expect((await migrate(id, { version: 2 })).status).toBe(200);
    const [after] = await rows();
    expect(after).toEqual({ step_id: 'wait', state: 'waiting', due_at: before.due_at });
    expect((await instanceOf(t.api, id)).version).toBe(2);
  });

  it('given targets the instance cannot move to, then each refusal names the element and nothing changes', async () => {
    const key = 'mig-refuse';
    await deploy(t.api, sequence(key, ['a']));
    const id = await start(t.api, key);
    await fetchOne(t.api, 'w', `${key}-a`);
    const snapshot = async () => {
      const d = await instanceOf(t.api, id);
      return { version: d.version, revision: d.revision, steps: d.steps, tasks: d.tasks };
    };
    const before = await snapshot();
    // v2: `a` removed; v3: `a` a user task; v4: a boundary timer added on `a`
    await deploy(t.api, sequence(key, ['z']));
    await deploy(
      t.api,
      inlineDefinitions(key, [
        '<bpmn:startEvent id="start" />',
        '<bpmn:userTask id="a" />',
        '<bpmn:endEvent id="end" />',
        flow('f1', 'start', 'a'),
        flow('f2', 'a', 'end'),
      ]),
    );
    await deploy(
      t.api,
      sequence(
        key,
        ['a'],
        [
          '<bpmn:boundaryEvent id="late" attachedToRef="a"><bpmn:timerEventDefinition><bpmn:timeDuration>PT1H</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:boundaryEvent>',
          '<bpmn:endEvent id="late_end" />',
          flow('f_late', 'late', 'late_end'),
        ],
      ),
    );
    const cases: [Record<string, unknown>, number, string][] = [
      [{ version: 2 }, 400, 'a'],
      [{ version: 3 }, 400, 'a'],
      [{ version: 4 }, 400, 'late'],
      [{ version: 2, mapping: { a: 'nowhere' } }, 400, 'nowhere'],
      [{ version: 2, mapping: { a: 'z' } }, 200, ''],
    ];
    for (const [body, status, element] of cases.slice(0, 4)) {
      const res = await migrate(id, body);
      expect(res.status, JSON.stringify(res.body)).toBe(status);
      expect(res.body.details.problems.map((p: { elementId: string }) => p.elementId)).toContain(element);
      expect(await snapshot()).toEqual(before);
    }
    expect((await migrate(id, { version: 1 })).status).toBe(409);
    expect((await migrate(id, { version: 9 })).status).toBe(404);
    expect((await migrate(id, { version: 2, extra: 1 })).status).toBe(400);
    await t.api.post(`/api/instances/${id}/suspend`, {});
    expect((await migrate(id, { version: 4 })).status).toBe(409);
    await t.api.post(`/api/instances/${id}/resume`, {});
    // Mapped onto a task of the same kind, it moves after all.
    const [body, status] = cases[4]!;
    expect((await migrate(id, body)).status).toBe(status);
    expect((await instanceOf(t.api, id)).version).toBe(2);
  });

  it('given two versions, then the migration plan maps the elements they share and says whether their plans are the same', async () => {
    await deploy(t.api, sequence('mig-plan', ['a', 'b']));
    await deploy(t.api, sequence('mig-plan', ['a', 'c']));
    const res = await t.api.get('/api/definitions/mig-plan/migration-plan?from=1&to=2');
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({
      fromVersion: 1,
      toVersion: 2,
      sameFingerprint: false,
      mapping: { start: 'start', a: 'a', end: 'end' },
      onlyInSource: ['b'],
      onlyInTarget: ['c'],
    });
    expect((await t.api.get('/api/definitions/mig-plan/migration-plan?from=1&to=7')).status).toBe(404);
    expect((await t.api.get('/api/definitions/mig-plan/migration-plan?from=1')).status).toBe(400);
  });

  it('given 200 instances waiting at a task, a timer or a message, when a batch migrates them to a version that adds a step after the wait, then every one continues on the new version', async () => {
    // start -> route by `kind` -> work (task) | pause (timer, 1 h) | paid (message keyed by `ref`) -> merge [-> audit] -> end
    const waiting = (audit: boolean) => {
      const nodes: NodeSpec[] = [
        { id: 'start', type: 'startEvent' },
        { id: 'route', type: 'exclusiveGateway' },
        { id: 'work', type: 'serviceTask', topic: 'mig-many-work' },
        { id: 'pause', type: 'catchEvent', timer: { duration: 'PT1H' } },
        { id: 'paid', type: 'catchEvent', message: 'mig-many-paid', correlationKey: 'ref' },
        { id: 'merge', type: 'exclusiveGateway' },
        ...(audit ? [{ id: 'audit', type: 'serviceTask', topic: 'mig-many-audit' } as NodeSpec] : []),
        { id: 'end', type: 'endEvent' },
      ];
      const flows: FlowSpec[] = [
        { from: 'start', to: 'route' },
        { id: 'to_work', from: 'route', to: 'work', condition: "${kind == 'task'}" },
        { id: 'to_pause', from: 'route', to: 'pause', condition: "${kind == 'timer'}" },
        { id: 'to_paid', from: 'route', to: 'paid', condition: "${kind == 'message'}" },
        { from: 'work', to: 'merge' },
        { from: 'pause', to: 'merge' },
        { from: 'paid', to: 'merge' },
        ...(audit
          ? [
              { from: 'merge', to: 'audit' },
              { from: 'audit', to: 'end' },
            ]
          : [{ from: 'merge', to: 'end' }]),
      ];
      return buildBpmn('mig-many', nodes, flows);
    };
    await deploy(t.api, waiting(false));
    const kinds = ['task', 'timer', 'message'] as const;
    const ids: string[] = [];
    for (let i = 0; i < 200; i++) ids.push(await start(t.api, 'mig-many', { variables: { kind: kinds[i % 3], ref: `r-${i}` } }));
    const dueBefore = (await t.db.pool.query(`select instance_id, due_at from timers where instance_id = any($1::uuid[])`, [ids]))
      .rows;
    await deploy(t.api, waiting(true));

    const batch = await t.api.post('/api/batches', {
      operation: 'migrate',
      filter: { definitionKey: 'mig-many', version: 1 },
      options: { version: 2 },
    });
    expect(batch.status, JSON.stringify(batch.body)).toBe(201);
    const ended = await waitFor(
      async () => {
        const b = (await t.api.get(`/api/batches/${batch.body.id}`)).body;
        return b.state === 'completed' ? b : undefined;
      },
      60_000,
      'the migrate batch',
    );
    expect(ended).toMatchObject({ total: 200, done: 200, failed: 0 });
    expect((await t.api.get('/api/instances/count?definitionKey=mig-many&version=2')).body.count).toBe(200);
    const dueAfter = (await t.db.pool.query(`select instance_id, due_at from timers where instance_id = any($1::uuid[])`, [ids]))
      .rows;
    expect(dueAfter).toHaveLength(67);
    expect(new Map(dueAfter.map((r) => [r.instance_id, r.due_at.getTime()]))).toEqual(
      new Map(dueBefore.map((r) => [r.instance_id, r.due_at.getTime()])),
    );

    // Each wait ends as it would have: the tasks complete, the messages arrive, the timers fall due.
    for (let n = 0; n < 67; n++)
      expect((await complete(t.api, await fetchOne(t.api, 'w', 'mig-many-work'), 'w')).status).toBe(204);
    for (let i = 0; i < 200; i++)
      if (kinds[i % 3] === 'message')
        expect((await t.api.post('/api/messages', { name: 'mig-many-paid', correlationKey: `r-${i}` })).body.status).toBe(
          'matched',
        );
    await t.db.pool.query(`update timers set due_at = now() where instance_id = any($1::uuid[]) and state = 'waiting'`, [ids]);
    await t.server.timers.tick();
    let audited = 0;
    await waitFor(
      async () => {
        for (const task of await fetchTasks(t.api, 'w', ['mig-many-audit'], { maxTasks: 100, waitMs: 0 })) {
          expect((await complete(t.api, task, 'w')).status).toBe(204);
          audited++;
        }
        return audited === 200 ? true : undefined;
      },
      60_000,
      'every instance to reach the new audit step',
    );
    await waitFor(
      async () =>
        (await t.api.get('/api/instances/count?definitionKey=mig-many&status=completed')).body.count === 200 ? true : undefined,
      20_000,
      'all 200 completed',
    );
    const migrated = await t.db.pool.query(
      `select count(*)::int as n from events where kind = 'instance:migrated' and instance_id = any($1::uuid[])`,
      [ids],
    );
    expect(migrated.rows[0].n).toBe(200);
  }, 120_000);
});
