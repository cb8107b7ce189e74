// Shared by the bench scripts: workload sizes, statistics, cost counters and the
// child-process protocol (each system runs in its own process; it prints one
// `BENCH_RESULT {json}` line on stdout, which run.ts collects).
import { readFileSync } from 'node:fs';
import pg from 'pg';

export const RUNS = 3;

/**
 * The rounds (0-based) this child runs. run.ts gives each round of each system its own
 * child (BENCH_ROUNDS=2 is the second round) and lets the systems take turns, round 1 of
 * each, then round 2 of each …, so that the shared machine speeding up or slowing down
 * during the run falls on every system alike; the system's database keeps the earlier
 * rounds' work. A child started by hand without it runs all RUNS rounds.
 */
export function benchRounds(): number[] {
  const given = process.env.BENCH_ROUNDS;
  if (!given) return Array.from({ length: RUNS }, (_, i) => i);
  const rounds = given.split(',').map((r) => Number(r) - 1);
  if (rounds.some((r) => !Number.isInteger(r) || r < 0 || r >= RUNS))
    throw new Error(`BENCH_ROUNDS=${given}: rounds are 1-${RUNS}`);
  return rounds;
}

/** How many rounds the system's database holds once this child's last round is done (what its end checks count). */
export const roundsInDatabase = (rounds: number[]): number => Math.max(-1, ...rounds) + 1;

export interface Sizes {
  /** workload 1: one-task instances (jobs for the peers) */
  single: number;
  /** workload 2: instances of three sequential steps */
  chain: number;
  /** workload 3: instances of a 10-branch parallel fan-out/fan-in */
  fanout: number;
  /** workload 4: sequential starts on an idle system */
  pickups: number;
  /** workload 5: timers, due spread over TIMER_SPREAD_S seconds */
  timers: number;
  /** workload 8 (Baton only): instances of a loop of LOOP_PASSES passes, one task each */
  loop: number;
  /** workload 9 (Baton only): instances of CALL_CHAIN call activities in sequence, each child one task */
  calls: number;
  /** workload 10 (Baton only): user-task rounds (start, list, claim, complete over the API) */
  userTasks: number;
  /** workload 11 (Baton only): instances waiting on a message; `published` of them get theirs, at MESSAGE_RATE */
  messages: number;
  published: number;
  /** workload 6: preloaded completed and waiting instances; latency samples per round */
  scaleCompleted: number;
  scaleWaiting: number;
  scaleSamples: number;
}

export const FULL: Sizes = {
  single: 20_000,
  chain: 5_000,
  fanout: 500,
  pickups: 500,
  timers: 10_000,
  loop: 50,
  calls: 1_000,
  userTasks: 2_000,
  messages: 10_000,
  published: 2_000,
  scaleCompleted: 1_000_000,
  scaleWaiting: 100_000,
  scaleSamples: 300,
};
export const QUICK: Sizes = {
  single: 150,
  chain: 50,
  fanout: 10,
  pickups: 20,
  timers: 150,
  loop: 3,
  calls: 20,
  userTasks: 30,
  messages: 200,
  published: 100,
  scaleCompleted: 10_000,
  scaleWaiting: 1_000,
  scaleSamples: 20,
};
export const sizes = (quick: boolean): Sizes => {
  const base = quick ? QUICK : FULL;
  // BENCH_SCALE_COMPLETED / BENCH_SCALE_WAITING: a different preload, for working on workload 6 only
  const completed = Number(process.env.BENCH_SCALE_COMPLETED ?? base.scaleCompleted);
  const waiting = Number(process.env.BENCH_SCALE_WAITING ?? base.scaleWaiting);
  // BENCH_SIZE_SINGLE, BENCH_SIZE_CHAIN, ...: another count for one workload, for working on it
  const override = (name: keyof Sizes) => Number(process.env[`BENCH_SIZE_${name.toUpperCase()}`] ?? base[name]);
  return {
    ...base,
    scaleCompleted: completed,
    scaleWaiting: waiting,
    single: override('single'),
    chain: override('chain'),
    fanout: override('fanout'),
    pickups: override('pickups'),
    timers: override('timers'),
    loop: override('loop'),
    calls: override('calls'),
    userTasks: override('userTasks'),
    messages: override('messages'),
    published: override('published'),
  };
};

/** Concurrent producers (starts / job inserts) and workers in the throughput workloads. */
export const PRODUCERS = 16;
export const WORKERS = 8;
export const FANOUT_BRANCHES = 10;
/** workload 8: the passes of each loop instance (a task each; the worker counts them in `n`) */
export const LOOP_PASSES = 100;
/** workload 9: the call activities in sequence in each instance (each child runs one task) */
export const CALL_CHAIN = 3;
/** workload 10: the people working the tasklist, each a candidate of its own share of the tasks */
export const PEOPLE = 8;
/**
 * Workload 11: messages published per second, on a schedule (a publish does not wait for the
 * one before), at most MESSAGES_IN_FLIGHT unanswered; latency counts from the scheduled time,
 * so a publish held back by that cap counts its wait too.
 */
export const MESSAGE_RATE = 200;
export const MESSAGES_IN_FLIGHT = 100;
/**
 * Workload 4: the quiet time before each start, the same for every system, so that each
 * pickup starts from an idle system (a parked long poll, a worker waiting on LISTEN) and
 * not while the worker is still finishing the previous one.
 */
export const PICKUP_IDLE_MS = 5;

export const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
export const pct = (xs: number[], p: number): number =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))] as number;

/** Runs `n` calls of `task` with `concurrency` loops; `task` gets the call's index. */
export async function pool(n: number, concurrency: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let i = next++; i < n; i = next++) await task(i);
    }),
  );
}

// Statements: every query that node-postgres sends from this process (the systems
// under test all use `pg`, and the bench's own queries stay outside the measured
// windows). Round trips: those sent while none of the same client's was in flight, so a
// pipelined group counts once (queries a client queues behind one in flight would too,
// but none of the systems sends them that way).
let queries = 0;
let roundTrips = 0;
const inFlight = new WeakMap<object, number>();
const originalQuery = pg.Client.prototype.query;
// BENCH_TRACE_QUERIES=1: the child also prints its most frequent statements on stderr.
const traced = process.env.BENCH_TRACE_QUERIES === '1' ? new Map<string, number>() : undefined;
(pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown }).query = function counted(
  this: pg.Client,
  ...args: unknown[]
) {
  queries++;
  if (traced) {
    const q = args[0] as string | { name?: string; text?: string };
    const key = (typeof q === 'string' ? q : (q.name ?? q.text ?? '?')).replace(/\s+/g, ' ').slice(0, 90);
    traced.set(key, (traced.get(key) ?? 0) + 1);
  }
  const before = inFlight.get(this) ?? 0;
  if (before === 0) roundTrips++;
  inFlight.set(this, before + 1);
  const answered = () => inFlight.set(this, Math.max(0, (inFlight.get(this) ?? 1) - 1));
  const callback = args.findIndex((a) => typeof a === 'function');
  if (callback >= 0) {
    const fn = args[callback] as (...r: unknown[]) => void;
    args[callback] = (...r: unknown[]) => {
      answered();
      fn(...r);
    };
  }
  const result = (originalQuery as (...a: unknown[]) => unknown).apply(this, args) as
    { then?: unknown; once?: unknown } | undefined;
  if (callback < 0) {
    if (typeof result?.then === 'function') (result as Promise<unknown>).then(answered, answered);
    else if (typeof result?.once === 'function') {
      // a submittable (cursor, stream): answered when it ends
      (result as NodeJS.EventEmitter).once('end', answered).once('error', answered);
    } else answered();
  }
  return result;
};

/** Statements a system sends per second while it has nothing to do (measured over `ms`). */
export async function idleQueriesPerSec(ms = idleWindowMs(quickMode())): Promise<number> {
  const before = queries;
  await sleep(ms);
  return ((queries - before) * 1000) / ms;
}

export interface CostMark {
  queries: number;
  roundTrips: number;
  xid: bigint;
  lsn: string;
}
export interface Cost {
  /** transactions that were given a transaction id (those that wrote), per step */
  writeTxPerStep: number;
  /** node-postgres queries sent by the process, per step */
  statementsPerStep: number;
  /** the queries that waited for no earlier one of their client (a pipelined group is one), per step */
  roundTripsPerStep: number;
  /** WAL bytes per step */
  walBytesPerStep: number;
}

/** Reads the cluster-wide counters; `admin` is a connection the measured system does not use. */
export async function costMark(admin: pg.Client): Promise<CostMark> {
  const q = queries;
  const r = roundTrips;
  const { rows } = await admin.query<{ xid: string; lsn: string }>(
    `select pg_snapshot_xmax(pg_current_snapshot())::text as xid, pg_current_wal_lsn()::text as lsn`,
  );
  return { queries: q, roundTrips: r, xid: BigInt(rows[0]!.xid), lsn: rows[0]!.lsn };
}

export async function costSince(admin: pg.Client, before: CostMark, steps: number): Promise<Cost> {
  const queriesDuring = queries - before.queries;
  const roundTripsDuring = roundTrips - before.roundTrips;
  const after = await costMark(admin);
  const { rows } = await admin.query<{ bytes: string }>(`select pg_wal_lsn_diff($1, $2)::text as bytes`, [after.lsn, before.lsn]);
  return {
    writeTxPerStep: Number(after.xid - before.xid) / steps,
    statementsPerStep: queriesDuring / steps,
    roundTripsPerStep: roundTripsDuring / steps,
    walBytesPerStep: Number(rows[0]!.bytes) / steps,
  };
}

export interface ThroughputRound {
  perSec: number;
  stepsPerSec: number;
  seconds: number;
  cost: Cost;
  /** workloads 10 and 11: p99 of the call that moves the instance on (complete, publish), ms */
  p99Ms?: number;
}

/** What a system's child process reports: per workload, one entry per round. */
export interface SystemResult {
  system: string;
  version: string;
  settings: string;
  single?: ThroughputRound[];
  chain?: ThroughputRound[];
  fanout?: ThroughputRound[];
  /** workload 8, Baton only: a loop of LOOP_PASSES passes */
  loop?: ThroughputRound[];
  /** workload 9, Baton only: CALL_CHAIN call activities in sequence */
  calls?: ThroughputRound[];
  /** workload 10, Baton only: user-task rounds */
  userTasks?: ThroughputRound[];
  /** workload 11, Baton only: message correlation */
  messages?: ThroughputRound[];
  /** workload 12, Baton only: workload 2 on one `baton serve` node, then on two */
  nodes?: { one: ThroughputRound; two: ThroughputRound }[];
  pickup?: { p50: number; p99: number }[];
  timers?: { p50: number; p99: number; max: number; count: number }[];
  scale?: {
    preloadSeconds: number;
    rows: string;
    empty: { fetch: number[]; complete: number[] };
    loaded: { fetch: number[]; complete: number[] };
  };
  /** statements per second sent while idle, right after start-up */
  idleQueriesPerSec?: number;
  /** exactly-once checks, each "name: ok" or a failure message */
  checks: string[];
  notes: string[];
}

export function report(result: SystemResult): void {
  if (traced) {
    const top = [...traced.entries()].sort((a, b) => b[1] - a[1]).slice(0, 25);
    process.stderr.write(
      `${result.system}: ${queries} queries; most frequent:\n${top.map(([k, n]) => `  ${String(n).padStart(8)}  ${k}`).join('\n')}\n`,
    );
  }
  // The child's last word: it exits once the line is out, whatever a library left running
  // (pg-boss 10 at times keeps the process alive after stop(); run.ts then waited for it
  // until the round's share of --deadline ran out).
  process.stdout.write(`BENCH_RESULT ${JSON.stringify(result)}\n`, () => process.exit());
}

/** After each round: what is measured so far, which run.ts keeps if it has to stop the child (--deadline). */
export function partial(result: SystemResult): void {
  process.stdout.write(`BENCH_PARTIAL ${JSON.stringify(result)}\n`);
}

export function env(name: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set (run through test/bench/run.ts)`);
  return v;
}

export const quickMode = (): boolean => process.env.BENCH_QUICK === '1';

/** How long the idle statements are counted (--quick only checks that the figure comes out). */
export const idleWindowMs = (quick: boolean): number => (quick ? 500 : 2000);

/** Fails the child (and so the suite) when a system lost or repeated work. */
export function check(result: SystemResult, name: string, ok: boolean, detail: string): void {
  result.checks.push(ok ? `${name}: ok` : `${name}: FAILED ${detail}`);
  if (!ok) process.exitCode = 1;
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The installed version of a package (some export no ./package.json, so read the file). */
export function packageVersion(name: string): string {
  const file = new URL(`../../node_modules/${name}/package.json`, import.meta.url);
  return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
}
