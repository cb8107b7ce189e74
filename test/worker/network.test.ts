// The network fails around calls: results are repeated until applied (once), an unreachable
// server is retried with back-off instead of a spin, and a lost lock ends the reporting.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createWorker, type Worker, type WorkerOptions } from '../../runtime/worker/index.ts';
import { singleTaskBpmn } from '../support/bpmn.ts';
import { trackConnections } from '../support/connections.ts';
import { startFaultProxy, type FaultProxy } from '../support/fault-proxy.ts';
import { deploy, historyKinds, start, waitForStatus } from '../support/flows.ts';
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
    workerId: `net-${workers.length}-${Date.now()}`,
    concurrency: 2,
    lockDurationMs: 30_000,
    pollWaitMs: 2_000,
    stopGraceMs: 500,
    log: recordingLogger(),
    ...opts,
  });
  workers.push(w);
  return w;
}

function callsTo(instanceTaskPath: RegExp) {
  return proxy.calls.filter((c) => instanceTaskPath.test(c.path));
}

describe('worker over a failing network', () => {
  it('given complete calls whose answers are lost or that never arrive, then the worker repeats them and the task completes once', async () => {
    await deploy(t.api, singleTaskBpmn('net-complete', 'net-complete'));
    proxy.addFault({ path: /\/complete$/, when: 'before', times: 1 });
    proxy.addFault({ path: /\/complete$/, when: 'after', times: 2 });
    let runs = 0;
    const log = recordingLogger();
    newWorker({ log })
      .subscribe('net-complete', async () => {
        runs++;
        return { paid: 10 };
      })
      .start();
    const id = await start(t.api, 'net-complete');
    const done = await waitForStatus(t.api, id, 'completed', 20_000);
    expect(done.variables).toEqual({ paid: 10 });
    await waitFor(async () => (log.count('task:completed') === 1 ? true : undefined));
    expect(runs).toBe(1);
    const completes = callsTo(/\/complete$/).filter((c) => c.body.variables?.paid === 10);
    expect(completes.map((c) => c.fate)).toEqual(['dropped_before', 'dropped_after', 'dropped_after', 'forwarded']);
    expect(completes.map((c) => c.status)).toEqual([undefined, 204, 204, 204]);
    const history = (await t.api.get(`/api/instances/${id}/history`)).body.items as { kind: string; stepId?: string }[];
    expect(history.filter((e) => e.kind === 'task:completed')).toHaveLength(1);
    expect(history.filter((e) => e.kind === 'step:completed' && e.stepId === 'work')).toHaveLength(1);
    expect(history.map((e) => e.kind)).not.toContain('task:late_result');
  });

  it('given a complete call the server applies but never answers, then the worker gives up waiting after callTimeoutMs and repeats it', async () => {
    await deploy(t.api, singleTaskBpmn('net-hold', 'net-hold'));
    proxy.addFault({ path: /\/complete$/, when: 'hold', times: 1 });
    const log = recordingLogger();
    newWorker({ log, callTimeoutMs: 500 })
      .subscribe('net-hold', async () => ({ held: true }))
      .start();
    const id = await start(t.api, 'net-hold');
    await waitForStatus(t.api, id, 'completed', 20_000);
    await waitFor(async () => (log.count('task:completed') === 1 ? true : undefined));
    const completes = callsTo(/\/complete$/).filter((c) => c.body.variables?.held);
    expect(completes.map((c) => c.fate)).toEqual(['held_after', 'forwarded']);
    expect(log.records.find((r) => r.event === 'task:report_retry')?.fields.error).toMatch(/within 500 ms/);
    expect((await historyKinds(t.api, id)).filter((k) => k === 'task:completed')).toHaveLength(1);
  });

  it('given a failure call whose answer is lost, then it is repeated and counts as one failure', async () => {
    await deploy(t.api, singleTaskBpmn('net-fail', 'net-fail', { retries: 0 }));
    proxy.addFault({ path: /\/failure$/, when: 'after', times: 1 });
    newWorker()
      .subscribe('net-fail', async () => {
        throw new Error('boom');
      })
      .start();
    const id = await start(t.api, 'net-fail');
    await waitForStatus(t.api, id, 'incident', 20_000);
    const kinds = await historyKinds(t.api, id);
    expect(kinds.filter((k) => k === 'task:failed')).toHaveLength(1);
    expect(kinds.filter((k) => k === 'incident:created')).toHaveLength(1);
  });

  it('given fetches that fail, then the worker backs off and recovers when the server answers again', async () => {
    await deploy(t.api, singleTaskBpmn('net-fetch', 'net-fetch'));
    proxy.addFault({ path: /\/fetch-and-lock$/, when: 'before', times: 3 });
    const log = recordingLogger();
    newWorker({ log, backoff: { minMs: 50, maxMs: 200 } })
      .subscribe('net-fetch', async () => ({ fetched: true }))
      .start();
    const id = await start(t.api, 'net-fetch');
    await waitForStatus(t.api, id, 'completed', 20_000);
    expect(log.count('fetch:failed')).toBe(3);
  });

  it('given no server at all, then the worker retries with growing delays instead of spinning, and stops promptly', async () => {
    const log = recordingLogger();
    const w = newWorker({ baseUrl: 'http://127.0.0.1:9', log, backoff: { minMs: 100, maxMs: 800 } })
      .subscribe('net-none', async () => ({}))
      .start();
    await waitFor(async () => (log.count('fetch:failed') >= 4 ? true : undefined), 15_000);
    const began = Date.now();
    await w.stop();
    expect(Date.now() - began).toBeLessThan(1_000);
    // Without back-off a refused connection fails again within a millisecond or two.
    const failures = log.records.filter((r) => r.event === 'fetch:failed').map((r) => r.at);
    const gaps = failures.slice(1).map((at, i) => at - failures[i]!);
    for (const gap of gaps) expect(gap).toBeGreaterThanOrEqual(45);
  });

  it('given the lock is lost before the result is sent, then complete is refused once and not repeated', async () => {
    await deploy(t.api, singleTaskBpmn('net-lost', 'net-lost'));
    const log = recordingLogger();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let locked = false;
    newWorker({ log })
      .subscribe('net-lost', async () => {
        locked = true;
        await gate;
        return { late: true };
      })
      .start();
    const id = await start(t.api, 'net-lost');
    await waitFor(async () => (locked ? true : undefined));
    expect((await t.api.post(`/api/instances/${id}/cancel`)).status).toBe(200);
    release();
    await waitFor(async () => (log.count('task:lock_lost') > 0 ? true : undefined));
    expect(callsTo(/\/complete$/).filter((c) => c.body.variables?.late)).toHaveLength(1);
    expect((await t.api.get(`/api/instances/${id}`)).body.status).toBe('canceled');
  });

  it.each([
    ['bearer', { bearer: 'tok-123' }, 'Bearer tok-123'],
    ['basic', { username: 'worker', password: 's3cret' }, `Basic ${Buffer.from('worker:s3cret').toString('base64')}`],
  ] as const)('given %s auth, then every call carries the Authorization header', async (name, auth, header) => {
    const topic = `net-auth-${name}`;
    await deploy(t.api, singleTaskBpmn(topic, topic));
    const w = newWorker({ auth })
      .subscribe(topic, async () => ({ authed: true }))
      .start();
    const id = await start(t.api, topic);
    await waitForStatus(t.api, id, 'completed', 20_000);
    const mine = proxy.calls.filter((c) => c.body?.workerId === w.workerId);
    expect(mine.some((c) => c.path.endsWith('/complete'))).toBe(true);
    expect(mine.length).toBeGreaterThanOrEqual(2);
    for (const c of mine) expect(c.authorization).toBe(header);
  });

  it('given ctx.progress, then the report goes to the progress route with the lock proof and the handler carries on', async () => {
    await deploy(t.api, singleTaskBpmn('net-progress', 'net-progress'));
    newWorker()
      .subscribe('net-progress', async (_task, ctx) => {
        await ctx.progress({ percent: 50, message: 'half way' });
        return { progressed: true };
      })
      .start();
    const id = await start(t.api, 'net-progress');
    await waitForStatus(t.api, id, 'completed', 20_000);
    const [report] = callsTo(/\/progress$/);
    expect(report?.body).toMatchObject({ data: { percent: 50, message: 'half way' } });
    expect(report?.body.workerId).toMatch(/^net-/);
    expect(report?.body.lockToken).toMatch(/^[0-9a-f-]{36}$/);
  });
});
