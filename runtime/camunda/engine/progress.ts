// Progress reports of Camunda workers. They carry no lock token, so the lease is found by
// (task, worker), as for their results; the report then goes through the native
// ProgressCoalescer, so it is stored, coalesced and framed for Socket.IO subscribers
// exactly as a native worker's is.
import type { Engine } from '../../engine/context.ts';
import type { ProgressCoalescer } from '../../engine/progress.ts';
import { glanceAtTask, lockTokenOf } from '../store/tasks.ts';
import type { CamundaCallResult } from './tasks.ts';

export interface CamundaProgressReport {
  taskId: string;
  workerId: string;
  data: unknown;
}

/** Stores a report of the worker holding the task's lock; refused (not_holder, not_found) for anyone else. */
export async function reportCamundaProgress(
  engine: Engine,
  progress: ProgressCoalescer,
  r: CamundaProgressReport,
): Promise<CamundaCallResult> {
  const lease = await lockTokenOf(engine.pool, r.taskId, r.workerId);
  if (lease) {
    const result = await progress.report({ ...r, lockToken: lease.lockToken });
    if (result.ok) return { ok: true, duplicate: false };
  }
  // Miss path: no lease, or it was lost between the look-up and the report. Nothing is
  // recorded, as for a refused native report.
  const task = await glanceAtTask(engine.pool, r.taskId);
  if (!task || task.state === 'done' || task.state === 'canceled') return { ok: false, reason: 'not_found' };
  return { ok: false, reason: 'not_holder', task };
}
