// Fetch-and-lock with long polling: one statement per try, parked between tries
// until a notification for one of the topics (or a periodic safety re-check).
import type { Engine } from './context.ts';
import type { TaskNotifier } from './task-notifier.ts';
import { faultAfter } from '../shared/faults.ts';
import { fetchAndLock, unlockTask, type FetchAndLockParams, type LockedTaskRow } from '../store/tasks.ts';

/** Longest a parked poll sleeps without a notification before it fetches again. */
export const SAFETY_RECHECK_MS = 2000;

export interface LongPoll<T> {
  workerId: string;
  topics: string[];
  waitMs: number;
  /** aborted when the caller went away: nothing is left locked for it */
  signal?: AbortSignal;
  /** one fetch-and-lock statement */
  fetchOnce(): Promise<T[]>;
}

/** The long-poll loop shared by the native and the Camunda fetch-and-lock. */
export async function pollForTasks<T extends { id: string; lock_token: string | null }>(engine: Engine, notifier: TaskNotifier, p: LongPoll<T>): Promise<T[]> {
  const deadline = Date.now() + p.waitMs;
  // Subscribe before the first fetch, so a notification during it is not missed.
  const subscription = p.waitMs > 0 ? notifier.subscribe(p.topics) : undefined;
  try {
    for (;;) {
      const tasks = await faultAfter('fetch:after-lock', p.fetchOnce(), (locked) => locked.length > 0);
      if (p.signal?.aborted) {
        await releaseTasks(engine, p.workerId, tasks);
        return [];
      }
      const left = deadline - Date.now();
      if (tasks.length > 0 || left <= 0 || !subscription || notifier.stopped) return tasks;
      await subscription.wait(Math.min(left, SAFETY_RECHECK_MS), p.signal);
      // Aborted by the caller, or the server is stopping: answer without locking more.
      if (p.signal?.aborted || notifier.stopped) return [];
    }
  } finally {
    subscription?.close();
  }
}

export interface FetchAndWaitParams extends FetchAndLockParams {
  waitMs: number;
  signal?: AbortSignal;
}

export function fetchAndWait(engine: Engine, notifier: TaskNotifier, p: FetchAndWaitParams): Promise<LockedTaskRow[]> {
  return pollForTasks(engine, notifier, {
    workerId: p.workerId,
    topics: p.topics.map((t) => t.name),
    waitMs: p.waitMs,
    ...(p.signal ? { signal: p.signal } : {}),
    fetchOnce: () => fetchAndLock(engine.pool, p),
  });
}

// The caller disconnected while its fetch ran: give the tasks back at once.
async function releaseTasks(engine: Engine, workerId: string, tasks: { id: string; lock_token: string | null }[]): Promise<void> {
  for (const t of tasks) {
    if (t.lock_token) await unlockTask(engine.pool, { taskId: t.id, workerId, lockToken: t.lock_token });
  }
}
