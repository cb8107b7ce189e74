// GET /api/topics/activity: which workers fetched which topics, native and Camunda, held in
// memory by the node that saw the fetch and flushed to topic_fetches for the other nodes.
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBatonServer, type BatonServer } from '../../../runtime/server.ts';
import { fetchTasks } from '../../support/flows.ts';
import { apiClient, startTestServer, type TestServer } from '../../support/server.ts';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({ engine: { fetchActivityFlushMs: 100 } });
});
afterAll(async () => t?.close());

async function camundaFetch(url: string, workerId: string, topicName: string): Promise<void> {
  const res = await fetch(`${url}/engine-rest/external-task/fetchAndLock`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ workerId, maxTasks: 1, topics: [{ topicName, lockDuration: 10_000 }] }),
  });
  expect(res.status, await res.clone().text()).toBe(200);
}

async function flushedRows(topics: string[]): Promise<{ topic: string; worker_id: string }[]> {
  const { rows } = await t.db.pool.query<{ topic: string; worker_id: string }>(
    'select topic, worker_id from topic_fetches where topic = any($1) order by topic, worker_id',
    [topics],
  );
  return rows;
}

describe('topic activity', () => {
  it('given fetches through the native and the Camunda API, then each topic lists its workers, here and on another node after the flush', async () => {
    const before = Date.now();
    await fetchTasks(t.api, 'native-1', ['act-native', 'act-shared']);
    await camundaFetch(t.url, 'camunda-1', 'act-camunda');
    await camundaFetch(t.url, 'camunda-1', 'act-shared');

    const here = await t.api.get('/api/topics/activity');
    expect(here.status).toBe(200);
    expect(here.body.windowMs).toBe(24 * 3_600_000);
    const byTopic = Object.fromEntries(here.body.items.map((i: any) => [i.topic, i]));
    expect(Object.keys(byTopic)).toEqual(['act-camunda', 'act-native', 'act-shared']);
    expect(byTopic['act-native'].workers.map((w: any) => w.workerId)).toEqual(['native-1']);
    expect(byTopic['act-camunda'].workers.map((w: any) => w.workerId)).toEqual(['camunda-1']);
    expect(byTopic['act-shared'].workers.map((w: any) => w.workerId).sort()).toEqual(['camunda-1', 'native-1']);
    for (const item of here.body.items) {
      // Placed on the database's clock: both run on this machine.
      expect(Math.abs(new Date(item.lastFetchedAt).getTime() - before)).toBeLessThan(60_000);
      expect(item.lastFetchedAt).toBe(item.workers[0].lastFetchedAt);
    }

    await expect
      .poll(() => flushedRows(['act-native', 'act-camunda', 'act-shared']), { timeout: 10_000 })
      .toEqual([
        { topic: 'act-camunda', worker_id: 'camunda-1' },
        { topic: 'act-native', worker_id: 'native-1' },
        { topic: 'act-shared', worker_id: 'camunda-1' },
        { topic: 'act-shared', worker_id: 'native-1' },
      ]);
    const other = await startBatonServer({
      databaseUrl: t.db.url,
      port: 0,
      host: '127.0.0.1',
      log: pino({ level: 'silent' }),
      sweepIntervalMs: 60_000,
    });
    try {
      const there = await apiClient(other.url).get('/api/topics/activity');
      const topics = Object.fromEntries(
        there.body.items.map((i: any) => [i.topic, i.workers.map((w: any) => w.workerId).sort()]),
      );
      expect(topics).toEqual({
        'act-camunda': ['camunda-1'],
        'act-native': ['native-1'],
        'act-shared': ['camunda-1', 'native-1'],
      });
      const filtered = await apiClient(other.url).get('/api/topics/activity?topic=act-native');
      expect(filtered.body.items.map((i: any) => i.topic)).toEqual(['act-native']);
    } finally {
      await other.close();
    }
  });

  it('given a later fetch by the same worker, then its time moves forward and the row is updated, not added', async () => {
    await fetchTasks(t.api, 'again-1', ['act-again']);
    await expect.poll(() => flushedRows(['act-again']), { timeout: 10_000 }).toHaveLength(1);
    const first = (await t.api.get('/api/topics/activity?topic=act-again')).body.items[0].lastFetchedAt;
    await expect
      .poll(async () => {
        await fetchTasks(t.api, 'again-1', ['act-again']);
        return (await t.api.get('/api/topics/activity?topic=act-again')).body.items[0].lastFetchedAt > first;
      })
      .toBe(true);
    const { rows } = await t.db.pool.query<{ at: Date }>(
      `select last_fetched_at as at from topic_fetches where topic = 'act-again'`,
    );
    expect(rows).toHaveLength(1);
  });

  it('given a bad fetch, then nothing is recorded; an unknown query parameter is refused', async () => {
    const bad = await t.api.post('/api/external-tasks/fetch-and-lock', { workerId: 'bad-1', maxTasks: 1 });
    expect(bad.status).toBe(400);
    const items = (await t.api.get('/api/topics/activity')).body.items as any[];
    expect(items.flatMap((i) => i.workers.map((w: any) => w.workerId))).not.toContain('bad-1');
    expect((await t.api.get('/api/topics/activity?since=1')).status).toBe(400);
  });
});

describe('topic activity between flushes', () => {
  let node: BatonServer;
  let s: TestServer;
  beforeAll(async () => {
    // Nothing is flushed on a timer during this test: only the close writes.
    s = await startTestServer({ engine: { fetchActivityFlushMs: 600_000 } });
    node = s.server;
  });
  afterAll(async () => s?.close());

  it('given a fetch, then this node answers it from memory with nothing written, and writes it when it closes', async () => {
    await fetchTasks(s.api, 'memory-1', ['act-memory']);
    const items = (await s.api.get('/api/topics/activity')).body.items;
    expect(items.map((i: any) => [i.topic, i.workers.map((w: any) => w.workerId)])).toEqual([['act-memory', ['memory-1']]]);
    const count = async () => (await s.db.pool.query('select count(*)::int as n from topic_fetches')).rows[0].n;
    expect(await count()).toBe(0);
    await node.engine.fetchActivity.close();
    expect(await count()).toBe(1);
  });
});
