// Drills where workers die, go deaf or misbehave (the drill numbers of docs/RELIABILITY.md): a real
// runtime node and real SDK worker processes on one database; each drill asserts
// history and the ledger, then runs the invariant checker.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { singleTaskBpmn } from '../support/bpmn.ts';
import type { TestDatabase } from '../support/db.ts';
import { startFaultProxy, type FaultProxy } from '../support/fault-proxy.ts';
import { deploy, start, waitForStatus } from '../support/flows.ts';
import { apiClient, type ApiClient } from '../support/server.ts';
import { killAll, startNode, startWorker, type RuntimeNode } from './harness.ts';
import { chaosDatabase, expectInvariants, history, kinds, ledgerOf } from './support.ts';

let db: TestDatabase;
let node: RuntimeNode;
let api: ApiClient;
let proxy: FaultProxy | undefined;

beforeAll(async () => {
  db = await chaosDatabase();
  // Retries come back after 300 ms, then 600 ms: long enough to see an early attempt.
  node = await startNode(db.url, { retryBackoffMs: 300 });
  api = apiClient(node.url);
}, 90_000);
afterEach(async () => {
  await killAll();
  await proxy?.close();
  proxy = undefined;
  node = node.alive() ? node : await startNode(db.url, { retryBackoffMs: 300 });
  api = apiClient(node.url);
});
afterAll(async () => {
  await killAll();
  await db.drop();
});

const base = () => ({ baseUrl: node.url, databaseUrl: db.url });

describe('chaos drills: workers', () => {
  it('drill 1: given a worker SIGKILLed while executing a task, then another worker completes it after the lock expires, applied once', async () => {
    await deploy(api, singleTaskBpmn('d1', 'd1'));
    const id = await start(api, 'd1');
    const doomed = startWorker({ ...base(), workerId: 'd1-doomed', topics: ['d1'], lockDurationMs: 1_000, holdMs: 60_000 });
    await doomed.waitForLine(/^locked /);
    await doomed.kill();
    const heir = startWorker({ ...base(), workerId: 'd1-heir', topics: ['d1'], lockDurationMs: 5_000 });
    const done = await waitForStatus(api, id, 'completed', 20_000);
    expect(done.variables).toEqual({ work_by: 'd1-heir' });
    const events = await history(db, id);
    expect(kinds(events, 'task:locked').map((e) => [e.data.workerId, e.attempt])).toEqual([
      ['d1-doomed', 1],
      ['d1-heir', 2],
    ]);
    expect(kinds(events, 'task:lock_expired')).toHaveLength(1);
    expect(kinds(events, 'task:completed').map((e) => e.data.workerId)).toEqual(['d1-heir']);
    // The doomed worker died before its side effect: the heir's attempt applied it, once.
    expect((await ledgerOf(db, id)).map((a) => [a.worker_id, a.attempt, a.outcome])).toEqual([['d1-heir', 2, 'applied']]);
    expect(heir.alive()).toBe(true);
    await expectInvariants(db);
  }, 60_000);

  it('drill 9: given a worker whose side effect succeeds but which dies before complete, then the retry is short-circuited by the idempotency key', async () => {
    await deploy(api, singleTaskBpmn('d9', 'd9'));
    const id = await start(api, 'd9');
    const doomed = startWorker(
      { ...base(), workerId: 'd9-doomed', topics: ['d9'], lockDurationMs: 1_000 },
      'task:after-side-effect:crash',
    );
    await doomed.exited;
    expect(doomed.child.signalCode).toBe('SIGKILL');
    expect(doomed.output()).toContain('baton-fault task:after-side-effect crash');
    startWorker({ ...base(), workerId: 'd9-heir', topics: ['d9'], lockDurationMs: 5_000 });
    const done = await waitForStatus(api, id, 'completed', 20_000);
    expect(done.variables).toEqual({ work_by: 'd9-heir' });
    expect((await ledgerOf(db, id)).map((a) => [a.worker_id, a.attempt, a.outcome])).toEqual([
      ['d9-doomed', 1, 'applied'],
      ['d9-heir', 2, 'already_applied'],
    ]);
    expect(kinds(await history(db, id), 'task:completed')).toHaveLength(1);
    await expectInvariants(db);
  }, 60_000);

  it('drill 3: given a worker whose heartbeats fail, then its lock expires, another takes over, and its late complete gets 409 and is recorded', async () => {
    await deploy(api, singleTaskBpmn('d3', 'd3'));
    const id = await start(api, 'd3');
    proxy = await startFaultProxy(node.url);
    proxy.addFault({ path: /\/extend-lock$/, when: 'before', times: 1_000 });
    const deaf = startWorker({
      ...base(),
      baseUrl: proxy.url,
      workerId: 'd3-deaf',
      topics: ['d3'],
      lockDurationMs: 1_000,
      holdUntilEnded: true,
      concurrency: 1,
    });
    await deaf.waitForLine(/^locked /);
    // One slot, busy: the deaf worker cannot fetch the task again once its lease is gone.
    startWorker({ ...base(), workerId: 'd3-heir', topics: ['d3'], lockDurationMs: 5_000 });
    const done = await waitForStatus(api, id, 'completed', 20_000);
    expect(done.variables).toEqual({ work_by: 'd3-heir' });
    await deaf.waitForLine(/^log task:lock_lost /, 20_000);
    expect(proxy.calls.filter((c) => c.path.endsWith('/complete')).map((c) => c.status)).toEqual([409]);
    const events = await history(db, id);
    expect(kinds(events, 'task:late_result').map((e) => [e.data.workerId, e.data.call])).toEqual([['d3-deaf', 'complete']]);
    expect(kinds(events, 'task:completed').map((e) => e.data.workerId)).toEqual(['d3-heir']);
    expect((await ledgerOf(db, id)).map((a) => [a.worker_id, a.outcome])).toEqual([
      ['d3-heir', 'applied'],
      ['d3-deaf', 'already_applied'],
    ]);
    await expectInvariants(db);
  }, 60_000);

  it('drill 7: given a task that fails twice, then no attempt is locked before its retry_at (backoff 300 ms, then 600 ms)', async () => {
    await deploy(api, singleTaskBpmn('d7', 'd7', { retries: 3 }));
    const id = await start(api, 'd7');
    startWorker({ ...base(), workerId: 'd7-w', topics: ['d7'], failTopics: { d7: 2 } });
    await waitForStatus(api, id, 'completed', 20_000);
    const events = (await history(db, id)).filter((e) => e.kind === 'task:failed' || e.kind === 'task:locked');
    expect(events.map((e) => e.kind)).toEqual(['task:locked', 'task:failed', 'task:locked', 'task:failed', 'task:locked']);
    const gaps = [1, 3].map((i) => {
      const failed = events[i]!;
      const next = events[i + 1]!;
      expect(new Date(next.at).getTime()).toBeGreaterThanOrEqual(new Date(failed.data.retryAt).getTime());
      return new Date(failed.data.retryAt).getTime() - new Date(failed.at).getTime();
    });
    expect(gaps).toEqual([300, 600]);
    expect((await ledgerOf(db, id)).map((a) => a.outcome)).toEqual(['applied', 'already_applied', 'already_applied']);
    await expectInvariants(db);
  }, 60_000);

  it('drill 13: given a worker whose wall clock is 5 hours ahead, then leases and history follow the server clock and nothing changes', async () => {
    await deploy(api, singleTaskBpmn('d13', 'd13'));
    const id = await start(api, 'd13');
    // Held three times longer than its lease: only heartbeats keep it, whatever the worker's clock says.
    startWorker({
      ...base(),
      workerId: 'd13-skewed',
      topics: ['d13'],
      lockDurationMs: 1_000,
      holdMs: 3_000,
      clockSkewMs: 5 * 3600_000,
    });
    const done = await waitForStatus(api, id, 'completed', 20_000);
    expect(done.variables).toEqual({ work_by: 'd13-skewed' });
    const events = await history(db, id);
    expect(kinds(events, 'task:lock_expired')).toHaveLength(0);
    expect(kinds(events, 'task:locked').map((e) => e.attempt)).toEqual([1]);
    const { rows } = await db.pool.query<{ now: Date }>('select now()');
    for (const e of events) expect(Math.abs(new Date(e.at).getTime() - rows[0]!.now.getTime())).toBeLessThan(60_000);
    const [attempt] = await ledgerOf(db, id);
    // The skew was real in the worker: its clock is ~5 h off the database's.
    expect(Math.round((attempt!.worker_clock.getTime() - attempt!.at.getTime()) / 3600_000)).toBe(5);
    await expectInvariants(db);
  }, 60_000);
});
