import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBpmn, type NodeSpec, type FlowSpec } from '../../support/bpmn.ts';
import { complete, deploy, fetchOne, fetchTasks, historyKinds, start, waitForStatus } from '../../support/flows.ts';
import { startTestServer, waitFor, type TestServer } from '../../support/server.ts';

let t: TestServer;

// start -> book-a -> book-b -> book-c -> last -> end; each book-x has an undo-x handler.
function sagaProcess(id: string, last: NodeSpec, tail: FlowSpec[] = []): string {
  const nodes: NodeSpec[] = [{ id: 's', type: 'startEvent' }];
  const flows: FlowSpec[] = [];
  let previous = 's';
  for (const x of ['a', 'b', 'c']) {
    nodes.push(
      { id: `book_${x}`, type: 'serviceTask', topic: `${id}-book-${x}` },
      { id: `comp_${x}`, type: 'compensationBoundary', attachedTo: `book_${x}`, handler: `undo_${x}` },
      { id: `undo_${x}`, type: 'serviceTask', topic: `${id}-undo`, forCompensation: true },
    );
    flows.push({ from: previous, to: `book_${x}` });
    previous = `book_${x}`;
  }
  nodes.push(last, { id: 'e', type: 'endEvent' });
  flows.push({ from: previous, to: last.id }, ...(tail.length ? tail : [{ from: last.id, to: 'e' }]));
  return buildBpmn(id, nodes, flows);
}

beforeAll(async () => {
  t = await startTestServer({ sweepIntervalMs: 50 });
  await deploy(
    t.api,
    sagaProcess('trip', { id: 'pay', type: 'serviceTask', topic: 'trip-pay', retries: 1, onExhausted: 'compensate' }),
  );
  await deploy(t.api, sagaProcess('undo-all', { id: 'rollback', type: 'compensationThrow' }));
  await deploy(t.api, sagaProcess('undo-one', { id: 'rollback', type: 'compensationThrow', activityRef: 'book_a' }));
});
afterAll(async () => {
  await t.close();
});

async function bookAll(prefix: string, id: string): Promise<void> {
  for (const x of ['a', 'b', 'c']) {
    const task = await fetchOne(t.api, 'booker', `${prefix}-book-${x}`);
    expect(task.instanceId).toBe(id);
    expect((await complete(t.api, task, 'booker')).status).toBe(204);
  }
}

/** Works the undo topic one task at a time; answers the steps in the order they were undone. */
async function undoAll(prefix: string, count: number, opts: { killFirst?: boolean } = {}): Promise<string[]> {
  const order: string[] = [];
  for (let i = 0; i < count; i++) {
    // Only one handler may be open at a time.
    const open = await t.db.pool.query(
      `select count(*)::int as n from external_tasks where topic = $1 and state in ('ready', 'locked')`,
      [`${prefix}-undo`],
    );
    expect(open.rows[0].n).toBe(1);
    let task = await fetchOne(t.api, 'undoer', `${prefix}-undo`, opts.killFirst && i === 0 ? 150 : 30_000);
    if (opts.killFirst && i === 0) {
      // The first undoer dies holding the lock: the lease expires and another worker takes the same handler task.
      const retried = await fetchOne(t.api, 'undoer-2', `${prefix}-undo`);
      expect(retried.id).toBe(task.id);
      expect(retried.attempt).toBe(2);
      expect((await complete(t.api, task, 'undoer')).status).toBe(409);
      task = retried;
    }
    order.push(task.stepId);
    expect((await complete(t.api, task, task.attempt === 2 ? 'undoer-2' : 'undoer')).status).toBe(204);
  }
  return order;
}

async function compensationEvents(id: string): Promise<string[]> {
  const history = await t.api.get(`/api/instances/${id}/history`);
  return history.body.items
    .filter((e: { kind: string }) => e.kind === 'compensation:completed')
    .map((e: { stepId: string }) => e.stepId);
}

describe('compensation', () => {
  it('given three completed steps and a fourth that fails for good with onExhausted compensate, then the handlers run one at a time in reverse order, each once, even when a handler worker dies', async () => {
    const id = await start(t.api, 'trip');
    await bookAll('trip', id);
    for (let attempt = 0; attempt < 2; attempt++) {
      const pay = await fetchOne(t.api, 'payer', 'trip-pay');
      await t.api.post(`/api/external-tasks/${pay.id}/failure`, {
        workerId: 'payer',
        lockToken: pay.lockToken,
        errorMessage: 'card declined',
      });
    }
    await waitForStatus(t.api, id, 'compensating');
    expect(await undoAll('trip', 3, { killFirst: true })).toEqual(['undo_c', 'undo_b', 'undo_a']);
    const done = await waitForStatus(t.api, id, 'compensated');
    const status = Object.fromEntries(done.steps.map((s: { stepId: string; status: string }) => [s.stepId, s.status]));
    expect(status).toMatchObject({
      book_a: 'compensated',
      book_b: 'compensated',
      book_c: 'compensated',
      pay: 'failed',
      undo_a: 'completed',
    });
    expect(done.incidents).toEqual([]);
    expect(await compensationEvents(id)).toEqual(['book_c', 'book_b', 'book_a']);
    expect((await historyKinds(t.api, id)).filter((k) => k === 'instance:compensated')).toHaveLength(1);
    const rows = await t.db.pool.query(
      `select host_step_id, position, state from compensations where instance_id = $1 order by position`,
      [id],
    );
    expect(rows.rows).toEqual([
      { host_step_id: 'book_c', position: 1, state: 'done' },
      { host_step_id: 'book_b', position: 2, state: 'done' },
      { host_step_id: 'book_a', position: 3, state: 'done' },
    ]);
  });

  it('given a Camunda worker that reports the failure with retries 0, then the saga runs too', async () => {
    const id = await start(t.api, 'trip');
    await bookAll('trip', id);
    const fetched = await t.api.post('/engine-rest/external-task/fetchAndLock', {
      workerId: 'camunda-payer',
      maxTasks: 1,
      topics: [{ topicName: 'trip-pay', lockDuration: 10_000 }],
    });
    expect(fetched.status).toBe(200);
    const [task] = fetched.body as { id: string }[];
    const failed = await t.api.post(`/engine-rest/external-task/${task?.id}/failure`, {
      workerId: 'camunda-payer',
      errorMessage: 'declined',
      retries: 0,
    });
    expect(failed.status).toBe(204);
    await waitForStatus(t.api, id, 'compensating');
    expect(await undoAll('trip', 3)).toEqual(['undo_c', 'undo_b', 'undo_a']);
    await waitForStatus(t.api, id, 'compensated');
  });

  it('given a step that never completed, then its handler never runs', async () => {
    const id = await start(t.api, 'trip');
    const a = await fetchOne(t.api, 'booker', 'trip-book-a');
    await complete(t.api, a, 'booker');
    const b = await fetchOne(t.api, 'booker', 'trip-book-b');
    const canceled = await t.api.post(`/api/instances/${id}/cancel`);
    expect(canceled.status).toBe(200);
    expect((await complete(t.api, b, 'booker')).status).toBe(409);
    expect(await fetchTasks(t.api, 'undoer', ['trip-undo'])).toEqual([]);
  });

  it('given a compensation throw event, then every completed step is undone newest first and the path goes on to complete', async () => {
    const id = await start(t.api, 'undo-all');
    await bookAll('undo-all', id);
    await waitForStatus(t.api, id, 'compensating');
    expect(await undoAll('undo-all', 3)).toEqual(['undo_c', 'undo_b', 'undo_a']);
    const done = await waitForStatus(t.api, id, 'completed');
    expect(done.steps.find((s: { stepId: string }) => s.stepId === 'rollback').status).toBe('completed');
    expect(await compensationEvents(id)).toEqual(['book_c', 'book_b', 'book_a']);
  });

  it('given a compensation throw naming one activity, then only that step is undone', async () => {
    const id = await start(t.api, 'undo-one');
    await bookAll('undo-one', id);
    expect(await undoAll('undo-one', 1)).toEqual(['undo_a']);
    await waitForStatus(t.api, id, 'completed');
    expect(await compensationEvents(id)).toEqual(['book_a']);
    await waitFor(
      async () => ((await fetchTasks(t.api, 'undoer', ['undo-one-undo'])).length === 0 ? true : undefined),
      2000,
      'no more handlers',
    );
  });

  it('given a handler that fails for good, then an incident holds the saga and the remaining handlers wait until it is retried', async () => {
    const id = await start(t.api, 'trip');
    await bookAll('trip', id);
    for (let attempt = 0; attempt < 2; attempt++) {
      const pay = await fetchOne(t.api, 'payer', 'trip-pay');
      await t.api.post(`/api/external-tasks/${pay.id}/failure`, {
        workerId: 'payer',
        lockToken: pay.lockToken,
        errorMessage: 'declined',
      });
    }
    for (let attempt = 0; attempt < 4; attempt++) {
      const undo = await fetchOne(t.api, 'undoer', 'trip-undo');
      expect(undo.stepId).toBe('undo_c');
      await t.api.post(`/api/external-tasks/${undo.id}/failure`, {
        workerId: 'undoer',
        lockToken: undo.lockToken,
        errorMessage: 'hotel api down',
      });
    }
    const stuck = await waitForStatus(t.api, id, 'incident');
    expect(stuck.incidents).toEqual([expect.objectContaining({ stepId: 'undo_c', kind: 'task_failed' })]);
    expect(await fetchTasks(t.api, 'undoer', ['trip-undo'])).toEqual([]);
    await t.api.post(`/api/incidents/${stuck.incidents[0].id}/retry`, { retries: 1 });
    await waitForStatus(t.api, id, 'compensating');
    expect(await undoAll('trip', 3)).toEqual(['undo_c', 'undo_b', 'undo_a']);
    await waitForStatus(t.api, id, 'compensated');
  });
});
