// Camunda fetchAndLock with long polling: the shared loop of engine/fetch.ts
// around the Camunda statement (per-topic filters, priority switch, sorting).
import type { Engine } from '../../engine/context.ts';
import { pollForTasks } from '../../engine/fetch.ts';
import type { ParkedPolls } from '../../engine/parked-polls.ts';
import { fetchAndLockCamunda, type CamundaFetchParams, type CamundaLockedTask } from '../store/fetch.ts';

export interface CamundaFetchAndWaitParams extends CamundaFetchParams {
  /** asyncResponseTimeout; 0 answers at once */
  waitMs: number;
  /** aborted when the caller went away: nothing is left locked for it */
  signal?: AbortSignal;
}

export function fetchCamundaTasks(
  engine: Engine,
  parkedPolls: ParkedPolls,
  p: CamundaFetchAndWaitParams,
): Promise<CamundaLockedTask[]> {
  return pollForTasks(engine, parkedPolls, {
    workerId: p.workerId,
    topics: p.topics.map((t) => t.topicName),
    // its topics' filters (business key, definition, variables…) may pass a new task by: woken by every notification
    capacity: 0,
    waitMs: p.waitMs,
    ...(p.signal ? { signal: p.signal } : {}),
    fetchOnce: (order) => fetchAndLockCamunda(engine.pool, { ...p, order }),
  });
}
