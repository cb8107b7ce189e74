// The one way a transition reaches the database: writeTransitions sends the transition
// statement (store/transition-statement.ts) for one instance or many, and once it has
// committed rings what it made (ready tasks, a new timer, frames) and tells who counts
// lifecycles. frameTransitions frames, at the end of a batch's transaction, what its writes
// left to be framed there.
import type { Queryable } from './db.ts';
import { afterCommit, isPool } from './db.ts';
import { notifyAfterCommit, readyTaskNotices } from './notifications.ts';
import type { LockedTaskRow } from './tasks.ts';
import { announceCallReturn } from './calls.ts';
import {
  frameTransitionsStatement,
  transitionStatement,
  waitingTimers,
  type FramedTransition,
  type TransitionWrite,
} from './transition-statement.ts';

/** SQLSTATE of a guarded write whose guard no longer held (nothing was written). */
export const TRANSITION_GUARD_LOST = 'BT409';

export interface WrittenTransitions {
  /** the rows' created_at: one transaction, one now() */
  createdAt: Date;
  /** the tasks delivered to parked polls, shaped like fetch-and-lock's answer */
  delivered: LockedTaskRow[];
}

type HeadRow = { instance_id: string | null; generation: number | null; last_seq: number | null };

/**
 * Writes the transitions in one statement: one instance's (alone in its transaction, through
 * the pool, or inside a transaction holding the instance), the starts of many, the completes or
 * timer firings of a batch's transaction. All are of one kind (TransitionWrite: insert, guard,
 * or the instance locked) and framed one way (framesAtEnd, or not). With `frameBatch` the
 * statement also frames the batch's transitions and must be the batch's last that may lock a
 * row. A lost guard fails with TRANSITION_GUARD_LOST and writes nothing.
 */
export async function writeTransitions(
  db: Queryable,
  writes: TransitionWrite[],
  frameBatch?: FramedTransition[],
): Promise<WrittenTransitions> {
  const statement = transitionStatement(writes, { alone: isPool(db), ...(frameBatch ? { frameBatch } : {}) });
  const { rows } = await db.query<Record<string, unknown>>({
    name: statement.name,
    text: statement.text,
    values: statement.values,
  });
  const delivering = writes.some((w) => (w.delivery?.length ?? 0) > 0);
  noteLifecycle(db, writes);
  // A child that ended has a call return for its parent (the trigger of migration 0024).
  if (writes.some((w) => w.instance.parent_instance_id && w.effects.events.some((e) => ENDS_CALL.has(e.kind))))
    announceCallReturn(db);
  if (delivering) {
    // The answer is one row per delivered task (created_at: the transaction's now(), as the instance's).
    const w = writes[0]!;
    const frameSeq = rows[0]?.frame_seq as number | null | undefined;
    const delivered = rows.filter((r) => r.id !== null).map(({ frame_seq: _, ...task }) => task as unknown as LockedTaskRow);
    ringWritten(
      db,
      writes,
      frameSeq == null ? [] : [{ instance_id: w.instance.id, generation: w.instance.generation, last_seq: frameSeq }],
    );
    return { createdAt: rows[0]!.created_at as Date, delivered };
  }
  ringWritten(db, writes, rows as HeadRow[]);
  return { createdAt: rows[0]!.created_at as Date, delivered: [] };
}

/**
 * The frames of transitions written with framesAtEnd, in one statement for all of them: the
 * last statement of their transaction, so the frame heads are its last locks, taken in
 * instance order like the trigger's at commit. What the trigger would do for those events at
 * commit, without a call per event. Transitions are given in the order they were written.
 *
 * With progress pending for any of the instances it writes nothing and fails (BT409,
 * TRANSITION_GUARD_LOST): the caller goes one by one, where the trigger flushes the progress
 * before the frame that ends its step. Checked here, once: this statement comes after every
 * write of the batch, and a report on a task a write touched cannot commit meanwhile
 * (recordProgress takes FOR SHARE on the task row, which the write holds).
 */
export async function frameTransitions(db: Queryable, transitions: FramedTransition[]): Promise<void> {
  const statement = frameTransitionsStatement(transitions);
  if (!statement) return;
  const { rows } = await db.query<HeadRow>(statement);
  ringHeads(db, rows);
}

// What written transitions ring once committed: how many ready tasks each topic got (so only
// that many parked polls wake, engine/parked-polls.ts; a delivered task rings nobody), whether
// a timer was created, the frame heads the statement moved.
function ringWritten(db: Queryable, writes: TransitionWrite[], heads: HeadRow[]): void {
  const topics = writes.flatMap((w) => {
    const delivered = new Set((w.delivery ?? []).map((d) => d.index));
    return w.effects.tasks.filter((_, i) => !delivered.has(i)).map((t) => t.topic);
  });
  notifyAfterCommit(db, {
    ...readyTaskNotices(topics),
    timers: writes.some((w) => waitingTimers(w.effects).length > 0),
    frames: framesOfHeads(heads),
  });
}

function ringHeads(db: Queryable, heads: HeadRow[]): void {
  notifyAfterCommit(db, { frames: framesOfHeads(heads) });
}

function framesOfHeads(heads: HeadRow[]): { instanceId: string; generation: number; seq: number }[] {
  return heads
    .filter((r) => r.instance_id != null && r.last_seq != null)
    .map((r) => ({ instanceId: r.instance_id!, generation: r.generation!, seq: r.last_seq! }));
}

/** A committed transition started its instance, or ended it (ops/instruments.ts counts them). */
export interface InstanceLifecycleEvent {
  definitionKey: string;
  kind: 'started' | 'completed' | 'canceled' | 'compensated';
}

const LIFECYCLE_KINDS = new Map<string, InstanceLifecycleEvent['kind']>([
  ['instance:started', 'started'],
  ['instance:completed', 'completed'],
  ['instance:canceled', 'canceled'],
  ['instance:compensated', 'compensated'],
]);
const lifecycleListeners = new Set<(events: readonly InstanceLifecycleEvent[]) => void>();

/** Told, after each commit, which instances its transitions started or ended; answers an unsubscribe. */
export function onInstanceLifecycle(listener: (events: readonly InstanceLifecycleEvent[]) => void): () => void {
  lifecycleListeners.add(listener);
  return () => lifecycleListeners.delete(listener);
}

// Read off the transitions' own history events (instance:started, and instance:<status> at
// every change of status), once their transaction has committed: a rolled-back write is not counted.
const ENDS_CALL = new Set(['instance:completed', 'instance:compensated']);

function noteLifecycle(db: Queryable, writes: TransitionWrite[]): void {
  if (lifecycleListeners.size === 0) return;
  const events: InstanceLifecycleEvent[] = [];
  for (const w of writes) {
    for (const e of w.effects.events) {
      const kind = LIFECYCLE_KINDS.get(e.kind);
      if (kind) events.push({ definitionKey: w.instance.definition_key, kind });
    }
  }
  if (events.length === 0) return;
  afterCommit(db, () => {
    for (const l of lifecycleListeners) {
      try {
        l(events);
      } catch {
        // a listener's failure is its own
      }
    }
  });
}
