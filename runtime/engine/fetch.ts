// Fetch-and-lock with long polling: one statement per try, parked between tries
// until a notification for one of the topics (new work, or a released lock of a
// flow-limited resource), a rate limit's next start, or a periodic safety re-check.
import type { Engine } from './context.ts';
import type { PollOffer } from './parked-polls.ts';
import type { ParkedPolls } from './parked-polls.ts';
import { faultAfter } from '../shared/faults.ts';
import { observeLocked } from '../ops/instruments.ts';
import type { FetchOutcome } from '../store/flow-limits.ts';
import { fetchAndLock, unlockTask, type FetchAndLockParams, type FetchOrder, type LockedTaskRow } from '../store/tasks.ts';

/** Longest a parked poll sleeps without a notification before it fetches again. */
export const SAFETY_RECHECK_MS = 2000;

/**
 * Fair priority: of every FAIR_TURN_EVERY fetches a node runs for the same list of
 * topics, one serves the oldest ready tasks first whatever their priority. Low
 * priority therefore gets at least that share of the fetches while higher
 * priorities keep arriving (docs/workers.md, "Priority and fairness").
 */
export const FAIR_TURN_EVERY = 4;
const fetchesByTopics = new Map<string, number>();

/** The order of the next fetch for these topics: every FAIR_TURN_EVERY-th is oldest-first. */
export function nextFetchOrder(topics: string[]): FetchOrder {
  const key = [...topics].sort().join('\n');
  const n = (fetchesByTopics.get(key) ?? 0) + 1;
  // Bounded: worker fleets use a handful of topic lists; a flood of distinct lists only restarts the counts.
  if (fetchesByTopics.size >= 10_000 && !fetchesByTopics.has(key)) fetchesByTopics.clear();
  fetchesByTopics.set(key, n % FAIR_TURN_EVERY);
  return n % FAIR_TURN_EVERY === 0 ? 'oldest' : 'priority';
}

export interface LongPoll<T> {
  workerId: string;
  topics: string[];
  /** the most tasks one fetch takes when it may take any ready task of its topics (maxTasks); 0 when it may pass some by (filters) */
  capacity: number;
  waitMs: number;
  /** aborted when the caller went away: nothing is left locked for it */
  signal?: AbortSignal;
  /** one fetch-and-lock (a statement, or a limited fetch's transaction) in the given order */
  fetchOnce(order: FetchOrder): Promise<FetchOutcome<T>>;
  /** while parked, starts and completes of this process may deliver a new task to the poll (native polls only) */
  delivery?: { offer: PollOffer; answer(task: LockedTaskRow): T };
}

/** The long-poll loop shared by the native and the Camunda fetch-and-lock. */
export async function pollForTasks<T extends { id: string; lock_token: string | null; topic: string; retry_at: Date }>(
  engine: Engine,
  parkedPolls: ParkedPolls,
  p: LongPoll<T>,
): Promise<T[]> {
  const deadline = Date.now() + p.waitMs;
  // In memory: the fetch itself stays one statement per try.
  engine.fetchActivity.record(p.topics, p.workerId);
  // Subscribe before the first fetch, so a notification during it is not missed.
  const subscription = p.waitMs > 0 ? parkedPolls.subscribe(p.topics, p.capacity) : undefined;
  try {
    for (;;) {
      subscription?.fetching();
      const { tasks, retryInMs, limited } = await faultAfter(
        'fetch:after-lock',
        p.fetchOnce(nextFetchOrder(p.topics)),
        (locked) => locked.tasks.length > 0,
      );
      if (p.signal?.aborted) {
        await releaseTasks(engine, p.workerId, tasks);
        return [];
      }
      observeLocked(tasks);
      const left = deadline - Date.now();
      if (tasks.length > 0 || left <= 0 || !subscription || parkedPolls.stopped) return tasks;
      // A flow limit covers the topics: only a limited fetch may lock them.
      subscription.offer(limited ? undefined : p.delivery?.offer);
      // Freed capacity rings the topics' notification (migration 0009's trigger); new tokens do not, so wake for them.
      await subscription.wait(Math.min(left, SAFETY_RECHECK_MS, retryInMs ?? SAFETY_RECHECK_MS), p.signal);
      const handed = subscription.takeHanded();
      if (handed.length > 0) {
        // Locked for this poll in the creating start's or complete's statement; a caller that left gets nothing and the task is given back.
        if (p.signal?.aborted) {
          await releaseTasks(engine, p.workerId, handed);
          return [];
        }
        observeLocked(handed);
        return handed.map((task) => p.delivery!.answer(task));
      }
      // Aborted by the caller, or the server is stopping: answer without locking more.
      if (p.signal?.aborted || parkedPolls.stopped) return [];
    }
  } finally {
    subscription?.close();
  }
}

export interface FetchAndWaitParams extends FetchAndLockParams {
  waitMs: number;
  signal?: AbortSignal;
}

export function fetchAndWait(engine: Engine, parkedPolls: ParkedPolls, p: FetchAndWaitParams): Promise<LockedTaskRow[]> {
  return pollForTasks(engine, parkedPolls, {
    workerId: p.workerId,
    topics: p.topics.map((t) => t.name),
    capacity: p.maxTasks,
    waitMs: p.waitMs,
    ...(p.signal ? { signal: p.signal } : {}),
    fetchOnce: (order) => fetchAndLock(engine.pool, { ...p, order }),
    delivery: { offer: pollOffer(p), answer: (task) => task },
  });
}

function pollOffer(p: FetchAndLockParams): PollOffer {
  const lockDurationMs = new Map<string, number>();
  // the first entry of a topic named twice wins, as in the fetch statement (array_position)
  for (const t of p.topics) if (!lockDurationMs.has(t.name)) lockDurationMs.set(t.name, t.lockDurationMs);
  return { workerId: p.workerId, lockDurationMs };
}

// The caller disconnected while its fetch ran: give the tasks back at once.
async function releaseTasks(engine: Engine, workerId: string, tasks: { id: string; lock_token: string | null }[]): Promise<void> {
  for (const t of tasks) {
    if (t.lock_token) await unlockTask(engine.pool, { taskId: t.id, workerId, lockToken: t.lock_token });
  }
}
