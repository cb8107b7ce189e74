import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { singleTaskBpmn } from '../../support/bpmn.ts';
import { deploy, fetchOne, fetchTasks, start } from '../../support/flows.ts';
import { startTestServer, waitFor, type TestServer } from '../../support/server.ts';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
  await deploy(t.api, singleTaskBpmn('poll', 'poll-task'));
});
afterAll(async () => {
  await t.close();
});

describe('long polling', () => {
  it('given a parked fetch, when an instance creates a task, then the fetch returns it promptly (woken by its notification, not the safety re-check)', async () => {
    const parked = fetchTasks(t.api, 'w', ['poll-task'], { waitMs: 20_000 });
    await waitFor(async () => ((await parkedCount()) > 0 ? true : undefined), 5000, 'the fetch to park');
    const startedAt = Date.now();
    const id = await start(t.api, 'poll');
    const tasks = await parked;
    const latency = Date.now() - startedAt;
    expect(tasks.map((x) => x.instanceId)).toEqual([id]);
    // 100 ms is the target (measured in the benchmark); the safety re-check runs every 2 s.
    expect(latency).toBeLessThan(1000);
  });

  it('given no work, when a fetch waits, then it answers [] after waitMs', async () => {
    const began = Date.now();
    const tasks = await fetchTasks(t.api, 'w', ['nothing-here'], { waitMs: 300 });
    const waited = Date.now() - began;
    expect(tasks).toEqual([]);
    expect(waited).toBeGreaterThanOrEqual(290);
    expect(waited).toBeLessThan(3000);
  });

  it('given a parked fetch whose client disconnects, then nothing is left locked for it', async () => {
    const abort = new AbortController();
    const parked = t.api
      .post(
        '/api/external-tasks/fetch-and-lock',
        {
          workerId: 'ghost',
          maxTasks: 1,
          waitMs: 20_000,
          topics: [{ name: 'poll-task', lockDurationMs: 600_000 }],
        },
        { signal: abort.signal },
      )
      .catch((e: Error) => e);
    await waitFor(async () => ((await parkedCount()) > 0 ? true : undefined), 5000, 'the fetch to park');
    abort.abort();
    expect(await parked).toBeInstanceOf(Error);
    await waitFor(async () => ((await parkedCount()) === 0 ? true : undefined), 5000, 'the server to notice');
    const id = await start(t.api, 'poll');
    const task = await fetchOne(t.api, 'alive', 'poll-task');
    expect(task.instanceId).toBe(id);
    const { rows } = await t.db.pool.query(
      `select count(*)::int as n from events where kind = 'task:locked' and data->>'workerId' = 'ghost'`,
    );
    expect(rows[0].n).toBe(0);
  });
});

async function parkedCount(): Promise<number> {
  return t.server.parkedPolls.parked;
}
