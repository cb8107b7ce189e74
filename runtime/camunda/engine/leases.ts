// Camunda 7 lease calls: lock by id, extend, unlock (names no worker), set retries.
import { emptyEffects } from '../../model/effects.ts';
import type { Engine } from '../../engine/context.ts';
import { explainRefusal, raiseTaskIncident, type CamundaCallResult } from './tasks.ts';
import { retryIncident } from '../../engine/incidents.ts';
import { commitTransition } from '../../engine/transition.ts';
import { withTransaction } from '../../store/db.ts';
import {
  currentHolder,
  exhaustTaskRetries,
  glanceAtTask,
  lockTaskById,
  lockTokenOf,
  openIncidentOfTask,
  setTaskRetries,
} from '../store/tasks.ts';
import { lockInstanceOfTask } from '../../store/instances.ts';
import { extendLock, unlockTask } from '../../store/tasks.ts';

export interface LeaseRequest {
  taskId: string;
  workerId: string;
  lockDurationMs: number;
}

/** Locks a ready task for the worker, or renews the worker's own lease. */
export async function lockCamundaTask(engine: Engine, req: LeaseRequest): Promise<CamundaCallResult> {
  const result = await lockTaskById(engine.pool, req);
  if (result.ok) return { ok: true, duplicate: false };
  if (result.reason === 'not_found') return { ok: false, reason: 'not_found' };
  return { ok: false, reason: 'not_holder', ...(result.task ? { task: result.task } : {}) };
}

export async function extendCamundaLock(engine: Engine, req: LeaseRequest): Promise<CamundaCallResult> {
  const lease = await lockTokenOf(engine.pool, req.taskId, req.workerId);
  if (lease) {
    const result = await extendLock(engine.pool, { ...req, lockToken: lease.lockToken });
    if (result.ok) return { ok: true, duplicate: false };
  }
  return withTransaction(engine.pool, (tx) => explainRefusal(engine, tx, req, 'extend-lock', undefined, true));
}

/** Camunda's unlock names no worker: the current holder loses the lease. Unlocking a task nobody holds changes nothing. */
export async function unlockCamundaTask(engine: Engine, taskId: string): Promise<CamundaCallResult> {
  const holder = await currentHolder(engine.pool, taskId);
  if (holder && (await unlockTask(engine.pool, { taskId, ...holder })).ok) return { ok: true, duplicate: false };
  const task = await glanceAtTask(engine.pool, taskId);
  if (!task || task.state === 'done' || task.state === 'canceled') return { ok: false, reason: 'not_found' };
  return { ok: true, duplicate: true };
}

/**
 * PUT retries: a live task keeps going with `retries` attempts left; 0 fails it into an
 * incident now (as Camunda does); retries > 0 on a task held by an incident resolves it.
 */
export async function setCamundaRetries(engine: Engine, taskId: string, retries: number): Promise<CamundaCallResult> {
  if (retries > 0) {
    if (await setTaskRetries(engine.pool, taskId, retries)) return { ok: true, duplicate: false };
    const incidentId = await openIncidentOfTask(engine.pool, taskId);
    if (incidentId) {
      const result = await retryIncident(engine, { incidentId, retries: retries - 1 });
      if (result.ok) return { ok: true, duplicate: false };
    }
  } else if (await exhaustRetries(engine, taskId)) {
    return { ok: true, duplicate: false };
  }
  const task = await glanceAtTask(engine.pool, taskId);
  if (!task || task.state === 'done' || task.state === 'canceled') return { ok: false, reason: 'not_found' };
  // failed with retries 0 again, or a race with a concurrent call: nothing left to change
  return { ok: true, duplicate: true };
}

async function exhaustRetries(engine: Engine, taskId: string): Promise<boolean> {
  return withTransaction(engine.pool, async (tx) => {
    const instance = await lockInstanceOfTask(tx, taskId);
    if (!instance) return false;
    const task = await exhaustTaskRetries(tx, taskId);
    if (!task) return false;
    const fx = emptyEffects();
    raiseTaskIncident(instance, task, fx, `Task ${task.step_id}: retries set to 0 through the Camunda API`, {
      errorMessage: task.error_message,
    });
    await commitTransition(tx, instance, fx, instance.variables, { incidentTaskIds: [task.id] });
    return true;
  });
}
