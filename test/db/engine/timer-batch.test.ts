// Timers fire in batches (several firings per transaction, lanes side by side):
// each still fires exactly once with several schedulers racing, a busy instance
// neither blocks its batch nor is skipped for good, and a burst of timer creations
// costs the scheduler one recomputation, not one per timer.
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, type Engine } from '../../../runtime/engine/context.ts';
import { deployDefinition } from '../../../runtime/engine/definitions.ts';
import { startInstance } from '../../../runtime/engine/instances.ts';
import { fireDueTimers } from '../../../runtime/engine/waits.ts';
import { startTimerScheduler } from '../../../runtime/scheduler/timer-scheduler.ts';
import { createPool, type Pool } from '../../../runtime/store/db.ts';
import { buildBpmn } from '../../support/bpmn.ts';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';
import { waitFor } from '../../support/server.ts';

const log = pino({ level: 'silent' });
let db: TestDatabase;
let nodeA: Engine;
let nodeB: Engine;
let poolB: Pool;

beforeAll(async () => {
  db = await createTestDatabase();
  nodeA = createEngine(db.pool, log);
  poolB = createPool({ connectionString: db.url });
  nodeB = createEngine(poolB, log);
  // A far timer: nothing fires it until the test moves its due time.
  await deployDefinition(
    nodeA,
    buildBpmn(
      'later',
      [
        { id: 's', type: 'startEvent' },
        { id: 'wait', type: 'catchEvent', timer: { duration: 'PT1H' } },
        { id: 'e', type: 'endEvent' },
      ],
      [
        { from: 's', to: 'wait' },
        { from: 'wait', to: 'e' },
      ],
    ),
  );
  await deployDefinition(
    nodeA,
    buildBpmn(
      'soon',
      [
        { id: 's', type: 'startEvent' },
        { id: 'wait', type: 'catchEvent', timer: { duration: 'PT0.3S' } },
        { id: 'e', type: 'endEvent' },
      ],
      [
        { from: 's', to: 'wait' },
        { from: 'wait', to: 'e' },
      ],
    ),
  );
});
afterAll(async () => {
  await poolB?.end();
  await db?.drop();
});

async function startMany(key: string, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const started = await startInstance(nodeA, { definitionKey: key });
    if (!started.ok) throw new Error(`no definition ${key}`);
    ids.push(started.instance.id);
  }
  return ids;
}

async function makeDue(ids: string[]): Promise<void> {
  await db.pool.query(`update timers set due_at = now() - interval '1 second' where instance_id = any($1::uuid[])`, [ids]);
}

async function firings(ids: string[]): Promise<{ fired: number; timers: number; completed: number }> {
  const { rows } = await db.pool.query(
    `select count(*)::int as fired, count(distinct data->>'timerId')::int as timers,
      (select count(*)::int from instances where id = any($1::uuid[]) and status = 'completed') as completed
    from events where instance_id = any($1::uuid[]) and kind = 'step:completed' and step_id = 'wait'`,
    [ids],
  );
  return rows[0];
}

describe('batched timer firing', () => {
  it('given 120 due timers and two nodes firing them at once (twice each), then every timer fires exactly once', async () => {
    const ids = await startMany('later', 120);
    await makeDue(ids);
    const counts = await Promise.all([
      fireDueTimers(nodeA, 100),
      fireDueTimers(nodeB, 100),
      fireDueTimers(nodeA, 100),
      fireDueTimers(nodeB, 100),
    ]);
    // A batch of 100 leaves 20 due: one more round, as the scheduler's tick does.
    counts.push(await fireDueTimers(nodeB, 100), await fireDueTimers(nodeA, 100));
    expect(counts.reduce((a, b) => a + b, 0)).toBe(120);
    expect(await firings(ids)).toEqual({ fired: 120, timers: 120, completed: 120 });
    const { rows } = await db.pool.query(
      `select count(*)::int as n from timers where instance_id = any($1::uuid[]) and state = 'fired' and fired_at >= due_at`,
      [ids],
    );
    expect(rows[0].n).toBe(120);
  });

  it('given 200 timers due at one instant and a page of 200, then each of the 4 lanes fires 50 in one transaction, every timer once', async () => {
    const ids = await startMany('later', 200);
    await makeDue(ids);
    expect(await fireDueTimers(nodeA, 200)).toBe(200);
    expect(await firings(ids)).toEqual({ fired: 200, timers: 200, completed: 200 });
    // A firing transaction stamps its timers in one statement: one transaction id per transaction.
    const { rows } = await db.pool.query<{ n: number }>(
      `select count(*)::int as n from timers where instance_id = any($1::uuid[]) and state = 'fired' and fired_at >= due_at group by xmin`,
      [ids],
    );
    expect(rows.map((r) => r.n)).toEqual([50, 50, 50, 50]);
  });

  it('given a due timer whose instance another transaction holds, then the rest of its batch fires at once and it fires once when the lock is released', async () => {
    const ids = await startMany('later', 10);
    await makeDue(ids);
    const holder = await db.pool.connect();
    try {
      await holder.query('begin');
      await holder.query('select 1 from instances where id = $1 for no key update', [ids[0]]);
      const firing = fireDueTimers(nodeA, 100);
      await waitFor(
        async () => ((await firings(ids.slice(1))).completed === 9 ? true : undefined),
        10_000,
        'the other nine to fire',
      );
      expect((await firings(ids.slice(0, 1))).fired).toBe(0);
      await holder.query('commit');
      expect(await firing).toBe(10);
    } finally {
      holder.release();
    }
    expect(await firings(ids)).toEqual({ fired: 10, timers: 10, completed: 10 });
  });

  it('given a burst of 300 timer creations, then the scheduler sends a statement per 10 ms of the burst at most, not one round per timer, and fires each timer on time', async () => {
    let statements = 0;
    const counting = createPool({ connectionString: db.url });
    const query = counting.query.bind(counting) as (...args: unknown[]) => unknown;
    (counting as { query: unknown }).query = (...args: unknown[]) => {
      statements++;
      return query(...args);
    };
    const scheduler = startTimerScheduler(createEngine(counting, log), log, { maxSleepMs: 30_000, batchSize: 100 });
    try {
      await waitFor(async () => (statements > 0 ? true : undefined), 5000, 'the first wake-up');
      // No parkedPolls here: the pokes are the only news of these timers.
      const ids = await startMany('soon', 30);
      const before = statements;
      const burstStart = performance.now();
      for (let i = 0; i < 300; i++) {
        scheduler.poke();
        if (i % 10 === 0) await new Promise((r) => setTimeout(r, 1));
      }
      await new Promise((r) => setTimeout(r, 30)); // the burst's trailing recomputation
      const burstMs = performance.now() - burstStart;
      // Each poke used to run the firing queries and the recomputation (3 statements).
      expect(statements - before).toBeLessThanOrEqual(Math.ceil(burstMs / 10) + 2);
      await waitFor(async () => ((await firings(ids)).completed === 30 ? true : undefined), 10_000, 'the 30 timers to fire');
      const { rows } = await db.pool.query(
        `select max(extract(epoch from fired_at - due_at) * 1000)::float8 as late from timers where instance_id = any($1::uuid[])`,
        [ids],
      );
      expect(rows[0].late).toBeGreaterThanOrEqual(0);
      expect(rows[0].late).toBeLessThan(2000);
    } finally {
      await scheduler.stop();
      await counting.end();
    }
  });
});
