// Flow control: per-resource maxConcurrent and maxStartsPerSecond
// obeyed by native and Camunda fetch-and-lock, checked in SQL; the limits API.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Ajv } from 'ajv';
import addFormatsPlugin from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { singleTaskBpmn } from '../../support/bpmn.ts';
import { complete, deploy, fetchTasks, start, type LockedTask } from '../../support/flows.ts';
import { startTestServer, waitFor, type TestServer } from '../../support/server.ts';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => t?.close());

const schemaDir = path.resolve(import.meta.dirname, '../../../schemas/api');
const addFormats = addFormatsPlugin as unknown as (ajv: Ajv) => Ajv;
const ajv = addFormats(new Ajv({ strict: true }));
for (const f of ['common', 'flow-limit'])
  ajv.addSchema(JSON.parse(readFileSync(path.join(schemaDir, `${f}.schema.json`), 'utf8')));
const isFlowLimit = ajv.getSchema('https://baton.dev/schemas/api/flow-limit.schema.json')!;

function put(resource: string, body: unknown) {
  return t.api.call('PUT', `/api/flow-limits/${encodeURIComponent(resource)}`, body);
}

async function held(topics: string[]): Promise<number> {
  const { rows } = await t.db.pool.query<{ n: number }>(
    `select count(*)::int as n from external_tasks where state = 'locked' and topic = any($1)`,
    [topics],
  );
  return rows[0]!.n;
}

/** Deploys a one-task process on the topic and starts n instances of it. */
async function readyTasks(topic: string, n: number): Promise<void> {
  await deploy(t.api, singleTaskBpmn(topic, topic));
  for (let i = 0; i < n; i++) await start(t.api, topic);
}

describe('flow limits API', () => {
  it('creates (201), replaces (200), reads, lists and deletes (204) a limit; bodies match flow-limit.schema.json', async () => {
    const created = await put('api-a', { maxConcurrent: 3, maxStartsPerSecond: 2.5 });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body).toMatchObject({
      resource: 'api-a',
      topics: ['api-a'],
      maxConcurrent: 3,
      maxStartsPerSecond: 2.5,
      heldLocks: 0,
    });
    expect(isFlowLimit(created.body), JSON.stringify(isFlowLimit.errors)).toBe(true);

    const replaced = await put('api-a', { maxConcurrent: 0, maxStartsPerSecond: 1, topics: ['api-a', 'api-b'] });
    expect(replaced.status).toBe(200);
    expect(replaced.body).toMatchObject({ topics: ['api-a', 'api-b'], maxConcurrent: 0, maxStartsPerSecond: 1 });

    const one = await t.api.get('/api/flow-limits/api-a');
    expect(one.status).toBe(200);
    expect(isFlowLimit(one.body)).toBe(true);
    const list = await t.api.get('/api/flow-limits');
    expect(list.body.items.map((x: { resource: string }) => x.resource)).toContain('api-a');

    expect((await t.api.call('DELETE', '/api/flow-limits/api-a')).status).toBe(204);
    const gone = await t.api.get('/api/flow-limits/api-a');
    expect(gone.status).toBe(404);
    expect(gone.body.type).toBe('NotFound');
    expect((await t.api.call('DELETE', '/api/flow-limits/api-a')).status).toBe(404);
    const { rows } = await t.db.pool.query(`select count(*)::int as n from flow_limit_topics where resource = 'api-a'`);
    expect(rows[0].n).toBe(0);
  });

  it('answers bad bodies with 400 JSON and a topic owned by another resource with 409, changing nothing', async () => {
    for (const body of [
      {},
      { maxConcurrent: -1, maxStartsPerSecond: 0 },
      { maxConcurrent: 1.5, maxStartsPerSecond: 0 },
      { maxConcurrent: 1, maxStartsPerSecond: 0, extra: 1 },
      { maxConcurrent: 1, maxStartsPerSecond: 0, topics: [] },
    ]) {
      const res = await put('bad-input', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.type).toBe('ValidationError');
    }
    expect((await t.api.get('/api/flow-limits/bad-input')).status).toBe(404);

    expect((await put('owner', { maxConcurrent: 1, maxStartsPerSecond: 0, topics: ['shared-topic'] })).status).toBe(201);
    const clash = await put('intruder', { maxConcurrent: 5, maxStartsPerSecond: 0, topics: ['own-topic', 'shared-topic'] });
    expect(clash.status).toBe(409);
    expect(clash.body).toMatchObject({ type: 'Conflict', details: [{ topic: 'shared-topic', resource: 'owner' }] });
    expect((await t.api.get('/api/flow-limits/intruder')).status).toBe(404);
    const { rows } = await t.db.pool.query(
      `select topic from flow_limit_topics where topic in ('own-topic', 'shared-topic') order by 1`,
    );
    expect(rows).toEqual([{ topic: 'shared-topic' }]);
  });
});

describe('maxConcurrent', () => {
  it('given maxConcurrent 3 and 5 workers fetching, then never more than 3 locks are held at once (SQL at every step), and all tasks complete', async () => {
    const topic = 'cap3';
    expect((await put(topic, { maxConcurrent: 3, maxStartsPerSecond: 0 })).status).toBe(201);
    await readyTasks(topic, 15);
    let most = 0;
    let done = 0;
    const violations: number[] = [];
    const check = async () => {
      const n = await held([topic]);
      most = Math.max(most, n);
      if (n > 3) violations.push(n);
    };
    // A sampler on its own connection, in parallel with the workers' steps.
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        await check();
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    const worker = async (id: string) => {
      while (done < 15) {
        const tasks = await fetchTasks(t.api, id, [topic], { maxTasks: 2, waitMs: 1000 });
        await check();
        for (const task of tasks) {
          await new Promise((r) => setTimeout(r, 30)); // the downstream call
          expect((await complete(t.api, task, id)).status).toBe(204);
          done++;
          await check();
        }
      }
    };
    await Promise.all(['w1', 'w2', 'w3', 'w4', 'w5'].map(worker));
    sampling = false;
    await sampler;
    expect(violations).toEqual([]);
    expect(most).toBe(3);
    const { rows } = await t.db.pool.query(
      `select count(*)::int as n, sum(retries - retries_left)::int as used from external_tasks where topic = $1 and state = 'done'`,
      [topic],
    );
    expect(rows[0]).toEqual({ n: 15, used: 0 });
  });

  it('given the resource full, when a lock is released, then a parked fetch gets the task at once (not at the 2 s re-check) with its traffic wait recorded', async () => {
    const topic = 'cap1';
    await put(topic, { maxConcurrent: 1, maxStartsPerSecond: 0 });
    await readyTasks(topic, 2);
    const [first] = await fetchTasks(t.api, 'holder', [topic]);
    expect(first).toBeDefined();
    // The second task stays ready, unlocked, with its retries intact.
    expect(await fetchTasks(t.api, 'eager', [topic])).toEqual([]);
    const parked = fetchTasks(t.api, 'parked', [topic], { waitMs: 10_000 });
    await waitFor(async () => (t.server.parkedPolls.parked > 0 ? true : undefined), 5000, 'the fetch to park');
    await new Promise((r) => setTimeout(r, 300)); // the wait to record
    const releasedAt = Date.now();
    expect((await complete(t.api, first!, 'holder')).status).toBe(204);
    const [second] = await parked;
    expect(Date.now() - releasedAt).toBeLessThan(1000);
    expect(second).toBeDefined();
    const { rows } = await t.db.pool.query(
      `select t.traffic_wait_ms, t.flow_waiting_since, t.attempt, t.retries_left = t.retries as retries_intact, e.data
         from external_tasks t join events e on e.task_id = t.id and e.kind = 'task:locked' where t.id = $1`,
      [second!.id],
    );
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ flow_waiting_since: null, attempt: 1, retries_intact: true });
    expect(rows[0].traffic_wait_ms).toBeGreaterThanOrEqual(250);
    expect(rows[0].data.trafficWaitMs).toBe(rows[0].traffic_wait_ms);
  });

  it('given 3 locks held, when the limit is lowered to 1, then the locks stay, and nothing new is locked until fewer than 1 are held', async () => {
    const topic = 'lowered';
    await put(topic, { maxConcurrent: 3, maxStartsPerSecond: 0 });
    await readyTasks(topic, 5);
    const locked = await fetchTasks(t.api, 'a', [topic]);
    expect(locked).toHaveLength(3);
    expect((await put(topic, { maxConcurrent: 1, maxStartsPerSecond: 0 })).body.heldLocks).toBe(3);
    expect(await held([topic])).toBe(3);
    for (const task of locked.slice(0, 2)) {
      await complete(t.api, task, 'a');
      expect(await fetchTasks(t.api, 'b', [topic])).toEqual([]);
    }
    await complete(t.api, locked[2]!, 'a');
    expect(await fetchTasks(t.api, 'b', [topic])).toHaveLength(1);
    // 0 means unlimited.
    await put(topic, { maxConcurrent: 0, maxStartsPerSecond: 0 });
    expect(await fetchTasks(t.api, 'b', [topic])).toHaveLength(1);
  });

  it('given a resource covering two topics, then the limit counts locks of both, for native and Camunda fetches alike', async () => {
    await put('payments-api', { maxConcurrent: 2, maxStartsPerSecond: 0, topics: ['pay-card', 'pay-refund'] });
    await readyTasks('pay-card', 2);
    await readyTasks('pay-refund', 2);
    await readyTasks('unlimited-side', 2);
    const native = await fetchTasks(t.api, 'n', ['pay-card']);
    expect(native).toHaveLength(2);
    const camunda = await t.api.post('/engine-rest/external-task/fetchAndLock', {
      workerId: 'c',
      maxTasks: 10,
      topics: [
        { topicName: 'pay-refund', lockDuration: 30_000 },
        { topicName: 'unlimited-side', lockDuration: 30_000 },
      ],
    });
    expect(camunda.status).toBe(200);
    // The resource is full: only the uncovered topic's tasks come back.
    expect(camunda.body.map((x: { topicName: string }) => x.topicName)).toEqual(['unlimited-side', 'unlimited-side']);
    await complete(t.api, native[0]!, 'n');
    const next = await t.api.post('/engine-rest/external-task/fetchAndLock', {
      workerId: 'c',
      maxTasks: 10,
      topics: [{ topicName: 'pay-refund', lockDuration: 30_000 }],
    });
    expect(next.body).toHaveLength(1);
    expect(await held(['pay-card', 'pay-refund'])).toBe(2);
  });
});

describe('Camunda lock by id', () => {
  it('given the resource full, then POST /engine-rest/external-task/{id}/lock refuses a ready task (400, still ready) and locks it once capacity frees', async () => {
    const topic = 'lock-by-id';
    await put(topic, { maxConcurrent: 1, maxStartsPerSecond: 0 });
    await readyTasks(topic, 2);
    const [first] = await fetchTasks(t.api, 'holder', [topic]);
    const { rows } = await t.db.pool.query<{ id: string }>(`select id from external_tasks where topic = $1 and state = 'ready'`, [
      topic,
    ]);
    const waiting = rows[0]!.id;
    const refused = await t.api.post(`/engine-rest/external-task/${waiting}/lock`, { workerId: 'c', lockDuration: 10_000 });
    expect(refused.status).toBe(400);
    expect(refused.body.type).toBe('RestException');
    expect(await held([topic])).toBe(1);
    await complete(t.api, first!, 'holder');
    const locked = await t.api.post(`/engine-rest/external-task/${waiting}/lock`, { workerId: 'c', lockDuration: 10_000 });
    expect(locked.status).toBe(204);
    const { rows: after } = await t.db.pool.query(
      `select state, worker_id, attempt, traffic_wait_ms from external_tasks where id = $1`,
      [waiting],
    );
    expect(after[0]).toMatchObject({ state: 'locked', worker_id: 'c', attempt: 1 });
  });
});

describe('maxStartsPerSecond', () => {
  it('given maxStartsPerSecond 5, when workers fetch for 4 s, then at most 20 + 5 locks start (bucket of 5), and every 1 s window holds at most 5 + 5', async () => {
    const topic = 'rate5';
    await readyTasks(topic, 40);
    const lockMs = 60_000;
    await put(topic, { maxConcurrent: 0, maxStartsPerSecond: 5 });
    const t0 = (await t.db.pool.query<{ t0: Date }>('select now() as t0')).rows[0]!.t0;
    const until = Date.now() + 4000;
    const worker = async (id: string) => {
      while (Date.now() < until) {
        const tasks: LockedTask[] = await fetchTasks(t.api, id, [topic], {
          maxTasks: 3,
          waitMs: Math.max(1, until - Date.now()),
          lockDurationMs: lockMs,
        });
        for (const task of tasks) await complete(t.api, task, id);
      }
    };
    await Promise.all(['r1', 'r2', 'r3'].map(worker));
    // Lock start on the database clock: lock_expires_at minus the lock duration.
    const { rows } = await t.db.pool.query<{ ms: number }>(
      `select extract(epoch from (e.data->>'lockExpiresAt')::timestamptz - $2::timestamptz) * 1000 - $3 as ms
         from events e join external_tasks x on x.id = e.task_id
        where e.kind = 'task:locked' and x.topic = $1 order by 1`,
      [topic, t0, lockMs],
    );
    const starts = rows.map((r) => Number(r.ms));
    const inFourSeconds = starts.filter((ms) => ms < 4000).length;
    expect(inFourSeconds).toBeLessThanOrEqual(25);
    // The workers were woken for new tokens, not only by the 2 s re-check.
    expect(inFourSeconds).toBeGreaterThanOrEqual(18);
    for (const s of starts) expect(starts.filter((x) => x >= s && x < s + 1000).length).toBeLessThanOrEqual(10);
    // Those that waited for a token recorded it, and none used a retry.
    const { rows: waits } = await t.db.pool.query(
      `select max(traffic_wait_ms)::int as most, sum(retries - retries_left)::int as used from external_tasks where topic = $1`,
      [topic],
    );
    expect(waits[0].most).toBeGreaterThan(0);
    expect(waits[0].used).toBe(0);
  });
});
