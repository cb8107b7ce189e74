// A batch of timer firings sends its transitions pipelined (one write, answered in
// order) instead of one round trip each; firings that must read first, and a second
// timer of one instance, still see what the firings before them wrote. The scheduler,
// woken at a due time, looks for due timers at once.
import pg from 'pg';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, type Engine } from '../../runtime/engine/context.ts';
import { deployDefinition } from '../../runtime/engine/definitions.ts';
import { startInstance } from '../../runtime/engine/instances.ts';
import { fireDueTimers, publishMessage } from '../../runtime/engine/waits.ts';
import { startTimerScheduler } from '../../runtime/scheduler/timer-scheduler.ts';
import { createPool, withTransaction, type Pool } from '../../runtime/store/db.ts';
import { runPipelined } from '../../runtime/store/pipeline.ts';
import { buildBpmn } from '../support/bpmn.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { waitFor } from '../support/server.ts';

const log = pino({ level: 'silent' });
let db: TestDatabase;
let engine: Engine;

const wait = (id: string, duration = 'PT1H') => ({ id, type: 'catchEvent' as const, timer: { duration } });

beforeAll(async () => {
  db = await createTestDatabase();
  engine = createEngine(db.pool, log);
  await deployDefinition(engine, buildBpmn('plain', [{ id: 's', type: 'startEvent' }, wait('wait'), { id: 'e', type: 'endEvent' }],
    [{ from: 's', to: 'wait' }, { from: 'wait', to: 'e' }]));
  // After the timer a message wait begins: its commit looks in the inbox first.
  await deployDefinition(engine, buildBpmn('then-message', [
    { id: 's', type: 'startEvent' }, wait('wait'), { id: 'paid', type: 'catchEvent', message: 'pipeline-paid' }, { id: 'e', type: 'endEvent' },
  ], [{ from: 's', to: 'wait' }, { from: 'wait', to: 'paid' }, { from: 'paid', to: 'e' }]));
  // Two timers of one instance: the second firing must see the first one's writes.
  await deployDefinition(engine, buildBpmn('two-timers', [
    { id: 's', type: 'startEvent' }, { id: 'fork', type: 'parallelGateway' }, wait('w1'), wait('w2'), { id: 'join', type: 'parallelGateway' }, { id: 'e', type: 'endEvent' },
  ], [{ from: 's', to: 'fork' }, { from: 'fork', to: 'w1' }, { from: 'fork', to: 'w2' }, { from: 'w1', to: 'join' }, { from: 'w2', to: 'join' }, { from: 'join', to: 'e' }]));
  // A terminate end after the timer: its commit cancels the open task after its statement.
  await deployDefinition(engine, buildBpmn('terminate', [
    { id: 's', type: 'startEvent' }, { id: 'fork', type: 'parallelGateway' }, wait('wait'), { id: 'stop', type: 'terminateEndEvent' },
    { id: 'work', type: 'serviceTask', topic: 'pipeline-work' }, { id: 'e', type: 'endEvent' },
  ], [{ from: 's', to: 'fork' }, { from: 'fork', to: 'wait' }, { from: 'wait', to: 'stop' }, { from: 'fork', to: 'work' }, { from: 'work', to: 'e' }]));
});
afterAll(async () => {
  await db?.drop();
});

async function start(key: string): Promise<string> {
  const started = await startInstance(engine, { definitionKey: key });
  if (!started.ok) throw new Error(`no definition ${key}`);
  return started.instance.id;
}

/** Makes the instances' timers due, in this order (1 ms apart), so that they fall into known chunks. */
async function makeDueInOrder(ids: string[]): Promise<void> {
  await db.pool.query(`update timers t set due_at = now() - interval '1 minute' + (x.n * interval '1 millisecond')
      from (select i.id, i.n from unnest($1::uuid[]) with ordinality as i(id, n)) x
     where t.instance_id = x.id and t.state = 'waiting'`, [ids]);
}

/** A pool whose clients record the most statements they had sent and not yet seen answered. */
function countingPool(url: string): { pool: Pool; maxInFlight: () => number; clients: pg.PoolClient[] } {
  const pool = createPool({ connectionString: url });
  const clients: pg.PoolClient[] = [];
  let max = 0;
  pool.on('connect', (client) => {
    clients.push(client);
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    let inFlight = 0;
    (client as { query: unknown }).query = (...args: unknown[]) => {
      inFlight++;
      max = Math.max(max, inFlight);
      const done = args.findIndex((a) => typeof a === 'function');
      if (done >= 0) {
        const callback = args[done] as (...r: unknown[]) => void;
        args[done] = (...r: unknown[]) => {
          inFlight--;
          callback(...r);
        };
        return query(...args);
      }
      const result = query(...args) as Promise<unknown>;
      void result.then(() => inFlight--, () => inFlight--);
      return result;
    };
  });
  return { pool, maxInFlight: () => max, clients };
}

describe('pipelined timer firing', () => {
  it('given 24 due timers of 24 instances, then each batch sends its firings without waiting for one another, and every timer fires once', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 24; i++) ids.push(await start('plain'));
    await makeDueInOrder(ids);
    const counting = countingPool(db.url);
    try {
      // 24 timers in 4 lanes: 4 transactions of 6 firings each.
      expect(await fireDueTimers(createEngine(counting.pool, log), 100)).toBe(24);
      // One statement per round trip before: at most 1 in flight.
      expect(counting.maxInFlight()).toBeGreaterThanOrEqual(6);
      // Every client is back in its ordinary mode.
      for (const client of counting.clients) expect((client as unknown as { pipeline: boolean }).pipeline).toBe(false);
    } finally {
      await counting.pool.end();
    }
    const { rows } = await db.pool.query(`select count(*)::int as completed,
        (select count(*)::int from events where instance_id = any($1::uuid[]) and kind = 'step:completed' and step_id = 'wait') as fired,
        (select count(*)::int from timers where instance_id = any($1::uuid[]) and state = 'fired' and fired_at >= due_at) as stamped
      from instances where id = any($1::uuid[]) and status = 'completed'`, [ids]);
    expect(rows[0]).toEqual({ completed: 24, fired: 24, stamped: 24 });
  });

  it('given a batch mixing plain firings with a message wait that finds its message buffered, a terminate end, and an instance with two due timers, then each fires once with the result of firing alone', async () => {
    // Four lanes of three: [p, message, p] [p, two, two] [p, terminate, p] [p, p, p]
    const p = async () => start('plain');
    const [p1, message, p2, p3, two, p4, terminate, p5, p6, p7, p8] = [
      await p(), await start('then-message'), await p(), await p(), await start('two-timers'), await p(), await start('terminate'), await p(), await p(), await p(), await p(),
    ];
    // A message published before its wait begins is kept and matched when the wait starts.
    expect((await publishMessage(engine, { name: 'pipeline-paid' })).status).toBe('buffered');
    await makeDueInOrder([p1!, message!, p2!, p3!, two!, p4!, terminate!, p5!, p6!, p7!, p8!]);
    expect(await fireDueTimers(engine, 100)).toBe(12);
    const { rows } = await db.pool.query<{ id: string; status: string; fired: number }>(`select i.id, i.status,
        (select count(*)::int from events e where e.instance_id = i.id and e.kind = 'step:completed' and e.step_id in ('wait', 'w1', 'w2')) as fired
      from instances i where i.id = any($1::uuid[])`, [[p1, message, p2, p3, two, p4, terminate, p5, p6, p7, p8]]);
    const byId = new Map(rows.map((r) => [r.id, r]));
    for (const id of [p1, p2, p3, p4, p5, p6, p7, p8]) expect(byId.get(id!)).toMatchObject({ status: 'completed', fired: 1 });
    expect(byId.get(message!)).toMatchObject({ status: 'completed', fired: 1 });
    expect(byId.get(two!)).toMatchObject({ status: 'completed', fired: 2 });
    expect(byId.get(terminate!)).toMatchObject({ status: 'completed', fired: 1 });
    const { rows: tasks } = await db.pool.query(`select state from external_tasks where instance_id = $1`, [terminate]);
    expect(tasks.map((t) => t.state)).not.toContain('ready');
    const { rows: joins } = await db.pool.query(`select count(*)::int as n from events where instance_id = $1 and kind = 'step:completed' and step_id = 'join'`, [two]);
    expect(joins[0].n).toBe(1);
  });
});

describe('runPipelined', () => {
  it('given a group of statements in a transaction, then they run in call order and answer in order; given one that fails, then the transaction fails and the client works as before', async () => {
    await db.pool.query('create table pipeline_probe (seq serial primary key, n int not null)');
    const order = await withTransaction(db.pool, async (tx) => {
      const results = await runPipelined(tx, Array.from({ length: 10 }, (_, n) => async () =>
        (await tx.query<{ n: number }>({ name: 'probe_insert', text: 'insert into pipeline_probe (n) values ($1) returning n', values: [n] })).rows[0]!.n));
      return results.map((r) => (r.status === 'fulfilled' ? r.value : -1));
    });
    expect(order).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    const { rows } = await db.pool.query('select array_agg(n order by seq) as ns from pipeline_probe');
    expect(rows[0].ns).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);

    const client = await db.pool.connect();
    try {
      await client.query('begin');
      const results = await runPipelined(client, [
        () => client.query('insert into pipeline_probe (n) values (100)'),
        () => client.query('insert into pipeline_probe (n) values (null)'),
        () => client.query('insert into pipeline_probe (n) values (101)'),
      ]);
      expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'rejected']);
      await client.query('rollback');
      expect((client as unknown as { pipeline: boolean }).pipeline).toBe(false);
      expect(Object.prototype.hasOwnProperty.call(client, 'query')).toBe(false);
      expect((await client.query('select count(*)::int as n from pipeline_probe')).rows[0].n).toBe(10);
    } finally {
      client.release();
    }
  });
});

describe('timer scheduler at a due time', () => {
  it('given a timer due in 400 ms, then the first statement after the sleep is the look-up of due timers, not a recomputation of the next due time', async () => {
    const sent: { name: string; at: number }[] = [];
    const counting = createPool({ connectionString: db.url });
    const query = counting.query.bind(counting) as (...args: unknown[]) => unknown;
    (counting as { query: unknown }).query = (...args: unknown[]) => {
      const config = args[0] as { name?: string } | string;
      sent.push({ name: typeof config === 'string' ? config : config.name ?? '?', at: performance.now() });
      return query(...args);
    };
    // No other timer waits: the old tests' timers all fired.
    await db.pool.query(`update timers set state = 'canceled' where state = 'waiting'`);
    const scheduler = startTimerScheduler(createEngine(counting, log), log, { maxSleepMs: 30_000, batchSize: 500 });
    try {
      await waitFor(async () => (sent.length > 0 ? true : undefined), 5000, 'the first recomputation');
      const id = await start('plain');
      await db.pool.query(`update timers set due_at = now() + interval '400 milliseconds' where instance_id = $1`, [id]);
      scheduler.poke();
      await waitFor(async () => ((await db.pool.query(`select status from instances where id = $1`, [id])).rows[0]?.status === 'completed' ? true : undefined), 10_000, 'the timer to fire');
      const first = sent.findIndex((s) => s.name === 'find_due_timers');
      expect(first).toBeGreaterThan(0);
      // The statement before it was the poke's recomputation, a sleep earlier.
      expect(sent[first - 1]!.name).toBe('ms_until_next_timer');
      expect(sent[first]!.at - sent[first - 1]!.at).toBeGreaterThan(200);
    } finally {
      await scheduler.stop();
      await counting.end();
    }
  });
});
