// Camunda 7 task results: complete, failure (absolute retries), BPMN error. Camunda
// callers name only their workerId; the lease is found by (task, worker) under the
// instance lock, then the same guarded statements as the native API apply.
// Same shape as engine/tasks.ts; kept separate because the variables carry Camunda
// types that are written in the same transaction.
import { completeStep } from '../../engine/advance.ts';
import { emptyEffects, type Effects, type Variables } from '../../model/effects.ts';
import { planOf, type Engine } from '../../engine/context.ts';
import { indexPlan } from '../../engine/plan-index.ts';
import { writeVariables } from '../../engine/scope-variables.ts';
import { completeTask, failHeldTask, reportBpmnError, taskResultOf, type TaskCallResult } from '../../engine/tasks.ts';
import { commitTransition, type CommitOptions } from '../../engine/transition.ts';
import type { InstanceStatus } from '../../model/vocabulary.ts';
import type { Plan } from '../../compiler/plan.ts';
import { withTransaction, type PoolClient } from '../../store/db.ts';
import { glanceAtTask, isRepeat, lockTokenOf, type TaskGlance } from '../store/tasks.ts';
import { writeVariableTypes, type TypedWrite } from '../store/variables.ts';
import { lockInstanceOfTask, type LockedInstance } from '../../store/instances.ts';
import {
  markTaskDone,
  recordLateResult,
  type ExternalTaskRow,
  type GuardedTaskResult,
  type LateResult,
  type TaskResultCall,
} from '../../store/tasks.ts';

/** Variables of one Camunda call, already turned into native values. */
export interface CamundaVariables {
  /** stored on the instance */
  values: Variables;
  /** seen by this call's evaluation only (valueInfo.transient) */
  transient: Variables;
  types: TypedWrite[];
}

export const noVariables = (): CamundaVariables => ({ values: {}, transient: {}, types: [] });

export type CamundaCallResult =
  { ok: true; duplicate: boolean } | { ok: false; reason: 'not_found' | 'not_holder'; task?: TaskGlance };

export interface CamundaCompleteRequest {
  taskId: string;
  workerId: string;
  variables: CamundaVariables;
}

/**
 * Goes through the engine's completeTask, so whatever completing a step means there
 * (compensation handlers, boundary events) applies to Camunda workers too. Only a
 * complete with transient variables runs its own transition: the engine has no way to
 * let a value steer this transition's conditions without storing it.
 */
export async function completeCamundaTask(engine: Engine, req: CamundaCompleteRequest): Promise<CamundaCallResult> {
  if (Object.keys(req.variables.transient).length > 0) return completeWithTransient(engine, req);
  return throughEngine(engine, req, 'complete', req.variables, (lockToken) =>
    completeTask(engine, { taskId: req.taskId, workerId: req.workerId, lockToken, variables: req.variables.values }),
  );
}

// Same shape as engine/tasks.ts completeTask; conditions see the transient values, the instance stores the rest.
async function completeWithTransient(engine: Engine, req: CamundaCompleteRequest): Promise<CamundaCallResult> {
  return byWorker(engine, req, 'complete', req.variables.values, async (tx, instance, lockToken) => {
    const result = await markTaskDone(tx, { ...req, lockToken, generation: instance.generation });
    if (!result.ok) return result;
    const plan = await planOf(engine, instance.definition_id, tx);
    const step = indexPlan(plan).steps.get(result.task.step_id);
    const stored = { ...instance.variables };
    const fx = emptyEffects();
    writeVariables(
      plan,
      step,
      instance.state,
      stored,
      taskResultOf(step, instance.variables, result.task, req.variables.values),
      fx,
    );
    fx.events.push({
      kind: 'task:completed',
      stepId: result.task.step_id,
      taskId: result.task.id,
      data: { workerId: req.workerId, attempt: result.task.attempt },
    });
    const seen = { ...stored, ...req.variables.transient };
    completeStep(plan, result.task.step_id, instance.state, seen, fx);
    // What the transition wrote (a subprocess's outputs, a script's variables) is stored; the transient values are not.
    for (const [name, value] of Object.entries(seen))
      if (!(name in req.variables.transient) || value !== req.variables.transient[name]) stored[name] = value;
    await commitWithPlan(tx, instance, fx, stored, plan);
    await writeVariableTypes(tx, instance.id, req.variables.types);
    return result;
  });
}

export interface CamundaFailureRequest {
  taskId: string;
  workerId: string;
  /** attempts still allowed; 0 raises an incident */
  retries: number;
  retryTimeoutMs: number;
  errorMessage: string | null;
  errorDetails: string | null;
  variables: CamundaVariables;
}

/** Through the engine's failHeldTask, the native failure's transition; the variable types are written in its transaction. */
export async function failCamundaTask(engine: Engine, req: CamundaFailureRequest): Promise<CamundaCallResult> {
  return byWorker(engine, req, 'failure', req.errorDetails, async (tx, instance, lockToken) => {
    const result = await failHeldTask(engine, tx, instance, { ...req, lockToken }, req.variables.values);
    if (result.ok) await writeVariableTypes(tx, instance.id, req.variables.types);
    return result;
  });
}

export interface CamundaBpmnErrorRequest {
  taskId: string;
  workerId: string;
  errorCode: string;
  errorMessage: string | null;
  variables: CamundaVariables;
}

/** Through the engine's reportBpmnError: error boundaries apply exactly as on the native API. */
export async function reportCamundaBpmnError(engine: Engine, req: CamundaBpmnErrorRequest): Promise<CamundaCallResult> {
  return throughEngine(engine, req, 'bpmn-error', req.variables, (lockToken) =>
    reportBpmnError(engine, {
      taskId: req.taskId,
      workerId: req.workerId,
      lockToken,
      errorCode: req.errorCode,
      ...(req.errorMessage !== null ? { errorMessage: req.errorMessage } : {}),
      variables: req.variables.values,
    }),
  );
}

/**
 * Runs an engine transition for the worker's lease. The engine's transaction is its
 * own, so the types are written just before it: a type row applies only to the exact
 * value it names (md5), so it is harmless if the call is then refused, and the value
 * is never visible without its type.
 */
async function throughEngine(
  engine: Engine,
  req: { taskId: string; workerId: string },
  call: TaskResultCall,
  variables: CamundaVariables,
  run: (lockToken: string) => Promise<TaskCallResult>,
): Promise<CamundaCallResult> {
  const lease = await lockTokenOf(engine.pool, req.taskId, req.workerId);
  if (lease) {
    await writeVariableTypes(engine.pool, lease.instanceId, variables.types);
    const result = await run(lease.lockToken);
    if (result.ok) return result;
    if (result.reason === 'not_found') return { ok: false, reason: 'not_found' };
  }
  // No lease, or lost since: the engine recorded its own late result; without a lease nothing was recorded yet.
  return withTransaction(engine.pool, (tx) => explainRefusal(engine, tx, req, call, variables.values, !lease));
}

/** commitTransition with the instance's plan: message waits reached by this transition look in the inbox at commit. */
export function commitWithPlan(
  tx: PoolClient,
  instance: LockedInstance,
  fx: Effects,
  variables: Variables,
  plan: Plan,
  opts: CommitOptions = {},
): Promise<InstanceStatus> {
  return commitTransition(tx, instance, fx, variables, { ...opts, plan });
}

export function raiseTaskIncident(
  instance: LockedInstance,
  task: ExternalTaskRow,
  fx: Effects,
  message: string,
  details: Record<string, unknown>,
): void {
  instance.state.steps[task.step_id] = 'incident';
  fx.steps.push({ stepId: task.step_id, status: 'incident' });
  fx.incidents.push({ stepId: task.step_id, kind: 'task_failed', message, details });
  fx.events.push({ kind: 'incident:created', stepId: task.step_id, data: { kind: 'task_failed', message } });
}

type HolderWork = (tx: PoolClient, instance: LockedInstance, lockToken: string) => Promise<GuardedTaskResult>;

// Instance lock first (lock order of docs/ARCHITECTURE.md), then the worker's lease.
async function byWorker(
  engine: Engine,
  req: { taskId: string; workerId: string },
  call: TaskResultCall,
  payload: unknown,
  work: HolderWork,
): Promise<CamundaCallResult> {
  return withTransaction(engine.pool, async (tx) => {
    const instance = await lockInstanceOfTask(tx, req.taskId);
    if (!instance) return { ok: false, reason: 'not_found' };
    const lease = await lockTokenOf(tx, req.taskId, req.workerId);
    if (lease && (await work(tx, instance, lease.lockToken)).ok) return { ok: true, duplicate: false };
    return explainRefusal(engine, tx, req, call, payload, true);
  });
}

/**
 * Miss path: a repeat of the call this worker already applied is a success; anything
 * else is refused and kept as a late result (native records one on its own miss).
 */
export async function explainRefusal(
  engine: Engine,
  tx: PoolClient,
  req: { taskId: string; workerId: string },
  call: LateResult['kind'],
  payload: unknown,
  record: boolean,
): Promise<CamundaCallResult> {
  const task = await glanceAtTask(tx, req.taskId);
  if (!task) return { ok: false, reason: 'not_found' };
  if (call !== 'extend-lock' && call !== 'unlock' && isRepeat(task, req.workerId, call)) return { ok: true, duplicate: true };
  if (record) {
    const payloadBytes = payload === undefined || payload === null ? 0 : Buffer.byteLength(JSON.stringify(payload));
    await recordLateResult(tx, { taskId: req.taskId, workerId: req.workerId, lockToken: '', kind: call, payloadBytes });
    engine.log.warn({ taskId: req.taskId, workerId: req.workerId, call }, 'task:late_result');
  }
  const gone = task.state === 'done' || task.state === 'canceled';
  return { ok: false, reason: gone ? 'not_found' : 'not_holder', task };
}
