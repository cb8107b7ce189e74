// A worker process for the drills: the real SDK, a side effect in the ledger keyed
// by the task's idempotency key, and knobs to misbehave. argv[2]: ChaosWorkerOptions as JSON.
// Prints one line per step so the drill can follow it: locked, applied | short-circuited, done.
import pg from 'pg';
import { fault, FaultPoint } from '../../runtime/shared/faults.ts';
import { createWorker } from '../../runtime/worker/index.ts';
import { applyEffect } from './ledger.ts';

export interface ChaosWorkerOptions {
  baseUrl: string;
  databaseUrl: string;
  workerId: string;
  topics: string[];
  lockDurationMs?: number;
  concurrency?: number;
  /** time the handler works before its side effect */
  holdMs?: number;
  /** the handler works until the task has ended (another worker finished it) */
  holdUntilEnded?: boolean;
  /** topics whose attempts up to this number throw after the side effect */
  failTopics?: Record<string, number>;
  /** this process's clock runs this far ahead (negative: behind) */
  clockSkewMs?: number;
}

const opts = JSON.parse(process.argv[2] ?? '{}') as ChaosWorkerOptions;
if (opts.clockSkewMs) skewClock(opts.clockSkewMs);

const say = (line: string) => process.stdout.write(`${line}\n`);
const pool = new pg.Pool({ connectionString: opts.databaseUrl, max: 2 });
pool.on('error', () => undefined); // a PostgreSQL restart drops idle clients; the next query reconnects
const quiet = new Set([
  'task:report_retry',
  'task:lock_lost',
  'task:completed',
  'task:failed',
  'task:result_dropped',
  'task:extend_failed',
  'task:report_failed',
]);
const log = {
  debug() {},
  info: (o: object, m: string) => quiet.has(m) && say(`log ${m} ${JSON.stringify(o)}`),
  warn: (o: object, m: string) => quiet.has(m) && say(`log ${m} ${JSON.stringify(o)}`),
  error: (o: object, m: string) => say(`log ${m} ${JSON.stringify(o)}`),
};

const worker = createWorker({
  baseUrl: opts.baseUrl,
  workerId: opts.workerId,
  concurrency: opts.concurrency ?? 4,
  lockDurationMs: opts.lockDurationMs ?? 2_000,
  pollWaitMs: 1_000,
  backoff: { minMs: 50, maxMs: 500 },
  callTimeoutMs: 5_000,
  reportAttempts: 40,
  log,
  // BATON_FAULTS=task:after-side-effect crashes this process between the side effect and the report.
  hooks: { afterHandler: () => fault(FaultPoint.taskAfterSideEffect) },
});
for (const topic of opts.topics) {
  worker.subscribe(topic, async (task) => {
    say(`locked ${task.id} ${task.attempt}`);
    if (opts.holdMs) await new Promise((r) => setTimeout(r, opts.holdMs));
    if (opts.holdUntilEnded) await taskEnded(task.id);
    const applied = await applyWithRetry(task);
    say(`${applied ? 'applied' : 'short-circuited'} ${task.id} ${task.attempt}`);
    if (task.attempt <= (opts.failTopics?.[topic] ?? 0)) throw new Error(`planned failure of attempt ${task.attempt}`);
    return { [`${task.stepId}_by`]: opts.workerId };
  });
}
worker.start();
say('started');

// The ledger is another system: while PostgreSQL restarts (drill 12) it is retried like any remote call.
async function applyWithRetry(task: Parameters<typeof applyEffect>[1]): Promise<boolean> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await applyEffect(pool, task, opts.workerId);
    } catch (err) {
      if (attempt >= 100) throw err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

async function taskEnded(taskId: string): Promise<void> {
  for (;;) {
    const { rows } = await pool.query(`select 1 from external_tasks where id = $1 and state in ('ready', 'locked')`, [taskId]);
    if (rows.length === 0) return;
    await new Promise((r) => setTimeout(r, 100));
  }
}

function skewClock(ms: number): void {
  const RealDate = Date;
  const realNow = RealDate.now.bind(RealDate);
  class SkewedDate extends RealDate {
    constructor(...args: unknown[]) {
      if (args.length === 0) super(realNow() + ms);
      else super(...(args as [string]));
    }
    static override now(): number {
      return realNow() + ms;
    }
  }
  globalThis.Date = SkewedDate as DateConstructor;
}

process.on(
  'SIGTERM',
  () =>
    void worker
      .stop()
      .then(() => pool.end())
      .then(() => process.exit(0)),
);
