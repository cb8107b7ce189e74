// The SDK sends the completes that finish in one turn of the event loop as one
// complete-batch call; a batch call that fails is repeated task by task, and every
// task completes once whatever the network does to the batch.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createWorker, type Worker } from '../../runtime/worker/index.ts';
import { singleTaskBpmn } from '../support/bpmn.ts';
import { startFaultProxy, type FaultProxy } from '../support/fault-proxy.ts';
import { deploy, historyKinds, start, waitForStatus } from '../support/flows.ts';
import { startTestServer, waitFor, type TestServer } from '../support/server.ts';
import { recordingLogger } from '../support/worker-log.ts';

let t: TestServer;
let proxy: FaultProxy;
const workers: Worker[] = [];

beforeAll(async () => {
  t = await startTestServer();
  proxy = await startFaultProxy(t.url);
});
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.stop()));
});
afterAll(async () => {
  await proxy.close();
  await t.close();
});

/** Ten instances waiting, then a worker whose first fetch takes all ten; every handler answers at once. */
async function tenAtOnce(topic: string) {
  await deploy(t.api, singleTaskBpmn(topic, topic));
  const ids = await Promise.all(Array.from({ length: 10 }, (_, i) => start(t.api, topic, { variables: { i } })));
  const log = recordingLogger();
  const w = createWorker({ baseUrl: proxy.url, workerId: `batch-${topic}`, concurrency: 10, pollWaitMs: 1_000, log });
  workers.push(w);
  w.subscribe(topic, async (task) => ({ doubled: (task.variables.i as number) * 2 })).start();
  for (const id of ids) await waitForStatus(t.api, id, 'completed', 20_000);
  await waitFor(async () => (log.count('task:completed') === 10 ? true : undefined), 5_000, 'ten task:completed logs');
  for (const [i, id] of ids.entries()) {
    expect((await t.api.get(`/api/instances/${id}`)).body.variables).toEqual({ i, doubled: i * 2 });
    expect((await historyKinds(t.api, id)).filter((k) => k === 'task:completed')).toHaveLength(1);
  }
  return {
    ids,
    log,
    batches: proxy.calls.filter((c) => c.path === '/api/external-tasks/complete-batch' && c.body.workerId === `batch-${topic}`),
  };
}

const singles = (topic: string) => proxy.calls.filter((c) => /\/complete$/.test(c.path) && c.body.workerId === `batch-${topic}`);

describe('SDK batch complete', () => {
  it('given ten handlers that finish together, then one complete-batch call carries their results', async () => {
    const { batches } = await tenAtOnce('sdk-batch');
    expect(batches).toHaveLength(1);
    expect(batches[0]!.body.tasks).toHaveLength(10);
    expect(batches[0]!.status).toBe(200);
    expect(singles('sdk-batch')).toHaveLength(0);
  });

  it('given the batch call is lost before it arrives, then each task is completed by its own call, once', async () => {
    proxy.addFault({ path: /complete-batch$/, when: 'before', times: 1 });
    const { batches, log } = await tenAtOnce('sdk-batch-lost');
    expect(batches.map((c) => c.fate)).toEqual(['dropped_before']);
    expect(singles('sdk-batch-lost').map((c) => c.status)).toEqual(Array(10).fill(204));
    expect(log.count('task:batch_complete_retried_singly')).toBe(1);
  });

  it('given the server applies the batch and the answer is lost, then the single repeats are no-ops and each task completes once', async () => {
    proxy.addFault({ path: /complete-batch$/, when: 'after', times: 1 });
    const { batches } = await tenAtOnce('sdk-batch-after');
    expect(batches.map((c) => c.fate)).toEqual(['dropped_after']);
    expect(singles('sdk-batch-after').map((c) => c.status)).toEqual(Array(10).fill(204));
  });
});
