import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { singleTaskBpmn } from '../../support/bpmn.ts';
import { complete, deploy, fetchOne, fetchTasks, historyKinds, instanceOf, start, waitForStatus } from '../../support/flows.ts';
import { startTestServer, waitFor, type TestServer } from '../../support/server.ts';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({ engine: { retryBackoffMs: 100 } });
  await deploy(t.api, singleTaskBpmn('one', 'one-task', { retries: 2 }));
});
afterAll(async () => {
  await t.close();
});

describe('external task lifecycle', () => {
  it('given a locked task, when its holder completes it, then the instance completes with the merged variables', async () => {
    const id = await start(t.api, 'one', { variables: { a: 1 } });
    const task = await fetchOne(t.api, 'w1', 'one-task');
    expect(task).toMatchObject({ instanceId: id, stepId: 'work', attempt: 1, retriesLeft: 2, variables: { a: 1 } });
    expect(task.idempotencyKey).toBe(`${id}/work/1`);
    expect((await complete(t.api, task, 'w1', { b: 2 })).status).toBe(204);
    const done = await waitForStatus(t.api, id, 'completed');
    expect(done.variables).toEqual({ a: 1, b: 2 });
    expect(done.steps.map((s: { stepId: string; status: string }) => `${s.stepId}:${s.status}`)).toEqual([
      'start:completed',
      'work:completed',
      'end:completed',
    ]);
  });

  it('given a completed task, when the same holder completes again with another body, then 204 and nothing changes', async () => {
    const id = await start(t.api, 'one');
    const task = await fetchOne(t.api, 'w1', 'one-task');
    expect((await complete(t.api, task, 'w1', { first: true })).status).toBe(204);
    const before = await instanceOf(t.api, id);
    const again = await complete(t.api, task, 'w1', { second: true });
    expect(again.status).toBe(204);
    const after = await instanceOf(t.api, id);
    expect(after.revision).toBe(before.revision);
    expect(after.variables).toEqual({ first: true });
    expect((await historyKinds(t.api, id)).filter((k) => k === 'task:completed')).toHaveLength(1);
  });

  it('given a completed task, when its holder then reports a failure or a BPMN error for it, then 409 and nothing changes', async () => {
    const id = await start(t.api, 'one');
    const task = await fetchOne(t.api, 'w1', 'one-task');
    expect((await complete(t.api, task, 'w1')).status).toBe(204);
    const before = await instanceOf(t.api, id);
    const failure = await t.api.post(`/api/external-tasks/${task.id}/failure`, {
      workerId: 'w1',
      lockToken: task.lockToken,
      errorMessage: 'late',
    });
    const bpmnError = await t.api.post(`/api/external-tasks/${task.id}/bpmn-error`, {
      workerId: 'w1',
      lockToken: task.lockToken,
      errorCode: 'LATE',
    });
    expect([failure.status, bpmnError.status]).toEqual([409, 409]);
    const after = await instanceOf(t.api, id);
    expect(after).toMatchObject({ status: 'completed', revision: before.revision });
  });

  it('given an expired lock re-taken by another worker, when the first worker completes, then 409 LockLost, only the second result counts and the late result is in history', async () => {
    const id = await start(t.api, 'one');
    const first = await fetchOne(t.api, 'slow', 'one-task', 100);
    await waitFor(async () => ((await t.server.sweeper.sweep()) > 0 ? true : undefined), 5000, 'the lease to expire');
    const second = await fetchOne(t.api, 'fast', 'one-task');
    expect(second.id).toBe(first.id);
    expect(second.attempt).toBe(2);
    expect(second.lockToken).not.toBe(first.lockToken);
    const late = await complete(t.api, first, 'slow', { winner: 'slow' });
    expect(late.status).toBe(409);
    expect(late.body.type).toBe('LockLost');
    expect((await complete(t.api, second, 'fast', { winner: 'fast' })).status).toBe(204);
    const done = await waitForStatus(t.api, id, 'completed');
    expect(done.variables).toEqual({ winner: 'fast' });
    const history = (await t.api.get(`/api/instances/${id}/history`)).body.items as { kind: string; data: any }[];
    const lateEvent = history.find((e) => e.kind === 'task:late_result');
    expect(lateEvent?.data).toMatchObject({ workerId: 'slow', call: 'complete' });
    expect(lateEvent?.data.payloadBytes).toBeGreaterThan(0);
    expect(history.map((e) => e.kind)).toContain('task:lock_expired');
  });

  it('given a failure with retries left, then the task comes back after the backoff with the attempt incremented; when retries run out, an incident; a retry of it continues to completion', async () => {
    const id = await start(t.api, 'one');
    const a1 = await fetchOne(t.api, 'w', 'one-task');
    const failedAt = Date.now();
    const f1 = await t.api.post(`/api/external-tasks/${a1.id}/failure`, {
      workerId: 'w',
      lockToken: a1.lockToken,
      errorMessage: 'boom',
      errorDetails: 'stack',
    });
    expect(f1.status).toBe(204);
    // The same failure again is a no-op.
    expect(
      (await t.api.post(`/api/external-tasks/${a1.id}/failure`, { workerId: 'w', lockToken: a1.lockToken, errorMessage: 'boom' }))
        .status,
    ).toBe(204);
    // The next attempt is held back by the backoff, measured on the database clock.
    const backoff = await t.db.pool.query(
      `select extract(epoch from t.retry_at - e.at) * 1000 as ms from external_tasks t
         join events e on e.task_id = t.id and e.kind = 'task:failed' where t.id = $1 order by e.seq limit 1`,
      [a1.id],
    );
    expect(Number(backoff.rows[0].ms)).toBeGreaterThanOrEqual(99);
    const a2 = await fetchOne(t.api, 'w', 'one-task');
    expect(Date.now() - failedAt).toBeGreaterThanOrEqual(90);
    expect(a2).toMatchObject({ id: a1.id, attempt: 2, retriesLeft: 1 });
    await t.api.post(`/api/external-tasks/${a2.id}/failure`, { workerId: 'w', lockToken: a2.lockToken, errorMessage: 'boom' });
    const a3 = await fetchOne(t.api, 'w', 'one-task');
    expect(a3).toMatchObject({ attempt: 3, retriesLeft: 0 });
    await t.api.post(`/api/external-tasks/${a3.id}/failure`, {
      workerId: 'w',
      lockToken: a3.lockToken,
      errorMessage: 'final boom',
    });
    const stuck = await waitForStatus(t.api, id, 'incident');
    expect(stuck.incidents).toEqual([expect.objectContaining({ stepId: 'work', kind: 'task_failed', taskId: a1.id })]);
    expect(stuck.incidents[0].message).toContain('final boom');
    expect(await fetchTasks(t.api, 'w', ['one-task'])).toEqual([]);

    const retried = await t.api.post(`/api/incidents/${stuck.incidents[0].id}/retry`, { retries: 1 });
    expect(retried.status).toBe(200);
    expect(retried.body.instanceStatus).toBe('running');
    expect((await t.api.post(`/api/incidents/${stuck.incidents[0].id}/retry`, {})).status).toBe(409);
    const a4 = await fetchOne(t.api, 'w', 'one-task');
    expect(a4).toMatchObject({ attempt: 4, retriesLeft: 1 });
    expect((await complete(t.api, a4, 'w')).status).toBe(204);
    await waitForStatus(t.api, id, 'completed');
  });

  it('given a holder, when it extends its lock, then the lease moves; anyone else gets 409', async () => {
    await start(t.api, 'one');
    const task = await fetchOne(t.api, 'w', 'one-task', 1000);
    const ext = await t.api.post(`/api/external-tasks/${task.id}/extend-lock`, {
      workerId: 'w',
      lockToken: task.lockToken,
      lockDurationMs: 60_000,
    });
    expect(ext.status).toBe(204);
    const detail = await instanceOf(t.api, task.instanceId);
    expect(Date.parse(detail.tasks[0].lockExpiresAt) - Date.now()).toBeGreaterThan(30_000);
    const other = await t.api.post(`/api/external-tasks/${task.id}/extend-lock`, {
      workerId: 'x',
      lockToken: task.lockToken,
      lockDurationMs: 60_000,
    });
    expect(other.status).toBe(409);
    expect((await complete(t.api, task, 'w')).status).toBe(204);
  });

  it('given a holder, when it unlocks, then another worker can fetch the task at once without using a retry', async () => {
    await start(t.api, 'one');
    const task = await fetchOne(t.api, 'w', 'one-task');
    expect((await t.api.post(`/api/external-tasks/${task.id}/unlock`, { workerId: 'w', lockToken: task.lockToken })).status).toBe(
      204,
    );
    const again = await fetchOne(t.api, 'w2', 'one-task');
    expect(again).toMatchObject({ id: task.id, retriesLeft: 2 });
    expect((await complete(t.api, task, 'w')).status).toBe(409);
    expect((await complete(t.api, again, 'w2')).status).toBe(204);
  });

  it('given a canceled instance, then its task cannot be fetched and a late complete gets 409', async () => {
    const id = await start(t.api, 'one');
    const task = await fetchOne(t.api, 'w', 'one-task');
    const canceled = await t.api.post(`/api/instances/${id}/cancel`);
    expect(canceled.status).toBe(200);
    expect(canceled.body.status).toBe('canceled');
    expect((await complete(t.api, task, 'w')).status).toBe(409);
    const after = await instanceOf(t.api, id);
    expect(after.status).toBe('canceled');
    expect(after.tasks).toEqual([]);
    expect((await t.api.post(`/api/instances/${id}/cancel`)).status).toBe(409);
  });

  it('given a BPMN error and no boundary, then an incident names the error code', async () => {
    const id = await start(t.api, 'one');
    const task = await fetchOne(t.api, 'w', 'one-task');
    const res = await t.api.post(`/api/external-tasks/${task.id}/bpmn-error`, {
      workerId: 'w',
      lockToken: task.lockToken,
      errorCode: 'CARD_DECLINED',
    });
    expect(res.status).toBe(204);
    const repeat = await t.api.post(`/api/external-tasks/${task.id}/bpmn-error`, {
      workerId: 'w',
      lockToken: task.lockToken,
      errorCode: 'CARD_DECLINED',
    });
    expect(repeat.status).toBe(204);
    const stuck = await waitForStatus(t.api, id, 'incident');
    expect(stuck.incidents).toHaveLength(1);
    expect(stuck.incidents[0]).toMatchObject({ kind: 'bpmn_error', details: { errorCode: 'CARD_DECLINED' } });
    await t.api.post(`/api/incidents/${stuck.incidents[0].id}/retry`);
    const again = await fetchOne(t.api, 'w', 'one-task');
    expect((await complete(t.api, again, 'w')).status).toBe(204);
    await waitForStatus(t.api, id, 'completed');
  });
});

describe('a failure that names its retries and retry timeout', () => {
  beforeAll(async () => {
    await deploy(t.api, singleTaskBpmn('told', 'told-task', { retries: 2 }));
  });

  const fail = (task: { id: string; lockToken: string }, extra: Record<string, unknown>) =>
    t.api.post(`/api/external-tasks/${task.id}/failure`, {
      workerId: 'w',
      lockToken: task.lockToken,
      errorMessage: 'boom',
      ...extra,
    });

  it('given a task with retries left, when its holder fails it with retries 0, then the instance is in an incident at once', async () => {
    const id = await start(t.api, 'told');
    const task = await fetchOne(t.api, 'w', 'told-task');
    expect((await fail(task, { retries: 0 })).status).toBe(204);
    const stuck = await instanceOf(t.api, id);
    expect(stuck.status).toBe('incident');
    expect(stuck.incidents).toEqual([expect.objectContaining({ stepId: 'work', kind: 'task_failed', taskId: task.id })]);
    expect(stuck.incidents[0].message).toContain('set retries to 0');
    expect(await fetchTasks(t.api, 'w', ['told-task'])).toEqual([]);
  });

  it('given a failure with retries 3 and retryTimeoutMs 1500, then nothing is fetchable before the timeout and the task comes back after it with 2 retries left', async () => {
    await start(t.api, 'told');
    const task = await fetchOne(t.api, 'w', 'told-task');
    const failedAt = Date.now();
    expect((await fail(task, { retries: 3, retryTimeoutMs: 1500 })).status).toBe(204);
    expect(await fetchTasks(t.api, 'w', ['told-task'])).toEqual([]);
    const { rows } = await t.db.pool.query(
      `select extract(epoch from t.retry_at - e.at) * 1000 as ms from external_tasks t
         join events e on e.task_id = t.id and e.kind = 'task:failed' where t.id = $1`,
      [task.id],
    );
    expect(Number(rows[0].ms)).toBeGreaterThanOrEqual(1499);
    const again = await fetchOne(t.api, 'w', 'told-task');
    expect(Date.now() - failedAt).toBeGreaterThanOrEqual(1400);
    expect(again).toMatchObject({ id: task.id, attempt: 2, retriesLeft: 2 });
    expect((await complete(t.api, again, 'w')).status).toBe(204);
  });

  it('given bad retries or retryTimeoutMs, then 400 with type, message and details, and the task stays locked by its holder', async () => {
    await start(t.api, 'told');
    const task = await fetchOne(t.api, 'w', 'told-task');
    const before = await t.db.pool.query('select state, retries_left, retry_at, lock_token from external_tasks where id = $1', [
      task.id,
    ]);
    for (const bad of [{ retries: -1 }, { retries: '2' }, { retries: 1.5 }, { retryTimeoutMs: -5 }, { retryTimeoutMs: '100' }]) {
      const res = await fail(task, bad);
      expect(res.status, JSON.stringify(bad)).toBe(400);
      expect(res.body).toMatchObject({ type: 'ValidationError', message: expect.any(String), details: expect.any(Array) });
      expect(res.body.details.length).toBeGreaterThan(0);
    }
    const after = await t.db.pool.query('select state, retries_left, retry_at, lock_token from external_tasks where id = $1', [
      task.id,
    ]);
    expect(after.rows).toEqual(before.rows);
    expect(await historyKinds(t.api, task.instanceId)).not.toContain('task:failed');
    expect((await complete(t.api, task, 'w')).status).toBe(204);
  });
});
