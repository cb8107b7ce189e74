// Camunda fetchAndLock with long polling: the loop of engine/fetch.ts fetchAndWait
// around the Camunda statement (per-topic filters, priority switch, sorting).
import type { Engine } from './context.ts';
import { SAFETY_RECHECK_MS } from './fetch.ts';
import type { TaskNotifier } from './task-notifier.ts';
import { fetchAndLockCamunda, type CamundaFetchParams, type CamundaLockedTask } from '../store/camunda-fetch.ts';
import { unlockTask } from '../store/tasks.ts';

export interface CamundaFetchAndWaitParams extends CamundaFetchParams {
  /** asyncResponseTimeout; 0 answers at once */
  waitMs: number;
  /** aborted when the caller went away: nothing is left locked for it */
  signal?: AbortSignal;
}

export async function fetchCamundaTasks(engine: Engine, notifier: TaskNotifier, p: CamundaFetchAndWaitParams): Promise<CamundaLockedTask[]> {
  const deadline = Date.now() + p.waitMs;
  // Subscribe before the first fetch, so a notification during it is not missed.
  const subscription = p.waitMs > 0 ? notifier.subscribe(p.topics.map((t) => t.topicName)) : undefined;
  try {
    for (;;) {
      const tasks = await fetchAndLockCamunda(engine.pool, p);
      if (p.signal?.aborted) {
        await releaseTasks(engine, p.workerId, tasks);
        return [];
      }
      const left = deadline - Date.now();
      if (tasks.length > 0 || left <= 0 || !subscription || notifier.stopped) return tasks;
      await subscription.wait(Math.min(left, SAFETY_RECHECK_MS), p.signal);
      if (p.signal?.aborted) return [];
    }
  } finally {
    subscription?.close();
  }
}

// The caller disconnected while its fetch ran: give the tasks back at once.
async function releaseTasks(engine: Engine, workerId: string, tasks: CamundaLockedTask[]): Promise<void> {
  for (const t of tasks) {
    if (t.lock_token) await unlockTask(engine.pool, { taskId: t.id, workerId, lockToken: t.lock_token });
  }
}
