// The writes of optimistic starts (engine/instances.ts), a few statements in flight at a
// time: starts that arrive while those run wait and go together as the next statement
// (store/transition-statement.ts). A statement's cost to PostgreSQL is mostly per statement, so
// under load a start costs a fraction of one alone; an idle node sends each start at once,
// so a lone start waits for nothing.
import type { Pool } from '../store/db.ts';
import { framableHere, type TransitionWrite } from '../store/transition-statement.ts';
import { writeTransitions } from '../store/transition-writer.ts';

export interface StartQueue {
  /** Writes one start's transition (a TransitionWrite with `insert`); answers its created_at, or fails as writeTransitions would. */
  write(p: TransitionWrite): Promise<Date>;
}

export interface StartQueueOptions {
  /** statements of starts in flight at once */
  lanes: number;
  /** starts in one statement at most */
  maxBatch: number;
}

interface Waiting {
  p: TransitionWrite;
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

  const write = (list: TransitionWrite[]) => writeTransitions(pool, list).then((written) => written.createdAt);
  const alone = (w: Waiting) => write([w.p]).then(w.resolve, w.reject);

  async function send(batch: Waiting[]): Promise<void> {
    if (batch.length === 1) return alone(batch[0]!);
    try {
      const createdAt = await write(batch.map((w) => w.p));
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
      // A start the statement cannot frame itself (an incident at once) goes alone, framed by the trigger.
      if (!framableHere(p)) return write([p]);
      return new Promise<Date>((resolve, reject) => {
        waiting.push({ p, resolve, reject });
        pump();
      });
    },
  };
}
