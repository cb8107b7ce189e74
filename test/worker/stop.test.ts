// stop(): fetch nothing new, let running handlers finish within the grace period,
// unlock what is still held. Nothing may stay locked by a stopped worker.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createWorker, WorkerStoppingError, type Worker, type WorkerOptions } from '../../runtime/worker/index.ts';
import { singleTaskBpmn } from '../support/bpmn.ts';
import { trackConnections } from '../support/connections.ts';
import { startFaultProxy, type FaultProxy } from '../support/fault-proxy.ts';
import { deploy, fetchTasks, historyKinds, start, waitForStatus } from '../support/flows.ts';
import { startTestServer, waitFor, type TestServer } from '../support/server.ts';
import { recordingLogger } from '../support/worker-log.ts';

let t: TestServer;
let connections: ReturnType<typeof trackConnections>;
let proxy: FaultProxy;
const workers: Worker[] = [];

beforeAll(async () => {
  t = await startTestServer();
  connections = trackConnections(t.server.http);
  proxy = await startFaultProxy(t.url);
});
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.stop()));
});
afterAll(async () => {
  await proxy.close();
  connections.destroyAll();
  await t.close();
});

function newWorker(opts: Partial<WorkerOptions> = {}): Worker {
  const w = createWorker({
    baseUrl: proxy.url,
    workerId: `stop-${workers.length}-${Date.now()}`,
    concurrency: 3,
    lockDurationMs: 30_000,
    pollWaitMs: 20_000,
    stopGraceMs: 500,
    log: recordingLogger(),
    ...opts,
  });
  workers.push(w);
  return w;
}

async function taskStates(topic: string): Promise<string[]> {
  const { rows } = await t.db.pool.query<{ state: string }>(`select state from external_tasks where topic = $1 order by id`, [
    topic,
  ]);
  return rows.map((r) => r.state);
}

function fetchesOf(workerId: string): number {
  return proxy.calls.filter((c) => c.path.endsWith('/fetch-and-lock') && c.body.workerId === workerId).length;
}

describe('worker stop', () => {
  it('given handlers that finish within the grace period, then stop() waits for them and their results are applied', async () => {
    await deploy(t.api, singleTaskBpmn('stop-finish', 'stop-finish'));
    const ids = await Promise.all([1, 2].map(() => start(t.api, 'stop-finish')));
    let started = 0;
    const w = newWorker({ stopGraceMs: 10_000 })
      .subscribe('stop-finish', async () => {
        started++;
        await new Promise((r) => setTimeout(r, 400));
        return { finished: true };
      })
      .start();
    await waitFor(async () => (started === 2 ? true : undefined));
    await w.stop();
    for (const id of ids) await waitForStatus(t.api, id, 'completed', 1_000);
    expect(await taskStates('stop-finish')).toEqual(['done', 'done']);
  });

  it('given handlers that outlive the grace period, then stop() aborts them, unlocks their tasks and drops their late results', async () => {
    await deploy(t.api, singleTaskBpmn('stop-hang', 'stop-hang'));
    const ids = await Promise.all([1, 2, 3].map(() => start(t.api, 'stop-hang')));
    const reasons: unknown[] = [];
    const release: (() => void)[] = [];
    const log = recordingLogger();
    const w = newWorker({ log })
      .subscribe('stop-hang', async (_task, ctx) => {
        ctx.signal.addEventListener('abort', () => reasons.push(ctx.signal.reason));
        // Ignores the signal on purpose: a stuck handler must not keep the task locked.
        await new Promise<void>((r) => release.push(r));
        return { late: true };
      })
      .start();
    await waitFor(async () => (release.length === 3 ? true : undefined));
    expect(await taskStates('stop-hang')).toEqual(['locked', 'locked', 'locked']);
    const fetchesBefore = fetchesOf(w.workerId);
    await w.stop();
    expect(await taskStates('stop-hang')).toEqual(['ready', 'ready', 'ready']);
    expect(reasons).toHaveLength(3);
    for (const r of reasons) expect(r).toBeInstanceOf(WorkerStoppingError);
    for (const r of release) r();
    await waitFor(async () => (log.count('task:result_dropped') === 3 ? true : undefined));
    expect(await taskStates('stop-hang')).toEqual(['ready', 'ready', 'ready']);
    expect(fetchesOf(w.workerId)).toBe(fetchesBefore);
    for (const id of ids) expect(await historyKinds(t.api, id)).toContain('task:unlocked');
    // Unlocked, not failed: the next worker gets them at once as a new attempt.
    const again = await fetchTasks(t.api, 'next', ['stop-hang'], { maxTasks: 5 });
    expect(again.map((x) => x.attempt).sort()).toEqual([2, 2, 2]);
  });

  it('given a worker parked in a long poll, then stop() returns at once and a task created afterwards is not locked by it', async () => {
    await deploy(t.api, singleTaskBpmn('stop-idle', 'stop-idle'));
    let ran = 0;
    const w = newWorker()
      .subscribe('stop-idle', async () => {
        ran++;
        return {};
      })
      .start();
    await waitFor(async () => (fetchesOf(w.workerId) === 1 ? true : undefined));
    const began = Date.now();
    await w.stop();
    expect(Date.now() - began).toBeLessThan(3_000);
    const id = await start(t.api, 'stop-idle');
    // The hang-up reaches the server asynchronously; a poll that locks in that instant unlocks at once.
    const task = await waitFor(async () => (await fetchTasks(t.api, 'other', ['stop-idle'], { maxTasks: 1 }))[0]);
    expect(task.instanceId).toBe(id);
    expect(ran).toBe(0);
    expect(fetchesOf(w.workerId)).toBe(1);
  });

  it('given stop() while the answer of a poll is arriving, then the worker reads it and unlocks its tasks without running them', async () => {
    await deploy(t.api, singleTaskBpmn('stop-arriving', 'stop-arriving'));
    proxy.addFault({ path: /\/fetch-and-lock$/, when: 'slow_body', times: 1, delayMs: 1_500 });
    let ran = 0;
    const log = recordingLogger();
    const w = newWorker({ log })
      .subscribe('stop-arriving', async () => {
        ran++;
        return {};
      })
      .start();
    await waitFor(async () => (fetchesOf(w.workerId) === 1 ? true : undefined));
    const id = await start(t.api, 'stop-arriving');
    // The server has answered with the locked task; its body is still on the way.
    const slow = await waitFor(async () => proxy.calls.find((c) => c.fate === 'slow_body' && c.body.workerId === w.workerId));
    expect(slow.status).toBe(200);
    expect(await taskStates('stop-arriving')).toEqual(['locked']);
    await waitFor(async () => (log.count('fetch:answered') >= 1 ? true : undefined));
    await w.stop();
    expect(ran).toBe(0);
    expect(await taskStates('stop-arriving')).toEqual(['ready']);
    expect(await historyKinds(t.api, id)).toContain('task:unlocked');
  });

  it('given stop() is called twice, then both calls resolve and a stopped worker refuses to start again', async () => {
    const w = newWorker().subscribe('stop-twice', async () => ({}));
    w.start();
    await Promise.all([w.stop(), w.stop()]);
    expect(() => w.start()).toThrow(/stopped/);
  });
});
