// Returns expired task leases to ready. Every node runs one; SKIP LOCKED lets any
// number of them converge on one effect per task.
import type { Logger } from 'pino';
import type { Pool } from '../store/db.ts';
import { deleteExpiredFrames } from '../store/frames.ts';
import { flushStaleProgress } from '../store/progress.ts';
import { expireLocks, findExhaustedLeases } from '../store/tasks.ts';
import { lockExpiries } from '../ops/instruments.ts';

export interface SweeperOptions {
  /** pause between sweeps */
  intervalMs: number;
  /** rows per statement; a full batch is followed by another at once */
  batchSize: number;
  /** frames of generations that ended longer ago are deleted (each generation's last frame stays) */
  frameRetentionMs: number;
  /** lease expiries a task may have beyond its retries (EngineOptions.leaseExpiryAllowance) */
  leaseExpiryAllowance: number;
  /** ends a task whose leases expired too often (engine/tasks.ts exhaustExpiredLease) */
  exhaustLease: (taskId: string) => Promise<boolean>;
}

/** progress reports older than this were left by a node that died before its flush */
const STALE_PROGRESS_MS = 1000;

export interface Sweeper {
  /** one sweep now; answers how many leases expired */
  sweep(): Promise<number>;
  stop(): Promise<void>;
}

export function startSweeper(pool: Pool, log: Logger, opts: SweeperOptions): Sweeper {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<number> | undefined;
  let stopped = false;

  const sweep = async (): Promise<number> => {
    let total = 0;
    for (;;) {
      const n = await expireLocks(pool, opts.batchSize, opts.leaseExpiryAllowance);
      lockExpiries.inc(n);
      total += n;
      if (n < opts.batchSize) break;
    }
    // Each its own transition: several sweepers may pick one; its guard lets one through.
    for (const taskId of await findExhaustedLeases(pool, opts.batchSize, opts.leaseExpiryAllowance)) {
      if (await opts.exhaustLease(taskId)) {
        lockExpiries.inc();
        total++;
        log.warn({ taskId }, 'task:lease_expiries_exhausted');
      }
    }
    if (total > 0) log.info({ count: total }, 'task:lock_expired');
    const flushed = await flushStaleProgress(pool, STALE_PROGRESS_MS);
    if (flushed > 0) log.info({ count: flushed }, 'progress:stale_flushed');
    let deleted = 0;
    for (;;) {
      const { generations, frames } = await deleteExpiredFrames(pool, { keepMs: opts.frameRetentionMs, limit: opts.batchSize });
      deleted += frames;
      if (generations < opts.batchSize) break;
    }
    if (deleted > 0) log.info({ count: deleted }, 'frames:deleted');
    return total;
  };

  const tick = () => {
    running = sweep()
      .catch((err: Error) => {
        log.warn({ err: err.message }, 'sweeper:failed');
        return 0;
      })
      .finally(() => {
        running = undefined;
        if (!stopped) timer = setTimeout(tick, opts.intervalMs);
      });
  };
  timer = setTimeout(tick, opts.intervalMs);

  return {
    sweep,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
