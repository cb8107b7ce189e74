// Multi-instance service tasks against a real PostgreSQL: one external task per
// element (its element variable and loopCounter), parallel or sequential, results
// collected in collection order, completionCondition, per-element retries and
// incidents, a BPMN error from one element to the step's boundary.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBpmn, type MultiInstance } from '../../support/bpmn.ts';
import {
  complete,
  deploy,
  fetchOne,
  fetchTasks,
  instanceOf,
  start,
  waitForStatus,
  type LockedTask,
} from '../../support/flows.ts';
import { startTestServer, type TestServer } from '../../support/server.ts';

let t: TestServer;

/** s -> each (multi-instance) -> after -> e; an error boundary BOUNCED on each -> bounced -> e2 */
function loopBpmn(id: string, multiInstance: MultiInstance, retries = 3): string {
  return buildBpmn(
    id,
    [
      { id: 's', type: 'startEvent' },
      { id: 'each', type: 'serviceTask', topic: `${id}-each`, retries, multiInstance },
      { id: 'bounce', type: 'boundaryEvent', attachedTo: 'each', error: { code: 'BOUNCED' } },
      { id: 'after', type: 'serviceTask', topic: `${id}-after` },
      { id: 'bounced', type: 'serviceTask', topic: `${id}-bounced` },
      { id: 'e', type: 'endEvent' },
      { id: 'e2', type: 'endEvent' },
    ],
    [
      { from: 's', to: 'each' },
      { from: 'each', to: 'after' },
      { from: 'after', to: 'e' },
      { from: 'bounce', to: 'bounced' },
      { from: 'bounced', to: 'e2' },
    ],
  );
}

/** A Camunda 8 file: s -> each (service task `${id}-each` with the multi-instance `marker`) -> after (`${id}-after`) -> e */
function zeebeLoopBpmn(id: string, marker: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="D_${id}" targetNamespace="https://baton.dev/test">
  <bpmn:process id="${id}" isExecutable="true">
    <bpmn:startEvent id="s" />
    <bpmn:serviceTask id="each"><bpmn:extensionElements><zeebe:taskDefinition type="${id}-each" /></bpmn:extensionElements>
      ${marker}</bpmn:serviceTask>
    <bpmn:serviceTask id="after"><bpmn:extensionElements><zeebe:taskDefinition type="${id}-after" /></bpmn:extensionElements></bpmn:serviceTask>
    <bpmn:endEvent id="e" />
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="each" />
    <bpmn:sequenceFlow id="f2" sourceRef="each" targetRef="after" />
    <bpmn:sequenceFlow id="f3" sourceRef="after" targetRef="e" />
  </bpmn:process>
</bpmn:definitions>`;
}

beforeAll(async () => {
  t = await startTestServer();
  await deploy(
    t.api,
    loopBpmn('mi_par', {
      collection: 'recipients',
      elementVariable: 'recipient',
      outputCollection: 'receipts',
      outputElement: '= receipt',
    }),
  );
  await deploy(
    t.api,
    loopBpmn('mi_seq', { collection: '${legs}', elementVariable: 'leg', sequential: true, outputCollection: 'booked' }),
  );
  await deploy(
    t.api,
    loopBpmn('mi_quorum', {
      collection: 'voters',
      elementVariable: 'voter',
      completionCondition: '${nrOfCompletedInstances >= 2}',
      outputCollection: 'votes',
      outputElement: '= vote',
    }),
  );
  await deploy(t.api, loopBpmn('mi_fragile', { collection: 'parts', elementVariable: 'part' }, 0));
  await deploy(
    t.api,
    buildBpmn(
      'mi_timed',
      [
        { id: 's', type: 'startEvent' },
        {
          id: 'each',
          type: 'serviceTask',
          topic: 'mi_timed-each',
          multiInstance: { collection: 'jobs', elementVariable: 'job' },
        },
        { id: 'late', type: 'boundaryEvent', attachedTo: 'each', timer: { duration: 'PT0.3S' } },
        { id: 'giveUp', type: 'serviceTask', topic: 'mi_timed-give-up' },
        { id: 'e', type: 'endEvent' },
        { id: 'e2', type: 'endEvent' },
      ],
      [
        { from: 's', to: 'each' },
        { from: 'each', to: 'e' },
        { from: 'late', to: 'giveUp' },
        { from: 'giveUp', to: 'e2' },
      ],
    ),
  );
});
afterAll(async () => {
  await t.close();
});

async function taskRows(id: string): Promise<{ loop_index: number; state: string; idempotency_key: string }[]> {
  const { rows } = await t.db.pool.query(
    `select loop_index, state, idempotency_key from external_tasks where instance_id = $1 and step_id = 'each' order by loop_index`,
    [id],
  );
  return rows;
}

async function fetchAll(topic: string, n: number): Promise<LockedTask[]> {
  const tasks = await fetchTasks(t.api, 'w', [topic], { maxTasks: 10 });
  expect(tasks).toHaveLength(n);
  return tasks.sort((a, b) => (a.variables.loopCounter as number) - (b.variables.loopCounter as number));
}

describe('parallel multi-instance', () => {
  it('given three recipients, then three tasks at once with their element and loopCounter; the step completes after the last, results in collection order', async () => {
    const id = await start(t.api, 'mi_par', { variables: { recipients: ['ann', 'bob', 'cy'], subject: 'hi' } });
    const tasks = await fetchAll('mi_par-each', 3);
    expect(tasks.map((x) => x.variables)).toEqual([
      { recipients: ['ann', 'bob', 'cy'], subject: 'hi', recipient: 'ann', loopCounter: 0 },
      { recipients: ['ann', 'bob', 'cy'], subject: 'hi', recipient: 'bob', loopCounter: 1 },
      { recipients: ['ann', 'bob', 'cy'], subject: 'hi', recipient: 'cy', loopCounter: 2 },
    ]);
    expect(new Set(tasks.map((x) => x.idempotencyKey)).size).toBe(3);
    for (const i of [2, 0]) {
      const task = tasks[i] as LockedTask;
      expect((await complete(t.api, task, 'w', { receipt: `r-${task.variables.recipient}` })).status).toBe(204);
    }
    expect(await fetchTasks(t.api, 'w', ['mi_par-after'])).toEqual([]);
    expect((await instanceOf(t.api, id)).status).toBe('running');
    await complete(t.api, tasks[1] as LockedTask, 'w', { receipt: 'r-bob' });
    const after = await fetchOne(t.api, 'w', 'mi_par-after');
    expect(after.variables.receipts).toEqual(['r-ann', 'r-bob', 'r-cy']);
    expect(after.variables).not.toHaveProperty('receipt');
    expect(after.variables).not.toHaveProperty('loopCounter');
    await complete(t.api, after, 'w');
    const done = await waitForStatus(t.api, id, 'completed');
    expect(done.variables.receipts).toEqual(['r-ann', 'r-bob', 'r-cy']);
    expect((await taskRows(id)).map((r) => [r.loop_index, r.state])).toEqual([
      [0, 'done'],
      [1, 'done'],
      [2, 'done'],
    ]);
    const history = await t.api.get(`/api/instances/${id}/history`);
    const kinds = (history.body.items as { kind: string; stepId?: string }[])
      .filter((e) => e.stepId === 'each')
      .map((e) => e.kind);
    expect(kinds.filter((k) => k === 'loop:element_completed')).toHaveLength(3);
    expect(kinds.filter((k) => k === 'loop:completed')).toHaveLength(1);
  });

  it('given an empty collection, then the step completes at once with an empty result list; a collection that is not a list is an incident naming the step', async () => {
    const empty = await start(t.api, 'mi_par', { variables: { recipients: [] } });
    const after = await fetchOne(t.api, 'w', 'mi_par-after');
    expect(after.instanceId).toBe(empty);
    expect(after.variables.receipts).toEqual([]);
    await complete(t.api, after, 'w');
    const bad = await start(t.api, 'mi_par', { variables: { recipients: 'ann' } });
    const instance = await waitForStatus(t.api, bad, 'incident');
    expect(instance.incidents).toEqual([
      expect.objectContaining({
        stepId: 'each',
        kind: 'condition_error',
        message: expect.stringContaining('Collection of multi-instance step each'),
      }),
    ]);
    const retried = await t.api.post(`/api/incidents/${instance.incidents[0].id}/retry`, { variables: { recipients: ['zoe'] } });
    expect(retried.status).toBe(200);
    const zoe = await fetchOne(t.api, 'w', 'mi_par-each');
    expect(zoe.variables).toMatchObject({ recipient: 'zoe', loopCounter: 0 });
  });

  it('given a completion condition, then the step completes when it holds and the open element is canceled (its worker gets 409)', async () => {
    const id = await start(t.api, 'mi_quorum', { variables: { voters: ['v1', 'v2', 'v3'] } });
    const [a, b, c] = await fetchAll('mi_quorum-each', 3);
    await complete(t.api, c as LockedTask, 'w', { vote: 'yes' });
    await complete(t.api, a as LockedTask, 'w', { vote: 'no' });
    const late = await complete(t.api, b as LockedTask, 'w', { vote: 'yes' });
    expect(late.status).toBe(409);
    expect(late.body.type).toBe('LockLost');
    const after = await fetchOne(t.api, 'w', 'mi_quorum-after');
    expect(after.variables.votes).toEqual(['no', null, 'yes']);
    expect((await taskRows(id)).map((r) => [r.loop_index, r.state])).toEqual([
      [0, 'done'],
      [1, 'canceled'],
      [2, 'done'],
    ]);
    await complete(t.api, after, 'w');
    await waitForStatus(t.api, id, 'completed');
  });

  it('given a BPMN error from one element, then the step boundary catches it and the other elements are canceled', async () => {
    const id = await start(t.api, 'mi_par', { variables: { recipients: ['x1', 'x2'] } });
    const [x1, x2] = await fetchAll('mi_par-each', 2);
    const res = await t.api.post(`/api/external-tasks/${(x2 as LockedTask).id}/bpmn-error`, {
      workerId: 'w',
      lockToken: (x2 as LockedTask).lockToken,
      errorCode: 'BOUNCED',
    });
    expect(res.status).toBe(204);
    expect((await complete(t.api, x1 as LockedTask, 'w')).status).toBe(409);
    const bounced = await fetchOne(t.api, 'w', 'mi_par-bounced');
    expect(bounced.instanceId).toBe(id);
    await complete(t.api, bounced, 'w');
    const done = await waitForStatus(t.api, id, 'completed');
    const status = Object.fromEntries(done.steps.map((s: { stepId: string; status: string }) => [s.stepId, s.status]));
    expect(status).toMatchObject({ each: 'canceled', bounce: 'completed', after: 'skipped', bounced: 'completed' });
    expect((await taskRows(id)).map((r) => [r.loop_index, r.state])).toEqual([
      [0, 'canceled'],
      [1, 'done'],
    ]);
  });

  it('given an element out of retries, then an incident holds that element only; the others complete; retrying the incident runs that element again and the step completes', async () => {
    const id = await start(t.api, 'mi_fragile', { variables: { parts: ['p1', 'p2'] } });
    const [p1, p2] = await fetchAll('mi_fragile-each', 2);
    const failed = await t.api.post(`/api/external-tasks/${(p1 as LockedTask).id}/failure`, {
      workerId: 'w',
      lockToken: (p1 as LockedTask).lockToken,
      errorMessage: 'printer jam',
    });
    expect(failed.status).toBe(204);
    const incident = (await waitForStatus(t.api, id, 'incident')).incidents[0];
    expect(incident).toMatchObject({ stepId: 'each', kind: 'task_failed' });
    expect((await complete(t.api, p2 as LockedTask, 'w')).status).toBe(204);
    expect((await instanceOf(t.api, id)).status).toBe('incident');
    expect((await t.api.post(`/api/incidents/${incident.id}/retry`, {})).status).toBe(200);
    const again = await fetchOne(t.api, 'w', 'mi_fragile-each');
    expect(again.variables).toMatchObject({ part: 'p1', loopCounter: 0 });
    expect(again.attempt).toBe(2);
    await complete(t.api, again, 'w');
    await complete(t.api, await fetchOne(t.api, 'w', 'mi_fragile-after'), 'w');
    await waitForStatus(t.api, id, 'completed');
  });
});

describe('boundaries on a multi-instance step', () => {
  it('given an interrupting timer on the step, then when it fires every open element is canceled and the timeout path runs', async () => {
    const id = await start(t.api, 'mi_timed', { variables: { jobs: ['j1', 'j2', 'j3'] } });
    const [j1, j2] = await fetchAll('mi_timed-each', 3);
    await complete(t.api, j1 as LockedTask, 'w');
    const giveUp = await fetchOne(t.api, 'w', 'mi_timed-give-up');
    expect(giveUp.instanceId).toBe(id);
    expect((await complete(t.api, j2 as LockedTask, 'w')).status).toBe(409);
    expect((await taskRows(id)).map((r) => [r.loop_index, r.state])).toEqual([
      [0, 'done'],
      [1, 'canceled'],
      [2, 'canceled'],
    ]);
    await complete(t.api, giveUp, 'w');
    const done = await waitForStatus(t.api, id, 'completed');
    const status = Object.fromEntries(done.steps.map((s: { stepId: string; status: string }) => [s.stepId, s.status]));
    expect(status).toMatchObject({ each: 'canceled', late: 'completed', giveUp: 'completed', e: 'skipped' });
  });
});

describe('sequential multi-instance', () => {
  it("given three legs, then one task at a time in collection order; each result is the element worker's variables", async () => {
    const id = await start(t.api, 'mi_seq', { variables: { legs: ['BER-CDG', 'CDG-JFK', 'JFK-SFO'] } });
    const seen: unknown[] = [];
    for (let i = 0; i < 3; i++) {
      const [task] = await fetchAll('mi_seq-each', 1);
      expect(await fetchTasks(t.api, 'w', ['mi_seq-each'])).toEqual([]);
      seen.push([task?.variables.leg, task?.variables.loopCounter]);
      await complete(t.api, task as LockedTask, 'w', { seat: `${i + 1}A` });
    }
    expect(seen).toEqual([
      ['BER-CDG', 0],
      ['CDG-JFK', 1],
      ['JFK-SFO', 2],
    ]);
    const after = await fetchOne(t.api, 'w', 'mi_seq-after');
    expect(after.variables.booked).toEqual([{ seat: '1A' }, { seat: '2A' }, { seat: '3A' }]);
    await complete(t.api, after, 'w');
    await waitForStatus(t.api, id, 'completed');
  });

  it('given a Camunda worker, then /engine-rest fetchAndLock gives it the element variable too', async () => {
    const id = await start(t.api, 'mi_seq', { variables: { legs: ['A-B'] } });
    const fetched = await t.api.post('/engine-rest/external-task/fetchAndLock', {
      workerId: 'cw',
      maxTasks: 1,
      topics: [{ topicName: 'mi_seq-each', lockDuration: 10_000 }],
    });
    expect(fetched.status).toBe(200);
    expect(fetched.body[0].processInstanceId).toBe(id);
    expect(fetched.body[0].variables.leg).toMatchObject({ value: 'A-B' });
    expect(fetched.body[0].variables.loopCounter).toMatchObject({ value: 0 });
    const done = await t.api.post(`/engine-rest/external-task/${fetched.body[0].id}/complete`, {
      workerId: 'cw',
      variables: { seat: { value: '9C', type: 'String' } },
    });
    expect(done.status).toBe(204);
    const after = await fetchOne(t.api, 'w', 'mi_seq-after');
    expect(after.variables.booked).toEqual([{ seat: '9C' }]);
  });

  it('given a Camunda 8 file with zeebe:loopCharacteristics, then each element runs with its inputElement and loopCounter from 1, and outputElement collects the results in input order', async () => {
    const xml = zeebeLoopBpmn(
      'mi_zeebe',
      `<bpmn:multiInstanceLoopCharacteristics><bpmn:extensionElements>
        <zeebe:loopCharacteristics inputCollection="=orders" inputElement="order" outputCollection="totals" outputElement="=total" />
      </bpmn:extensionElements></bpmn:multiInstanceLoopCharacteristics>`,
    );
    const deployed = await t.api.post('/api/definitions', { xml });
    expect(deployed.status, JSON.stringify(deployed.body)).toBe(201);
    expect(deployed.body.warnings ?? []).toEqual([]);
    const id = await start(t.api, 'mi_zeebe', { variables: { orders: [{ n: 1 }, { n: 2 }] } });
    const tasks = await fetchAll('mi_zeebe-each', 2);
    // Camunda 8 counts its elements from 1.
    expect(tasks.map((x) => [(x.variables.order as { n: number }).n, x.variables.loopCounter]).sort()).toEqual([
      [1, 1],
      [2, 2],
    ]);
    for (const task of [...tasks].reverse()) {
      const order = task.variables.order as { n: number };
      expect((await complete(t.api, task, 'w', { total: order.n * 10 })).status).toBe(204);
    }
    const after = await fetchOne(t.api, 'w', 'mi_zeebe-after');
    expect(after.instanceId).toBe(id);
    expect(after.variables.totals).toEqual([10, 20]);
  });

  it("given a sequential completion condition over the loop counters, then it reads Zeebe's numberOf… and Camunda 7's nrOf… names with each engine's values", async () => {
    const xml = zeebeLoopBpmn(
      'mi_counts',
      `<bpmn:multiInstanceLoopCharacteristics isSequential="true">
        <bpmn:extensionElements><zeebe:loopCharacteristics inputCollection="=[1, 2, 3]" inputElement="n" /></bpmn:extensionElements>
        <bpmn:completionCondition>= numberOfInstances = 3 and numberOfActiveInstances = 0 and nrOfActiveInstances = 1 and numberOfTerminatedInstances = 0 and numberOfCompletedInstances &gt;= 2</bpmn:completionCondition>
      </bpmn:multiInstanceLoopCharacteristics>`,
    );
    const deployed = await t.api.post('/api/definitions', { xml });
    expect(deployed.status, JSON.stringify(deployed.body)).toBe(201);
    const id = await start(t.api, 'mi_counts');
    for (const n of [1, 2]) {
      const task = await fetchOne(t.api, 'w', 'mi_counts-each');
      expect(task.variables.n).toBe(n);
      expect((await complete(t.api, task, 'w')).status).toBe(204);
    }
    // Two of three completed: the condition holds, so the third element never runs.
    const after = await fetchOne(t.api, 'w', 'mi_counts-after');
    expect(after.instanceId).toBe(id);
    expect(await fetchTasks(t.api, 'w', ['mi_counts-each'], { maxTasks: 1 })).toEqual([]);
    expect((await taskRows(id)).map((r) => [r.loop_index, r.state])).toEqual([
      [0, 'done'],
      [1, 'done'],
    ]);
  });

  it('given loopCardinality without a collection, then that many elements run with loopCounter 0..n-1; a count that is no whole number is an incident whose retry counts again', async () => {
    await deploy(t.api, loopBpmn('mi_count', { cardinality: '${copies}', outputCollection: 'printed', outputElement: '= page' }));
    const id = await start(t.api, 'mi_count', { variables: { copies: 3 } });
    const tasks = await fetchAll('mi_count-each', 3);
    expect(tasks.every((x) => x.instanceId === id)).toBe(true);
    expect(tasks.map((x) => x.variables.loopCounter).sort()).toEqual([0, 1, 2]);
    for (const task of tasks) expect((await complete(t.api, task, 'w', { page: task.variables.loopCounter })).status).toBe(204);
    expect((await fetchOne(t.api, 'w', 'mi_count-after')).variables.printed).toEqual([0, 1, 2]);

    const bad = await start(t.api, 'mi_count', { variables: { copies: 1.5 } });
    const stuck = await waitForStatus(t.api, bad, 'incident');
    expect(stuck.incidents).toMatchObject([{ stepId: 'each', kind: 'condition_error' }]);
    expect(stuck.incidents[0].message).toContain('not a whole number');
    const retried = await t.api.post(`/api/incidents/${stuck.incidents[0].id}/retry`, { variables: { copies: 1 } });
    expect(retried.status, JSON.stringify(retried.body)).toBeLessThan(300);
    expect((await fetchOne(t.api, 'w', 'mi_count-each')).instanceId).toBe(bad);
  });
});
