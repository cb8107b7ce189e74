// pg-boss under the bench, tuned: WORKERS work() loops per queue with batchSize 8 and
// the shortest polling interval it accepts (0.5 s), and woken by LISTEN/NOTIFY
// (a statement trigger on pgboss.job notifies; the listener calls boss.notifyWorker,
// its documented wake-up). Its defaults (one job per fetch, a poll every 2 s) would
// manage a few jobs a second and are not run. A chain is one queue whose handler
// inserts the next step's jobs for the whole batch.
import PgBoss from 'pg-boss';
import pg from 'pg';
import {
  PICKUP_IDLE_MS,
  PRODUCERS,
  WORKERS,
  benchRounds,
  check,
  costMark,
  costSince,
  env,
  idleQueriesPerSec,
  partial,
  pct,
  pool,
  quickMode,
  report,
  sizes,
  sleep,
  packageVersion,
  type SystemResult,
  type ThroughputRound,
} from './common.ts';

const size = sizes(quickMode());
const version = packageVersion('pg-boss');
const BATCH = 8;
const POLL_S = 0.5;
const CHANNEL = 'pgboss_bench_job';

interface Payload {
  i: number;
  step?: number;
}

class Tally {
  seen = new Map<number, number>();
  done = 0;
  target = 0;
  tEnd = 0;
  onDone?: () => void;
  hit(id: number): void {
    this.seen.set(id, (this.seen.get(id) ?? 0) + 1);
    if (++this.done === this.target) {
      this.tEnd = performance.now();
      this.onDone?.();
    }
  }
  reset(target: number): Promise<void> {
    this.seen.clear();
    this.done = 0;
    this.target = target;
    return new Promise((resolve) => {
      this.onDone = resolve;
    });
  }
  repeats(): number {
    return [...this.seen.values()].filter((n) => n > 1).length;
  }
}

async function main(): Promise<void> {
  const connectionString = env('BENCH_DB_URL');
  const admin = new pg.Client({ connectionString: env('BENCH_ADMIN_URL') });
  await admin.connect();
  const result: SystemResult = {
    system: 'pg-boss',
    version,
    settings: `tuned: ${WORKERS} work() loops per queue, batchSize ${BATCH}, pollingIntervalSeconds ${POLL_S}, woken by LISTEN/NOTIFY → notifyWorker; pool max 10; send() one job per call`,
    single: [],
    chain: [],
    pickup: [],
    checks: [],
    notes: ['defaults (batchSize 1, poll every 2 s) not run: at most 0.5 jobs/s per worker'],
  };
  const boss = new PgBoss({ connectionString, max: 10 });
  boss.on('error', (err: Error) => {
    console.error('pg-boss:', err.message);
  });
  await boss.start();
  for (const q of ['single', 'chain', 'pickup']) await boss.createQueue(q);
  const db = new pg.Client({ connectionString });
  await db.connect();
  // or replace: each round's child runs this again on the same database
  await db.query(`create or replace function bench_notify() returns trigger language plpgsql as $$ begin perform pg_notify('${CHANNEL}', ''); return null; end $$;
                  create or replace trigger bench_notify after insert on pgboss.job for each statement execute function bench_notify()`);
  const workerIds: string[] = [];
  const listener = new pg.Client({ connectionString });
  await listener.connect();
  await listener.query(`listen ${CHANNEL}`);
  listener.on('notification', () => {
    for (const id of workerIds) boss.notifyWorker(id);
  });

  const single = new Tally();
  const chain = new Tally();
  let pickedUp: ((at: number) => void) | undefined;
  const options = { batchSize: BATCH, pollingIntervalSeconds: POLL_S };
  for (let w = 0; w < WORKERS; w++) {
    workerIds.push(
      await boss.work<Payload>('single', options, async (jobs) => {
        for (const j of jobs) single.hit(j.data.i);
      }),
    );
    workerIds.push(
      await boss.work<Payload>('chain', options, async (jobs) => {
        const next = jobs
          .filter((j) => (j.data.step ?? 1) < 3)
          .map((j) => ({ name: 'chain', data: { i: j.data.i, step: (j.data.step ?? 1) + 1 } }));
        if (next.length > 0) await boss.insert(next);
        for (const j of jobs) if (j.data.step === 3) chain.hit(j.data.i);
      }),
    );
  }
  workerIds.push(
    await boss.work('pickup', { batchSize: 1, pollingIntervalSeconds: POLL_S }, async () => {
      pickedUp?.(performance.now());
    }),
  );

  const throughput = async (tally: Tally, queue: string, steps: number, n: number, name: string): Promise<ThroughputRound> => {
    const finished = tally.reset(n);
    const mark = await costMark(admin);
    const t0 = performance.now();
    await pool(n, PRODUCERS, async (i) => {
      await boss.send(queue, { i, step: 1 });
    });
    await finished;
    const seconds = (tally.tEnd - t0) / 1000;
    check(
      result,
      `${name}: ${n} ran once each`,
      tally.seen.size === n && tally.repeats() === 0,
      `${tally.seen.size} distinct, ${tally.repeats()} repeated`,
    );
    return { perSec: n / seconds, stepsPerSec: (n * steps) / seconds, seconds, cost: await costSince(admin, mark, n * steps) };
  };
  try {
    const rounds = benchRounds();
    if (rounds.includes(0)) result.idleQueriesPerSec = await idleQueriesPerSec();
    for (const round of rounds) {
      result.single!.push(await throughput(single, 'single', 1, size.single, `round ${round + 1} single jobs`));
      partial(result);
      result.chain!.push(await throughput(chain, 'chain', 3, size.chain, `round ${round + 1} chains`));
      partial(result);
      const latencies: number[] = [];
      for (let i = 0; i < size.pickups; i++) {
        await sleep(PICKUP_IDLE_MS); // the worker finishes the previous job and waits
        const got = new Promise<number>((resolve) => {
          pickedUp = resolve;
        });
        const t0 = performance.now();
        await boss.send('pickup', { i });
        latencies.push((await got) - t0);
      }
      result.pickup!.push({ p50: pct(latencies, 50), p99: pct(latencies, 99) });
      partial(result);
    }
    await sleep(500); // completions are sent after the handler returns, without waiting
  } finally {
    await boss.stop({ graceful: true, wait: true });
    await listener.end();
  }
  const { rows } = await db.query<{ state: string; n: number }>(
    `select state::text, count(*)::int as n from pgboss.job group by state`,
  );
  await db.end();
  const notDone = rows.filter((r) => r.state !== 'completed');
  check(result, 'every pgboss.job completed', notDone.length === 0, JSON.stringify(notDone));
  await admin.end();
  report(result);
}

main().catch((err: Error) => {
  console.error(err);
  process.exit(1);
});
