// `npm run bench [-- --quick]`: Baton side by side with graphile-worker (default and
// batched), pg-boss, DBOS Transact and the pgbench ceiling, on one PostgreSQL
// (embedded, or DATABASE_URL's server), one database per system. Each round of each
// system runs in a child process of its own, one at a time, the systems taking turns
// round by round. Prints one table; every figure is the median of RUNS rounds, ratios
// are between medians of this same run.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { cpus, loadavg, totalmem } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { pino } from 'pino';
import { startBatonServer } from '../../runtime/server.ts';
import { startEmbeddedPostgres } from '../../runtime/store/embedded.ts';
import {
  FANOUT_BRANCHES,
  LOOP_PASSES,
  CALL_CHAIN,
  MESSAGE_RATE,
  PEOPLE,
  PICKUP_IDLE_MS,
  PRODUCERS,
  RUNS,
  WORKERS,
  idleWindowMs,
  median,
  sizes,
  sleep,
  type SystemResult,
  type ThroughputRound,
} from './common.ts';
import { measureCommitFloor, runPgbench, type CommitFloor, type PgbenchResult } from './pgbench.ts';

const quick = process.argv.includes('--quick');
const only = process.argv
  .find((a) => a.startsWith('--only='))
  ?.slice('--only='.length)
  .split(',');
const size = sizes(quick);
/** The next time the UTC clock reads HH:MM: today, or tomorrow when that has passed (a run across midnight). */
function nextTime(hhmm: string): number {
  const today = new Date(`${new Date().toISOString().slice(0, 10)}T${hhmm}:00Z`).getTime();
  if (Number.isNaN(today)) throw new Error(`--deadline=${hhmm}: expected HH:MM (UTC)`);
  return today > Date.now() ? today : today + 24 * 3600_000;
}
// --deadline=HH:MM (UTC): the time left is shared among the children still to run, by
// their weights (about how long each takes; leftovers carry over); a child past its share is
// stopped, its system runs no further round, and the workloads it finished are shown.
const deadlineArg = process.argv.find((a) => a.startsWith('--deadline='))?.slice('--deadline='.length);
const deadline = deadlineArg ? nextTime(deadlineArg) : undefined;
const here = path.dirname(fileURLToPath(import.meta.url));

interface SystemRun {
  id: string;
  label: string;
  script: string;
  args: string[];
  /** one round's share of a --deadline, against the others' (a peer's round takes about a minute and a quarter) */
  weight: number;
}
const SYSTEMS: SystemRun[] = [
  { id: 'baton', label: 'Baton', script: 'baton.ts', args: [], weight: 2.5 },
  { id: 'graphile', label: 'graphile-worker', script: 'graphile.ts', args: ['default'], weight: 1 },
  { id: 'graphile_batched', label: 'graphile-worker batched', script: 'graphile.ts', args: ['batched'], weight: 1 },
  { id: 'pgboss', label: 'pg-boss', script: 'pgboss.ts', args: [], weight: 1 },
  { id: 'dbos', label: 'DBOS', script: 'dbos.ts', args: [], weight: 1 },
];

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

const dbUrl = (adminUrl: string, name: string) => {
  const u = new URL(adminUrl);
  u.pathname = `/${name}`;
  return u.toString();
};

async function freshDatabase(admin: pg.Client, adminUrl: string, name: string): Promise<string> {
  await admin.query(`drop database if exists ${name} with (force)`);
  await admin.query(`create database ${name}`);
  return dbUrl(adminUrl, name);
}

/** Baton's workload 6 (a million-row preload, then alternating samples) runs once, after every round. */
const SCALE_WEIGHT = 2;

/** One child process: a round of one system, or (no round) Baton's workload 6. */
interface Turn {
  system: SystemRun;
  round?: number;
  weight: number;
}

const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));

/**
 * The order of the systems in a round: every `step`-th of them, the step growing with the
 * round (1, 2, 3 … skipping those that share a factor with their count). Five systems run
 * in the orders 0 1 2 3 4, 0 2 4 1 3, 0 3 1 4 2: each follows a different one each round
 * (turning the list by one would keep every neighbour).
 */
function roundOrder(count: number, round: number): number[] {
  let step = round + 1;
  while (gcd(step, count) !== 1) step++;
  return Array.from({ length: count }, (_, k) => (k * step) % count);
}

/**
 * Round 1 of every system, then round 2 of every system, and so on: a machine that speeds
 * up or slows down during the run (this one shares its cores) moves every system's median
 * alike; and no system always runs right after the same other one (whose autovacuum, and
 * its WAL in the cost counters, fall on the next round).
 */
function plan(systems: SystemRun[], batonWorkloads: Set<string>): Turn[] {
  const turns: Turn[] = [];
  for (let round = 0; round < RUNS; round++) {
    for (const k of roundOrder(systems.length, round)) {
      const system = systems[k]!;
      if (system.id !== 'baton' || batonWorkloads.has('throughput')) turns.push({ system, round, weight: system.weight });
    }
  }
  const baton = systems.find((s) => s.id === 'baton');
  if (baton && batonWorkloads.has('scale')) turns.push({ system: baton, weight: SCALE_WEIGHT });
  return turns;
}

const ROUND_PARTS = ['single', 'chain', 'fanout', 'loop', 'calls', 'pickup', 'timers'] as const;

/** A system's result so far with one more child's added: rounds appended, checks kept, notes once. */
function merge(into: SystemResult | undefined, part: SystemResult): SystemResult {
  if (!into) return part;
  for (const k of ROUND_PARTS) {
    const more = part[k] as unknown[] | undefined;
    if (more?.length) (into as unknown as Record<string, unknown[]>)[k] = [...(into[k] ?? []), ...more];
  }
  into.checks.push(...part.checks);
  for (const n of part.notes) if (!into.notes.includes(n)) into.notes.push(n);
  into.idleQueriesPerSec ??= part.idleQueriesPerSec;
  into.scale ??= part.scale;
  return into;
}

/**
 * Before each child: the autovacuum workers still cleaning up after the child before it
 * finish (waited for up to 30 s), then a checkpoint, so that a round starts with neither
 * the last system's vacuum running beside it nor its WAL's page images to pay for.
 */
async function settle(admin: pg.Client): Promise<number> {
  const t0 = Date.now();
  while (Date.now() - t0 < 30_000) {
    const { rows } = await admin.query<{ n: number }>(
      `select count(*)::int as n from pg_stat_activity where backend_type = 'autovacuum worker'`,
    );
    if (rows[0]!.n === 0) break;
    await sleep(250);
  }
  await admin.query('checkpoint').catch(() => undefined); // a role without pg_checkpoint goes on without it
  return (Date.now() - t0) / 1000;
}

/**
 * Runs one child; resolves with its BENCH_RESULT (or, when stopped at its share of the
 * --deadline, its last BENCH_PARTIAL), rejects when it fails.
 */
function runChild(
  system: SystemRun,
  env: Record<string, string>,
  stopAt: number | undefined,
): Promise<{ result: SystemResult; stopped: boolean }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(here, system.script), ...system.args], {
      env: { ...process.env, ...env, BENCH_QUICK: quick ? '1' : '0' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    let stopped = false;
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    child.on('error', reject);
    const timer =
      stopAt === undefined
        ? undefined
        : setTimeout(
            () => {
              stopped = true;
              process.stderr.write(
                `bench: ${system.label} stopped at ${new Date(stopAt).toISOString()} (its share of the --deadline)\n`,
              );
              child.kill('SIGKILL');
            },
            Math.max(0, stopAt - Date.now()),
          );
    child.on('exit', (code) => {
      clearTimeout(timer);
      const lines = out.split('\n');
      const last =
        lines.find((l) => l.startsWith('BENCH_RESULT ')) ??
        (stopped ? lines.filter((l) => l.startsWith('BENCH_PARTIAL ')).at(-1) : undefined);
      if (!last) return reject(new Error(`${system.label}: exited ${code} without a result\n${out.slice(-2000)}`));
      const result = JSON.parse(last.slice(last.indexOf(' ') + 1)) as SystemResult;
      if (stopped) return resolve({ result, stopped });
      if (code !== 0) return reject(new Error(`${system.label}: exited ${code}; checks: ${result.checks.join('; ')}`));
      resolve({ result, stopped });
    });
  });
}

interface ProgressModule {
  runProgressBench(opts: { baseUrl: string; databaseUrl: string; quick: boolean }): Promise<Record<string, number | string>>;
}

/** Workload 7 lives in progress.ts; it runs only when that file exists. */
async function runProgress(admin: pg.Client, adminUrl: string): Promise<Record<string, number | string> | string> {
  const file = path.join(here, 'progress.ts');
  if (!existsSync(file)) return 'not available (test/bench/progress.ts has not landed)';
  const mod = (await import(file)) as ProgressModule;
  const url = await freshDatabase(admin, adminUrl, 'bench_progress');
  const server = await startBatonServer({ databaseUrl: url, port: 0, host: '127.0.0.1', log: pino({ level: 'silent' }) });
  try {
    return await mod.runProgressBench({ baseUrl: server.url, databaseUrl: url, quick });
  } finally {
    await server.close();
  }
}

/** a system's workload 4 p99: the median of its rounds' */
const pickupP99 = (r: SystemResult): number | undefined => (r.pickup?.length ? median(r.pickup.map((x) => x.p99)) : undefined);
const fmt = (n: number | undefined, digits = 0) =>
  n === undefined || Number.isNaN(n)
    ? '—'
    : n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

async function main(): Promise<void> {
  const began = Date.now();
  const loadBefore = loadavg();
  let adminUrl = process.env.DATABASE_URL;
  const benchDir = path.resolve('.baton-bench');
  const embedded = adminUrl
    ? undefined
    : await startEmbeddedPostgres({ dataDir: benchDir, port: await freePort(), database: 'postgres' });
  adminUrl ??= embedded!.url;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  const setting = async (name: string) => (await admin.query<Record<string, string>>(`show ${name}`)).rows[0]![name];
  const pgVersion = await setting('server_version');
  const settings = ['shared_buffers', 'synchronous_commit', 'fsync', 'wal_level', 'max_connections'];
  const settingText: string[] = [];
  for (const s of settings) settingText.push(`${s}=${await setting(s)}`);

  const results = new Map<string, SystemResult>();
  const failures: string[] = [];
  const ran: string[][] = []; // per round, the systems in the order they ran
  let pgbench: PgbenchResult | string = 'not run';
  let floor: CommitFloor | string = 'not run';
  let progress: Record<string, number | string> | string = 'not run';
  try {
    // The ceiling and the peers first: they are quick, and Baton's rounds survive a --deadline.
    if (!only || only.includes('pgbench')) {
      process.stderr.write('bench: pgbench…\n');
      pgbench = await runPgbench(await freshDatabase(admin, adminUrl, 'bench_pgbench'), quick ? 1 : 8);
      process.stderr.write('bench: commit floor…\n');
      floor = await measureCommitFloor(await freshDatabase(admin, adminUrl, 'bench_commit_floor'), size.pickups).catch(
        (err: Error) => `failed: ${err.message}`,
      );
    }
    const systems = [...SYSTEMS.slice(1), SYSTEMS[0]!].filter((s) => !only || only.includes(s.id));
    const turns = plan(systems, new Set((process.env.BENCH_BATON_WORKLOADS ?? 'throughput,scale').split(',')));
    const databases = new Map<string, string>(); // per system, made fresh before its first round, kept for the later ones
    const ended = new Set<string>(); // systems stopped at their share of --deadline, or failed: no further round
    const runs = (turn: Turn) => turn.round === undefined || !ended.has(turn.system.id);
    for (const [i, turn] of turns.entries()) {
      const { system, round } = turn;
      if (!runs(turn)) continue;
      const settled = await settle(admin);
      const weightLeft = turns
        .slice(i)
        .filter(runs)
        .reduce((sum, t) => sum + t.weight, 0);
      const stopAt = deadline === undefined ? undefined : Date.now() + ((deadline - Date.now()) * turn.weight) / weightLeft;
      const what = `${system.label} ${round === undefined ? 'workload 6' : `round ${round + 1}`}`;
      if (round !== undefined) (ran[round] ??= []).push(system.label);
      const t0 = Date.now();
      process.stderr.write(`bench: ${what}… (settled in ${settled.toFixed(1)} s)\n`);
      if (!databases.has(system.id)) databases.set(system.id, await freshDatabase(admin, adminUrl, `bench_${system.id}`));
      const env: Record<string, string> = { BENCH_ADMIN_URL: adminUrl, BENCH_DB_URL: databases.get(system.id)! };
      if (round !== undefined) {
        env.BENCH_ROUNDS = String(round + 1);
        if (system.id === 'baton') env.BENCH_BATON_WORKLOADS = 'throughput';
      } else {
        env.BENCH_BATON_WORKLOADS = 'scale';
        env.BENCH_SCALE_DB_URL = await freshDatabase(admin, adminUrl, 'bench_baton_scale');
        env.BENCH_SCALE_EMPTY_DB_URL = await freshDatabase(admin, adminUrl, 'bench_baton_scale_empty');
      }
      try {
        const { result, stopped } = await runChild(system, env, stopAt);
        const merged = merge(results.get(system.id), result);
        results.set(system.id, merged);
        if (stopped) {
          if (round !== undefined) ended.add(system.id);
          const finished = ROUND_PARTS.map((k) => `${k} ${merged[k]?.length ?? 0}`).join(', ');
          merged.notes.push(
            `STOPPED in ${round === undefined ? 'workload 6' : `round ${round + 1}`} at ${new Date(stopAt!).toISOString().slice(11, 19)} ` +
              `(its share of --deadline): rounds finished: ${finished}, scale ${merged.scale?.loaded.fetch.length ?? 0}`,
          );
        }
      } catch (err) {
        if (round !== undefined) ended.add(system.id);
        failures.push(`${what}: ${(err as Error).message}`);
      }
      process.stderr.write(`bench: ${what} took ${((Date.now() - t0) / 1000).toFixed(0)} s\n`);
    }
    if (deadline !== undefined && deadline - Date.now() < 120_000) {
      progress = 'skipped: less than 2 minutes left before --deadline';
    } else if (!only || only.includes('progress')) {
      // settled as every round is: workload 6's million-row preload comes right before it
      process.stderr.write(`bench: progress… (settled in ${(await settle(admin)).toFixed(1)} s)\n`);
      progress = await runProgress(admin, adminUrl).catch((err: Error) => `failed: ${err.message}`);
    }
  } finally {
    await admin.end();
    if (embedded) {
      await embedded.stop();
      await rm(benchDir, { recursive: true, force: true });
    }
  }

  printTable({
    ran,
    pgVersion,
    settingText: settingText.join(', '),
    embedded: !!embedded,
    results,
    pgbench,
    floor,
    progress,
    loadBefore,
    seconds: (Date.now() - began) / 1000,
  });
  for (const f of failures) console.error(`FAILED: ${f}`);
  if (failures.length > 0 || [...results.values()].some((r) => r.checks.some((c) => c.includes('FAILED')))) process.exitCode = 1;
}

interface TableInput {
  pgVersion: string | undefined;
  settingText: string;
  embedded: boolean;
  results: Map<string, SystemResult>;
  pgbench: PgbenchResult | string;
  floor: CommitFloor | string;
  progress: Record<string, number | string> | string;
  loadBefore: number[];
  seconds: number;
  /** each round's systems in the order they ran */
  ran: string[][];
}

function printTable(t: TableInput): void {
  const cpu = cpus();
  const columns = SYSTEMS.filter((s) => t.results.has(s.id));
  const baton = t.results.get('baton');
  const rows: string[][] = [];
  const med = (rounds: ThroughputRound[] | undefined, pick: (r: ThroughputRound) => number) =>
    rounds && rounds.length ? median(rounds.map(pick)) : undefined;
  const row = (label: string, value: (r: SystemResult) => number | undefined, digits = 0) =>
    rows.push([label, ...columns.map((s) => fmt(value(t.results.get(s.id)!), digits))]);
  const ratioRow = (label: string, value: (r: SystemResult) => number | undefined, lowerIsBetter = false) => {
    const b = baton ? value(baton) : undefined;
    rows.push([
      label,
      ...columns.map((s) => {
        const v = value(t.results.get(s.id)!);
        if (s.id === 'baton' || b === undefined || v === undefined) return '';
        return `${(lowerIsBetter ? v / b : b / v).toFixed(2)}×`;
      }),
    ]);
  };
  const throughputRows = (
    n: string,
    key: 'single' | 'chain' | 'fanout' | 'loop' | 'calls' | 'userTasks' | 'messages',
    unit: string,
    steps: number,
  ) => {
    row(`${n} ${unit}/s`, (r) => med(r[key], (x) => x.perSec));
    if (key === 'userTasks' || key === 'messages') row(`${n} p99 (ms)`, (r) => med(r[key], (x) => x.p99Ms ?? NaN), 1);
    if (steps > 1) row(`${n} steps/s`, (r) => med(r[key], (x) => x.stepsPerSec));
    ratioRow(`${n} Baton ÷ system`, (r) => med(r[key], (x) => x.perSec));
    row(`${n} write transactions/step`, (r) => med(r[key], (x) => x.cost.writeTxPerStep), 2);
    row(`${n} statements/step`, (r) => med(r[key], (x) => x.cost.statementsPerStep), 2);
    row(`${n} round trips/step`, (r) => med(r[key], (x) => x.cost.roundTripsPerStep), 2);
    row(`${n} WAL bytes/step`, (r) => med(r[key], (x) => x.cost.walBytesPerStep));
  };
  throughputRows(`1. single task, ${fmt(size.single)}:`, 'single', 'instances (jobs)', 1);
  throughputRows(`2. three steps, ${fmt(size.chain)}:`, 'chain', 'instances (chains)', 3);
  throughputRows(`3. fan-out ${FANOUT_BRANCHES}, ${fmt(size.fanout)}:`, 'fanout', 'instances', FANOUT_BRANCHES);
  throughputRows(`8. loop of ${LOOP_PASSES} passes (Baton only), ${fmt(size.loop)}:`, 'loop', 'instances', LOOP_PASSES);
  throughputRows(`9. ${CALL_CHAIN} call activities (Baton only), ${fmt(size.calls)}:`, 'calls', 'instances', CALL_CHAIN);
  throughputRows(
    `10. user task, ${PEOPLE} people listing, claiming, completing (Baton only), ${fmt(size.userTasks)}:`,
    'userTasks',
    'instances',
    1,
  );
  throughputRows(
    `11. ${fmt(size.published)} messages at ${MESSAGE_RATE}/s to ${fmt(size.messages)} waiting instances (Baton only):`,
    'messages',
    'instances',
    1,
  );
  const nodes = baton?.nodes?.length ? baton.nodes : undefined;
  if (nodes) {
    const one = median(nodes.map((x) => x.one.stepsPerSec));
    const two = median(nodes.map((x) => x.two.stepsPerSec));
    row(`12. three steps, ${fmt(size.chain)}, one baton serve node: steps/s`, (r) => (r === baton ? one : undefined));
    row(`12. the same on two nodes, one database: steps/s`, (r) => (r === baton ? two : undefined));
    row(`12. two nodes ÷ one node`, (r) => (r === baton ? two / one : undefined), 2);
    // The nodes are processes of their own: only the cluster-wide figures (transaction ids, WAL) count their work.
    for (const n of ['one', 'two'] as const) {
      const label = n === 'one' ? 'one node' : 'two nodes';
      row(
        `12. ${label}: write transactions/step`,
        (r) => (r === baton ? median(nodes.map((x) => x[n].cost.writeTxPerStep)) : undefined),
        2,
      );
      row(`12. ${label}: WAL bytes/step`, (r) => (r === baton ? median(nodes.map((x) => x[n].cost.walBytesPerStep)) : undefined));
    }
  }
  row(
    `4. pickup p50 (ms), ${size.pickups} starts`,
    (r) => (r.pickup?.length ? median(r.pickup.map((x) => x.p50)) : undefined),
    1,
  );
  row(`4. pickup p99 (ms)`, pickupP99, 1);
  row(
    `5. timer lateness p50 (ms), ${fmt(size.timers)} timers`,
    (r) => (r.timers?.length ? median(r.timers.map((x) => x.p50)) : undefined),
    1,
  );
  row(`5. timer lateness p99 (ms)`, (r) => (r.timers?.length ? median(r.timers.map((x) => x.p99)) : undefined), 1);
  row(`5. timer lateness max (ms)`, (r) => (r.timers?.length ? median(r.timers.map((x) => x.max)) : undefined), 1);
  row(`idle statements/s (${idleWindowMs(quick) / 1000} s after start-up)`, (r) => r.idleQueriesPerSec, 0);
  const scale = baton?.scale;
  if (scale) {
    const ef = median(scale.empty.fetch),
      ec = median(scale.empty.complete),
      lf = median(scale.loaded.fetch),
      lc = median(scale.loaded.complete);
    row('6. fetch-and-lock (ms), empty DB', (r) => (r === baton ? ef : undefined), 2);
    row('6. fetch-and-lock (ms), preloaded', (r) => (r === baton ? lf : undefined), 2);
    row('6. complete (ms), empty DB', (r) => (r === baton ? ec : undefined), 2);
    row('6. complete (ms), preloaded', (r) => (r === baton ? lc : undefined), 2);
    rows.push([
      '6. scale ratio fetch / complete',
      ...columns.map((s) => (s.id === 'baton' ? `${(lf / ef).toFixed(2)}× / ${(lc / ec).toFixed(2)}×` : '')),
    ]);
  }

  console.log(`\nBaton comparative bench${quick ? ' (--quick)' : ''}, ${new Date().toISOString()}`);
  console.log(
    `machine: ${cpu.length} x ${cpu[0]?.model ?? '?'}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB; node ${process.version}; ` +
      `load average before ${t.loadBefore.map((x) => x.toFixed(2)).join(' ')}, after ${loadavg()
        .map((x) => x.toFixed(2))
        .join(' ')}`,
  );
  console.log(
    `PostgreSQL ${t.pgVersion} (${t.embedded ? 'embedded' : 'DATABASE_URL'}), one database per system: ${t.settingText}`,
  );
  console.log(
    `each figure: median of ${RUNS} rounds; ratios between medians of this run; ${PRODUCERS} producers + ${WORKERS} workers run together in 1-3`,
  );
  console.log(
    "the systems take turns: round 1 of each, then round 2 of each, then round 3, in another order each round (below); a round is a fresh process on the system's database; Baton's workload 6 last",
  );
  for (const s of columns) {
    const r = t.results.get(s.id)!;
    console.log(`- ${s.label} ${r.version}: ${r.settings}`);
    for (const n of r.notes) console.log(`    ${n}`);
  }
  if (scale)
    console.log(
      `- scale preload (bulk SQL into Baton's tables, not the API, ${scale.preloadSeconds.toFixed(0)} s): ${scale.rows}`,
    );
  const header = ['figure', ...columns.map((s) => s.label)];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    `| ${cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ')} |`;
  console.log('');
  console.log(line(header));
  console.log(`|${widths.map((w, i) => (i === 0 ? '-'.repeat(w + 2) : `${'-'.repeat(w + 1)}:`)).join('|')}|`);
  for (const r of rows) console.log(line(r));
  console.log('');
  if (typeof t.pgbench === 'string') {
    console.log(`pgbench ceiling: ${t.pgbench}`);
  } else {
    const b = t.pgbench;
    console.log(
      `pgbench ceiling (${b.version}; one UPDATE of a 1,000-row table + one INSERT per transaction, ${b.seconds} s each, median of ${RUNS}): ` +
        `1 client ${fmt(b.tps1)} tps, 8 clients ${fmt(b.tps8)} tps`,
    );
    const single = med(baton?.single, (x) => x.stepsPerSec);
    const chain = med(baton?.chain, (x) => x.stepsPerSec);
    if (single !== undefined && chain !== undefined) {
      console.log(
        `Baton steps/s as a fraction of the 8-client ceiling: single ${(single / b.tps8).toFixed(2)}, three steps ${(chain / b.tps8).toFixed(2)}`,
      );
    }
  }
  if (typeof t.floor === 'string') {
    console.log(`commit floor: ${t.floor}`);
  } else {
    const f = t.floor;
    const over = columns.flatMap((s) => {
      const p99 = pickupP99(t.results.get(s.id)!);
      return p99 === undefined ? [] : [`${s.label} ${(p99 / f.p99).toFixed(1)}×`];
    });
    // The progress stream's latency target follows the machine too (at most 10× the floor's p99).
    const frameP99 =
      typeof t.progress === 'string'
        ? undefined
        : Object.entries(t.progress).find(([k]) => k.startsWith('commit→client p99'))?.[1];
    const frames = typeof frameP99 === 'number' ? `; frame commit→client p99 ÷ floor p99: ${(frameP99 / f.p99).toFixed(1)}×` : '';
    console.log(
      `commit floor (one pg client: a one-row INSERT and its commit after ${PICKUP_IDLE_MS} ms idle, ${f.n} times, median of ${RUNS}): ` +
        `p50 ${fmt(f.p50, 2)} ms, p99 ${fmt(f.p99, 2)} ms${over.length ? `; pickup p99 ÷ floor p99: ${over.join(', ')}` : ''}${frames}`,
    );
  }
  console.log(
    `7. progress: ${
      typeof t.progress === 'string'
        ? t.progress
        : Object.entries(t.progress)
            .map(([k, v]) => `${k} ${v}`)
            .join(', ')
    }`,
  );
  // The rounds behind each median, in the order they ran: how far this machine moved during the run.
  console.log(`rounds as run: ${t.ran.map((systems, i) => `${i + 1}: ${systems.join(', ')}`).join('; ')}`);
  const perRound = <T>(xs: T[] | undefined, pick: (x: T) => number, digits = 0) =>
    xs?.length ? xs.map((x) => fmt(pick(x), digits)).join(' / ') : undefined;
  for (const s of columns) {
    const r = t.results.get(s.id)!;
    const parts = [
      ['single/s', perRound(r.single, (x) => x.perSec)],
      ['chains/s', perRound(r.chain, (x) => x.perSec)],
      ['fan-out/s', perRound(r.fanout, (x) => x.perSec)],
      ['loop passes/s', perRound(r.loop, (x) => x.stepsPerSec)],
      ['called children/s', perRound(r.calls, (x) => x.stepsPerSec)],
      ['pickup p99 ms', perRound(r.pickup, (x) => x.p99, 1)],
      ['timer p50 ms', perRound(r.timers, (x) => x.p50, 1)],
      ['timer p99 ms', perRound(r.timers, (x) => x.p99, 1)],
    ].filter(([, v]) => v !== undefined);
    console.log(`per round, ${s.label}: ${parts.map(([k, v]) => `${k} ${v}`).join('; ')}`);
  }
  for (const r of t.results.values()) for (const c of r.checks) console.log(`check ${r.system}: ${c}`);
  console.log(`total ${(t.seconds / 60).toFixed(1)} min`);
}

main().catch((err: Error) => {
  console.error(err);
  process.exit(1);
});
