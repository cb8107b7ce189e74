// The ceiling of the same PostgreSQL: pgbench with a one-row UPDATE + one INSERT per
// transaction, at 1 and 8 clients. pgbench comes from the Debian PostgreSQL packages;
// without it the suite prints why and goes on. And the floor under workload 4: what one
// committed statement takes from a Node client on this machine and server when idle.
import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { PICKUP_IDLE_MS, RUNS, median, pct, sleep } from './common.ts';

const run = promisify(execFile);

export interface PgbenchResult {
  version: string;
  seconds: number;
  tps1: number;
  tps8: number;
}

function findPgbench(): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(':')) {
    if (dir && existsSync(path.join(dir, 'pgbench'))) return path.join(dir, 'pgbench');
  }
  const base = '/usr/lib/postgresql';
  if (!existsSync(base)) return undefined;
  const versions = readdirSync(base).sort((a, b) => Number(b) - Number(a));
  return versions.map((v) => path.join(base, v, 'bin', 'pgbench')).find((p) => existsSync(p));
}

const SCRIPT = `\\set id random(1, 1000)
BEGIN;
UPDATE ceiling SET v = v + 1 WHERE id = :id;
INSERT INTO ceiling_log (id, v) VALUES (:id, 1);
END;
`;

export async function runPgbench(dbUrl: string, seconds: number): Promise<PgbenchResult | string> {
  const bin = findPgbench();
  if (!bin) return 'skipped: no pgbench binary (apt-get install postgresql-client or postgresql-contrib)';
  const db = new pg.Client({ connectionString: dbUrl });
  await db.connect();
  try {
    await db.query(`create table ceiling (id int primary key, v int not null);
                    insert into ceiling select g, 0 from generate_series(1, 1000) g;
                    create table ceiling_log (n bigserial primary key, id int not null, v int not null, at timestamptz not null default now())`);
    await db.query('vacuum analyze ceiling');
  } finally {
    await db.end();
  }
  const dir = await mkdtemp(path.join(tmpdir(), 'baton-pgbench-'));
  const script = path.join(dir, 'ceiling.sql');
  await writeFile(script, SCRIPT);
  try {
    const version = (await run(bin, ['--version'])).stdout.trim();
    const tps = async (clients: number) => {
      const { stdout } = await run(bin, [
        '-n',
        '-f',
        script,
        '-c',
        String(clients),
        '-j',
        String(Math.min(clients, 2)),
        '-T',
        String(seconds),
        dbUrl,
      ]);
      const m = /tps = ([\d.]+) \(without initial connection time\)/.exec(stdout);
      if (!m) throw new Error(`pgbench printed no tps:\n${stdout}`);
      return Number(m[1]);
    };
    const ones: number[] = [];
    const eights: number[] = [];
    for (let r = 0; r < RUNS; r++) {
      ones.push(await tps(1));
      eights.push(await tps(8));
    }
    return { version, seconds, tps1: median(ones), tps8: median(eights) };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export interface CommitFloor {
  n: number;
  p50: number;
  p99: number;
}

/**
 * A pickup is at least one commit. This times the least a commit can be here: one pg client,
 * a one-row INSERT (its own transaction) after the quiet time workload 4 leaves before each
 * start, `n` times; p50 and p99, each the median of RUNS rounds. A pickup's p99 next to this
 * p99 says how much of it is the machine (its disk flush, its processes waking) and how much
 * the system's own work.
 */
export async function measureCommitFloor(dbUrl: string, n: number): Promise<CommitFloor> {
  const db = new pg.Client({ connectionString: dbUrl });
  await db.connect();
  try {
    await db.query('create table commit_floor (n bigserial primary key, at timestamptz not null default now())');
    const insert = { name: 'commit_floor', text: 'insert into commit_floor default values' };
    await db.query(insert); // prepared before the timing
    const p50s: number[] = [];
    const p99s: number[] = [];
    for (let r = 0; r < RUNS; r++) {
      const latencies: number[] = [];
      for (let i = 0; i < n; i++) {
        await sleep(PICKUP_IDLE_MS);
        const t0 = performance.now();
        await db.query(insert);
        latencies.push(performance.now() - t0);
      }
      p50s.push(pct(latencies, 50));
      p99s.push(pct(latencies, 99));
    }
    return { n, p50: median(p50s), p99: median(p99s) };
  } finally {
    await db.end();
  }
}
