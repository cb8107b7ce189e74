// Baton under the bench: a real HTTP server (startBatonServer) and its native
// /api, clients over loopback HTTP in this same process. Workloads 1-6 and 8-11 (docs/PERFORMANCE.md);
// started by run.ts once per round with BENCH_DB_URL and BENCH_ROUNDS (workloads 1-5),
// then once with BENCH_SCALE_DB_URL and BENCH_SCALE_EMPTY_DB_URL (6).
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { pino } from 'pino';
import { startBatonServer, type BatonServer } from '../../runtime/server.ts';
import { createHttpClient, type HttpClient } from '../../runtime/worker/http.ts';
import {
  FANOUT_BRANCHES,
  LOOP_PASSES,
  CALL_CHAIN,
  MESSAGE_RATE,
  MESSAGES_IN_FLIGHT,
  PEOPLE,
  PICKUP_IDLE_MS,
  PRODUCERS,
  RUNS,
  WORKERS,
  benchRounds,
  check,
  costMark,
  costSince,
  env,
  idleQueriesPerSec,
  median,
  partial,
  pct,
  pool,
  quickMode,
  report,
  roundsInDatabase,
  sizes,
  sleep,
  type CostMark,
  type SystemResult,
  type ThroughputRound,
} from './common.ts';

const quick = quickMode();
const size = sizes(quick);
/** workload 5: due times spread over this many seconds */
const TIMER_SPREAD_S = quick ? 1 : 60;
/** BENCH_BATON_WORKLOADS=throughput,scale (both by default): for working on one of them */
const workloads = new Set((process.env.BENCH_BATON_WORKLOADS ?? 'throughput,scale').split(','));
/** BENCH_ROUND=single,chain,fanout,pickup,timers,loop,calls,usertasks,messages,nodes (all by default): the parts of each throughput round to run */
const roundParts = new Set(
  (process.env.BENCH_ROUND ?? 'single,chain,fanout,pickup,timers,loop,calls,usertasks,messages,nodes').split(','),
);

const NS =
  'xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:camunda="http://camunda.org/schema/1.0/bpmn" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"';
const task = (id: string, topic: string) => `<bpmn:serviceTask id="${id}" camunda:type="external" camunda:topic="${topic}"/>`;
const flow = (id: string, from: string, to: string) => `<bpmn:sequenceFlow id="${id}" sourceRef="${from}" targetRef="${to}"/>`;
const definition = (key: string, body: string) =>
  `<?xml version="1.0" encoding="UTF-8"?><bpmn:definitions ${NS} id="D_${key}" targetNamespace="bench"><bpmn:process id="${key}" isExecutable="true">${body}</bpmn:process></bpmn:definitions>`;

const singleXml = definition(
  'bench-single',
  `<bpmn:startEvent id="start"/>${task('work', 'single')}<bpmn:endEvent id="end"/>${flow('f1', 'start', 'work')}${flow('f2', 'work', 'end')}`,
);
const chainXml = definition(
  'bench-chain',
  `<bpmn:startEvent id="start"/>${task('s1', 'chain-1')}${task('s2', 'chain-2')}${task('s3', 'chain-3')}<bpmn:endEvent id="end"/>` +
    `${flow('f1', 'start', 's1')}${flow('f2', 's1', 's2')}${flow('f3', 's2', 's3')}${flow('f4', 's3', 'end')}`,
);
const branches = Array.from({ length: FANOUT_BRANCHES }, (_, i) => i + 1);
const fanoutXml = definition(
  'bench-fanout',
  `<bpmn:startEvent id="start"/><bpmn:parallelGateway id="fork"/><bpmn:parallelGateway id="join"/><bpmn:endEvent id="end"/>` +
    branches.map((b) => `${task(`b${b}`, 'fan')}${flow(`in${b}`, 'fork', `b${b}`)}${flow(`out${b}`, `b${b}`, 'join')}`).join('') +
    `${flow('f0', 'start', 'fork')}${flow('f9', 'join', 'end')}`,
);
// Workload 8: one task per pass; the worker counts the passes in n, and the pass that counted LOOP_PASSES leaves.
const loopXml = definition(
  'bench-loop',
  `<bpmn:startEvent id="start"/>${task('work', 'loop-work')}<bpmn:exclusiveGateway id="again" default="out"/><bpmn:endEvent id="end"/>` +
    `${flow('f1', 'start', 'work')}${flow('f2', 'work', 'again')}${flow('out', 'again', 'end')}` +
    `<bpmn:sequenceFlow id="back" sourceRef="again" targetRef="work"><bpmn:conditionExpression xsi:type="bpmn:tFormalExpression">= n &lt; ${LOOP_PASSES}</bpmn:conditionExpression></bpmn:sequenceFlow>`,
);
// Workload 9: CALL_CHAIN call activities in sequence, each child instance one task.
const callChildXml = definition(
  'bench-call-child',
  `<bpmn:startEvent id="start"/>${task('work', 'call-work')}<bpmn:endEvent id="end"/>${flow('f1', 'start', 'work')}${flow('f2', 'work', 'end')}`,
);
const calls = Array.from({ length: CALL_CHAIN }, (_, i) => `c${i + 1}`);
const callsXml = definition(
  'bench-calls',
  `<bpmn:startEvent id="start"/><bpmn:endEvent id="end"/>` +
    calls
      .map(
        (c, i) =>
          `<bpmn:callActivity id="${c}" calledElement="bench-call-child"><bpmn:extensionElements><camunda:in variables="all"/><camunda:out variables="all"/></bpmn:extensionElements></bpmn:callActivity>` +
          flow(`in${i}`, i === 0 ? 'start' : calls[i - 1]!, c),
      )
      .join('') +
    flow('out', calls.at(-1)!, 'end'),
);
// Workload 10: one user task, offered to the person the instance names.
const userTaskXml = definition(
  'bench-user-task',
  `<bpmn:startEvent id="start"/><bpmn:userTask id="review" camunda:candidateUsers="\${reviewer}"/><bpmn:endEvent id="end"/>` +
    `${flow('f1', 'start', 'review')}${flow('f2', 'review', 'end')}`,
);
// Workload 11: an instance that waits for its message (correlated by business key), then ends.
const correlationXml =
  `<?xml version="1.0" encoding="UTF-8"?><bpmn:definitions ${NS} id="D_corr" targetNamespace="bench"><bpmn:message id="M" name="bench-settled"/>` +
  `<bpmn:process id="bench-correlation" isExecutable="true"><bpmn:startEvent id="start"/>` +
  `<bpmn:intermediateCatchEvent id="wait"><bpmn:messageEventDefinition messageRef="M"/></bpmn:intermediateCatchEvent>` +
  `<bpmn:endEvent id="end"/>${flow('f1', 'start', 'wait')}${flow('f2', 'wait', 'end')}</bpmn:process></bpmn:definitions>`;
const timerXml = (key: string, at: string) =>
  definition(
    key,
    `<bpmn:startEvent id="start"/>` +
      `<bpmn:intermediateCatchEvent id="wait"><bpmn:timerEventDefinition><bpmn:timeDate xsi:type="bpmn:tFormalExpression">${at}</bpmn:timeDate></bpmn:timerEventDefinition></bpmn:intermediateCatchEvent>` +
      `<bpmn:endEvent id="end"/>${flow('f1', 'start', 'wait')}${flow('f2', 'wait', 'end')}`,
  );
// Workload 6's waiting instances: one parked on a far timer, one on a message.
const farTimerXml = definition(
  'bench-far-timer',
  `<bpmn:startEvent id="start"/>` +
    `<bpmn:intermediateCatchEvent id="wait"><bpmn:timerEventDefinition><bpmn:timeDuration xsi:type="bpmn:tFormalExpression">P30D</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:intermediateCatchEvent>` +
    `<bpmn:endEvent id="end"/>${flow('f1', 'start', 'wait')}${flow('f2', 'wait', 'end')}`,
);
const messageXml =
  `<?xml version="1.0" encoding="UTF-8"?><bpmn:definitions ${NS} id="D_msg" targetNamespace="bench"><bpmn:message id="M" name="bench-paid"/>` +
  `<bpmn:process id="bench-message" isExecutable="true"><bpmn:startEvent id="start"/>` +
  `<bpmn:intermediateCatchEvent id="wait"><bpmn:messageEventDefinition messageRef="M"/></bpmn:intermediateCatchEvent>` +
  `<bpmn:endEvent id="end"/>${flow('f1', 'start', 'wait')}${flow('f2', 'wait', 'end')}</bpmn:process></bpmn:definitions>`;

interface Task {
  id: string;
  lockToken: string;
  topic?: string;
  variables?: Record<string, unknown>;
}

// The clients speak HTTP through the worker SDK's client (node:http, kept-alive connections),
// as a Node worker built on the SDK does; one client per server.
const clients = new Map<string, HttpClient>();
async function post<T>(url: string, body: unknown, signal?: AbortSignal): Promise<T> {
  const { origin, pathname } = new URL(url);
  let client = clients.get(origin);
  if (!client) clients.set(origin, (client = createHttpClient(origin)));
  const outcome = await client.post<T>(pathname, body, { timeoutMs: 60_000, ...(signal ? { signal } : {}) });
  if (outcome.kind === 'ok') return outcome.body;
  throw new Error(
    `${url} -> ${outcome.kind === 'refused' ? `${outcome.status} ${outcome.type}: ${outcome.message}` : outcome.error.message}`,
  );
}

const start = (url: string, definitionKey: string, businessKey?: string, variables?: Record<string, unknown>) =>
  post<{ id: string }>(`${url}/api/instances`, {
    definitionKey,
    ...(businessKey ? { businessKey } : {}),
    ...(variables ? { variables } : {}),
  });

async function get<T>(url: string): Promise<T> {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`${url} -> ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

/**
 * Workload 10: PRODUCERS loops start `instances` instances, each offering its user task to
 * one of PEOPLE people; each person lists the unassigned tasks offered to them (the
 * tasklist's query), claims and completes each one. Latency: the complete call.
 */
async function userTaskRounds(url: string, admin: pg.Client, round: number, instances: number): Promise<ThroughputRound> {
  const person = (i: number) => `person-${round}-${i % PEOPLE}`;
  let done = 0;
  const completes: number[] = [];
  const mark = await costMark(admin);
  const t0 = performance.now();
  const producers = pool(instances, PRODUCERS, async (i) => {
    await start(url, 'bench-user-task', undefined, { reviewer: person(i) });
  });
  const people = Promise.all(
    Array.from({ length: PEOPLE }, async (_, p) => {
      const me = person(p);
      while (done < instances) {
        const { items } = await get<{ items: { id: string }[] }>(
          `${url}/api/user-tasks?candidateUser=${me}&unassigned=true&definitionKey=bench-user-task&limit=20`,
        );
        if (items.length === 0) {
          await sleep(5);
          continue;
        }
        for (const task of items) {
          await post(`${url}/api/user-tasks/${task.id}/claim`, { userId: me });
          const c0 = performance.now();
          await post(`${url}/api/user-tasks/${task.id}/complete`, { userId: me, variables: { approved: true } });
          completes.push(performance.now() - c0);
          done++;
        }
      }
    }),
  );
  await Promise.all([producers, people]);
  return oneStepRound(admin, mark, t0, instances, completes);
}

/** A round of `n` one-step instances since `t0` and `mark`, with the p99 of its latencies. */
async function oneStepRound(
  admin: pg.Client,
  mark: CostMark,
  t0: number,
  n: number,
  latencies: number[],
): Promise<ThroughputRound> {
  const seconds = (performance.now() - t0) / 1000;
  return {
    perSec: n / seconds,
    stepsPerSec: n / seconds,
    seconds,
    cost: await costSince(admin, mark, n),
    p99Ms: pct(latencies, 99),
  };
}

/**
 * Workload 11: `waiting` instances wait on a message (started beforehand, not measured), then
 * `published` of them get theirs at MESSAGE_RATE per second (common.ts: the schedule and the
 * in-flight cap). Latency: scheduled time to the publish's answer, whose transaction moves the
 * instance to its end.
 */
async function messageCorrelation(
  url: string,
  admin: pg.Client,
  db: pg.Client,
  round: number,
  waiting: number,
  published: number,
): Promise<ThroughputRound> {
  const keyOf = (i: number) => `order-${round}-${i}`;
  const {
    rows: [clock],
  } = await db.query<{ now: Date }>('select now()');
  await pool(waiting, PRODUCERS, async (i) => {
    await start(url, 'bench-correlation', keyOf(i));
  });
  await untilWaiting(db, 'bench-correlation', waiting, clock!.now);
  const latencies: number[] = [];
  let inFlight = 0;
  const mark = await costMark(admin);
  const t0 = performance.now();
  const publishes: Promise<void>[] = [];
  for (let i = 0; i < published; i++) {
    const due = t0 + (i * 1000) / MESSAGE_RATE;
    while (inFlight >= MESSAGES_IN_FLIGHT || performance.now() < due - 1)
      await sleep(inFlight >= MESSAGES_IN_FLIGHT ? 1 : due - performance.now());
    inFlight++;
    // Spread over the waiting instances, so the matched ones are not all the oldest.
    const key = keyOf(Math.floor((i * waiting) / published));
    publishes.push(
      post<{ status: string }>(`${url}/api/messages`, { name: 'bench-settled', businessKey: key }).then((r) => {
        inFlight--;
        if (r.status !== 'matched') throw new Error(`message ${key}: ${r.status}, not matched`);
        latencies.push(performance.now() - due);
      }),
    );
  }
  await Promise.all(publishes);
  return oneStepRound(admin, mark, t0, published, latencies);
}

/**
 * PRODUCERS loops start `instances` instances while WORKERS long-polling workers complete
 * `tasks` tasks. `url`: one node, or several (producer and worker i call node i mod n).
 */
async function throughput(
  url: string | string[],
  admin: pg.Client,
  key: string,
  topics: string[],
  instances: number,
  tasksPerInstance: number,
  /** what the worker completes each task with; nothing by default */
  variablesOf?: (task: Task) => Record<string, unknown>,
  /** an instance that ends after its last task (a call activity's return): the round ends when this resolves */
  settled?: () => Promise<void>,
): Promise<ThroughputRound> {
  const target = instances * tasksPerInstance;
  let done = 0;
  let tEnd = 0;
  // once every task is done the polls still parked hang up (the server unparks them) instead of waiting out their second
  const finished = new AbortController();
  const mark = await costMark(admin);
  const t0 = performance.now();
  const urls = typeof url === 'string' ? [url] : url;
  const producers = pool(instances, PRODUCERS, async (i) => {
    await start(urls[i % urls.length]!, key);
  });
  const workers = Promise.all(
    Array.from({ length: WORKERS }, async (_, w) => {
      const node = urls[w % urls.length]!;
      while (done < target) {
        const tasks = await post<Task[]>(
          `${node}/api/external-tasks/fetch-and-lock`,
          {
            workerId: `bench-${w}`,
            maxTasks: 10,
            waitMs: 1000,
            topics: topics.map((name) => ({ name, lockDurationMs: 300_000 })),
          },
          finished.signal,
        ).catch((err: Error) => {
          if (finished.signal.aborted) return [];
          throw err;
        });
        if (tasks.length === 0) continue;
        // what one fetch brought is completed with one call and one commit (complete-batch)
        await post(`${node}/api/external-tasks/complete-batch`, {
          workerId: `bench-${w}`,
          tasks: tasks.map((t) => ({ id: t.id, lockToken: t.lockToken, ...(variablesOf ? { variables: variablesOf(t) } : {}) })),
        });
        done += tasks.length;
        if (done >= target && tEnd === 0) {
          tEnd = performance.now();
          finished.abort();
        }
      }
    }),
  );
  await Promise.all([producers, workers]);
  if (settled) {
    await settled();
    tEnd = performance.now();
  }
  const seconds = (tEnd - t0) / 1000;
  return { perSec: instances / seconds, stepsPerSec: target / seconds, seconds, cost: await costSince(admin, mark, target) };
}

async function pickupLatency(url: string, n: number): Promise<{ p50: number; p99: number }> {
  const latencies: number[] = [];
  for (let i = 0; i < n; i++) {
    // Timed to the poll's answer: the task is in the worker's hands then, whether or not the
    // start's own answer has reached its caller yet.
    const parked = post<Task[]>(`${url}/api/external-tasks/fetch-and-lock`, {
      workerId: 'poller',
      maxTasks: 1,
      waitMs: 10_000,
      topics: [{ name: 'single', lockDurationMs: 60_000 }],
    }).then((tasks) => ({ tasks, at: performance.now() }));
    await sleep(PICKUP_IDLE_MS); // the poll parks, the system goes quiet
    const t0 = performance.now();
    await start(url, 'bench-single');
    const {
      tasks: [t],
      at,
    } = await parked;
    latencies.push(at - t0);
    if (!t) throw new Error('pickup: the parked poll answered without a task');
    await post(`${url}/api/external-tasks/${t.id}/complete`, { workerId: 'poller', lockToken: t.lockToken });
  }
  return { p50: pct(latencies, 50), p99: pct(latencies, 99) };
}

/**
 * `size.timers` instances wait on timers due over TIMER_SPREAD_S seconds, the first `leadSeconds`
 * after the first start (one definition per second of the spread, each with its own timeDate);
 * the starts run at full speed, PRODUCERS at a time. Lateness = fired_at - due_at on the database clock.
 */
async function timerLateness(
  url: string,
  db: pg.Client,
  round: number,
  leadSeconds: number,
): Promise<{ p50: number; p99: number; max: number; count: number }> {
  const {
    rows: [clock],
  } = await db.query<{ now: Date }>('select now()');
  const first = clock!.now.getTime() + leadSeconds * 1000;
  const keys: string[] = [];
  for (let s = 0; s < TIMER_SPREAD_S; s++) {
    const key = `bench-timer-${round}-${s}`;
    await post(`${url}/api/definitions`, { xml: timerXml(key, new Date(first + s * 1000).toISOString()) });
    keys.push(key);
  }
  await pool(size.timers, PRODUCERS, async (i) => {
    await start(url, keys[Math.floor((i * TIMER_SPREAD_S) / size.timers)]!);
  });
  const deadline = Date.now() + (leadSeconds + TIMER_SPREAD_S + 300) * 1000;
  const keyPattern = `bench-timer-${round}-%`;
  // No polling while timers fall due: the count below is a scan of every timer and took
  // 15-25 ms of PostgreSQL CPU per call on the loaded 2-core machine, 4 times a second,
  // beside the bursts it measures. Sleep until the last burst is due, then poll.
  const {
    rows: [late],
  } = await db.query<{ now: Date }>('select now()');
  await sleep(Math.max(0, first + (TIMER_SPREAD_S - 1) * 1000 - late!.now.getTime()));
  for (;;) {
    const { rows } = await db.query<{ n: number }>(
      `select count(*)::int as n from timers t join instances i on i.id = t.instance_id where i.definition_key like $1 and t.state = 'waiting'`,
      [keyPattern],
    );
    if (rows[0]?.n === 0) break;
    if (Date.now() > deadline) throw new Error(`timers: ${rows[0]?.n} still waiting past the deadline`);
    await sleep(250);
  }
  const { rows } = await db.query<{ p50: number; p99: number; max: number; count: number }>(
    `select percentile_cont(0.5) within group (order by ms) as p50, percentile_cont(0.99) within group (order by ms) as p99, max(ms) as max, count(*)::int as count
       from (select extract(epoch from t.fired_at - t.due_at) * 1000 as ms
               from timers t join instances i on i.id = t.instance_id where i.definition_key like $1 and t.state = 'fired') x`,
    [keyPattern],
  );
  const r = rows[0]!;
  return { p50: Number(r.p50), p99: Number(r.p99), max: Number(r.max), count: r.count };
}

/** Every instance completed, every task completed exactly once in history. */
async function checkExactlyOnce(
  result: SystemResult,
  db: pg.Client,
  key: string,
  instances: number,
  tasks: number,
): Promise<void> {
  const {
    rows: [r],
  } = await db.query<{ completed: number; other: number; done: number; events: number; repeated: number }>(
    `select (select count(*)::int from instances where definition_key = $1 and status = 'completed') as completed,
            (select count(*)::int from instances where definition_key = $1 and status <> 'completed') as other,
            (select count(*)::int from external_tasks t join instances i on i.id = t.instance_id where i.definition_key = $1 and t.state = 'done') as done,
            (select count(*)::int from events e join instances i on i.id = e.instance_id where i.definition_key = $1 and e.kind = 'task:completed') as events,
            (select count(*)::int from (select e.task_id from events e join instances i on i.id = e.instance_id
                                         where i.definition_key = $1 and e.kind = 'task:completed' group by e.task_id having count(*) > 1) x) as repeated`,
    [key],
  );
  check(
    result,
    `${key}: ${instances} instances completed, ${tasks} tasks completed once each`,
    r!.completed === instances && r!.other === 0 && r!.done === tasks && r!.events === tasks && r!.repeated === 0,
    JSON.stringify(r),
  );
}

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

/** `n` Baton nodes as `baton serve` processes on one database, ready, for the time of `fn`. */
async function withNodes<T>(databaseUrl: string, n: number, fn: (urls: string[]) => Promise<T>): Promise<T> {
  const nodes = await Promise.all(
    Array.from({ length: n }, async () => {
      const port = await freePort();
      let output = '';
      const child = spawn(process.execPath, ['--import', 'tsx', 'runtime/cli.ts', 'serve'], {
        cwd: repoRoot,
        env: { ...process.env, DATABASE_URL: databaseUrl, PORT: String(port), LOG_LEVEL: 'warn', BATON_SAMPLES_DIR: '' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      child.stdout?.on('data', (d) => (output += String(d)));
      child.stderr?.on('data', (d) => (output += String(d)));
      const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
      const url = `http://127.0.0.1:${port}`;
      for (const began = performance.now(); ; await sleep(100)) {
        if ((await fetch(`${url}/readyz`).catch(() => undefined))?.ok) break;
        if (performance.now() - began > 60_000 || child.exitCode !== null) throw new Error(`node not ready: ${output}`);
      }
      return { url, child, exited };
    }),
  );
  try {
    return await fn(nodes.map((x) => x.url));
  } finally {
    for (const x of nodes) x.child.kill('SIGTERM');
    await Promise.all(nodes.map((x) => x.exited));
  }
}

/**
 * Workload 12: the three-step workload on one `baton serve` process, then on two sharing the
 * database (producers and workers split between them), the same clients in this process.
 */
async function nodeScaling(databaseUrl: string, admin: pg.Client): Promise<{ one: ThroughputRound; two: ThroughputRound }> {
  const chain = (urls: string[]) => throughput(urls, admin, 'bench-chain', ['chain-1', 'chain-2', 'chain-3'], size.chain, 3);
  const one = await withNodes(databaseUrl, 1, chain);
  const two = await withNodes(databaseUrl, 2, chain);
  return { one, two };
}

/** `completed` instances of `key` completed and the other `waiting` still running (none lost, none ended otherwise). */
async function checkCompleted(result: SystemResult, db: pg.Client, key: string, completed: number, waiting = 0): Promise<void> {
  const {
    rows: [r],
  } = await db.query<{ completed: number; running: number; other: number }>(
    `select count(*) filter (where status = 'completed')::int as completed, count(*) filter (where status = 'running')::int as running,
            count(*) filter (where status not in ('completed', 'running'))::int as other
       from instances where definition_key = $1`,
    [key],
  );
  check(
    result,
    `${key}: ${completed} instances completed, ${waiting} waiting`,
    r!.completed === completed && r!.running === waiting && r!.other === 0,
    JSON.stringify(r),
  );
}

/** Waits until `n` instances of `key` started since `since` wait on their message. */
async function untilWaiting(db: pg.Client, key: string, n: number, since: Date): Promise<void> {
  for (const began = performance.now(); performance.now() - began < 300_000;) {
    const { rows } = await db.query<{ n: number }>(
      `select count(*)::int as n from subscriptions s join instances i on i.id = s.instance_id
        where i.definition_key = $1 and i.status = 'running' and i.created_at >= $2`,
      [key, since],
    );
    if (rows[0]!.n >= n) return;
    await sleep(20);
  }
  throw new Error(`instances of ${key} not all waiting after 300 s`);
}

/** Waits until no instance of `key` is still running (the parents of workload 9 end after their last child's return). */
async function untilNoneRunning(db: pg.Client, key: string): Promise<void> {
  for (const began = performance.now(); performance.now() - began < 300_000;) {
    const { rows } = await db.query<{ n: number }>(
      `select count(*)::int as n from instances where definition_key = $1 and status = 'running'`,
      [key],
    );
    if (rows[0]!.n === 0) return;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error(`instances of ${key} still running after 300 s`);
}

/** Runs one workload round and says on stderr how long it took. */
async function timed<T>(name: string, fn: () => Promise<T>): Promise<T> {
  const t0 = performance.now();
  const r = await fn();
  process.stderr.write(`baton: ${name} ${((performance.now() - t0) / 1000).toFixed(1)} s\n`);
  return r;
}

async function withServer<T>(databaseUrl: string, fn: (server: BatonServer) => Promise<T>): Promise<T> {
  const server = await startBatonServer({
    databaseUrl,
    port: 0,
    host: '127.0.0.1',
    log: pino({ level: process.env.BENCH_LOG ?? 'silent' }),
    // BENCH_START_LANES: for trying other values of BATON_START_LANES
    ...(process.env.BENCH_START_LANES ? { engine: { startLanes: Number(process.env.BENCH_START_LANES) } } : {}),
  });
  try {
    return await fn(server);
  } finally {
    await server.close();
  }
}

/** One fetch-and-lock and one complete of a ready task, timed separately; `n` times in a row. */
async function hotPathLatency(url: string, n: number): Promise<{ fetch: number; complete: number }> {
  const fetches: number[] = [];
  const completes: number[] = [];
  for (let i = 0; i < n; i++) {
    await start(url, 'bench-single');
    const t0 = performance.now();
    const [t] = await post<Task[]>(`${url}/api/external-tasks/fetch-and-lock`, {
      workerId: 'scale',
      maxTasks: 1,
      topics: [{ name: 'single', lockDurationMs: 60_000 }],
    });
    const t1 = performance.now();
    if (!t) throw new Error('scale: no ready task');
    await post(`${url}/api/external-tasks/${t.id}/complete`, { workerId: 'scale', lockToken: t.lockToken });
    fetches.push(t1 - t0);
    completes.push(performance.now() - t1);
  }
  return { fetch: median(fetches), complete: median(completes) };
}

/**
 * Bulk rows written straight into Baton's tables with generate_series (not through the
 * API): completed one-task instances with their task, steps, flows and history, and
 * instances waiting on a timer (30 days away) or a message. Triggers and foreign-key
 * checks are off for the load (session_replication_role = replica), so no progress frames
 * are written for these rows.
 */
async function preload(db: pg.Client, completed: number, waiting: number): Promise<string> {
  const { rows: defs } = await db.query<{ key: string; id: string }>(
    `select key, id from definitions where key in ('bench-single', 'bench-far-timer', 'bench-message')`,
  );
  const def = (k: string) => defs.find((d) => d.key === k)!.id;
  const timersWaiting = Math.floor(waiting / 2);
  const messagesWaiting = waiting - timersWaiting;
  await db.query('set session_replication_role = replica');
  await db.query('set synchronous_commit = off');
  await db.query(
    `create temp table pre_done as
    select gen_random_uuid() as id, gen_random_uuid() as task_id, now() - interval '2 days' + g * interval '1 ms' as at from generate_series(1, $1) g order by 1`,
    [completed],
  );
  await db.query(
    `insert into instances (id, definition_id, definition_key, definition_version, status, revision, created_at, updated_at, ended_at)
    select id, $1, 'bench-single', 1, 'completed', 3, at, at, at from pre_done`,
    [def('bench-single')],
  );
  await db.query(`insert into external_tasks (id, instance_id, step_id, generation, topic, state, retries, retries_left, attempt, worker_id, lock_token,
                                              lock_expires_at, last_result, idempotency_key, created_at, ended_at)
    select task_id, id, 'work', 1, 'single', 'done', 3, 3, 1, 'preload', gen_random_uuid(), at, 'complete', id || '/work/1', at, at from pre_done`);
  await db.query(`insert into steps (instance_id, step_id, generation, status, activated_at, ended_at)
    select id, s, 1, 'completed', at, at from pre_done, unnest(array['start', 'work', 'end']) s`);
  await db.query(`insert into flows (instance_id, flow_id, generation, state, resolved_at)
    select id, f, 1, 'taken', at from pre_done, unnest(array['f1', 'f2']) f`);
  await db.query(`insert into events (seq, instance_id, generation, kind, step_id, task_id, attempt, at)
    select baton_event_seq(id), id, 1, k.kind, k.step_id, case when k.step_id = 'work' then task_id end, case when k.step_id = 'work' then 1 end, at
      from pre_done, (values ('instance:started', null), ('task:locked', 'work'), ('task:completed', 'work'), ('instance:completed', null)) k(kind, step_id)`);
  await db.query(
    `create temp table pre_wait as
    select gen_random_uuid() as id, g <= $1 as on_timer, now() - interval '1 day' + g * interval '1 ms' as at from generate_series(1, $2) g order by 1`,
    [timersWaiting, waiting],
  );
  await db.query(
    `insert into instances (id, definition_id, definition_key, definition_version, status, revision, created_at, updated_at)
    select id, case when on_timer then $1::uuid else $2::uuid end, case when on_timer then 'bench-far-timer' else 'bench-message' end, 1, 'running', 2, at, at
      from pre_wait`,
    [def('bench-far-timer'), def('bench-message')],
  );
  await db.query(`insert into steps (instance_id, step_id, generation, status, activated_at, ended_at)
    select id, 'start', 1, 'completed', at, at from pre_wait union all select id, 'wait', 1, 'active', at, null from pre_wait`);
  await db.query(
    `insert into flows (instance_id, flow_id, generation, state, resolved_at) select id, 'f1', 1, 'taken', at from pre_wait`,
  );
  await db.query(`insert into events (seq, instance_id, generation, kind, step_id, at)
    select baton_event_seq(id), id, 1, 'instance:started', null, at from pre_wait
    union all select baton_event_seq(id), id, 1, 'step:waiting', 'wait', at from pre_wait`);
  await db.query(`insert into timers (instance_id, step_id, generation, due_at, created_at)
    select id, 'wait', 1, now() + interval '30 days', at from pre_wait where on_timer`);
  await db.query(`insert into subscriptions (instance_id, step_id, generation, kind, name, correlation_key, created_at)
    select id, 'wait', 1, 'message', 'bench-paid', id::text, at from pre_wait where not on_timer`);
  await db.query('set session_replication_role = origin');
  await db.query('vacuum analyze');
  return (
    `empty database: 1 instance on a timer; preloaded: ${completed.toLocaleString('en-US')} completed (instance, task, 3 steps, 2 flows, 4 events each); ` +
    `${timersWaiting.toLocaleString('en-US')} on a timer + ${messagesWaiting.toLocaleString('en-US')} on a message`
  );
}

/**
 * Workload 6: the hot path on an empty database and on the preloaded one, the rounds
 * alternating between the two (a fresh server each time, warmed up first), so that a
 * change in the machine's load falls on both sides alike.
 */
async function scale(emptyUrl: string, loadedUrl: string, result: SystemResult): Promise<void> {
  const loadedDb = new pg.Client({ connectionString: loadedUrl });
  await loadedDb.connect();
  const deploy = async (server: BatonServer) => {
    for (const xml of [singleXml, farTimerXml, messageXml]) await post(`${server.url}/api/definitions`, { xml });
  };
  try {
    // One instance waits on a far timer in the empty database too: with no waiting timer at
    // all, the timer scheduler re-polls without pause and the comparison would measure that.
    await withServer(emptyUrl, async (server) => {
      await deploy(server);
      await start(server.url, 'bench-far-timer');
    });
    await withServer(loadedUrl, deploy);
    const emptyDb = new pg.Client({ connectionString: emptyUrl });
    await emptyDb.connect();
    await emptyDb.query('vacuum analyze'); // the preload ends with one too: same statistics state on both sides
    await emptyDb.end();
    const t0 = performance.now();
    const rows = await timed('preload', () => preload(loadedDb, size.scaleCompleted, size.scaleWaiting));
    const preloadSeconds = (performance.now() - t0) / 1000;
    const empty = { fetch: [] as number[], complete: [] as number[] };
    const loaded = { fetch: [] as number[], complete: [] as number[] };
    const sample = (url: string, into: { fetch: number[]; complete: number[] }) =>
      withServer(url, async (server) => {
        await hotPathLatency(server.url, 20); // warm-up: prepared statements, JIT of the server code
        const r = await hotPathLatency(server.url, size.scaleSamples);
        into.fetch.push(r.fetch);
        into.complete.push(r.complete);
      });
    for (let round = 0; round < RUNS; round++) {
      await sample(emptyUrl, empty);
      await sample(loadedUrl, loaded);
      result.scale = { preloadSeconds, rows, empty, loaded };
      partial(result);
    }
  } finally {
    await loadedDb.end();
  }
}

async function main(): Promise<void> {
  const dbUrl = env('BENCH_DB_URL');
  const admin = new pg.Client({ connectionString: env('BENCH_ADMIN_URL') });
  await admin.connect();
  const db = new pg.Client({ connectionString: dbUrl });
  const { version } = (await import('../../package.json', { with: { type: 'json' } })).default;
  const result: SystemResult = {
    system: 'Baton',
    version,
    settings: `HTTP /api on loopback, same process as the clients (the worker SDK's HTTP client); pool 20; fetch maxTasks 10, long poll 1 s; what a fetch brings is completed by one complete-batch call`,
    single: [],
    chain: [],
    fanout: [],
    loop: [],
    calls: [],
    userTasks: [],
    messages: [],
    nodes: [],
    pickup: [],
    timers: [],
    checks: [],
    notes: [],
  };
  // Workloads 1-5 in each of this child's rounds, then workload 6 (run.ts runs it in a
  // child of its own after every round: its million-row preload and the vacuum after it
  // would otherwise fall on the rounds that follow). One server at a time (each polls on its own).
  const rounds = benchRounds();
  const runRounds = () =>
    withServer(dbUrl, async (server) => {
      for (const xml of [singleXml, chainXml, fanoutXml, loopXml, callChildXml, callsXml, userTaskXml, correlationXml])
        await post(`${server.url}/api/definitions`, { xml });
      // BENCH_SETUP_SQL: a statement run once the definitions are in, for experiments (e.g. disabling a trigger)
      if (process.env.BENCH_SETUP_SQL) await db.query(process.env.BENCH_SETUP_SQL);
      if (rounds.includes(0) && process.env.BENCH_PARK_TIMER === '1') {
        // With no waiting timer the scheduler re-polls at once (see docs/PERFORMANCE.md); one far timer stops that.
        await post(`${server.url}/api/definitions`, { xml: farTimerXml });
        await start(server.url, 'bench-far-timer');
        result.notes.push('BENCH_PARK_TIMER=1: one instance waits on a 30-day timer throughout');
      }
      if (rounds.includes(0)) result.idleQueriesPerSec = await idleQueriesPerSec();
      for (const round of rounds) {
        if (roundParts.has('single'))
          result.single!.push(
            await timed('single', () => throughput(server.url, admin, 'bench-single', ['single'], size.single, 1)),
          );
        partial(result);
        if (roundParts.has('chain'))
          result.chain!.push(
            await timed('chain', () =>
              throughput(server.url, admin, 'bench-chain', ['chain-1', 'chain-2', 'chain-3'], size.chain, 3),
            ),
          );
        partial(result);
        if (roundParts.has('fanout'))
          result.fanout!.push(
            await timed('fanout', () => throughput(server.url, admin, 'bench-fanout', ['fan'], size.fanout, FANOUT_BRANCHES)),
          );
        partial(result);
        if (roundParts.has('loop'))
          result.loop!.push(
            await timed('loop', () =>
              throughput(server.url, admin, 'bench-loop', ['loop-work'], size.loop, LOOP_PASSES, (t) => ({
                n: Number(t.variables?.n ?? 0) + 1,
              })),
            ),
          );
        partial(result);
        if (roundParts.has('calls'))
          result.calls!.push(
            await timed('calls', () =>
              throughput(server.url, admin, 'bench-calls', ['call-work'], size.calls, CALL_CHAIN, undefined, () =>
                untilNoneRunning(db, 'bench-calls'),
              ),
            ),
          );
        partial(result);
        if (roundParts.has('usertasks'))
          result.userTasks!.push(await timed('user tasks', () => userTaskRounds(server.url, admin, round, size.userTasks)));
        partial(result);
        if (roundParts.has('messages'))
          result.messages!.push(
            await timed('messages', () => messageCorrelation(server.url, admin, db, round, size.messages, size.published)),
          );
        partial(result);
        if (roundParts.has('pickup')) result.pickup!.push(await timed('pickup', () => pickupLatency(server.url, size.pickups)));
        partial(result);
        // the timers fall due once the starts are done (at the rate workload 1 just measured), over TIMER_SPREAD_S
        if (roundParts.has('timers')) {
          // Without workload 1 the rate is a guess: 150/s, what the starts ran at on the loaded machine (300/s let the first bursts meet the last starts).
          const leadSeconds = Math.min(60, Math.ceil(size.timers / (result.single!.at(-1)?.perSec ?? 150))) + 1;
          result.timers!.push(await timed('timers', () => timerLateness(server.url, db, round, leadSeconds)));
          partial(result);
        }
      }
    });
  // Workload 12 runs after the in-process server of the rounds above has stopped: only the nodes it measures run.
  const runNodes = async () => {
    for (let i = 0; i < rounds.length; i++) {
      result.nodes!.push(await timed('one node, two nodes', () => nodeScaling(dbUrl, admin)));
      partial(result);
    }
  };
  try {
    await db.connect();
    if (workloads.has('throughput')) {
      await runRounds();
      if (roundParts.has('nodes')) await runNodes();
      // The database holds every round so far (earlier ones ran in earlier children), each with the same parts.
      const n = roundsInDatabase(rounds);
      const has = (part: string) => (roundParts.has(part) ? n : 0);
      const singles = has('single') * size.single + has('pickup') * size.pickups;
      await checkExactlyOnce(result, db, 'bench-single', singles, singles);
      const chains = has('chain') * size.chain + has('nodes') * size.chain * 2;
      await checkExactlyOnce(result, db, 'bench-chain', chains, chains * 3);
      await checkExactlyOnce(
        result,
        db,
        'bench-fanout',
        has('fanout') * size.fanout,
        has('fanout') * size.fanout * FANOUT_BRANCHES,
      );
      await checkExactlyOnce(result, db, 'bench-loop', has('loop') * size.loop, has('loop') * size.loop * LOOP_PASSES);
      await checkExactlyOnce(result, db, 'bench-calls', has('calls') * size.calls, 0);
      await checkExactlyOnce(
        result,
        db,
        'bench-call-child',
        has('calls') * size.calls * CALL_CHAIN,
        has('calls') * size.calls * CALL_CHAIN,
      );
      await checkCompleted(result, db, 'bench-user-task', has('usertasks') * size.userTasks);
      await checkCompleted(
        result,
        db,
        'bench-correlation',
        has('messages') * size.published,
        has('messages') * (size.messages - size.published),
      );
      const timers = has('timers') * size.timers;
      const {
        rows: [t],
      } = await db.query<{ n: number }>(
        `select count(*)::int as n from instances where definition_key like 'bench-timer-%' and status = 'completed'`,
      );
      check(result, `timers: ${timers} instances completed`, t!.n === timers, `${t!.n} completed`);
    }
    if (workloads.has('scale')) await scale(env('BENCH_SCALE_EMPTY_DB_URL'), env('BENCH_SCALE_DB_URL'), result);
  } finally {
    await db.end().catch(() => undefined);
    await admin.end();
  }
  report(result);
}

main().catch((err: Error) => {
  console.error(err);
  process.exit(1);
});
