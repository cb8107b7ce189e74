// External-task transitions that move an instance: complete, failure, BPMN error, and
// the end of a task whose leases expired too often. Each locks the instance first, then
// applies the holder's guarded task update; a plain complete first tries the optimistic
// path (an unlocked read, one guarded write) and falls back to that. A batch of completes
// (completeTasks) writes the optimistic path's statements in one locked transaction.
import type { Plan, PlanStep } from '../compiler/plan.ts';
import { resultVariables } from './io-mappings.ts';
import {
  catchThrown,
  catchesMapped,
  completeLoopElement,
  completeStep,
  deriveStatus,
  findErrorBoundary,
  throwToParent,
} from './advance.ts';
import { emptyEffects, type Effects, type Variables } from '../model/effects.ts';
import { planOf, type Engine } from './context.ts';
import { commitTransition, needsCommitTransition } from './transition.ts';
import { withPipelinedTransaction, withTransaction, type PoolClient } from '../store/db.ts';
import { runPipelined, valuesOf } from '../store/pipeline.ts';
import { claimParkedPolls, deliverHanded, settleUnwritten } from './poll-delivery.ts';
import { framableInStatement, type TransitionWrite } from '../store/transition-statement.ts';
import { frameTransitions, TRANSITION_GUARD_LOST, writeTransitions } from '../store/transition-writer.ts';
import {
  cancelOpenWork,
  lockInstanceOfTask,
  lockInstancesOfTasks,
  readTaskTransition,
  readTaskTransitions,
  type LockedInstance,
  type TaskSnapshot,
} from '../store/instances.ts';
import { listCompensations } from '../store/compensations.ts';
import { finishHandler, startSaga } from './compensate.ts';
import { indexPlan } from './plan-index.ts';
import { writeVariables } from './scope-variables.ts';
import { BatonError } from '../shared/errors.ts';
import { fault } from '../shared/faults.ts';
import { jsonbTextBytes } from '../shared/variables-size.ts';
import { taskRetries } from '../ops/instruments.ts';
import {
  failExpiredLease,
  failTask as failTaskRow,
  markTaskCaught,
  markTaskDone,
  markTaskErrored,
  recordLateResult,
  type ExternalTaskRow,
  type GuardedTaskResult,
  type LateResult,
  type LockHolder,
} from '../store/tasks.ts';

export type TaskCallResult = { ok: true; duplicate: boolean } | { ok: false; reason: 'not_found' | 'lock_lost' };

export interface CompleteTaskRequest extends LockHolder {
  variables?: Variables;
}

export async function completeTask(engine: Engine, req: CompleteTaskRequest, batchItem = false): Promise<TaskCallResult> {
  if (await completeOptimistically(engine, req, batchItem)) return { ok: true, duplicate: false };
  return holderTransition(engine, req, { kind: 'complete', payload: req.variables }, async (tx, instance) => {
    checkResultVariables(engine, instance.variables, req, batchItem);
    const result = await markTaskDone(tx, { ...req, generation: instance.generation });
    if (!result.ok) return result;
    const plan = await planOf(engine, instance.definition_id, tx);
    const step = indexPlan(plan).steps.get(result.task.step_id);
    // A multi-instance element's completion variables stay local: they make its result (through its
    // output mappings, if any), not instance variables.
    const written =
      step?.multiInstance && !step.io?.outputs.length
        ? (req.variables ?? {})
        : taskResultOf(step, instance.variables, result.task, req.variables ?? {});
    // Outputs can write more than the result carried (a copy of a large input): measure what is written.
    if (step?.io?.outputs.length && !step.multiInstance)
      checkResultVariables(engine, instance.variables, { taskId: req.taskId, variables: written }, batchItem);
    const variables = { ...instance.variables };
    const fx = emptyEffects();
    if (!step?.multiInstance) writeVariables(plan, step, instance.state, variables, written, fx);
    fx.events.push({
      kind: 'task:completed',
      stepId: result.task.step_id,
      taskId: result.task.id,
      data: { workerId: req.workerId, attempt: result.task.attempt },
    });
    if (step?.multiInstance) {
      completeLoopElement(
        plan,
        step.id,
        (result.task as { loop_index?: number }).loop_index ?? 0,
        written,
        instance.state,
        variables,
        fx,
      );
    } else if (step?.compensationHandler) {
      const thrown = finishHandler(
        plan,
        result.task.step_id,
        await listCompensations(tx, instance.id, instance.generation),
        instance.state,
        fx,
      );
      if (thrown) completeStep(plan, thrown, instance.state, variables, fx);
      await fault('compensation:mid-saga');
    } else {
      completeStep(plan, result.task.step_id, instance.state, variables, fx);
    }
    await commitTransition(tx, instance, fx, variables, { plan });
    return result;
  });
}

/**
 * The common complete in two round trips and one commit: read the task, its instance
 * and state in one statement without locks, compute the step's completion, and write
 * it in one guarded statement (writeTransitions with a `guard`: same revision and
 * generation, the holder's lock). New tasks of topics a native poll parked on this node waits for are
 * inserted locked for it by that statement and answered to it (engine/poll-delivery.ts).
 * Answers false, having written nothing, whenever the locked path must
 * decide: the guard lost to a concurrent transition, the caller does not hold the lock
 * (a repeat, a late result), or the transition needs reads inside a transaction
 * (multi-instance, compensation, message waits, termination).
 */
async function completeOptimistically(engine: Engine, req: CompleteTaskRequest, batchItem: boolean): Promise<boolean> {
  const read = await readTaskTransition(engine.pool, req.taskId);
  if (read) checkResultVariables(engine, read.instance.variables, req, batchItem);
  const write = read && (await completionOf(engine, read, req));
  if (!write) return false;
  // A chain's next task goes to a poll parked for its topic, locked in this statement (engine/poll-delivery.ts).
  const delivery = claimParkedPolls(engine, write.effects);
  try {
    const written = await writeTransitions(engine.pool, [{ ...write, delivery: delivery.map((h) => h.task) }]);
    if (delivery.length > 0) await deliverHanded(engine, delivery, written.delivered);
    return true;
  } catch (err) {
    // a lost guard wrote nothing: the polls park on, and the locked path rings the topics it commits
    await settleUnwritten(engine, delivery, err);
    if ((err as { code?: string }).code === TRANSITION_GUARD_LOST) return false;
    throw err;
  }
}

/**
 * The guarded write that completes a step for its holder, computed from a read of the
 * task and its instance; undefined when the locked path must decide (see completeOptimistically).
 */
async function completionOf(
  engine: Engine,
  read: { instance: LockedInstance; task: TaskSnapshot },
  req: CompleteTaskRequest,
  tx?: PoolClient,
): Promise<TransitionWrite | undefined> {
  const { instance, task } = read;
  if (
    task.state !== 'locked' ||
    task.worker_id !== req.workerId ||
    task.lock_token !== req.lockToken ||
    task.generation !== instance.generation
  )
    return undefined;
  // Inside a transaction a cold plan cache must be read through it, not a second connection.
  const plan = await planOf(engine, instance.definition_id, tx);
  const step = indexPlan(plan).steps.get(task.step_id);
  // Output mappings read the task's input locals, which this read does not carry: the locked path has them.
  if (!step || step.multiInstance || step.compensationHandler || step.io?.outputs.length) return undefined;
  // With input mappings only, a result variable named like an input stays on the task.
  const result = step.io ? taskResultOf(step, instance.variables, undefined, req.variables ?? {}) : req.variables;
  const variables = { ...instance.variables };
  const fx = emptyEffects();
  writeVariables(plan, step, instance.state, variables, result, fx);
  fx.events.push({
    kind: 'task:completed',
    stepId: task.step_id,
    taskId: task.id,
    data: { workerId: req.workerId, attempt: task.attempt },
  });
  completeStep(plan, task.step_id, instance.state, variables, fx);
  if (needsCommitTransition(fx)) return undefined;
  const status = deriveStatus(instance.state, fx);
  if (status !== instance.status) fx.events.push({ kind: `instance:${status}` });
  return {
    instance,
    effects: fx,
    status,
    variables,
    guard: { revision: instance.revision, completes: { taskId: task.id, workerId: req.workerId, lockToken: req.lockToken } },
  };
}

/**
 * The variables a worker's result writes (engine/io-mappings.ts resultVariables): the result
 * itself for a task without mappings; an output mapping that fails refuses the complete with a
 * 400 (the transaction rolls back, the task stays locked for its holder to fail or complete again).
 */
export function taskResultOf(
  step: PlanStep | undefined,
  vars: Variables,
  task: { local_variables: Variables | null } | undefined,
  result: Variables,
  /** what the sender does when the result cannot be mapped */
  next?: string,
): Variables {
  if (!step?.io) return result;
  const mapped = resultVariables(step, vars, task?.local_variables ?? {}, result, next);
  if (mapped.ok) return mapped.variables;
  throw new BatonError('validation', mapped.message, mapped.details);
}

/** What a complete in a batch came to; `repeated`: the holder's complete was applied before. */
export type BatchCompleteResult = 'completed' | 'repeated' | 'lock_lost' | 'not_found';

/**
 * Completes many tasks of one worker with one commit: their instances are locked in id
 * order, read, and each completion written by one statement in the same transaction
 * (several tasks of one instance in rounds, BATCH_ROUNDS). A task the batch cannot take
 * (one the single complete would not take optimistically: a repeat, a lost lock,
 * multi-instance, compensation, message waits, termination) is completed on its own
 * afterwards, as are all of them if the transaction fails. Answers per task, in the order asked.
 */
export async function completeTasks(
  engine: Engine,
  workerId: string,
  items: Omit<CompleteTaskRequest, 'workerId'>[],
): Promise<BatchCompleteResult[]> {
  // One task: the optimistic single complete is two round trips, a transaction five.
  const completed = items.length > 1 ? await completeInOneTransaction(engine, workerId, items) : new Set<string>();
  const answers: BatchCompleteResult[] = [];
  for (const item of items) {
    if (completed.has(item.taskId)) {
      answers.push('completed');
      continue;
    }
    const single = await completeTask(engine, { ...item, workerId }, true);
    answers.push(single.ok ? (single.duplicate ? 'repeated' : 'completed') : single.reason);
  }
  return answers;
}

/**
 * Rounds one batch's transaction may take: each completes one task per instance, the next
 * reads the instances again with those writes applied (the branches of a parallel split
 * fetched together complete in one commit). What is left after the last round goes singly.
 */
const BATCH_ROUNDS = 10;

/**
 * The batch's transaction; answers the tasks it completed (none if it failed). Pipelined
 * (store/pipeline.ts): the first write begins, locks the instances and reads them (the read
 * after the lock, so it sees what the lock waited for); the last sends the round's writes,
 * the framing and the commit. A batch of one round is two round trips, whatever its size;
 * each further round one more.
 */
async function completeInOneTransaction(
  engine: Engine,
  workerId: string,
  items: Omit<CompleteTaskRequest, 'workerId'>[],
): Promise<Set<string>> {
  try {
    return await withPipelinedTransaction(engine.pool, async (tx, edges) => {
      const ids = (list: typeof items) => list.map((i) => i.taskId);
      const [, , firstReads] = valuesOf(
        await runPipelined<unknown>(tx, [
          edges.begin,
          () => lockInstancesOfTasks(tx, ids(items)),
          () => readTaskTransitions(tx, ids(items)),
        ]),
      ) as [void, string[], Awaited<ReturnType<typeof readTaskTransitions>>];
      // Nothing is written when one task's variables would grow its instance past the limit.
      for (const item of items) {
        const read = firstReads.get(item.taskId);
        if (read) checkResultVariables(engine, read.instance.variables, item, true);
      }
      const writes: TransitionWrite[] = [];
      let pending = items;
      let reads = firstReads;
      for (let round = 0; round < BATCH_ROUNDS && pending.length > 0; round++) {
        const taken = new Set<string>();
        const later: typeof items = [];
        const roundWrites: TransitionWrite[] = [];
        for (const item of pending) {
          const read = reads.get(item.taskId);
          if (!read) continue;
          if (taken.has(read.instance.id)) {
            later.push(item);
            continue;
          }
          const write = await completionOf(engine, read, { ...item, workerId }, tx);
          if (!write) continue;
          taken.add(read.instance.id);
          roundWrites.push(write);
        }
        // In instance order, like the locks: frameTransitions then takes the frame heads in that
        // order too (an instance's writes of later rounds follow its earlier ones there).
        roundWrites.sort((a, b) => (a.instance.id < b.instance.id ? -1 : 1));
        writes.push(...roundWrites);
        pending = later;
        // Their events are framed by one statement at the end (the heads are its last locks),
        // not by a trigger call per event at commit; progress pending for one of them makes
        // that statement fail and the batch go one by one, where the trigger flushes it first.
        // It is called after the writes were sent, so every effects list is complete. A second
        // task of an instance waits for the next round, whose read goes out behind this round's
        // writes and so sees them.
        const last = pending.length === 0 || round === BATCH_ROUNDS - 1;
        // The round's writes as one statement (store/transition-statement.ts): one guard for all
        // of them, so a lost one fails the batch, which then goes one by one. The last round's
        // statement also frames the whole batch (after its writes, checking for progress as
        // frameTransitions would) unless a transition raises an incident.
        const framed = roundWrites.map((write) => ({ ...write, framesAtEnd: true }));
        const framesBatch = last && framed.length > 0 && framableInStatement(writes);
        const group: (() => Promise<unknown>)[] =
          framed.length === 0 ? [] : [() => writeTransitions(tx, framed, framesBatch ? writes : undefined)];
        if (last) {
          if (writes.length > 0 && !framesBatch) group.push(() => frameTransitions(tx, writes));
          group.push(edges.commit);
        } else group.push(() => readTaskTransitions(tx, ids(pending)));
        const answers = valuesOf(await runPipelined(tx, group));
        if (!last) reads = answers.at(-1) as typeof reads;
      }
      return new Set(writes.map((w) => w.guard!.completes!.taskId));
    });
  } catch (err) {
    // Bad input (variables past the limit) refuses the whole batch, having written nothing.
    if (err instanceof BatonError) throw err;
    // A guard lost inside the batch (a lease expired meanwhile) or a deadlock: each on its own.
    engine.log.warn({ workerId, tasks: items.length, error: (err as Error).message }, 'task:batch_complete_fallback');
    return new Set();
  }
}

/**
 * A result's variables must not grow its instance's variables past the limit (engine option
 * maxVariablesBytes; BATON_MAX_VARIABLES_BYTES), measured as PostgreSQL measures the merged
 * jsonb, from the variables the transition has already read: no query of its own. Checked
 * before the holder's lock, so a repeat or a late result past the limit gets the same 413; a
 * multi-instance element's result, which stays local, is held to the same bound.
 */
function checkResultVariables(
  engine: Engine,
  stored: Variables,
  req: { taskId: string; variables?: Variables | undefined },
  batchItem: boolean,
): void {
  const max = engine.options.maxVariablesBytes;
  if (!req.variables || !Number.isFinite(max)) return;
  const bytes = jsonbTextBytes({ ...stored, ...req.variables });
  if (bytes <= max) return;
  throw new BatonError(
    'payload_too_large',
    `With ${batchItem ? `the variables of task ${req.taskId}` : 'these variables'} the instance would hold ${bytes} bytes of variables, above the limit of ${max} bytes (BATON_MAX_VARIABLES_BYTES)`,
    { limit: 'maxVariablesBytes', max, actual: bytes, ...(batchItem ? { taskId: req.taskId } : {}) },
  );
}

export interface FailTaskRequest extends LockHolder {
  errorMessage: string;
  errorDetails?: string;
  /** the attempts still allowed (0: an incident now); absent: one retry is used up */
  retries?: number;
  /** the wait before the retry is fetchable; absent: the engine's exponential backoff */
  retryTimeoutMs?: number;
}

/** The effects of a failure the store has applied: its task:failed event, with the retry it left (if any). */
export function taskFailedEffects(task: ExternalTaskRow, workerId: string, errorMessage: string | null | undefined): Effects {
  const fx = emptyEffects();
  fx.events.push({
    kind: 'task:failed',
    stepId: task.step_id,
    taskId: task.id,
    data: {
      workerId,
      attempt: task.attempt,
      errorMessage,
      retriesLeft: task.retries_left,
      retryAt: task.state === 'ready' ? task.retry_at : null,
    },
  });
  return fx;
}

/**
 * Another attempt after a backoff, or an incident when retries are exhausted; a worker that
 * names `retries` or `retryTimeoutMs` decides those instead (failHeldTask).
 */
export async function failTask(engine: Engine, req: FailTaskRequest): Promise<TaskCallResult> {
  return holderTransition(engine, req, { kind: 'failure', payload: req.errorDetails }, (tx, instance) =>
    failHeldTask(engine, tx, instance, { ...req, errorDetails: req.errorDetails ?? null }),
  );
}

/** A failure as the store takes it: the native request or a Camunda one (nullable message). */
export interface HeldTaskFailure extends LockHolder {
  errorMessage: string | null;
  errorDetails: string | null;
  retries?: number | undefined;
  retryTimeoutMs?: number | undefined;
}

/**
 * The one failure transition of both APIs, inside the caller's transaction with the
 * instance locked: the store's guarded fail_task, then an incident (or the saga) when no
 * retry is left. `variables` are stored with it (a Camunda failure may carry some).
 */
export async function failHeldTask(
  engine: Engine,
  tx: PoolClient,
  instance: LockedInstance,
  req: HeldTaskFailure,
  variables: Variables = {},
): Promise<GuardedTaskResult> {
  const result = await failTaskRow(tx, {
    ...req,
    generation: instance.generation,
    backoffBaseMs: engine.options.retryBackoffMs,
    backoffMaxMs: engine.options.retryBackoffMaxMs,
  });
  if (!result.ok) return result;
  const task = result.task;
  const fx = taskFailedEffects(task, req.workerId, req.errorMessage);
  const plan = await planOf(engine, instance.definition_id, tx);
  if (task.state === 'failed') {
    const why = req.retries === 0 ? 'and its worker set retries to 0' : 'with no retries left';
    await settleExhaustedTask(
      tx,
      instance,
      plan,
      task,
      fx,
      `Task ${task.step_id} failed ${why}: ${req.errorMessage ?? '(no message)'}`,
      { errorMessage: req.errorMessage, errorDetails: req.errorDetails },
    );
  }
  const stored = { ...instance.variables };
  writeVariables(plan, indexPlan(plan).steps.get(task.step_id), instance.state, stored, variables, fx);
  await commitTransition(tx, instance, fx, stored, { plan, incidentTaskIds: fx.incidents.map(() => task.id) });
  if (task.state === 'ready') taskRetries.inc({ topic: task.topic });
  return result;
}

export interface BpmnErrorRequest extends LockHolder {
  errorCode: string;
  errorMessage?: string;
  variables?: Variables;
}

/**
 * A business error reported by the worker: an error boundary on the task catches
 * it (exact code first, then a catch-all); with none, the step waits in an incident.
 */
export async function reportBpmnError(engine: Engine, req: BpmnErrorRequest): Promise<TaskCallResult> {
  return holderTransition(engine, req, { kind: 'bpmn-error', payload: req.variables }, async (tx, instance) => {
    checkResultVariables(engine, instance.variables, req, false);
    const result = await markTaskErrored(tx, { ...req, generation: instance.generation, errorMessage: req.errorMessage ?? null });
    if (!result.ok) return result;
    const task = result.task;
    const plan = await planOf(engine, instance.definition_id, tx);
    const variables = { ...instance.variables };
    const fx = emptyEffects();
    const boundary = findErrorBoundary(plan, task.step_id, req.errorCode, instance.state);
    // A catcher with output mappings maps the error's variables; otherwise they are written as the task's.
    if (!catchesMapped(boundary))
      writeVariables(plan, indexPlan(plan).steps.get(task.step_id), instance.state, variables, req.variables, fx);
    fx.events.push({
      kind: 'task:bpmn_error',
      stepId: task.step_id,
      taskId: task.id,
      data: { workerId: req.workerId, attempt: task.attempt, errorCode: req.errorCode },
    });
    if (boundary?.wait?.trigger === 'error') {
      await markTaskCaught(tx, task.id);
      const caught = { code: req.errorCode, message: req.errorMessage, variables: req.variables };
      catchThrown(plan, boundary, instance.state, variables, fx, caught, { errorCode: req.errorCode });
      await commitTransition(tx, instance, fx, variables, { plan });
      return result;
    }
    if (instance.state.calledBy !== undefined) {
      // Nothing here catches it: the error goes on to the call activity that started this instance.
      await markTaskCaught(tx, task.id);
      throwToParent(plan, task.step_id, req.errorCode, req.errorMessage ?? null, instance.state, fx);
      await commitTransition(tx, instance, fx, variables, { plan });
      return result;
    }
    raiseTaskIncident(
      instance,
      task,
      fx,
      'bpmn_error',
      `Task ${task.step_id} reported BPMN error ${req.errorCode} and no error boundary catches it`,
      { errorCode: req.errorCode, errorMessage: req.errorMessage ?? null },
    );
    await commitTransition(tx, instance, fx, variables, { incidentTaskIds: [task.id] });
    return result;
  });
}

function raiseTaskIncident(
  instance: LockedInstance,
  task: ExternalTaskRow,
  fx: Effects,
  kind: 'task_failed' | 'bpmn_error',
  message: string,
  details: Record<string, unknown>,
): void {
  instance.state.steps[task.step_id] = 'incident';
  fx.steps.push({ stepId: task.step_id, status: 'incident' });
  fx.incidents.push({ stepId: task.step_id, kind, message, details });
  fx.events.push({ kind: 'incident:created', stepId: task.step_id, data: { kind, message } });
}

/**
 * A task out of retries: with onExhausted compensate the saga starts (everything
 * else stops, completed steps are undone newest first); otherwise an incident.
 */
export async function settleExhaustedTask(
  tx: PoolClient,
  instance: LockedInstance,
  plan: Plan,
  task: ExternalTaskRow,
  fx: Effects,
  message: string,
  details: Record<string, unknown>,
): Promise<void> {
  if (indexPlan(plan).steps.get(task.step_id)?.task?.onExhausted === 'compensate') {
    await cancelOpenWork(tx, instance.id, task.id);
    startSaga(plan, task.step_id, instance.state, fx);
    return;
  }
  raiseTaskIncident(instance, task, fx, 'task_failed', message, details);
}

/**
 * A task whose lease expired once more than `retries + leaseExpiryAllowance` allow
 * (its workers keep dying on it) ends like a failure with no retries left: an
 * incident, or the saga with onExhausted compensate. Answers whether it did.
 */
export async function exhaustExpiredLease(engine: Engine, taskId: string): Promise<boolean> {
  const allowance = engine.options.leaseExpiryAllowance;
  return withTransaction(engine.pool, async (tx) => {
    const instance = await lockInstanceOfTask(tx, taskId);
    if (!instance) return false;
    const task = await failExpiredLease(tx, { taskId, generation: instance.generation, allowance });
    if (!task) return false;
    const plan = await planOf(engine, instance.definition_id, tx);
    const fx = emptyEffects();
    await settleExhaustedTask(
      tx,
      instance,
      plan,
      task,
      fx,
      `Task ${task.step_id}: its lease expired ${task.lease_expiries} times without a result (retries ${task.retries} + ${allowance} allowed); the last holder was ${task.previous_worker ?? 'unknown'}`,
      { leaseExpiries: task.lease_expiries, lastWorkerId: task.previous_worker },
    );
    await commitTransition(tx, instance, fx, instance.variables, { plan, incidentTaskIds: fx.incidents.map(() => task.id) });
    return true;
  });
}

type HolderWork = (tx: PoolClient, instance: LockedInstance) => Promise<GuardedTaskResult>;

/**
 * Locks the task's instance, runs the guarded work, and maps a lost guard: a
 * repeat by the same holder is a no-op success, anyone else's call is kept as a
 * late result and refused.
 */
async function holderTransition(
  engine: Engine,
  holder: LockHolder,
  late: { kind: LateResult['kind']; payload: unknown },
  work: HolderWork,
): Promise<TaskCallResult> {
  return withTransaction(engine.pool, async (tx) => {
    const instance = await lockInstanceOfTask(tx, holder.taskId);
    if (!instance) return { ok: false, reason: 'not_found' };
    const result = await work(tx, instance);
    if (result.ok) return { ok: true, duplicate: false };
    if (result.reason === 'already_applied') return { ok: true, duplicate: true };
    if (result.reason === 'lock_lost') {
      const payloadBytes = late.payload === undefined ? 0 : Buffer.byteLength(JSON.stringify(late.payload));
      await recordLateResult(tx, { ...holder, kind: late.kind, payloadBytes });
      engine.log.warn({ taskId: holder.taskId, workerId: holder.workerId, call: late.kind }, 'task:late_result');
    }
    return { ok: false, reason: result.reason };
  });
}
