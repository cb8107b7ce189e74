// graphile-worker under the bench, `default` (concurrency 8, everything else as
// shipped: LISTEN/NOTIFY wake-ups, one fetch and one completion per job) or `batched`
// (its documented batching, https://worker.graphile.org/docs/performance: a local
// queue of concurrency + 1 jobs fetched at once, completions batched with
// completeJobBatchDelay 0). Jobs are added one by one by PRODUCERS loops while the
// runner works; a chain is a job whose handler adds the next step's job.
import { Logger, run, type Runner, type Task } from 'graphile-worker';
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

const mode = process.argv[2] === 'batched' ? 'batched' : 'default';
const size = sizes(quickMode());
const version = packageVersion('graphile-worker');

/** Per workload: a handler counts executions per payload id (a repeat is a correctness failure). */
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

const single = new Tally();
const chain = new Tally();
let pickedUp: ((at: number) => void) | undefined;

const taskList: Record<string, Task> = {
  single: async (payload) => {
    single.hit((payload as { i: number }).i);
  },
  chain1: async (payload, helpers) => {
    await helpers.addJob('chain2', payload);
  },
  chain2: async (payload, helpers) => {
    await helpers.addJob('chain3', payload);
  },
  chain3: async (payload) => {
    chain.hit((payload as { i: number }).i);
  },
  pickup: async () => {
    pickedUp?.(performance.now());
  },
};

async function throughput(
  runner: Runner,
  admin: pg.Client,
  tally: Tally,
  task: string,
  n: number,
  steps: number,
  result: SystemResult,
  name: string,
): Promise<ThroughputRound> {
  const finished = tally.reset(n);
  const mark = await costMark(admin);
  const t0 = performance.now();
  await pool(n, PRODUCERS, async (i) => {
    await runner.addJob(task, { i });
  });
  await finished;
  const seconds = (tally.tEnd - t0) / 1000;
  check(
    result,
    `${name}: ${n} ${task === 'single' ? 'jobs' : 'chains'} ran once each`,
    tally.seen.size === n && tally.repeats() === 0,
    `${tally.seen.size} distinct, ${tally.repeats()} repeated`,
  );
  return { perSec: n / seconds, stepsPerSec: (n * steps) / seconds, seconds, cost: await costSince(admin, mark, n * steps) };
}

async function pickupLatency(runner: Runner, n: number): Promise<{ p50: number; p99: number }> {
  const latencies: number[] = [];
  for (let i = 0; i < n; i++) {
    await sleep(PICKUP_IDLE_MS); // the worker completes the previous job and waits for the next
    const got = new Promise<number>((resolve) => {
      pickedUp = resolve;
    });
    const t0 = performance.now();
    await runner.addJob('pickup', { i });
    latencies.push((await got) - t0);
  }
  return { p50: pct(latencies, 50), p99: pct(latencies, 99) };
}

async function main(): Promise<void> {
  const connectionString = env('BENCH_DB_URL');
  const admin = new pg.Client({ connectionString: env('BENCH_ADMIN_URL') });
  await admin.connect();
  const batched = mode === 'batched';
  const result: SystemResult = {
    system: batched ? 'graphile-worker batched' : 'graphile-worker',
    version,
    settings: batched
      ? `concurrentJobs ${WORKERS}, localQueue.size ${WORKERS + 1}, completeJobBatchDelay 0, failJobBatchDelay 0, maxPoolSize 10; addJob one job per call`
      : `concurrentJobs ${WORKERS}, other settings default (maxPoolSize 10, LISTEN/NOTIFY, pollInterval 2 s); addJob one job per call`,
    single: [],
    chain: [],
    pickup: [],
    checks: [],
    notes: [],
  };
  const runner = await run({
    connectionString,
    concurrency: WORKERS,
    noHandleSignals: true,
    logger: new Logger(() => () => undefined),
    taskList,
    ...(batched
      ? { preset: { worker: { localQueue: { size: WORKERS + 1 }, completeJobBatchDelay: 0, failJobBatchDelay: 0 } } }
      : {}),
  });
  try {
    const rounds = benchRounds();
    if (rounds.includes(0)) result.idleQueriesPerSec = await idleQueriesPerSec();
    for (const round of rounds) {
      result.single!.push(await throughput(runner, admin, single, 'single', size.single, 1, result, `round ${round + 1} single`));
      partial(result);
      result.chain!.push(await throughput(runner, admin, chain, 'chain1', size.chain, 3, result, `round ${round + 1} chain`));
      partial(result);
      result.pickup!.push(await pickupLatency(runner, size.pickups));
      partial(result);
    }
  } finally {
    await runner.stop();
  }
  const db = new pg.Client({ connectionString });
  await db.connect();
  const {
    rows: [left],
  } = await db.query<{ n: number }>('select count(*)::int as n from graphile_worker.jobs');
  await db.end();
  check(result, 'no job left in graphile_worker.jobs', left!.n === 0, `${left!.n} left`);
  await admin.end();
  report(result);
}

main().catch((err: Error) => {
  console.error(err);
  process.exit(1);
});
