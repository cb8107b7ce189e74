// `npm run bench [-- --quick]`: throughput and pickup latency of the runtime core
// over real HTTP and a real PostgreSQL (embedded, or DATABASE_URL's server).
// Prints one table; each figure is the median of 3 runs.
import { cpus, totalmem } from 'node:os';
import { createServer } from 'node:net';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { pino } from 'pino';
import { startBatonServer, type BatonServer } from '../../runtime/server.ts';
import { startEmbeddedPostgres } from '../../runtime/store/embedded.ts';

const quick = process.argv.includes('--quick');
const RUNS = 3;
const INSTANCES = quick ? 500 : 2000;
const WORKERS = 8;
const PICKUPS = quick ? 100 : 300;
const TIMERS = quick ? 1000 : 10_000;
const TIMER_DELAY = quick ? 'PT5S' : 'PT60S';

const xml = `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="Defs" targetNamespace="bench">
  <bpmn:process id="bench" isExecutable="true">
    <bpmn:startEvent id="start"/><bpmn:serviceTask id="work" camunda:type="external" camunda:topic="bench"/><bpmn:endEvent id="end"/>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="work"/><bpmn:sequenceFlow id="f2" sourceRef="work" targetRef="end"/>
  </bpmn:process>
</bpmn:definitions>`;

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

async function post<T>(url: string, body: unknown): Promise<T> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${url} -> ${res.status} ${text}`);
  return (text ? JSON.parse(text) : undefined) as T;
}

const timerXml = `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" id="DefsT" targetNamespace="bench">
  <bpmn:process id="bench-timer" isExecutable="true">
    <bpmn:startEvent id="start"/>
    <bpmn:intermediateCatchEvent id="wait"><bpmn:timerEventDefinition><bpmn:timeDuration xsi:type="bpmn:tFormalExpression">${TIMER_DELAY}</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:intermediateCatchEvent>
    <bpmn:endEvent id="end"/>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="wait"/><bpmn:sequenceFlow id="f2" sourceRef="wait" targetRef="end"/>
  </bpmn:process>
</bpmn:definitions>`;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))] as number;

interface Task { id: string; lockToken: string }

async function startMany(url: string, n: number, concurrency: number): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next++ < n) await post(`${url}/api/instances`, { definitionKey: 'bench' });
  }));
}

async function drain(url: string, n: number): Promise<void> {
  let done = 0;
  await Promise.all(Array.from({ length: WORKERS }, async (_, w) => {
    while (done < n) {
      const tasks = await post<Task[]>(`${url}/api/external-tasks/fetch-and-lock`, {
        workerId: `bench-${w}`, maxTasks: 10, waitMs: 200, topics: [{ name: 'bench', lockDurationMs: 60_000 }],
      });
      for (const t of tasks) {
        await post(`${url}/api/external-tasks/${t.id}/complete`, { workerId: `bench-${w}`, lockToken: t.lockToken });
        done++;
      }
    }
  }));
}

async function throughput(url: string): Promise<{ startsPerSec: number; completesPerSec: number }> {
  const t0 = performance.now();
  await startMany(url, INSTANCES, 16);
  const t1 = performance.now();
  await drain(url, INSTANCES);
  const t2 = performance.now();
  return { startsPerSec: INSTANCES / ((t1 - t0) / 1000), completesPerSec: INSTANCES / ((t2 - t1) / 1000) };
}

async function pickupLatency(url: string): Promise<number[]> {
  const latencies: number[] = [];
  for (let i = 0; i < PICKUPS; i++) {
    const parked = post<Task[]>(`${url}/api/external-tasks/fetch-and-lock`, {
      workerId: 'poller', maxTasks: 1, waitMs: 10_000, topics: [{ name: 'bench', lockDurationMs: 60_000 }],
    });
    await new Promise((r) => setTimeout(r, 5)); // let the poll park
    const t0 = performance.now();
    await post(`${url}/api/instances`, { definitionKey: 'bench' });
    const [task] = await parked;
    latencies.push(performance.now() - t0);
    if (task) await post(`${url}/api/external-tasks/${task.id}/complete`, { workerId: 'poller', lockToken: task.lockToken });
  }
  return latencies;
}

interface Lateness { p50: number; p99: number; max: number }

/** TIMERS instances each wait on one timer; lateness = fired_at - due_at, both on the database clock. */
async function timerLateness(url: string, db: pg.Client): Promise<Lateness> {
  await post(`${url}/api/definitions`, { xml: timerXml });
  let next = 0;
  await Promise.all(Array.from({ length: 16 }, async () => {
    while (next++ < TIMERS) await post(`${url}/api/instances`, { definitionKey: 'bench-timer' });
  }));
  const deadline = Date.now() + 5 * 60_000;
  for (;;) {
    const { rows } = await db.query<{ n: number }>(`select count(*)::int as n from timers where state = 'waiting'`);
    if (rows[0]?.n === 0 || Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  const { rows } = await db.query<Lateness>(
    `select percentile_cont(0.5) within group (order by ms) as p50, percentile_cont(0.99) within group (order by ms) as p99, max(ms) as max
       from (select extract(epoch from fired_at - due_at) * 1000 as ms from timers where state = 'fired') x`,
  );
  return rows[0] as Lateness;
}

async function main(): Promise<void> {
  let adminUrl = process.env.DATABASE_URL;
  const benchDir = path.resolve('.baton-bench');
  const embedded = adminUrl ? undefined : await startEmbeddedPostgres({ dataDir: benchDir, port: await freePort(), database: 'postgres' });
  adminUrl ??= embedded!.url;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  const pgVersion = (await admin.query<{ server_version: string }>('show server_version')).rows[0]?.server_version;

  const rows: { runs: { startsPerSec: number; completesPerSec: number }[]; latencies: number[][]; timers: Lateness[] } = { runs: [], latencies: [], timers: [] };
  for (let run = 0; run < RUNS; run++) {
    const dbName = `baton_bench_${process.pid}_${run}`;
    await admin.query(`create database ${dbName}`);
    const u = new URL(adminUrl);
    u.pathname = `/${dbName}`;
    let server: BatonServer | undefined;
    try {
      server = await startBatonServer({ databaseUrl: u.toString(), port: 0, host: '127.0.0.1', log: pino({ level: 'silent' }) });
      await post(`${server.url}/api/definitions`, { xml });
      rows.runs.push(await throughput(server.url));
      rows.latencies.push(await pickupLatency(server.url));
      const db = new pg.Client({ connectionString: u.toString() });
      await db.connect();
      try {
        rows.timers.push(await timerLateness(server.url, db));
      } finally {
        await db.end();
      }
    } finally {
      await server?.close();
      await admin.query(`drop database if exists ${dbName} with (force)`);
    }
  }
  await admin.end();
  if (embedded) {
    await embedded.stop();
    await rm(benchDir, { recursive: true, force: true });
  }

  const cpu = cpus();
  console.log(`\nBaton runtime-core bench${quick ? ' (--quick)' : ''}`);
  console.log(`machine: ${cpu.length} x ${cpu[0]?.model ?? '?'}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB; node ${process.version}; PostgreSQL ${pgVersion} (${embedded ? 'embedded' : 'DATABASE_URL'})`);
  console.log(`runs: ${RUNS}, figures are medians; ${INSTANCES} one-task instances, ${WORKERS} workers; ${PICKUPS} sequential pickups; ${TIMERS} timers of ${TIMER_DELAY} started at full speed\n`);
  const table = [
    ['starts/s (HTTP, 16 concurrent)', median(rows.runs.map((r) => r.startsPerSec)).toFixed(0)],
    ['fetch+complete instances/s (8 workers)', median(rows.runs.map((r) => r.completesPerSec)).toFixed(0)],
    ['pickup latency p50 (ms)', median(rows.latencies.map((l) => pct(l, 50))).toFixed(1)],
    ['pickup latency p99 (ms)', median(rows.latencies.map((l) => pct(l, 99))).toFixed(1)],
    [`timer lateness p50 (ms, ${TIMERS} timers)`, median(rows.timers.map((x) => Number(x.p50))).toFixed(1)],
    [`timer lateness p99 (ms, ${TIMERS} timers)`, median(rows.timers.map((x) => Number(x.p99))).toFixed(1)],
    [`timer lateness max (ms, ${TIMERS} timers)`, median(rows.timers.map((x) => Number(x.max))).toFixed(1)],
  ];
  const width = Math.max(...table.map((r) => r[0]!.length));
  console.log(`| ${'figure'.padEnd(width)} | value |`);
  console.log(`| ${'-'.repeat(width)} | ----- |`);
  for (const [k, v] of table) console.log(`| ${k!.padEnd(width)} | ${v} |`);
}

main().catch((err: Error) => {
  console.error(err);
  process.exit(1);
});
