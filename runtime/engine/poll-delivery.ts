// Delivery of a new task to a long poll parked on this node, inside the statement that
// creates the task (docs/PERFORMANCE.md, "Parked polls: delivery and wake-ups"): the start
// (or the complete that creates a chain's next task) and the lock in one commit, instead of a
// commit, a notification, a fetch statement and a second commit.
import { randomUUID } from 'node:crypto';
import { newTaskId } from '../shared/uuid.ts';
import type { Effects } from '../model/effects.ts';
import type { Engine } from './context.ts';
import type { PollClaim } from './parked-polls.ts';
import type { DeliveredTask } from '../store/transition-statement.ts';
import { TRANSITION_GUARD_LOST } from '../store/transition-writer.ts';
import { unlockTask, type LockedTaskRow } from '../store/tasks.ts';

/** A poll claimed for one new task of a transition (fx.tasks[task.index]), with the lock the statement will write for it. */
export interface ClaimedPoll {
  claim: PollClaim;
  task: DeliveredTask;
}

// Each new task whose topic a poll parked on this node waits for goes to that poll, locked
// in the creating statement (a start's, or an optimistic complete's that starts a chain's
// next step): no notification, fetch statement and second commit before the worker has it
// (docs/PERFORMANCE.md, "Parked polls: delivery and wake-ups": pickup p99 8.1 ms against 12.4).
export function claimParkedPolls(engine: Engine, fx: Effects): ClaimedPoll[] {
  const claimed: ClaimedPoll[] = [];
  if (!engine.delivery) return claimed;
  fx.tasks.forEach((task, index) => {
    const claim = engine.delivery?.claimPoll(task.topic);
    if (claim)
      claimed.push({
        claim,
        task: {
          index,
          taskId: newTaskId(),
          workerId: claim.workerId,
          lockToken: randomUUID(),
          lockDurationMs: claim.lockDurationMs,
        },
      });
  });
  return claimed;
}

/** After the statement committed: each poll gets its row (the statement answers every delivered row; a missing one is given back). */
export async function deliverHanded(engine: Engine, claimed: ClaimedPoll[], handed: LockedTaskRow[]): Promise<void> {
  for (const h of claimed) {
    const row = handed.find((r) => r.id === h.task.taskId);
    if (row) h.claim.deliver(row);
    else await giveBack(engine, h);
  }
}

/**
 * After the statement failed. A lost guard (TRANSITION_GUARD_LOST) wrote nothing: the polls
 * park on (or fetch, if rung meanwhile). Any other error may have come after the commit (a
 * connection lost): no task stays locked to a poll that never sees it.
 */
export async function settleUnwritten(engine: Engine, claimed: ClaimedPoll[], err: unknown): Promise<void> {
  if ((err as { code?: string }).code === TRANSITION_GUARD_LOST) for (const h of claimed) h.claim.release();
  else for (const h of claimed) await giveBack(engine, h);
}

// Frees the poll and unlocks the task through the holder's unlock (a no-op if it was never written).
async function giveBack(engine: Engine, h: ClaimedPoll): Promise<void> {
  h.claim.release();
  await unlockTask(engine.pool, { taskId: h.task.taskId, workerId: h.task.workerId, lockToken: h.task.lockToken }).catch(
    (err: Error) => {
      engine.log.warn({ taskId: h.task.taskId, err: err.message }, 'task:delivery-unlock-failed');
    },
  );
}
