// Embedded subprocesses against a real PostgreSQL: the inner steps run as part of
// the instance's DAG; boundary events on the subprocess interrupt everything open
// inside it; errors propagate out; compensating the subprocess undoes its inner steps.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBpmn, type NodeSpec } from '../../support/bpmn.ts';
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
import { startTestServer, waitFor, type TestServer } from '../../support/server.ts';

let t: TestServer;

/** s -> order [os -> reserve -> fork -> pack, label -> join -> oe] -> ship -> e, with boundaries on the subprocess */
const orderBpmn = buildBpmn(
  'sub_order',
  [
    { id: 's', type: 'startEvent' },
    {
      id: 'order',
      type: 'subProcess',
      nodes: [
        { id: 'os', type: 'startEvent' },
        { id: 'reserve', type: 'serviceTask', topic: 'sp-reserve' },
        { id: 'fork', type: 'parallelGateway' },
        { id: 'pack', type: 'serviceTask', topic: 'sp-pack' },
        { id: 'label', type: 'serviceTask', topic: 'sp-label' },
        { id: 'paid', type: 'catchEvent', message: 'sp-paid' },
        { id: 'join', type: 'parallelGateway' },
        { id: 'oe', type: 'endEvent' },
      ],
      flows: [
        { from: 'os', to: 'reserve' },
        { from: 'reserve', to: 'fork' },
        { from: 'fork', to: 'pack' },
        { from: 'fork', to: 'label' },
        { from: 'fork', to: 'paid' },
        { from: 'pack', to: 'join' },
        { from: 'label', to: 'join' },
        { from: 'paid', to: 'join' },
        { from: 'join', to: 'oe' },
      ],
    },
    { id: 'canceled', type: 'boundaryEvent', attachedTo: 'order', message: 'sp-cancel' },
    { id: 'nudge', type: 'boundaryEvent', attachedTo: 'order', interrupting: false, signal: 'sp-nudge' },
    { id: 'outOfStock', type: 'boundaryEvent', attachedTo: 'order', error: { code: 'OUT_OF_STOCK', codeVariable: 'why' } },
    { id: 'ship', type: 'serviceTask', topic: 'sp-ship' },
    { id: 'refund', type: 'serviceTask', topic: 'sp-refund' },
    { id: 'remind', type: 'serviceTask', topic: 'sp-remind' },
    { id: 'restock', type: 'serviceTask', topic: 'sp-restock' },
    { id: 'e', type: 'endEvent' },
    { id: 'e2', type: 'endEvent' },
    { id: 'e3', type: 'endEvent' },
    { id: 'e4', type: 'endEvent' },
  ],
  [
    { from: 's', to: 'order' },
    { from: 'order', to: 'ship' },
    { from: 'ship', to: 'e' },
    { from: 'canceled', to: 'refund' },
    { from: 'refund', to: 'e2' },
    { from: 'nudge', to: 'remind' },
    { from: 'remind', to: 'e3' },
    { from: 'outOfStock', to: 'restock' },
    { from: 'restock', to: 'e4' },
  ],
);

/** A subprocess with a task, a message catch and a timer catch inside, and a short timer boundary. */
const slowBpmn = buildBpmn(
  'sub_slow',
  [
    { id: 's', type: 'startEvent' },
    {
      id: 'work',
      type: 'subProcess',
      nodes: [
        { id: 'ws', type: 'startEvent' },
        { id: 'fork', type: 'parallelGateway' },
        { id: 'grind', type: 'serviceTask', topic: 'sp-grind' },
        { id: 'approval', type: 'catchEvent', message: 'sp-approval' },
        { id: 'cool', type: 'catchEvent', timer: { duration: 'PT1H' } },
        { id: 'join', type: 'parallelGateway' },
        { id: 'we', type: 'endEvent' },
      ],
      flows: [
        { from: 'ws', to: 'fork' },
        { from: 'fork', to: 'grind' },
        { from: 'fork', to: 'approval' },
        { from: 'fork', to: 'cool' },
        { from: 'grind', to: 'join' },
        { from: 'approval', to: 'join' },
        { from: 'cool', to: 'join' },
        { from: 'join', to: 'we' },
      ],
    },
    { id: 'tooSlow', type: 'boundaryEvent', attachedTo: 'work', timer: { duration: 'PT0.3S' } },
    { id: 'escalate', type: 'serviceTask', topic: 'sp-escalate' },
    { id: 'e', type: 'endEvent' },
    { id: 'e2', type: 'endEvent' },
  ],
  [
    { from: 's', to: 'work' },
    { from: 'work', to: 'e' },
    { from: 'tooSlow', to: 'escalate' },
    { from: 'escalate', to: 'e2' },
  ],
);

/** outer [os -> inner [is -> check -> gw -(short)-> fail(NO_STOCK) / -> ie] -> oe] ; error boundary only on outer */
function nestedBpmn(id: string, boundary: boolean): string {
  const nodes: NodeSpec[] = [
    { id: 's', type: 'startEvent' },
    {
      id: 'outer',
      type: 'subProcess',
      nodes: [
        { id: 'os', type: 'startEvent' },
        {
          id: 'inner',
          type: 'subProcess',
          nodes: [
            { id: 'is', type: 'startEvent' },
            { id: 'check', type: 'serviceTask', topic: `${id}-check` },
            { id: 'gw', type: 'exclusiveGateway', default: 'ok' },
            { id: 'fail', type: 'errorEndEvent', code: 'NO_STOCK' },
            { id: 'ie', type: 'endEvent' },
          ],
          flows: [
            { from: 'is', to: 'check' },
            { from: 'check', to: 'gw' },
            { id: 'short', from: 'gw', to: 'fail', condition: '=stock < 1' },
            { id: 'ok', from: 'gw', to: 'ie' },
          ],
        },
        { id: 'oe', type: 'endEvent' },
      ],
      flows: [
        { from: 'os', to: 'inner' },
        { from: 'inner', to: 'oe' },
      ],
    },
    { id: 'after', type: 'serviceTask', topic: `${id}-after` },
    { id: 'e', type: 'endEvent' },
  ];
  if (boundary)
    nodes.push(
      { id: 'caught', type: 'boundaryEvent', attachedTo: 'outer', error: { code: 'NO_STOCK', codeVariable: 'errorCode' } },
      { id: 'reorder', type: 'serviceTask', topic: `${id}-reorder` },
      { id: 'e2', type: 'endEvent' },
    );
  return buildBpmn(id, nodes, [
    { from: 's', to: 'outer' },
    { from: 'outer', to: 'after' },
    { from: 'after', to: 'e' },
    ...(boundary
      ? [
          { from: 'caught', to: 'reorder' },
          { from: 'reorder', to: 'e2' },
        ]
      : []),
  ]);
}

/** c (handler undoC) -> trip [ts -> a (undoA) -> b (undoB) -> te] -> undoTrip (compensation end, activityRef trip) */
const tripBpmn = buildBpmn(
  'sub_trip',
  [
    { id: 's', type: 'startEvent' },
    { id: 'c', type: 'serviceTask', topic: 'sp-trip-c' },
    { id: 'cComp', type: 'compensationBoundary', attachedTo: 'c', handler: 'undoC' },
    { id: 'undoC', type: 'serviceTask', topic: 'sp-undo', forCompensation: true },
    {
      id: 'trip',
      type: 'subProcess',
      nodes: [
        { id: 'ts', type: 'startEvent' },
        { id: 'a', type: 'serviceTask', topic: 'sp-trip-a' },
        { id: 'aComp', type: 'compensationBoundary', attachedTo: 'a', handler: 'undoA' },
        { id: 'undoA', type: 'serviceTask', topic: 'sp-undo', forCompensation: true },
        { id: 'b', type: 'serviceTask', topic: 'sp-trip-b' },
        { id: 'bComp', type: 'compensationBoundary', attachedTo: 'b', handler: 'undoB' },
        { id: 'undoB', type: 'serviceTask', topic: 'sp-undo', forCompensation: true },
        { id: 'te', type: 'endEvent' },
      ],
      flows: [
        { from: 'ts', to: 'a' },
        { from: 'a', to: 'b' },
        { from: 'b', to: 'te' },
      ],
    },
    { id: 'undoTrip', type: 'compensationThrow', activityRef: 'trip', end: true },
  ],
  [
    { from: 's', to: 'c' },
    { from: 'c', to: 'trip' },
    { from: 'trip', to: 'undoTrip' },
  ],
);

/** c (undoC) -> sub [ss -> a (undoA) -> undoHere (compensation throw, no activityRef) -> se] -> e: only a is compensated */
const innerSagaBpmn = buildBpmn(
  'sub_inner_saga',
  [
    { id: 's', type: 'startEvent' },
    { id: 'c', type: 'serviceTask', topic: 'sp-inner-c' },
    { id: 'cComp', type: 'compensationBoundary', attachedTo: 'c', handler: 'undoC' },
    { id: 'undoC', type: 'serviceTask', topic: 'sp-inner-undo', forCompensation: true },
    {
      id: 'sub',
      type: 'subProcess',
      nodes: [
        { id: 'ss', type: 'startEvent' },
        { id: 'a', type: 'serviceTask', topic: 'sp-inner-a' },
        { id: 'aComp', type: 'compensationBoundary', attachedTo: 'a', handler: 'undoA' },
        { id: 'undoA', type: 'serviceTask', topic: 'sp-inner-undo', forCompensation: true },
        { id: 'undoHere', type: 'compensationThrow' },
        { id: 'se', type: 'endEvent' },
      ],
      flows: [
        { from: 'ss', to: 'a' },
        { from: 'a', to: 'undoHere' },
        { from: 'undoHere', to: 'se' },
      ],
    },
    { id: 'e', type: 'endEvent' },
  ],
  [
    { from: 's', to: 'c' },
    { from: 'c', to: 'sub' },
    { from: 'sub', to: 'e' },
  ],
);

beforeAll(async () => {
  t = await startTestServer();
  for (const xml of [
    orderBpmn,
    slowBpmn,
    nestedBpmn('sp_nested', true),
    nestedBpmn('sp_uncaught', false),
    tripBpmn,
    innerSagaBpmn,
  ])
    await deploy(t.api, xml);
});
afterAll(async () => {
  await t.close();
});

async function statuses(id: string): Promise<Record<string, string>> {
  const { rows } = await t.db.pool.query('select step_id, status from steps where instance_id = $1', [id]);
  return Object.fromEntries(rows.map((r) => [r.step_id, r.status]));
}

async function taskStates(id: string): Promise<Record<string, string>> {
  const { rows } = await t.db.pool.query('select step_id, state from external_tasks where instance_id = $1', [id]);
  return Object.fromEntries(rows.map((r) => [r.step_id, r.state]));
}

async function completeOne(topic: string, instanceId: string, variables?: Record<string, unknown>): Promise<LockedTask> {
  const task = await fetchOne(t.api, 'w', topic);
  expect(task.instanceId).toBe(instanceId);
  expect((await complete(t.api, task, 'w', variables)).status).toBe(204);
  return task;
}

async function waitingSubscription(id: string, stepId: string): Promise<void> {
  await waitFor(
    async () =>
      (await t.db.pool.query('select 1 from subscriptions where instance_id = $1 and step_id = $2', [id, stepId])).rowCount
        ? true
        : undefined,
    10_000,
    `${stepId} to wait`,
  );
}

describe('embedded subprocess', () => {
  it('given every inner step done, then the subprocess completes and the path goes on: reserve, pack + label + payment, ship', async () => {
    const id = await start(t.api, 'sub_order', { businessKey: 'sp-1' });
    expect(await statuses(id)).toEqual({
      s: 'completed',
      order: 'active',
      os: 'completed',
      reserve: 'active',
      canceled: 'active',
      nudge: 'active',
      outOfStock: 'active',
    });
    await completeOne('sp-reserve', id);
    const both = await fetchTasks(t.api, 'w', ['sp-pack', 'sp-label', 'sp-ship']);
    expect(both.map((x) => x.stepId).sort()).toEqual(['label', 'pack']);
    for (const task of both) await complete(t.api, task, 'w');
    expect((await instanceOf(t.api, id)).status).toBe('running');
    expect((await t.api.post('/api/messages', { name: 'sp-paid', businessKey: 'sp-1' })).body.status).toBe('matched');
    await completeOne('sp-ship', id);
    await waitForStatus(t.api, id, 'completed');
    expect(await statuses(id)).toEqual({
      s: 'completed',
      order: 'completed',
      os: 'completed',
      reserve: 'completed',
      fork: 'completed',
      pack: 'completed',
      label: 'completed',
      paid: 'completed',
      join: 'completed',
      oe: 'completed',
      canceled: 'skipped',
      nudge: 'skipped',
      outOfStock: 'skipped',
      ship: 'completed',
      e: 'completed',
      refund: 'skipped',
      remind: 'skipped',
      restock: 'skipped',
      e2: 'skipped',
      e3: 'skipped',
      e4: 'skipped',
    });
    const { rowCount } = await t.db.pool.query('select 1 from subscriptions where instance_id = $1', [id]);
    expect(rowCount).toBe(0);
  });

  it('given an interrupting message boundary on the subprocess, then every open inner step is canceled (tasks unfetchable, late worker 409, subscription deleted) and the boundary path runs', async () => {
    const id = await start(t.api, 'sub_order', { businessKey: 'sp-2' });
    await completeOne('sp-reserve', id);
    const pack = await fetchOne(t.api, 'w', 'sp-pack');
    await completeOne('sp-label', id);
    expect((await t.api.post('/api/messages', { name: 'sp-cancel', businessKey: 'sp-2' })).body).toMatchObject({
      status: 'matched',
      instanceId: id,
    });
    const late = await complete(t.api, pack, 'w');
    expect(late.status).toBe(409);
    expect(late.body.type).toBe('LockLost');
    expect(await taskStates(id)).toEqual({ reserve: 'done', pack: 'canceled', label: 'done', refund: 'ready' });
    const { rows } = await t.db.pool.query('select step_id from subscriptions where instance_id = $1', [id]);
    expect(rows).toEqual([]);
    await completeOne('sp-refund', id);
    await waitForStatus(t.api, id, 'completed');
    expect(await statuses(id)).toMatchObject({
      order: 'canceled',
      pack: 'canceled',
      label: 'completed',
      paid: 'canceled',
      canceled: 'completed',
      nudge: 'skipped',
      outOfStock: 'skipped',
      ship: 'skipped',
      refund: 'completed',
      e2: 'completed',
    });
    expect((await statuses(id)).join).toBeUndefined();
  });

  it('given a non-interrupting signal boundary, then its path runs alongside while the inner steps go on', async () => {
    const id = await start(t.api, 'sub_order', { businessKey: 'sp-3' });
    await waitingSubscription(id, 'nudge');
    expect((await t.api.post('/api/signals', { name: 'sp-nudge' })).body.delivered).toBeGreaterThanOrEqual(1);
    await completeOne('sp-remind', id);
    await completeOne('sp-reserve', id);
    await completeOne('sp-pack', id);
    await completeOne('sp-label', id);
    await t.api.post('/api/messages', { name: 'sp-paid', businessKey: 'sp-3' });
    await completeOne('sp-ship', id);
    await waitForStatus(t.api, id, 'completed');
    expect(await statuses(id)).toMatchObject({
      order: 'completed',
      nudge: 'completed',
      remind: 'completed',
      e3: 'completed',
      ship: 'completed',
      canceled: 'skipped',
    });
  });

  it('given a BPMN error from an inner task with no boundary of its own, then it propagates to the subprocess error boundary, canceling the other inner tasks', async () => {
    const id = await start(t.api, 'sub_order', { businessKey: 'sp-4' });
    await completeOne('sp-reserve', id);
    const pack = await fetchOne(t.api, 'w', 'sp-pack');
    const res = await t.api.post(`/api/external-tasks/${pack.id}/bpmn-error`, {
      workerId: 'w',
      lockToken: pack.lockToken,
      errorCode: 'OUT_OF_STOCK',
    });
    expect(res.status).toBe(204);
    const restock = await fetchOne(t.api, 'w', 'sp-restock');
    expect(restock.variables).toMatchObject({ why: 'OUT_OF_STOCK' });
    expect(await taskStates(id)).toMatchObject({ pack: 'done', label: 'canceled', restock: 'locked' });
    await complete(t.api, restock, 'w');
    await waitForStatus(t.api, id, 'completed');
    expect(await statuses(id)).toMatchObject({
      order: 'canceled',
      pack: 'canceled',
      label: 'canceled',
      paid: 'canceled',
      outOfStock: 'completed',
      ship: 'skipped',
    });
    expect((await instanceOf(t.api, id)).incidents).toEqual([]);
  });

  it('given a timer boundary on the subprocess, then it fires: the inner task is canceled, the inner timer canceled and the inner subscription deleted', async () => {
    const id = await start(t.api, 'sub_slow', { businessKey: 'sp-5' });
    const grind = await fetchOne(t.api, 'w', 'sp-grind');
    const escalate = await fetchOne(t.api, 'w', 'sp-escalate');
    expect(escalate.instanceId).toBe(id);
    expect((await complete(t.api, grind, 'w')).status).toBe(409);
    expect(await taskStates(id)).toEqual({ grind: 'canceled', escalate: 'locked' });
    const timers = await t.db.pool.query('select step_id, state from timers where instance_id = $1 order by step_id', [id]);
    expect(timers.rows).toEqual([
      { step_id: 'cool', state: 'canceled' },
      { step_id: 'tooSlow', state: 'fired' },
    ]);
    expect((await t.db.pool.query('select 1 from subscriptions where instance_id = $1', [id])).rowCount).toBe(0);
    await complete(t.api, escalate, 'w');
    await waitForStatus(t.api, id, 'completed');
    expect(await statuses(id)).toMatchObject({
      work: 'canceled',
      grind: 'canceled',
      approval: 'canceled',
      cool: 'canceled',
      tooSlow: 'completed',
      escalate: 'completed',
      e: 'skipped',
      e2: 'completed',
    });
  });
});

describe('error end events', () => {
  it('given an error end event in a nested subprocess, then it propagates out to the outer subprocess error boundary', async () => {
    const id = await start(t.api, 'sp_nested', { variables: { stock: 0 } });
    await completeOne('sp_nested-check', id);
    const reorder = await fetchOne(t.api, 'w', 'sp_nested-reorder');
    expect(reorder.variables).toMatchObject({ errorCode: 'NO_STOCK' });
    await complete(t.api, reorder, 'w');
    await waitForStatus(t.api, id, 'completed');
    expect(await statuses(id)).toMatchObject({
      outer: 'canceled',
      inner: 'canceled',
      fail: 'completed',
      caught: 'completed',
      reorder: 'completed',
      after: 'skipped',
    });
  });

  it('given stock, then the nested subprocesses complete one after the other and the path goes on', async () => {
    const id = await start(t.api, 'sp_nested', { variables: { stock: 3 } });
    await completeOne('sp_nested-check', id);
    await completeOne('sp_nested-after', id);
    await waitForStatus(t.api, id, 'completed');
    expect(await statuses(id)).toMatchObject({
      inner: 'completed',
      outer: 'completed',
      ie: 'completed',
      oe: 'completed',
      fail: 'skipped',
      caught: 'skipped',
      after: 'completed',
    });
  });

  it('given an error end event nobody catches, then an incident names the error end event', async () => {
    const id = await start(t.api, 'sp_uncaught', { variables: { stock: 0 } });
    await completeOne('sp_uncaught-check', id);
    const instance = await waitForStatus(t.api, id, 'incident');
    expect(instance.incidents).toEqual([
      expect.objectContaining({
        stepId: 'fail',
        kind: 'bpmn_error',
        message: expect.stringContaining('Error end event fail threw error NO_STOCK'),
      }),
    ]);
    expect(await statuses(id)).toMatchObject({ outer: 'active', inner: 'active', fail: 'incident' });
  });

  it('given that incident, when an operator replays the instance, then the subprocesses run again from their start', async () => {
    const id = await start(t.api, 'sp_uncaught', { variables: { stock: 0 } });
    await completeOne('sp_uncaught-check', id);
    await waitForStatus(t.api, id, 'incident');
    const replay = await t.api.post(`/api/instances/${id}/replay`, {});
    expect(replay.status).toBe(200);
    expect(replay.body).toMatchObject({ instanceId: id, generation: 2 });
    const check = await completeOne('sp_uncaught-check', id, { stock: 5 });
    expect(check.idempotencyKey).toBe(`${id}/check/2`);
    await completeOne('sp_uncaught-after', id);
    await waitForStatus(t.api, id, 'completed');
    expect(await statuses(id)).toMatchObject({
      s: 'completed',
      outer: 'completed',
      inner: 'completed',
      is: 'completed',
      check: 'completed',
      fail: 'skipped',
      ie: 'completed',
      after: 'completed',
    });
  });
});

describe('compensation of a subprocess', () => {
  it('given a completed subprocess named by a compensation end event, then its inner steps are compensated newest first, and the step outside is not', async () => {
    const id = await start(t.api, 'sub_trip');
    for (const topic of ['sp-trip-c', 'sp-trip-a', 'sp-trip-b']) await completeOne(topic, id);
    await waitForStatus(t.api, id, 'compensating');
    const order: string[] = [];
    for (let i = 0; i < 2; i++) {
      const undo = await fetchOne(t.api, 'w', 'sp-undo');
      expect(await fetchTasks(t.api, 'w', ['sp-undo'])).toEqual([]); // one at a time
      order.push(undo.stepId);
      await complete(t.api, undo, 'w');
    }
    expect(order).toEqual(['undoB', 'undoA']);
    await waitForStatus(t.api, id, 'completed');
    expect(await statuses(id)).toMatchObject({
      a: 'compensated',
      b: 'compensated',
      c: 'completed',
      trip: 'completed',
      undoTrip: 'completed',
    });
    expect(await fetchTasks(t.api, 'w', ['sp-undo'])).toEqual([]);
  });

  it('given a compensation throw without activityRef inside a subprocess, then only the steps of that subprocess are compensated', async () => {
    const id = await start(t.api, 'sub_inner_saga');
    await completeOne('sp-inner-c', id);
    await completeOne('sp-inner-a', id);
    const undo = await fetchOne(t.api, 'w', 'sp-inner-undo');
    expect(undo.stepId).toBe('undoA');
    await complete(t.api, undo, 'w');
    await waitForStatus(t.api, id, 'completed');
    expect(await fetchTasks(t.api, 'w', ['sp-inner-undo'])).toEqual([]);
    expect(await statuses(id)).toMatchObject({
      c: 'completed',
      a: 'compensated',
      undoHere: 'completed',
      sub: 'completed',
      e: 'completed',
    });
  });
});
