// The worker SDK's ctx.progress(data) end to end: a handler streams text while it
// works, and a subscriber sees it as task:progress frames, in order, before the
// step completes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorker, type Worker } from '../../runtime/worker/index.ts';
import { singleTaskBpmn } from '../support/bpmn.ts';
import { deploy, start, waitForStatus } from '../support/flows.ts';
import { ProgressClient } from '../support/progress-client.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

let t: TestServer;
let worker: Worker | undefined;
let client: ProgressClient | undefined;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  client?.close();
  await worker?.stop();
  await t?.close();
});

describe('SDK progress', () => {
  it('given a handler calling ctx.progress 200 times, then a subscriber receives every report in order before step:completed', async () => {
    await deploy(t.api, singleTaskBpmn('sdk-progress', 'sdk-progress'));
    const id = await start(t.api, 'sdk-progress');
    client = new ProgressClient(t.url);
    expect((await client.subscribe({ instanceId: id })).ok).toBe(true);
    worker = createWorker({ baseUrl: t.url, workerId: 'sdk-writer', lockDurationMs: 5_000, pollWaitMs: 1_000 });
    worker
      .subscribe('sdk-progress', async (_task, ctx) => {
        for (let i = 0; i < 200; i++) await ctx.progress({ token: `word${i} ` });
        return { written: 200 };
      })
      .start();
    await waitForStatus(t.api, id, 'completed');
    await client.waitForKind(id);
    const frames = client.frames.filter((f) => f.instanceId === id);
    const text = frames
      .filter((f) => f.kind === 'task:progress')
      .flatMap((f) => f.data.reports as { token: string }[])
      .map((r) => r.token)
      .join('');
    expect(text).toBe(Array.from({ length: 200 }, (_, i) => `word${i} `).join(''));
    const lastProgress = frames.map((f) => f.kind).lastIndexOf('task:progress');
    const completed = frames.findIndex((f) => f.kind === 'step:completed' && f.data.stepId === 'work');
    expect(lastProgress).toBeLessThan(completed);
  });
});
