// Hand-off of a new task to a long poll parked on this node, inside the statement that
// creates the task (docs/PERFORMANCE.md "Session 5: pickup"): the start and the lock in
// one commit, instead of a commit, a ring, a fetch statement and a second commit.
import type { LockedTaskRow } from '../store/tasks.ts';

/** What a parked native poll accepts in place of a fetch: its worker and lock duration per topic. */
export interface PollOffer {
  workerId: string;
  lockDurationMs: ReadonlyMap<string, number>;
}

/**
 * A parked poll reserved for one new task. Exactly one of deliver or release is called:
 * deliver once the creating statement committed the task locked for the poll, release
 * when it wrote nothing (the poll goes back to parked, or wakes if it was rung meanwhile).
 */
export interface PollClaim {
  workerId: string;
  lockDurationMs: number;
  deliver(task: LockedTaskRow): void;
  release(): void;
}

export interface TaskHandOff {
  /** a parked, unrung, open native poll waiting for the topic, reserved for one task; undefined if none */
  claimPoll(topic: string): PollClaim | undefined;
}
