// The retention job: every interval, deletes ended instances older than the retention
// period, one small batch per statement so no lock is held for long. Every node may run
// it; SKIP LOCKED keeps them from waiting on each other.
import type { Logger } from 'pino';
import type { Pool } from '../store/db.ts';
import { deleteEndedInstances } from '../store/retention.ts';

export interface RetentionOptions {
  /** ended instances older than this many days are deleted; 0 disables the job */
  days: number;
  intervalMs: number;
  /** instances per statement */
  batchSize?: number;
}

export interface RetentionJob {
  /** one run now: deletes batch after batch until a short one; answers how many */
  run(): Promise<number>;
  stop(): Promise<void>;
}

const DAY_MS = 86_400_000;

export function startRetention(pool: Pool, log: Logger, opts: RetentionOptions): RetentionJob {
  const batchSize = opts.batchSize ?? 200;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<number> | undefined;
  let stopped = false;

  const run = async (): Promise<number> => {
    const before = new Date(Date.now() - opts.days * DAY_MS);
    let total = 0;
    while (!stopped) {
      const n = await deleteEndedInstances(pool, before, batchSize);
      total += n;
      if (n < batchSize) break;
    }
    if (total > 0) log.info({ count: total, before: before.toISOString() }, 'retention:deleted');
    return total;
  };

  const tick = () => {
    running = run()
      .catch((err: Error) => {
        log.warn({ err: err.message }, 'retention:failed');
        return 0;
      })
      .finally(() => {
        running = undefined;
        if (!stopped) timer = setTimeout(tick, opts.intervalMs);
      });
  };
  if (opts.days > 0) timer = setTimeout(tick, Math.min(opts.intervalMs, 10_000));

  return {
    run,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
