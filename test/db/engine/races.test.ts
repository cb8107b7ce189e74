import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parallelBpmn, singleTaskBpmn } from '../../support/bpmn.ts';
import {
  complete,
  deploy,
  fetchOne,
  fetchTasks,
  historyKinds,
  start,
  waitForStatus,
  type LockedTask,
} from '../../support/flows.ts';
import { startTestServer, type TestServer } from '../../support/server.ts';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
  await deploy(t.api, parallelBpmn('race', 'race-a', 'race-b'));
  await deploy(t.api, singleTaskBpmn('bulk', 'bulk-task'));
  await deploy(t.api, singleTaskBpmn('keyed', 'keyed-task'));
});
afterAll(async () => {
  await t.close();
});

describe('races', () => {
  it('given both branches of a parallel join completed at the same moment by different workers, then the join fires exactly once (50 rounds)', async () => {
    for (let round = 0; round < 50; round++) {
      const id = await start(t.api, 'race');
      const [a, b] = await Promise.all([fetchOne(t.api, 'wa', 'race-a'), fetchOne(t.api, 'wb', 'race-b')]);
      const [ra, rb] = await Promise.all([complete(t.api, a, 'wa'), complete(t.api, b, 'wb')]);
      expect([ra.status, rb.status]).toEqual([204, 204]);
      await waitForStatus(t.api, id, 'completed');
      const kinds = await historyKinds(t.api, id);
      const joins = (await t.api.get(`/api/instances/${id}/history`)).body.items.filter(
        (e: { kind: string; stepId?: string }) => e.kind === 'step:completed' && e.stepId === 'join',
      );
      expect(joins, `round ${round}`).toHaveLength(1);
      expect(kinds.filter((k) => k === 'instance:completed')).toHaveLength(1);
    }
  });

  it('given 20 concurrent starts with one business key, then exactly one instance exists and every caller gets it', async () => {
    const responses = await Promise.all(
      Array.from({ length: 20 }, () => t.api.post('/api/instances', { definitionKey: 'keyed', businessKey: 'order-42' })),
    );
    const ids = new Set(responses.map((r) => r.body.id));
    expect(ids.size).toBe(1);
    expect(responses.filter((r) => r.status === 201)).toHaveLength(1);
    expect(responses.filter((r) => r.status === 200)).toHaveLength(19);
    const list = await t.api.get('/api/instances?definitionKey=keyed&businessKey=order-42');
    expect(list.body.items).toHaveLength(1);
    const tasks = await fetchTasks(t.api, 'w', ['keyed-task'], { maxTasks: 50 });
    expect(tasks).toHaveLength(1);
  });

  it('given 1,000 ready tasks, when 4 callers fetch concurrently, then each task is delivered exactly once', async () => {
    const starts: Promise<string>[] = [];
    for (let i = 0; i < 1000; i += 50) {
      await Promise.all(Array.from({ length: 50 }, () => start(t.api, 'bulk')).map((p) => (starts.push(p), p)));
    }
    const instanceIds = await Promise.all(starts);
    const received: LockedTask[][] = [[], [], [], []];
    await Promise.all(
      received.map(async (bucket, w) => {
        for (;;) {
          const batch = await fetchTasks(t.api, `fetcher-${w}`, ['bulk-task'], { maxTasks: 7 });
          if (batch.length === 0) return;
          bucket.push(...batch);
        }
      }),
    );
    const all = received.flat();
    expect(all).toHaveLength(1000);
    expect(new Set(all.map((x) => x.id)).size).toBe(1000);
    expect(new Set(all.map((x) => x.instanceId))).toEqual(new Set(instanceIds));
    expect(received.every((bucket) => bucket.length > 0)).toBe(true);
  });
});
