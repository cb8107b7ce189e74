// Runs batches (engine/batches.ts). Every node runs one runner; a batch's lease lets one node
// work on it at a time, and a node that dies leaves it to whichever node claims it once the
// lease expires. A runner works one batch at a time, chunk after chunk, and looks for the next
// batch at once; with none running it polls every intervalMs, or at once when poked (a batch
// created on this node).
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { Engine } from '../engine/context.ts';
import { runBatchChunk } from '../engine/batches.ts';
import { claimBatch, releaseBatch, type BatchRow } from '../store/batches.ts';

export interface BatchRunnerOptions {
  /** pause between looks for a batch to run when none is running */
  intervalMs: number;
  /** instances per chunk; the cursor, counts and lease move once per chunk */
  chunkSize: number;
  /** how long a claim or a chunk holds a batch for this node; a chunk must take less */
  leaseMs: number;
}

export interface BatchRunner {
  /** look for a batch now */
  poke(): void;
  stop(): Promise<void>;
}

export function startBatchRunner(engine: Engine, log: Logger, opts: BatchRunnerOptions): BatchRunner {
  const owner = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;
  let poked = false;

  const runBatch = async (claimed: BatchRow) => {
    let batch = claimed;
    log.info({ batchId: batch.id, operation: batch.operation, total: batch.total }, 'batch:claimed');
    while (!stopped) {
      const r = await runBatchChunk(engine, batch, { owner, chunkSize: opts.chunkSize, leaseMs: opts.leaseMs });
      if (r.state === 'lost') {
        log.info({ batchId: batch.id }, 'batch:released');
        return;
      }
      if (r.state === 'completed') {
        const { done, failed, skipped, total } = r.batch;
        log.info({ batchId: batch.id, total, done, failed, skipped }, 'batch:completed');
        return;
      }
      batch = r.batch;
    }
    // Stopping: another node takes the batch at once rather than after the lease.
    await releaseBatch(engine.pool, { id: batch.id, owner });
  };

  const runAll = async () => {
    for (;;) {
      poked = false;
      if (stopped) return;
      const batch = await claimBatch(engine.pool, owner, opts.leaseMs);
      if (!batch) return;
      await runBatch(batch);
    }
  };

  const tick = () => {
    timer = undefined;
    running = runAll()
      .catch((err: Error) => log.warn({ err: err.message }, 'batch:run_failed'))
      .finally(() => {
        running = undefined;
        if (!stopped) timer = setTimeout(tick, poked ? 0 : opts.intervalMs);
      });
  };
  timer = setTimeout(tick, opts.intervalMs);

  return {
    poke() {
      poked = true;
      if (timer && !running) {
        clearTimeout(timer);
        timer = setTimeout(tick, 0);
      }
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
