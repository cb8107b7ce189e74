// Fair priority: low-priority tasks are served while a high-priority
// stream keeps the topic busy, because one fetch in FAIR_TURN_EVERY is oldest-first.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FAIR_TURN_EVERY } from '../../../runtime/engine/fetch.ts';
import { buildBpmn } from '../../support/bpmn.ts';
import { complete, deploy, fetchTasks, start } from '../../support/flows.ts';
import { startTestServer, type TestServer } from '../../support/server.ts';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => t?.close());

async function deployTask(processId: string, topic: string, priority: number): Promise<void> {
  await deploy(
    t.api,
    buildBpmn(
      processId,
      [
        { id: 's', type: 'startEvent' },
        { id: 'work', type: 'serviceTask', topic, priority },
        { id: 'e', type: 'endEvent' },
      ],
      [
        { from: 's', to: 'work' },
        { from: 'work', to: 'e' },
      ],
    ),
  );
}

async function readyHigh(topic: string): Promise<number> {
  const { rows } = await t.db.pool.query<{ n: number }>(
    `select count(*)::int as n from external_tasks where topic = $1 and priority = 10 and state = 'ready'`,
    [topic],
  );
  return rows[0]!.n;
}

describe('fair priority', () => {
  it('given a stream of priority-10 tasks that never runs dry, then the priority-0 tasks still complete, one every FAIR_TURN_EVERY fetches', async () => {
    const topic = 'fair-mixed';
    await deployTask('fair_low', topic, 0);
    await deployTask('fair_high', topic, 10);
    const low = new Set<string>();
    for (let i = 0; i < 4; i++) low.add(await start(t.api, 'fair_low'));
    const lowDoneAt: number[] = [];
    let fetches = 0;
    // One worker, one task per fetch; before each fetch the high stream is topped up to 4 ready tasks.
    while (lowDoneAt.length < low.size && fetches < 40) {
      while ((await readyHigh(topic)) < 4) await start(t.api, 'fair_high');
      const [task] = await fetchTasks(t.api, 'fair-worker', [topic], { maxTasks: 1 });
      fetches++;
      expect(task).toBeDefined();
      if (low.has(task!.instanceId)) {
        // Served while higher priority work was waiting: that is the guaranteed share.
        expect(await readyHigh(topic)).toBeGreaterThan(0);
        lowDoneAt.push(fetches);
      }
      expect((await complete(t.api, task!, 'fair-worker')).status).toBe(204);
    }
    expect(lowDoneAt).toHaveLength(4);
    // Priority still rules the other turns: exactly the fair turns went to the low tasks.
    expect(lowDoneAt.every((n) => n % FAIR_TURN_EVERY === 0)).toBe(true);
    expect(fetches).toBeLessThanOrEqual(4 * FAIR_TURN_EVERY);
  });

  it('given workers that fetch concurrently under a flow limit, then low-priority tasks complete while the high stream runs', async () => {
    const topic = 'fair-limited';
    await deployTask('fairl_low', topic, 0);
    await deployTask('fairl_high', topic, 10);
    expect((await t.api.call('PUT', `/api/flow-limits/${topic}`, { maxConcurrent: 2, maxStartsPerSecond: 0 })).status).toBe(201);
    const low = new Set<string>();
    for (let i = 0; i < 3; i++) low.add(await start(t.api, 'fairl_low'));
    let lowDone = 0;
    let running = true;
    while ((await readyHigh(topic)) < 6) await start(t.api, 'fairl_high');
    const producer = (async () => {
      while (running) {
        if ((await readyHigh(topic)) < 6) await start(t.api, 'fairl_high');
        else await new Promise((r) => setTimeout(r, 5));
      }
    })();
    const worker = async (id: string) => {
      for (let i = 0; i < 60 && lowDone < low.size; i++) {
        const tasks = await fetchTasks(t.api, id, [topic], { maxTasks: 1, waitMs: 500 });
        for (const task of tasks) {
          if (low.has(task.instanceId)) {
            lowDone++;
            expect(await readyHigh(topic)).toBeGreaterThan(0);
          }
          await complete(t.api, task, id);
        }
      }
    };
    try {
      await Promise.all(['fw1', 'fw2', 'fw3'].map(worker));
    } finally {
      running = false;
      await producer;
    }
    expect(lowDone).toBe(low.size);
    // The high stream never ran dry while they were served.
    expect(await readyHigh(topic)).toBeGreaterThan(0);
  });
});
