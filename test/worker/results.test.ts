// The SDK turns what a handler does into the task's result: a returned object completes,
// a thrown error fails, a BpmnError raises the BPMN error; up to `concurrency` at once.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { BpmnError, createWorker, type Worker, type WorkerTask } from '../../runtime/worker/index.ts';
import { buildBpmn, singleTaskBpmn } from '../support/bpmn.ts';
import { trackConnections } from '../support/connections.ts';
import { startFaultProxy, type FaultProxy } from '../support/fault-proxy.ts';
import { deploy, historyKinds, start, waitForStatus } from '../support/flows.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { recordingLogger } from '../support/worker-log.ts';

let t: TestServer;
let connections: ReturnType<typeof trackConnections>;
const workers: Worker[] = [];

beforeAll(async () => {
  t = await startTestServer();
  connections = trackConnections(t.server.http);
});
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.stop()));
});
afterAll(async () => {
  connections.destroyAll();
  await t.close();
});

function newWorker(opts: { concurrency?: number; baseUrl?: string } = {}): Worker {
  const w = createWorker({
    baseUrl: opts.baseUrl ?? t.url,
    workerId: `w-${workers.length}-${Date.now()}`,
    concurrency: opts.concurrency ?? 2,
    lockDurationMs: 5_000,
    pollWaitMs: 2_000,
    stopGraceMs: 1_000,
    log: recordingLogger(),
  });
  workers.push(w);
  return w;
}

async function openIncidents(instanceId: string): Promise<any[]> {
  return (await t.api.get(`/api/incidents?instanceId=${instanceId}`)).body.items;
}

describe('worker results', () => {
  it('given a handler that returns an object, then the task completes with those variables and the handler saw the task fields', async () => {
    await deploy(t.api, singleTaskBpmn('res-complete', 'res-complete'));
    const seen: WorkerTask[] = [];
    newWorker()
      .subscribe('res-complete', async (task) => {
        seen.push(task);
        return { doubled: (task.variables.n as number) * 2 };
      })
      .start();
    const id = await start(t.api, 'res-complete', { variables: { n: 21 } });
    const done = await waitForStatus(t.api, id, 'completed');
    expect(done.variables).toEqual({ n: 21, doubled: 42 });
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ instanceId: id, stepId: 'work', topic: 'res-complete', attempt: 1, variables: { n: 21 } });
    expect(seen[0]!.idempotencyKey).toMatch(new RegExp(`^${id}/work/`));
    expect(seen[0]).not.toHaveProperty('lockToken');
  });

  it('given a handler that throws once, then a failure is reported and the next attempt completes', async () => {
    await deploy(t.api, singleTaskBpmn('res-retry', 'res-retry', { retries: 2 }));
    const attempts: number[] = [];
    newWorker()
      .subscribe('res-retry', async (task) => {
        attempts.push(task.attempt);
        if (task.attempt === 1) throw new Error('gateway timeout');
        return { ok: true };
      })
      .start();
    const id = await start(t.api, 'res-retry');
    await waitForStatus(t.api, id, 'completed');
    expect(attempts).toEqual([1, 2]);
    const history = (await t.api.get(`/api/instances/${id}/history`)).body.items as any[];
    const failed = history.filter((e) => e.kind === 'task:failed');
    expect(failed).toHaveLength(1);
    expect(failed[0].data.errorMessage).toBe('gateway timeout');
  });

  it('given a handler that throws BpmnError, then the BPMN error is raised with its code and variables', async () => {
    await deploy(t.api, singleTaskBpmn('res-bpmn', 'res-bpmn'));
    newWorker()
      .subscribe('res-bpmn', async () => {
        throw new BpmnError('CARD_DECLINED', 'insufficient funds', { declined: true });
      })
      .start();
    const id = await start(t.api, 'res-bpmn');
    const instance = await waitForStatus(t.api, id, 'incident');
    expect(instance.variables).toEqual({ declined: true });
    const incidents = await openIncidents(id);
    expect(incidents).toHaveLength(1);
    expect(incidents[0].kind).toBe('bpmn_error');
    expect(incidents[0].message).toContain('CARD_DECLINED');
    expect(await historyKinds(t.api, id)).not.toContain('task:failed');
  });

  it('given a handler that throws BpmnError on a task with a matching error boundary, then the process takes the boundary path', async () => {
    await deploy(
      t.api,
      buildBpmn(
        'res-caught',
        [
          { id: 'start', type: 'startEvent' },
          { id: 'charge', type: 'serviceTask', topic: 'res-caught-charge' },
          { id: 'declined', type: 'boundaryEvent', attachedTo: 'charge', error: { code: 'CARD_DECLINED' } },
          { id: 'notify', type: 'serviceTask', topic: 'res-caught-notify' },
          { id: 'end', type: 'endEvent' },
          { id: 'endDeclined', type: 'endEvent' },
        ],
        [
          { from: 'start', to: 'charge' },
          { from: 'charge', to: 'end' },
          { from: 'declined', to: 'notify' },
          { from: 'notify', to: 'endDeclined' },
        ],
      ),
    );
    newWorker()
      .subscribe('res-caught-charge', async () => {
        throw new BpmnError('CARD_DECLINED', 'insufficient funds', { declined: true });
      })
      .subscribe('res-caught-notify', async (task) => ({ notified: task.variables.declined === true }))
      .start();
    const id = await start(t.api, 'res-caught');
    const done = await waitForStatus(t.api, id, 'completed');
    expect(done.variables).toMatchObject({ declined: true, notified: true });
    expect(await openIncidents(id)).toEqual([]);
  });

  it('given a handler that returns a number, then the task fails with a message saying what to return', async () => {
    await deploy(t.api, singleTaskBpmn('res-bad', 'res-bad', { retries: 0 }));
    newWorker()
      .subscribe('res-bad', async () => 42 as never)
      .start();
    const id = await start(t.api, 'res-bad');
    await waitForStatus(t.api, id, 'incident');
    const incidents = await openIncidents(id);
    expect(incidents[0].kind).toBe('task_failed');
    expect(incidents[0].message).toContain('returned a number');
  });

  it('given concurrency 3 and 8 tasks, then at most 3 handlers run at once and no fetch asks for more than the free slots', async () => {
    await deploy(t.api, singleTaskBpmn('res-conc', 'res-conc'));
    const proxy: FaultProxy = await startFaultProxy(t.url);
    try {
      let inFlight = 0;
      let most = 0;
      const ids = await Promise.all(Array.from({ length: 8 }, () => start(t.api, 'res-conc')));
      newWorker({ concurrency: 3, baseUrl: proxy.url })
        .subscribe('res-conc', async () => {
          inFlight++;
          most = Math.max(most, inFlight);
          await new Promise((r) => setTimeout(r, 150));
          inFlight--;
          return {};
        })
        .start();
      for (const id of ids) await waitForStatus(t.api, id, 'completed', 20_000);
      expect(most).toBeLessThanOrEqual(3);
      expect(most).toBeGreaterThan(1);
      const fetches = proxy.calls.filter((c) => c.path.endsWith('/fetch-and-lock'));
      expect(fetches.length).toBeGreaterThan(1);
      for (const f of fetches) expect(f.body.maxTasks).toBeLessThanOrEqual(3);
      expect(fetches.some((f) => f.body.maxTasks < 3)).toBe(true);
      expect(fetches[0]!.body.waitMs).toBe(2_000);
    } finally {
      await proxy.close();
    }
  });
});
