// Worker progress: each report is stored at once (so an answered report is never
// lost), and the reports of one step are coalesced into one task:progress frame
// after a short window or once they reach a size. Whatever ends the step's
// attempt flushes the pending reports first (the frame trigger, migration 0008),
// and the sweeper flushes what a dead node left behind.
import type { Logger } from 'pino';
import type { Pool } from '../store/db.ts';
import { flushProgress, recordProgress, type ProgressReport, type RecordProgressResult } from '../store/progress.ts';

export interface ProgressOptions {
  /** a report waits at most this long before it becomes (part of) a frame */
  windowMs: number;
  /** pending reports of one step at or above this size are flushed at once */
  maxBytes: number;
}

export const DEFAULT_PROGRESS_OPTIONS: ProgressOptions = { windowMs: 50, maxBytes: 1024 };

export class ProgressCoalescer {
  private readonly scheduled = new Map<string, { timer: NodeJS.Timeout; step: StepKey }>();
  private readonly inFlight = new Set<Promise<unknown>>();

  constructor(
    private readonly pool: Pool,
    private readonly log: Logger,
    private readonly opts: ProgressOptions = DEFAULT_PROGRESS_OPTIONS,
  ) {}

  /** Stores a report of the lock holder; refused (lock_lost, not_found) for anyone else. */
  async report(r: ProgressReport): Promise<RecordProgressResult> {
    const result = await recordProgress(this.pool, r);
    if (!result.ok) return result;
    const step = { instanceId: result.instanceId, generation: result.generation, stepId: result.stepId };
    if (result.pendingBytes >= this.opts.maxBytes) {
      this.cancel(step);
      await this.flush(step);
    } else if (!this.scheduled.has(keyOf(step))) {
      const timer = setTimeout(() => {
        this.scheduled.delete(keyOf(step));
        void this.flush(step);
      }, this.opts.windowMs);
      this.scheduled.set(keyOf(step), { timer, step });
    }
    return result;
  }

  /** Flushes everything scheduled now (shutdown). */
  async close(): Promise<void> {
    const steps = [...this.scheduled.values()].map((s) => s.step);
    for (const s of this.scheduled.values()) clearTimeout(s.timer);
    this.scheduled.clear();
    await Promise.all([...steps.map((s) => this.flush(s)), ...this.inFlight]);
  }

  private cancel(step: StepKey): void {
    const pending = this.scheduled.get(keyOf(step));
    if (pending) clearTimeout(pending.timer);
    this.scheduled.delete(keyOf(step));
  }

  private async flush(step: StepKey): Promise<void> {
    const run = flushProgress(this.pool, step).catch((err: Error) => {
      // The reports stay stored; the sweeper flushes them later.
      this.log.warn({ err: err.message, instanceId: step.instanceId, stepId: step.stepId }, 'progress:flush_failed');
    });
    this.inFlight.add(run);
    try {
      await run;
    } finally {
      this.inFlight.delete(run);
    }
  }
}

interface StepKey {
  instanceId: string;
  generation: number;
  stepId: string;
}

function keyOf(s: StepKey): string {
  return `${s.instanceId}/${s.generation}/${s.stepId}`;
}
