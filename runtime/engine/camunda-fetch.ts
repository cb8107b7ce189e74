// Camunda fetchAndLock with long polling: the shared loop of engine/fetch.ts
// around the Camunda statement (per-topic filters, priority switch, sorting).
import type { Engine } from './context.ts';
import { pollForTasks } from './fetch.ts';
import type { TaskNotifier } from './task-notifier.ts';
import { fetchAndLockCamunda, type CamundaFetchParams, type CamundaLockedTask } from '../store/camunda-fetch.ts';

export interface CamundaFetchAndWaitParams extends CamundaFetchParams {
  /** asyncResponseTimeout; 0 answers at once */
  waitMs: number;
  /** aborted when the caller went away: nothing is left locked for it */
  signal?: AbortSignal;
}

export function fetchCamundaTasks(
  engine: Engine,
  notifier: TaskNotifier,
  p: CamundaFetchAndWaitParams,
): Promise<CamundaLockedTask[]> {
  return pollForTasks(engine, notifier, {
    workerId: p.workerId,
    topics: p.topics.map((t) => t.topicName),
    // its topics' filters (business key, definition, variables…) may pass a new task by: woken by every doorbell
    capacity: 0,
    waitMs: p.waitMs,
    ...(p.signal ? { signal: p.signal } : {}),
    fetchOnce: (order) => fetchAndLockCamunda(engine.pool, { ...p, order }),
  });
}
