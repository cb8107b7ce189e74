// Suspend and resume through the HTTP API against a real PostgreSQL: a suspended instance's task is
// not handed out and its holder loses the lock, a timer due meanwhile fires on resume, a message
// for it waits in the inbox, a child's return waits for its parent, refused actions change nothing,
// and a suspend racing a worker's complete ends one way or the other, never both.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBpmn, callBpmn, inlineDefinitions, inlineFlow as flow, singleTaskBpmn } from '../../support/bpmn.ts';
import { complete, deploy, fetchOne, fetchTasks, historyKinds, instanceOf, start, waitForStatus } from '../../support/flows.ts';
import { waitsForLock } from '../../support/db.ts';
import { startTestServer, waitFor, type TestServer } from '../../support/server.ts';
import { engineRest } from '../../camunda/support.ts';

let t: TestServer;

beforeAll(async () => {
  t = await startTestServer();
  await deploy(t.api, singleTaskBpmn('susp-one', 'susp-one'));
  await deploy(t.api, singleTaskBpmn('susp-fail', 'susp-fail', { retries: 0 }));
  // start -> a -> b -> end
  await deploy(
    t.api,
    buildBpmn(
      'susp-two',
      [
        { id: 's', type: 'startEvent' },
        { id: 'a', type: 'serviceTask', topic: 'susp-a' },
        { id: 'b', type: 'serviceTask', topic: 'susp-b' },
        { id: 'e', type: 'endEvent' },
      ],
      [
        { from: 's', to: 'a' },
        { from: 'a', to: 'b' },
        { from: 'b', to: 'e' },
      ],
    ),
  );
  // start -> wait 0.4 s -> after -> end
  await deploy(
    t.api,
    buildBpmn(
      'susp-timer',
      [
        { id: 's', type: 'startEvent' },
        { id: 'wait', type: 'catchEvent', timer: { duration: 'PT0.4S' } },
        { id: 'after', type: 'serviceTask', topic: 'susp-after-timer' },
        { id: 'e', type: 'endEvent' },
      ],
      [
        { from: 's', to: 'wait' },
        { from: 'wait', to: 'after' },
        { from: 'after', to: 'e' },
      ],
    ),
  );
  // start -> wait for "susp-paid" keyed by orderId -> ship -> end
  await deploy(
    t.api,
    buildBpmn(
      'susp-message',
      [
        { id: 's', type: 'startEvent' },
        { id: 'paid', type: 'catchEvent', message: 'susp-paid', correlationKey: 'orderId' },
        { id: 'ship', type: 'serviceTask', topic: 'susp-ship' },
        { id: 'e', type: 'endEvent' },
      ],
      [
        { from: 's', to: 'paid' },
        { from: 'paid', to: 'ship' },
        { from: 'ship', to: 'e' },
      ],
    ),
  );
  await deploy(
    t.api,
    inlineDefinitions('susp-user', [
      '<bpmn:startEvent id="start" />',
      '<bpmn:userTask id="approve" name="Approve" camunda:candidateUsers="alice" />',
      '<bpmn:endEvent id="end" />',
      flow('f1', 'start', 'approve'),
      flow('f2', 'approve', 'end'),
    ]),
  );
  // start -> wait until `= approved = true` -> approved-task -> end
  await deploy(
    t.api,
    inlineDefinitions('susp-cond', [
      '<bpmn:startEvent id="start" />',
      '<bpmn:intermediateCatchEvent id="ok"><bpmn:conditionalEventDefinition><bpmn:condition xsi:type="bpmn:tFormalExpression">= approved = true</bpmn:condition></bpmn:conditionalEventDefinition></bpmn:intermediateCatchEvent>',
      '<bpmn:serviceTask id="go" camunda:type="external" camunda:topic="susp-cond-go" />',
      '<bpmn:endEvent id="end" />',
      flow('f1', 'start', 'ok'),
      flow('f2', 'ok', 'go'),
      flow('f3', 'go', 'end'),
    ]),
  );
  await deploy(t.api, singleTaskBpmn('susp-child', 'susp-child'));
  await deploy(t.api, callBpmn('susp-parent', 'susp-child'));
});
afterAll(async () => {
  await t?.close();
});

const suspend = (id: string) => t.api.post(`/api/instances/${id}/suspend`, {});
const resume = (id: string) => t.api.post(`/api/instances/${id}/resume`, {});

async function taskStates(instanceId: string): Promise<string[]> {
  const { rows } = await t.db.pool.query(`select state from external_tasks where instance_id = $1 order by created_at`, [
    instanceId,
  ]);
  return rows.map((r: { state: string }) => r.state);
}

describe('suspend and resume', () => {
  it('given a suspended instance, then its task is not handed out, its holder loses the lock, and after the resume it runs on', async () => {
    const id = await start(t.api, 'susp-one');
    const held = await fetchOne(t.api, 'w1', 'susp-one');
    const res = await suspend(id);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({ id, status: 'running', suspended: true, changed: true });
    expect(await taskStates(id)).toEqual(['suspended']);

    const late = await complete(t.api, held, 'w1', { done: true });
    expect(late.status).toBe(409);
    expect(await fetchTasks(t.api, 'w2', ['susp-one'], { waitMs: 0 })).toEqual([]);
    const detail = await instanceOf(t.api, id);
    expect(detail).toMatchObject({ suspended: true, status: 'running' });
    expect(detail.variables).toEqual({});
    expect(detail.suspendedAt).not.toBeNull();
    const listed = await t.api.get(`/api/instances?definitionKey=susp-one&suspended=true`);
    expect(listed.body.items.map((i: { id: string }) => i.id)).toEqual([id]);
    expect((await t.api.get(`/api/instances/count?definitionKey=susp-one&suspended=false`)).body.count).toBe(0);

    const again = await suspend(id);
    expect(again.body).toMatchObject({ suspended: true, changed: false, revision: res.body.revision });

    const resumed = await resume(id);
    expect(resumed.body).toMatchObject({ suspended: false, changed: true });
    const task = await fetchOne(t.api, 'w2', 'susp-one');
    expect(task.id).toBe(held.id);
    expect((await complete(t.api, task, 'w2')).status).toBe(204);
    const done = await waitForStatus(t.api, id, 'completed');
    expect(done.suspended).toBe(false);
    const events = (await t.api.get(`/api/instances/${id}/history`)).body.items as { kind: string; data: any }[];
    expect(events.find((e) => e.kind === 'instance:suspended')?.data).toMatchObject({ tasks: 1, timers: 0 });
    expect(events.find((e) => e.kind === 'instance:resumed')?.data).toMatchObject({ tasks: 1 });
  });

  it('given a timer that falls due while the instance is suspended, then it does not fire until the resume, and fires at once then', async () => {
    const id = await start(t.api, 'susp-timer');
    expect((await suspend(id)).status).toBe(200);
    await waitFor(
      async () =>
        (await t.db.pool.query(`select 1 from timers where instance_id = $1 and due_at < now() - interval '0.2 s'`, [id]))
          .rowCount,
      5_000,
      'the timer to be past due',
    );
    await t.server.timers.tick();
    const { rows } = await t.db.pool.query(`select state from timers where instance_id = $1`, [id]);
    expect(rows.map((r: { state: string }) => r.state)).toEqual(['suspended']);
    expect((await instanceOf(t.api, id)).steps.find((s: { stepId: string }) => s.stepId === 'wait').status).toBe('active');

    expect((await resume(id)).status).toBe(200);
    const task = await fetchOne(t.api, 'w', 'susp-after-timer');
    expect(task.instanceId).toBe(id);
    expect((await complete(t.api, task, 'w')).status).toBe(204);
    await waitForStatus(t.api, id, 'completed');
  });

  it('given a message for a suspended instance, then the inbox keeps it and the resume takes it', async () => {
    const id = await start(t.api, 'susp-message', { variables: { orderId: 'o-susp' } });
    await suspend(id);
    const published = await t.api.post('/api/messages', {
      name: 'susp-paid',
      correlationKey: 'o-susp',
      variables: { amount: 7 },
    });
    expect(published.body.status).toBe('buffered');
    expect((await instanceOf(t.api, id)).steps.find((s: { stepId: string }) => s.stepId === 'paid').status).toBe('active');

    await resume(id);
    const ship = await fetchOne(t.api, 'w', 'susp-ship');
    expect(ship.instanceId).toBe(id);
    expect(ship.variables).toMatchObject({ orderId: 'o-susp', amount: 7 });
    expect((await complete(t.api, ship, 'w')).status).toBe(204);
    await waitForStatus(t.api, id, 'completed');
  });

  it("given a suspended parent, then its child's end waits for the resume, and the parent completes after it", async () => {
    const parent = await start(t.api, 'susp-parent');
    const task = await fetchOne(t.api, 'w', 'susp-child');
    await suspend(parent);
    expect((await complete(t.api, task, 'w', { fromChild: 1 })).status).toBe(204);
    await waitForStatus(t.api, task.instanceId, 'completed');
    // The return is kept for the parent, which still waits at its call activity.
    await waitFor(
      async () => (await t.db.pool.query(`select 1 from call_returns where parent_instance_id = $1`, [parent])).rowCount,
      5_000,
      'the return kept',
    );
    expect((await instanceOf(t.api, parent)).status).toBe('running');

    await resume(parent);
    const done = await waitForStatus(t.api, parent, 'completed');
    expect(done.variables).toMatchObject({ fromChild: 1 });
  });

  // The relay takes a return and locks its parent in one statement; a parent another
  // transaction holds is waited for, and what that transaction wrote is what the return sees.
  it('given a parent held by a transaction that suspends it, when its child ends, then the relay waits for it and leaves the return for the resume', async () => {
    const parent = await start(t.api, 'susp-parent');
    const task = await fetchOne(t.api, 'w', 'susp-child');
    const holder = await t.db.pool.connect();
    try {
      await holder.query('begin');
      await holder.query('select 1 from instances where id = $1 for no key update', [parent]);
      expect((await complete(t.api, task, 'w', { fromChild: 2 })).status).toBe(204);
      await waitForStatus(t.api, task.instanceId, 'completed');
      await waitFor(
        async () => ((await waitsForLock(t.db.pool, 'call_returns')) ? true : undefined),
        5_000,
        'the relay to wait for the parent',
      );
      await holder.query('update instances set suspended_at = now() where id = $1', [parent]);
      await holder.query('commit');
    } finally {
      holder.release();
    }
    await waitFor(
      async () => ((await waitsForLock(t.db.pool, 'call_returns')) ? undefined : true),
      5_000,
      'the relay to stop waiting',
    );
    const { rowCount } = await t.db.pool.query('select 1 from call_returns where parent_instance_id = $1', [parent]);
    expect(rowCount, 'the return kept').toBe(1);
    expect((await instanceOf(t.api, parent)).status).toBe('running');
    await resume(parent);
    expect((await waitForStatus(t.api, parent, 'completed')).variables).toMatchObject({ fromChild: 2 });
  });

  it('given a parent held by a transaction that writes its variables, when its child ends, then the return applies over what that transaction wrote', async () => {
    const parent = await start(t.api, 'susp-parent');
    const task = await fetchOne(t.api, 'w', 'susp-child');
    const holder = await t.db.pool.connect();
    try {
      await holder.query('begin');
      await holder.query('select 1 from instances where id = $1 for no key update', [parent]);
      expect((await complete(t.api, task, 'w', { fromChild: 3 })).status).toBe(204);
      await waitFor(
        async () => ((await waitsForLock(t.db.pool, 'call_returns')) ? true : undefined),
        5_000,
        'the relay to wait for the parent',
      );
      await holder.query(
        `update instances set variables = variables || '{"edited": true}', revision = revision + 1 where id = $1`,
        [parent],
      );
      await holder.query('commit');
    } finally {
      holder.release();
    }
    const done = await waitForStatus(t.api, parent, 'completed');
    expect(done.variables).toMatchObject({ fromChild: 3, edited: true });
  });

  it('given a suspended instance, then incident retries and replay are refused, while variable edits and cancel apply', async () => {
    const id = await start(t.api, 'susp-fail');
    const task = await fetchOne(t.api, 'w', 'susp-fail');
    const failed = await t.api.post(`/api/external-tasks/${task.id}/failure`, {
      workerId: 'w',
      lockToken: task.lockToken,
      errorMessage: 'broke',
      retries: 0,
    });
    expect(failed.status).toBe(204);
    await waitForStatus(t.api, id, 'incident');
    await suspend(id);
    const { incidents, revision } = await instanceOf(t.api, id);
    const incident = incidents[0];

    const retry = await t.api.post(`/api/incidents/${incident.id}/retry`, {});
    expect(retry.status).toBe(409);
    expect(retry.body.message).toContain('suspended');
    const many = await t.api.post('/api/incidents/retry', { ids: [incident.id] });
    expect(many.body.results).toEqual([{ id: incident.id, ok: false, reason: 'suspended' }]);
    const replay = await t.api.post(`/api/instances/${id}/replay`, {});
    expect(replay.status).toBe(409);
    expect((await instanceOf(t.api, id)).incidents).toHaveLength(1);

    const edited = await t.api.patch(`/api/instances/${id}/variables`, { revision, set: { fixed: true } });
    expect(edited.status, JSON.stringify(edited.body)).toBe(200);
    const canceled = await t.api.post(`/api/instances/${id}/cancel`, {});
    expect(canceled.body.status).toBe('canceled');
    const after = await instanceOf(t.api, id);
    expect(after).toMatchObject({ status: 'canceled', suspended: false, variables: { fixed: true } });
    expect((await suspend(id)).status).toBe(409);
    expect((await resume(id)).status).toBe(409);
    expect((await suspend('00000000-0000-4000-8000-000000000000')).status).toBe(404);
  });

  it('given a suspend racing the worker completing the task, then exactly one of them wins, and the instance completes once after the resume (20 rounds)', async () => {
    for (let round = 0; round < 20; round++) {
      const id = await start(t.api, 'susp-two');
      const a = await fetchOne(t.api, `racer-${round}`, 'susp-a');
      const [done, paused] = await Promise.all([complete(t.api, a, `racer-${round}`), suspend(id)]);
      expect(paused.status).toBe(200);
      if (done.status !== 204) expect(done.status).toBe(409);
      // Whatever won, no task of the instance is ready while it is suspended.
      expect((await taskStates(id)).filter((s) => s === 'ready' || s === 'locked')).toEqual([]);
      await resume(id);
      for (const topic of done.status === 204 ? ['susp-b'] : ['susp-a', 'susp-b']) {
        const task = await fetchOne(t.api, 'w', topic);
        expect(task.instanceId).toBe(id);
        expect((await complete(t.api, task, 'w')).status).toBe(204);
      }
      await waitForStatus(t.api, id, 'completed');
      const kinds = await historyKinds(t.api, id);
      expect(kinds.filter((k) => k === 'step:completed').length).toBe(4); // s, a, b, e
    }
  });

  it('given a suspended instance with a user task, then the task says so, claiming it is refused, and after the resume it is claimed and completed', async () => {
    const id = await start(t.api, 'susp-user');
    const task = await waitFor(
      async () => (await t.api.get(`/api/user-tasks?instanceId=${id}`)).body.items[0],
      5_000,
      'the user task',
    );
    await suspend(id);
    expect((await t.api.get(`/api/user-tasks/${task.id}`)).body.suspended).toBe(true);
    const refused = await t.api.post(`/api/user-tasks/${task.id}/claim`, { userId: 'alice' });
    expect(refused.status).toBe(409);
    expect(refused.body.details).toMatchObject({ instanceId: id, suspended: true });
    const listed = await engineRest(t.url, 'GET', `/task?processInstanceId=${id}&suspended=true`);
    expect(listed.body.map((x: { id: string; suspended: boolean }) => [x.id, x.suspended])).toEqual([[task.id, true]]);
    expect((await engineRest(t.url, 'GET', `/task?processInstanceId=${id}&active=true`)).body).toEqual([]);
    expect((await t.api.get(`/api/user-tasks/${task.id}`)).body.assignee).toBeNull();

    await resume(id);
    expect((await t.api.get(`/api/user-tasks/${task.id}`)).body.suspended).toBeUndefined();
    expect((await t.api.post(`/api/user-tasks/${task.id}/claim`, { userId: 'alice' })).status).toBe(200);
    expect((await t.api.post(`/api/user-tasks/${task.id}/complete`, { userId: 'alice' })).status).toBe(200);
    await waitForStatus(t.api, id, 'completed');
  });

  it('given a conditional event whose variable an operator set while the instance was suspended, then it fires on the resume', async () => {
    const id = await start(t.api, 'susp-cond', { variables: { approved: false } });
    await suspend(id);
    const { revision } = await instanceOf(t.api, id);
    expect((await t.api.patch(`/api/instances/${id}/variables`, { revision, set: { approved: true } })).status).toBe(200);
    expect((await instanceOf(t.api, id)).steps.find((s: { stepId: string }) => s.stepId === 'ok').status).toBe('active');
    await resume(id);
    const go = await fetchOne(t.api, 'w', 'susp-cond-go');
    expect(go.instanceId).toBe(id);
    expect((await complete(t.api, go, 'w')).status).toBe(204);
    await waitForStatus(t.api, id, 'completed');
  });

  it('given the Camunda API, then PUT suspended suspends and activates, and the instance and its task say so', async () => {
    const id = await start(t.api, 'susp-one');
    const rest = (method: string, path: string, body?: unknown) => engineRest(t.url, method, path, body);
    expect((await rest('PUT', `/process-instance/${id}/suspended`, { suspended: true })).status).toBe(204);
    expect((await rest('GET', `/process-instance/${id}`)).body.suspended).toBe(true);
    const tasks = await rest('GET', `/external-task?processInstanceId=${id}`);
    expect(tasks.body.map((x: { suspended: boolean }) => x.suspended)).toEqual([true]);
    expect((await rest('GET', `/process-instance/count?suspended=true&processDefinitionKey=susp-one`)).body.count).toBe(1);
    expect((await rest('GET', `/process-instance/count?active=true&processDefinitionKey=susp-one`)).body.count).toBe(0);
    const fetched = await rest('POST', '/external-task/fetchAndLock', {
      workerId: 'c',
      maxTasks: 5,
      topics: [{ topicName: 'susp-one', lockDuration: 10_000 }],
    });
    expect(fetched.body).toEqual([]);
    expect((await rest('PUT', `/process-instance/${id}/suspended`, {})).status).toBe(400);

    expect((await rest('PUT', `/process-instance/${id}/suspended`, { suspended: false })).status).toBe(204);
    expect((await rest('GET', `/process-instance/${id}`)).body.suspended).toBe(false);
    const task = await fetchOne(t.api, 'w', 'susp-one');
    expect(task.instanceId).toBe(id);
    expect((await complete(t.api, task, 'w')).status).toBe(204);
    await waitForStatus(t.api, id, 'completed');
    expect((await rest('PUT', `/process-instance/${id}/suspended`, { suspended: true })).status).toBe(404);
  });
});
