// Leases: the SDK keeps a lock by heartbeat, aborts the handler when the lock is lost,
// and a worker killed with SIGKILL loses its task to another worker after expiry.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createWorker, LockLostError, type Worker } from '../../runtime/worker/index.ts';
import { singleTaskBpmn } from '../support/bpmn.ts';
import { trackConnections } from '../support/connections.ts';
import { deploy, historyKinds, start, waitForStatus } from '../support/flows.ts';
import { startTestServer, waitFor, type TestServer } from '../support/server.ts';
import { recordingLogger } from '../support/worker-log.ts';

let t: TestServer;
let connections: ReturnType<typeof trackConnections>;
const workers: Worker[] = [];
const children: ChildProcess[] = [];

beforeAll(async () => {
  t = await startTestServer({ sweepIntervalMs: 100 });
  connections = trackConnections(t.server.http);
});
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.stop()));
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});
afterAll(async () => {
  connections.destroyAll();
  await t.close();
});

function newWorker(name: string, lockDurationMs: number, log = recordingLogger()): Worker {
  const w = createWorker({
    baseUrl: t.url,
    workerId: `${name}-${Date.now()}`,
    concurrency: 1,
    lockDurationMs,
    pollWaitMs: 1_000,
    stopGraceMs: 500,
    log,
  });
  workers.push(w);
  return w;
}

async function lockedRows(
  instanceId: string,
): Promise<{ id: string; state: string; worker_id: string | null; attempt: number }[]> {
  const { rows } = await t.db.pool.query(`select id, state, worker_id, attempt from external_tasks where instance_id = $1`, [
    instanceId,
  ]);
  return rows;
}

describe('worker leases', () => {
  it('given a handler that runs four times longer than its lock, then the heartbeat keeps the lock and the first attempt completes', async () => {
    await deploy(t.api, singleTaskBpmn('lease-keep', 'lease-keep'));
    const id = await start(t.api, 'lease-keep');
    let stolen = 0;
    newWorker('slow', 600)
      .subscribe('lease-keep', async (task) => {
        await new Promise((r) => setTimeout(r, 2_400));
        return { attempt: task.attempt };
      })
      .start();
    await waitFor(async () => ((await lockedRows(id))[0]?.state === 'locked' ? true : undefined));
    // A rival polls the same topic the whole time: it must never get the task.
    newWorker('rival', 600)
      .subscribe('lease-keep', async () => {
        stolen++;
        return {};
      })
      .start();
    const done = await waitForStatus(t.api, id, 'completed', 15_000);
    expect(done.variables).toEqual({ attempt: 1 });
    expect(stolen).toBe(0);
    const kinds = await historyKinds(t.api, id);
    expect(kinds).not.toContain('task:lock_expired');
    expect(kinds.filter((k) => k === 'task:locked')).toHaveLength(1);
  });

  it('given the instance is canceled while the handler runs, then ctx.signal aborts with LockLostError and no result is sent', async () => {
    await deploy(t.api, singleTaskBpmn('lease-lost', 'lease-lost'));
    const id = await start(t.api, 'lease-lost');
    const log = recordingLogger();
    let reason: unknown;
    newWorker('loser', 600, log)
      .subscribe('lease-lost', async (_task, ctx) => {
        await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }));
        reason = ctx.signal.reason;
        return { tooLate: true };
      })
      .start();
    await waitFor(async () => ((await lockedRows(id))[0]?.state === 'locked' ? true : undefined));
    expect((await t.api.post(`/api/instances/${id}/cancel`)).status).toBe(200);
    await waitFor(async () => (log.count('task:result_dropped') > 0 ? true : undefined), 10_000, 'the result to be dropped');
    expect(reason).toBeInstanceOf(LockLostError);
    const kinds = await historyKinds(t.api, id);
    expect(kinds).not.toContain('task:completed');
    // Only the refused heartbeat is recorded as late, never a result.
    const history = (await t.api.get(`/api/instances/${id}/history`)).body.items as any[];
    expect(history.filter((e) => e.kind === 'task:late_result').map((e) => e.data.call)).toEqual(['extend-lock']);
  });

  it('given a worker process killed with SIGKILL while holding a task, then another worker gets it after the lock expires and completes it', async () => {
    await deploy(t.api, singleTaskBpmn('lease-kill', 'lease-kill'));
    const id = await start(t.api, 'lease-kill');
    const fixture = fileURLToPath(new URL('./fixtures/hanging-worker.ts', import.meta.url));
    const child = spawn(process.execPath, ['--import', 'tsx', fixture, t.url, 'lease-kill', '1000'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let out = '';
    child.stdout!.on('data', (d) => (out += String(d)));
    child.stderr!.on('data', (d) => (out += String(d)));
    await waitFor(
      async () => (out.includes('locked ') ? true : undefined),
      20_000,
      () => `the child to lock the task; output: ${out}`,
    );
    // Held past one lease while alive: the child's heartbeat works.
    await new Promise((r) => setTimeout(r, 1_500));
    expect((await lockedRows(id))[0]).toMatchObject({ state: 'locked', attempt: 1 });
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;

    const attempts: number[] = [];
    newWorker('heir', 5_000)
      .subscribe('lease-kill', async (task) => {
        attempts.push(task.attempt);
        return { by: 'heir' };
      })
      .start();
    const done = await waitForStatus(t.api, id, 'completed', 15_000);
    expect(done.variables).toEqual({ by: 'heir' });
    expect(attempts).toEqual([2]);
    const kinds = await historyKinds(t.api, id);
    expect(kinds.filter((k) => k === 'task:lock_expired')).toHaveLength(1);
    expect(kinds.filter((k) => k === 'task:completed')).toHaveLength(1);
  });
});
