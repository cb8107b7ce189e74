// hooks.afterHandler runs between the handler's side effect and the report: the crash drills
// kill the worker there, so it must see the finished handler and an instance not yet moved on.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createWorker, type Worker, type WorkerHooks } from '../../runtime/worker/index.ts';
import { singleTaskBpmn } from '../support/bpmn.ts';
import { deploy, historyKinds, instanceOf, start, waitForStatus } from '../support/flows.ts';
import { startTestServer, waitFor, type TestServer } from '../support/server.ts';
import { recordingLogger } from '../support/worker-log.ts';

let t: TestServer;
const workers: Worker[] = [];

beforeAll(async () => {
  t = await startTestServer();
});
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.stop()));
});
afterAll(async () => {
  await t.close();
});

function startWorker(topic: string, hooks: WorkerHooks, log = recordingLogger()): Worker {
  const w = createWorker({ baseUrl: t.url, workerId: `hooks-${topic}`, pollWaitMs: 1_000, stopGraceMs: 1_000, hooks, log });
  workers.push(w);
  return w.subscribe(topic, () => ({ done: true })).start();
}

describe('worker hooks', () => {
  it('given an afterHandler hook, then it runs once the handler returned and before the task is completed', async () => {
    await deploy(t.api, singleTaskBpmn('hook-order', 'hook-order'));
    const id = await start(t.api, 'hook-order');
    const seen: { taskId: string; status: string; completedYet: boolean }[] = [];
    startWorker('hook-order', {
      async afterHandler(task) {
        const kinds = await historyKinds(t.api, task.instanceId);
        seen.push({
          taskId: task.id,
          status: (await instanceOf(t.api, id)).status,
          completedYet: kinds.includes('task:completed'),
        });
      },
    });
    const done = await waitForStatus(t.api, id, 'completed');
    expect(done.variables).toEqual({ done: true });
    expect(seen).toEqual([{ taskId: expect.any(String), status: 'running', completedYet: false }]);
  });

  it('given an afterHandler hook that throws, then the failure is logged and the result is still sent', async () => {
    await deploy(t.api, singleTaskBpmn('hook-throws', 'hook-throws'));
    const id = await start(t.api, 'hook-throws');
    const log = recordingLogger();
    startWorker(
      'hook-throws',
      {
        afterHandler() {
          throw new Error('instrumentation broke');
        },
      },
      log,
    );
    const done = await waitForStatus(t.api, id, 'completed');
    expect(done.variables).toEqual({ done: true });
    await waitFor(async () => (log.count('task:completed') === 1 ? true : undefined), 5_000, 'task:completed');
    expect(log.records.filter((r) => r.event === 'task:hook_failed').map((r) => r.fields.error)).toEqual([
      'Error: instrumentation broke',
    ]);
  });
});
