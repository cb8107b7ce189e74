// The writes of optimistic starts (engine/instances.ts), a few statements in flight at a
// time: starts that arrive while those run wait and go together as the next statement
// (store/apply-together.ts). A statement's cost to PostgreSQL is mostly per statement, so
// under load a start costs a fraction of one alone; an idle node sends each start at once,
// as before, so a lone start waits for nothing.
import type { Pool } from '../store/db.ts';
import { applyEffects, applyEffectsTogether, type ApplyEffectsParams } from '../store/instances.ts';
import { writableTogether } from '../store/apply-together.ts';

export interface StartQueue {
  /** Writes one start's transition (applyEffects with `insert`); answers its created_at, or fails as applyEffects would. */
  write(p: ApplyEffectsParams): Promise<Date>;
}

export interface StartQueueOptions {
  /** statements of starts in flight at once */
  lanes: number;
  /** starts in one statement at most */
  maxBatch: number;
}

interface Waiting {
  p: ApplyEffectsParams;
  resolve: (createdAt: Date) => void;
  reject: (err: unknown) => void;
}

/**
 * Whether the statement (its own transaction) certainly wrote nothing: PostgreSQL answered
 * with an error (severity ERROR: the statement and its implicit transaction rolled back),
 * such as a lost guard (a business key taken, a newer version deployed), a deadlock, or one
 * start's variables PostgreSQL refuses. Then each start is tried alone and gets its own
 * answer. A lost connection or a FATAL error may have come after the commit: every start
 * of the statement fails with it, as a lone start's would, and none is written twice.
 */
function nothingWritten(err: unknown): boolean {
  return (err as { severity?: string }).severity === 'ERROR';
}

export function createStartQueue(pool: Pool, opts: StartQueueOptions): StartQueue {
  const waiting: Waiting[] = [];
  let inFlight = 0;

  const alone = (w: Waiting) => applyEffects(pool, w.p).then(w.resolve, w.reject);

  async function send(batch: Waiting[]): Promise<void> {
    if (batch.length === 1) return alone(batch[0]!);
    try {
      const createdAt = await applyEffectsTogether(
        pool,
        'starts',
        batch.map((w) => w.p),
      );
      for (const w of batch) w.resolve(createdAt);
    } catch (err) {
      // One start's guard (or bad input) fails the statement for all: each goes alone.
      if (nothingWritten(err)) await Promise.all(batch.map(alone));
      else for (const w of batch) w.reject(err);
    }
  }

  function pump(): void {
    while (inFlight < opts.lanes && waiting.length > 0) {
      inFlight++;
      void send(waiting.splice(0, opts.maxBatch)).finally(() => {
        inFlight--;
        pump();
      });
    }
  }

  return {
    write(p) {
      if (!writableTogether('starts', p)) return applyEffects(pool, p);
      return new Promise<Date>((resolve, reject) => {
        waiting.push({ p, resolve, reject });
        pump();
      });
    },
  };
}
