// The chaos soak: `npm run chaos -- --minutes 2 --nodes 2 --workers 4`.
// Runtime nodes and SDK workers as child processes on one PostgreSQL (its own
// embedded one, or a fresh database on DATABASE_URL's server), a mix of sample
// processes, and for the whole run: SIGKILLs of workers and nodes, crashes and
// delays at fault points, cut database connections, duplicated and late worker
// calls. Then it drains, runs the invariant checker and prints a summary table.
// Exit code 0 only with nothing lost, nothing applied twice and no violation.
import { chmod, mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { startEmbeddedPostgres, type EmbeddedPostgresHandle } from '../../runtime/store/embedded.ts';
import {
  buildBpmn,
  callBpmn,
  inlineDefinitions,
  inlineFlow,
  parallelBpmn,
  type FlowSpec,
  type NodeSpec,
} from '../support/bpmn.ts';
import { checkInvariants, formatReport, type Report } from './check.ts';
import { freePort } from '../support/ports.ts';
import { killAll, sleep, startNode, startWorker, waitFor, type Proc, type RuntimeNode } from './harness.ts';
import { createLedger, summarizeLedger, type LedgerSummary } from './ledger.ts';

export interface SoakOptions {
  minutes: number;
  nodes: number;
  workers: number;
  /** new instances per second while the chaos runs */
  rate: number;
  /** a server that may create databases; unset: an embedded PostgreSQL of its own */
  databaseUrl?: string;
  /** name of the fresh database on databaseUrl's server; default baton_chaos_<pid>_<time> */
  databaseName?: string;
  /** longest wait for the nodes to come back, and again for every instance to end, after the chaos; default 180 s */
  drainMs?: number;
  log?: (line: string) => void;
}

export interface SoakSummary {
  started: number;
  completed: number;
  compensated: number;
  incident: number;
  /** accepted starts missing from the database, or unfinished with no wait the client is to blame for */
  lost: number;
  /** calls the client gave up on after 40 tries (no node answered below 500): never accepted, so not lost */
  gaveUp: { starts: number; messages: number; waitingForThem: number };
  /** one line per lost instance: what it still waits for */
  lostDetails: string[];
  /** nodes that did not answer /healthz at the end (see the pool note at MAX_IN_FLIGHT) */
  unresponsiveNodes: number;
  appliedTwice: number;
  violations: number;
  kills: Record<string, number>;
  injected: { duplicateCompletes: number; lateCompletes: number; duplicateMessages: number; earlyMessages: number };
  chaosSeconds: number;
  /** from the end of the chaos until every instance ended (or the drain gave up) */
  drainSeconds: number;
  /** instances completed or compensated per second while the chaos ran */
  throughput: number;
  ledger: LedgerSummary;
  report: Report;
}

// Node faults: rare crashes at exact windows, frequent small delays.
const NODE_FAULTS = [
  'api:after-complete-commit:crash:chance:0.002',
  'fetch:after-lock:crash:chance:0.001',
  'compensation:mid-saga:crash:chance:0.02',
  'notifications:before-relay:crash:chance:0.0005',
  'call:before-return:crash:chance:0.02',
  'timer:before-fire:delay:50:chance:0.3',
  'message:before-match:delay:50:chance:0.3',
].join(',');
// Worker faults: now and then a worker dies right after its side effect.
const WORKER_FAULTS = 'task:after-side-effect:crash:chance:0.005';
// Until the run has seen a crash at a fault point, every new node 0 and worker 0 crashes at its
// first window (a later rule for a point replaces the earlier one): a short soak has each kind at least once.
const ARMED_NODE_FAULTS = `${NODE_FAULTS},api:after-complete-commit:crash:once`;
const ARMED_WORKER_FAULTS = 'task:after-side-effect:crash:once';

// The chaos actions, dealt from a shuffled deck so that each kind comes up once per round of six
// (about every 9 s) in a random order, worker kills twice: roughly the old weights, none left out by luck.
type ChaosKind = 'kill worker' | 'kill node' | 'terminate connections' | 'duplicate complete' | 'late complete';
const DECK: readonly ChaosKind[] = [
  'kill worker',
  'kill worker',
  'kill node',
  'terminate connections',
  'duplicate complete',
  'late complete',
];

const TOPICS = [
  'soak-loop-review',
  'soak-loop-rework',
  'soak-a',
  'soak-b',
  'soak-retry',
  'soak-timer-work',
  'soak-msg-prepare',
  'soak-book-a',
  'soak-book-b',
  'soak-pay',
  'soak-undo',
];

function definitions(): string[] {
  const timer = buildBpmn(
    'soak-timer',
    [
      { id: 's', type: 'startEvent' },
      { id: 'wait', type: 'catchEvent', timer: { duration: 'PT1S' } },
      { id: 'work', type: 'serviceTask', topic: 'soak-timer-work' },
      { id: 'e', type: 'endEvent' },
    ],
    [
      { from: 's', to: 'wait' },
      { from: 'wait', to: 'work' },
      { from: 'work', to: 'e' },
    ],
  );
  const message = buildBpmn(
    'soak-msg',
    [
      { id: 's', type: 'startEvent' },
      { id: 'prepare', type: 'serviceTask', topic: 'soak-msg-prepare' },
      { id: 'paid', type: 'catchEvent', message: 'soak-payment', correlationKey: 'orderId' },
      { id: 'e', type: 'endEvent' },
    ],
    [
      { from: 's', to: 'prepare' },
      { from: 'prepare', to: 'paid' },
      { from: 'paid', to: 'e' },
    ],
  );
  const retry = buildBpmn(
    'soak-retry',
    [
      { id: 's', type: 'startEvent' },
      { id: 'flaky', type: 'serviceTask', topic: 'soak-retry', retries: 3 },
      { id: 'e', type: 'endEvent' },
    ],
    [
      { from: 's', to: 'flaky' },
      { from: 'flaky', to: 'e' },
    ],
  );
  const nodes: NodeSpec[] = [{ id: 's', type: 'startEvent' }];
  const flows: FlowSpec[] = [];
  let previous = 's';
  for (const x of ['a', 'b']) {
    nodes.push(
      { id: `book_${x}`, type: 'serviceTask', topic: `soak-book-${x}` },
      { id: `comp_${x}`, type: 'compensationBoundary', attachedTo: `book_${x}`, handler: `undo_${x}` },
      { id: `undo_${x}`, type: 'serviceTask', topic: 'soak-undo', forCompensation: true },
    );
    flows.push({ from: previous, to: `book_${x}` });
    previous = `book_${x}`;
  }
  nodes.push(
    { id: 'pay', type: 'serviceTask', topic: 'soak-pay', retries: 1, onExhausted: 'compensate' },
    { id: 'e', type: 'endEvent' },
  );
  flows.push({ from: previous, to: 'pay' }, { from: 'pay', to: 'e' });
  // Two passes: the first review finds no rework done yet (the worker answers `<step>_by`), the second leaves.
  const loop = buildBpmn(
    'soak-loop',
    [
      { id: 's', type: 'startEvent' },
      { id: 'review', type: 'serviceTask', topic: 'soak-loop-review' },
      { id: 'decide', type: 'exclusiveGateway', default: 'done' },
      { id: 'rework', type: 'serviceTask', topic: 'soak-loop-rework' },
      { id: 'e', type: 'endEvent' },
    ],
    [
      { from: 's', to: 'review' },
      { from: 'review', to: 'decide' },
      { id: 'again', from: 'decide', to: 'rework', condition: '=rework_by = null' },
      { id: 'done', from: 'decide', to: 'e' },
      { from: 'rework', to: 'review' },
    ],
  );
  // The parallel join again, as a called instance: the call waits for it, and its variables come back.
  const call = callBpmn('soak-call', 'soak-par');
  // A parallel multi-instance subprocess: two elements at once, each a called instance of its body.
  const each = inlineDefinitions('soak-each', [
    '<bpmn:startEvent id="s" />',
    `<bpmn:subProcess id="each"><bpmn:multiInstanceLoopCharacteristics><bpmn:loopCardinality>2</bpmn:loopCardinality></bpmn:multiInstanceLoopCharacteristics>
      <bpmn:startEvent id="in" /><bpmn:serviceTask id="a" camunda:type="external" camunda:topic="soak-a" />
      <bpmn:serviceTask id="b" camunda:type="external" camunda:topic="soak-b" /><bpmn:endEvent id="out" />
      ${inlineFlow('i1', 'in', 'a')}${inlineFlow('i2', 'a', 'b')}${inlineFlow('i3', 'b', 'out')}</bpmn:subProcess>`,
    '<bpmn:endEvent id="e" />',
    inlineFlow('f1', 's', 'each'),
    inlineFlow('f2', 'each', 'e'),
  ]);
  return [
    parallelBpmn('soak-par', 'soak-a', 'soak-b'),
    timer,
    message,
    retry,
    buildBpmn('soak-saga', nodes, flows),
    loop,
    call,
    each,
  ];
}

const KINDS = [
  'soak-par',
  'soak-par',
  'soak-timer',
  'soak-msg',
  'soak-retry',
  'soak-saga',
  'soak-loop',
  'soak-call',
  'soak-each',
] as const;

async function post(url: string, body: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

// A transition that finds the plan cache cold (a restarted node) reads the definition
// through a second pool connection while holding its transaction's: with the pool's 20
// connections all held that way, the node deadlocks (docs/RELIABILITY.md, finding 2).
// The soak keeps its own concurrent calls low so that workers and timers stay below it.
const MAX_IN_FLIGHT = 4;

const pick = <T>(xs: readonly T[]): T => xs[Math.floor(Math.random() * xs.length)]!;

export async function runSoak(opts: SoakOptions): Promise<SoakSummary> {
  const log = opts.log ?? ((line: string) => process.stdout.write(`${line}\n`));
  const dataDir = path.resolve('.baton-test', `chaos-soak-${process.pid}`);
  let embedded: EmbeddedPostgresHandle | undefined;
  let databaseUrl: string;
  let dropDatabase: (() => Promise<void>) | undefined;
  if (opts.databaseUrl) {
    const name = opts.databaseName ?? `baton_chaos_${process.pid}_${Date.now()}`;
    const admin = new pg.Client({ connectionString: opts.databaseUrl });
    await admin.connect();
    await admin.query(`create database ${name}`);
    await admin.end();
    const u = new URL(opts.databaseUrl);
    u.pathname = `/${name}`;
    databaseUrl = u.toString();
    dropDatabase = async () => {
      const c = new pg.Client({ connectionString: opts.databaseUrl });
      await c.connect();
      await c.query(`drop database if exists ${name} with (force)`).finally(() => c.end());
    };
  } else {
    await mkdir(dataDir, { recursive: true });
    await chmod(dataDir, 0o755);
    embedded = await startEmbeddedPostgres({ dataDir, port: await freePort(), database: 'baton', maxConnections: 200 });
    databaseUrl = embedded.url;
  }
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 4 });
  pool.on('error', () => undefined);
  const kills: Record<string, number> = {
    'worker SIGKILL': 0,
    'node SIGKILL': 0,
    'node crash at fault point': 0,
    'worker crash at fault point': 0,
    'connections terminated': 0,
  };
  const injected = { duplicateCompletes: 0, lateCompletes: 0, duplicateMessages: 0, earlyMessages: 0 };
  const accepted = new Set<string>();
  let startFailures = 0;
  const undelivered = new Set<string>();
  const nodes: (RuntimeNode | undefined)[] = [];
  const workers: (Proc | undefined)[] = [];

  const interrupted = async () => {
    await killAll();
    await embedded?.stop().catch(() => undefined);
    process.exit(130);
  };
  const onSignal = () => void interrupted();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const drainMs = opts.drainMs ?? 180_000;
  try {
    log(
      `soak: ${opts.minutes} min, ${opts.nodes} nodes, ${opts.workers} workers, ${opts.rate} starts/s on ${embedded ? 'an embedded PostgreSQL' : 'DATABASE_URL'}`,
    );
    const ports = await Promise.all(Array.from({ length: opts.nodes }, () => freePort()));
    const launchNode = (i: number) =>
      startNode(databaseUrl, {
        port: ports[i]!,
        faults: i === 0 && kills['node crash at fault point'] === 0 ? ARMED_NODE_FAULTS : NODE_FAULTS,
        env: { BATON_MAX_PARKED_POLLS: '1000' },
      });
    for (let i = 0; i < opts.nodes; i++) nodes[i] = await launchNode(i);
    await createLedger(pool);
    const urlOf = (i: number) => `http://127.0.0.1:${ports[i]}`;
    for (const xml of definitions()) {
      const res = await fetch(`${urlOf(0)}/api/definitions`, {
        method: 'POST',
        headers: { 'content-type': 'application/xml' },
        body: xml,
      });
      if (!res.ok) throw new Error(`deploy failed: ${res.status} ${await res.text()}`);
    }
    const launchWorker = (i: number) =>
      startWorker(
        {
          baseUrl: urlOf(i % opts.nodes),
          databaseUrl,
          workerId: `soak-w${i}-${Date.now()}`,
          topics: TOPICS,
          concurrency: 4,
          lockDurationMs: 2_000,
          holdMs: 20,
          failTopics: { 'soak-retry': 1, 'soak-pay': 9 },
        },
        i === 0 && kills['worker crash at fault point'] === 0 ? ARMED_WORKER_FAULTS : WORKER_FAULTS,
      );
    for (let i = 0; i < opts.workers; i++) workers[i] = launchWorker(i);

    const liveNode = () => {
      const live = nodes.map((n, i) => (n?.alive() ? i : -1)).filter((i) => i >= 0);
      return live.length ? urlOf(pick(live)) : undefined;
    };
    let seq = 0;
    // A client whose call dies with a node tries another node: starts are idempotent by business
    // key, and a repeated messageId is ignored, so repeating is always safe.
    const persist = async (path: string, body: unknown): Promise<{ status: number; body: any } | undefined> => {
      for (let attempt = 0; attempt < 40; attempt++) {
        const url = liveNode();
        const res = url ? await post(`${url}${path}`, body).catch(() => undefined) : undefined;
        if (res && res.status < 500) return res;
        await sleep(250);
      }
      return undefined;
    };
    const startOne = async () => {
      const kind = pick(KINDS);
      const key = `${kind}-${seq++}`;
      const orderId = `order-${key}`;
      // Half the payments arrive before the token reaches the catch, all of them twice.
      const early = kind === 'soak-msg' && Math.random() < 0.5;
      const res = await persist('/api/instances', { definitionKey: kind, businessKey: key, variables: { orderId } });
      if (res && (res.status === 201 || res.status === 200)) accepted.add(res.body.id);
      else startFailures++;
      if (kind !== 'soak-msg') return;
      if (!early) await sleep(500 + Math.random() * 1_500);
      else injected.earlyMessages++;
      const pay = () => persist('/api/messages', { name: 'soak-payment', correlationKey: orderId, messageId: `pay-${orderId}` });
      const answers = await Promise.all([pay(), pay()]);
      if (answers.every((a) => !a || a.status >= 300)) undelivered.add(orderId);
      injected.duplicateMessages++;
    };

    const relaunching = new Set<number>();
    const supervise = async () => {
      for (let i = 0; i < opts.nodes; i++) {
        const n = nodes[i];
        if (n && !n.alive()) {
          if (/baton-fault \S+ crash/.test(n.output())) kills['node crash at fault point']!++;
          nodes[i] = undefined;
        }
        if (!nodes[i] && !relaunching.has(i)) {
          relaunching.add(i);
          void sleep(500 + Math.random() * 1_500)
            .then(() => launchNode(i))
            .then(
              (node) => (nodes[i] = node),
              (err: Error) => log(`soak: node ${i} did not restart: ${err.message.slice(0, 2_000)}`),
            )
            .finally(() => relaunching.delete(i));
        }
      }
      for (let i = 0; i < workers.length; i++) {
        const w = workers[i];
        if (w && !w.alive()) {
          if (w.output().includes('baton-fault task:after-side-effect crash')) kills['worker crash at fault point']!++;
          workers[i] = launchWorker(i);
        }
      }
    };

    let deck: ChaosKind[] = [];
    const chaosOnce = async () => {
      if (deck.length === 0) deck = shuffled(DECK);
      const kind = deck.pop()!;
      if (kind === 'kill worker') {
        const i = Math.floor(Math.random() * workers.length);
        if (workers[i]?.alive()) {
          kills['worker SIGKILL']!++;
          await workers[i]!.kill();
        }
      } else if (kind === 'kill node') {
        // One of the live nodes, never the last one. While a node restarts (after a crash at a
        // fault point) the card goes back on the deck, so every run kills a node at least once.
        const live = nodes.filter((n): n is RuntimeNode => !!n?.alive());
        if (live.length > 1) {
          kills['node SIGKILL']!++;
          await pick(live).kill();
        } else deck.push(kind);
      } else if (kind === 'terminate connections') {
        const { rowCount } = await pool
          .query(
            `select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()
              and backend_type = 'client backend' and random() < 0.2`,
          )
          .catch(() => ({ rowCount: 0 }));
        kills['connections terminated']! += rowCount ?? 0;
      } else if (kind === 'duplicate complete') {
        // A worker repeats a complete it already made: 204, nothing changes.
        const { rows } = await pool
          .query(
            `select id, worker_id, lock_token from external_tasks where state = 'done' and last_result = 'complete' order by random() limit 1`,
          )
          .catch(() => ({ rows: [] as any[] }));
        const url = liveNode();
        if (rows[0] && url) {
          const res = await post(`${url}/api/external-tasks/${rows[0].id}/complete`, {
            workerId: rows[0].worker_id,
            lockToken: rows[0].lock_token,
          }).catch(() => undefined);
          if (res?.status === 204) injected.duplicateCompletes++;
        }
      } else {
        // A worker whose lease is gone answers late: 409, recorded, nothing changes.
        const { rows } = await pool
          .query(`select id from external_tasks where state in ('locked', 'done') order by random() limit 1`)
          .catch(() => ({ rows: [] as any[] }));
        const url = liveNode();
        if (rows[0] && url) {
          const res = await post(`${url}/api/external-tasks/${rows[0].id}/complete`, {
            workerId: 'soak-ghost',
            lockToken: crypto.randomUUID(),
          }).catch(() => undefined);
          if (res?.status === 409) injected.lateCompletes++;
        }
      }
    };

    const began = Date.now();
    const endAt = began + opts.minutes * 60_000;
    const inFlight = new Set<Promise<void>>();
    let nextChaos = began + 1_000;
    let nextReport = began + 15_000;
    while (Date.now() < endAt) {
      // At most MAX_IN_FLIGHT client flows at once: see the pool note at MAX_IN_FLIGHT.
      if (inFlight.size < MAX_IN_FLIGHT) {
        const p = startOne().finally(() => inFlight.delete(p));
        inFlight.add(p);
      }
      if (Date.now() >= nextChaos) {
        await chaosOnce().catch(() => undefined);
        nextChaos = Date.now() + 500 + Math.random() * 2_000;
      }
      await supervise();
      if (Date.now() >= nextReport) {
        log(`soak: ${Math.round((Date.now() - began) / 1000)} s, ${accepted.size} started, kills ${JSON.stringify(kills)}`);
        nextReport += 15_000;
      }
      await sleep(1_000 / opts.rate);
    }
    const chaosSeconds = (Date.now() - began) / 1000;
    const {
      rows: [during],
    } = await pool.query(`select count(*)::int as n from instances where status in ('completed', 'compensated')`);
    log(`soak: chaos over after ${Math.round(chaosSeconds)} s; draining`);
    const drainBegan = Date.now();
    await Promise.race([Promise.all(inFlight), sleep(60_000)]);

    // Drain: every node back, workers carry on, no more chaos actions (the processes' own fault
    // points stay armed, so a node may still crash at one and be restarted meanwhile).
    const allNodesBack = () =>
      waitFor(
        async () => {
          await supervise();
          return nodes.every((n) => n?.alive()) ? true : undefined;
        },
        drainMs,
        'every node to be back',
      ).catch((err: Error) => log(`soak: ${err.message}`));
    await allNodesBack();
    await waitFor(
      async () => {
        await supervise();
        const { rows } = await pool
          .query(`select count(*)::int as n from instances where status in ('running', 'compensating')`)
          .catch(() => ({ rows: [{ n: -1 }] }));
        return rows[0].n === 0 ? true : undefined;
      },
      drainMs,
      'every instance to end',
    ).catch((err: Error) => log(`soak: ${err.message}`));
    // A node that crashed at a fault point during the drain is let finish its restart before
    // /healthz is asked: what is counted is a node that runs and does not answer (finding 2).
    await allNodesBack();

    const drainSeconds = (Date.now() - drainBegan) / 1000;
    let unresponsiveNodes = 0;
    for (let i = 0; i < opts.nodes; i++) {
      const ok = await fetch(`${urlOf(i)}/healthz`, { signal: AbortSignal.timeout(5_000) }).then(
        (r) => r.ok,
        () => false,
      );
      if (!ok) {
        unresponsiveNodes++;
        log(`soak: node ${i} does not answer /healthz after the drain`);
      }
    }
    const report = await checkInvariants(databaseUrl);
    const ledger = await summarizeLedger(pool);
    const { rows: statuses } = await pool.query<{ id: string; status: string; order_id: string | null; waits: string }>(
      `select i.id, i.status, i.variables->>'orderId' as order_id,
              concat_ws('; ', (select string_agg(t.step_id || ' task ' || t.state || ' attempt ' || t.attempt || coalesce(' by ' || t.worker_id || ' lease ends in ' || round(extract(epoch from t.lock_expires_at - now())) || ' s', ''), ', ')
                 from external_tasks t where t.instance_id = i.id and t.state in ('ready', 'locked')),
                              (select string_agg(m.step_id || ' timer due ' || m.due_at, ', ') from timers m where m.instance_id = i.id and m.state = 'waiting'),
                              (select string_agg(s.step_id || ' ' || s.kind || ' ' || s.name, ', ') from subscriptions s where s.instance_id = i.id)) as waits
         from instances i`,
    );
    const byId = new Map(statuses.map((r) => [r.id, r]));
    const count = (s: string) => [...accepted].filter((id) => byId.get(id)?.status === s).length;
    const unfinished = [...accepted].filter(
      (id) => !['completed', 'compensated', 'incident'].includes(byId.get(id)?.status ?? 'missing'),
    );
    // Waiting for a payment every call of which the client gave up on is the client's doing, not a loss.
    const waitingForThem = unfinished.filter(
      (id) => undelivered.has(byId.get(id)?.order_id ?? '') && /message soak-payment/.test(byId.get(id)?.waits ?? ''),
    ).length;
    const lostIds = unfinished.filter(
      (id) => !(undelivered.has(byId.get(id)?.order_id ?? '') && /message soak-payment/.test(byId.get(id)?.waits ?? '')),
    );
    const lostDetails = lostIds.map(
      (id) =>
        `${id}: ${byId.get(id)?.status ?? 'missing from the database'}${byId.get(id)?.waits ? `, waits on ${byId.get(id)?.waits}` : ''}`,
    );
    for (const line of lostDetails) log(`soak: lost ${line}`);
    if (lostIds.length > 0) {
      // What could hold them: transactions left open or waiting on a lock (a hung node shows up here).
      const { rows: sessions } = await pool
        .query<{ line: string }>(
          `select concat_ws(' ', pid, state, wait_event_type, wait_event, 'xact ' || round(extract(epoch from now() - xact_start)) || ' s', left(query, 120)) as line
           from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()
            and (state like 'idle in transaction%' or wait_event_type = 'Lock')`,
        )
        .catch(() => ({ rows: [] as { line: string }[] }));
      for (const { line } of sessions) log(`soak: session ${line}`);
    }
    const lost = lostIds.length;
    return {
      started: accepted.size,
      completed: count('completed'),
      compensated: count('compensated'),
      incident: count('incident'),
      lost,
      gaveUp: { starts: startFailures, messages: undelivered.size, waitingForThem },
      lostDetails,
      unresponsiveNodes,
      appliedTwice: ledger.appliedTwice,
      violations: report.violations,
      kills,
      injected,
      chaosSeconds,
      drainSeconds,
      throughput: during.n / chaosSeconds,
      ledger,
      report,
    };
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await killAll();
    await pool.end().catch(() => undefined);
    await dropDatabase?.().catch(() => undefined);
    if (embedded) {
      await embedded.stop();
      await rm(dataDir, { recursive: true, force: true });
    }
  }
}

function shuffled<T>(xs: readonly T[]): T[] {
  const out = [...xs];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

export function formatSummary(s: SoakSummary, command: string): string {
  const rows: [string, string | number][] = [
    ['instances started', s.started],
    ['completed', s.completed],
    ['compensated (saga, by design)', s.compensated],
    ['incident', s.incident],
    ...Object.entries(s.kills).map(([k, v]): [string, number] => [`kills: ${k}`, v]),
    ['duplicate completes injected (204)', s.injected.duplicateCompletes],
    ['late completes injected (409)', s.injected.lateCompletes],
    ['messages sent twice', s.injected.duplicateMessages],
    ['messages sent before their catch', s.injected.earlyMessages],
    ['ledger attempts / applied / short-circuited', `${s.ledger.attempts} / ${s.ledger.applied} / ${s.ledger.shortCircuited}`],
    ['throughput during chaos (instances/s)', s.throughput.toFixed(1)],
    ['chaos / drain (s)', `${Math.round(s.chaosSeconds)} / ${Math.round(s.drainSeconds)}`],
    [
      'client gave up: starts (never accepted) / payments (instances still waiting for them)',
      `${s.gaveUp.starts} / ${s.gaveUp.messages} (${s.gaveUp.waitingForThem})`,
    ],
    ['nodes not answering /healthz after the drain', s.unresponsiveNodes],
    ['**lost**', s.lost],
    ['**applied twice**', s.appliedTwice],
    ['**invariant violations**', s.violations],
  ];
  return [
    `command: ${command}`,
    '',
    '| measure | value |',
    '|---|---|',
    ...rows.map(([k, v]) => `| ${k} | ${v} |`),
    '',
    formatReport(s.report),
  ].join('\n');
}

if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  const { values } = parseArgs({
    args: process.argv.slice(2).filter((a) => a !== '--'),
    options: {
      minutes: { type: 'string', default: '2' },
      nodes: { type: 'string', default: '2' },
      workers: { type: 'string', default: '4' },
      rate: { type: 'string', default: '10' },
    },
  });
  const opts: SoakOptions = {
    minutes: Number(values.minutes),
    nodes: Number(values.nodes),
    workers: Number(values.workers),
    rate: Number(values.rate),
    ...(process.env.DATABASE_URL ? { databaseUrl: process.env.DATABASE_URL } : {}),
  };
  const summary = await runSoak(opts);
  process.stdout.write(
    `\n${formatSummary(summary, `npm run chaos -- --minutes ${opts.minutes} --nodes ${opts.nodes} --workers ${opts.workers} --rate ${opts.rate}`)}\n`,
  );
  process.exit(summary.lost === 0 && summary.appliedTwice === 0 && summary.violations === 0 ? 0 : 1);
}
