// What people do with user tasks: claim, release, assign and complete. Each action runs under
// its instance's lock as a transition of its own, so it is ordered with everything else the
// instance does and lands in its history (and on the progress stream) with who did it.
import type { Plan, PlanStep, UserTaskSpec } from '../compiler/plan.ts';
import { emptyEffects, type Variables } from '../model/effects.ts';
import { BatonError } from '../shared/errors.ts';
import { withTransaction, type PoolClient } from '../store/db.ts';
import { lockInstance, type LockedInstance } from '../store/instances.ts';
import { deleteSubscription } from '../store/waits.ts';
import { findUserTask, setUserTaskAssignee, type UserTaskRow } from '../store/user-tasks.ts';
import { planOf, type Engine } from './context.ts';
import { indexPlan } from './plan-index.ts';
import { taskResultOf } from './tasks.ts';
import {
  catchThrown,
  catchesMapped,
  completeLoopElement,
  findErrorBoundary,
  findEscalationCatcher,
  throwToParent,
} from './advance.ts';
import { commitTransition } from './transition.ts';
import { writeVariables } from './scope-variables.ts';
import { checkForm } from './user-task-details.ts';
import { deliverToSubscription } from './waits.ts';

/** The person an action is for, as the calling tasklist names them, and the token that called. */
export interface UserTaskActor {
  userId: string;
  groups: string[];
  /** the token's name, when the server checks tokens */
  caller?: string;
  /** an operator's token: may claim a task whoever its candidates are */
  anyTask?: boolean;
}

/** An error or escalation boundary on a user task: what its holder can raise instead of completing it. */
export interface UserTaskRaise {
  kind: 'error' | 'escalation';
  boundaryId: string;
  name?: string;
  /** null: the boundary catches every code */
  code: string | null;
  interrupting: boolean;
}

export interface UserTaskWithStep {
  task: UserTaskRow;
  step: PlanStep;
  raises: UserTaskRaise[];
  spec: UserTaskSpec;
}

/** The task with its step and form; not_found when no such task waits. */
export async function readUserTask(engine: Engine, taskId: string): Promise<UserTaskWithStep> {
  const task = await findUserTask(engine.pool, taskId);
  if (!task) throw notFound(taskId);
  return withStep(engine, task);
}

/** The task with its step and its spec from the deployed plan. */
export async function withStep(engine: Engine, task: UserTaskRow, db?: PoolClient): Promise<UserTaskWithStep> {
  const plan = await planOf(engine, task.definition_id, db);
  const step = indexPlan(plan).steps.get(task.step_id);
  if (step?.wait?.trigger !== 'user') throw new Error(`Step ${task.step_id} of user task ${task.id} is not a user task`);
  return { task, step, spec: step.wait.userTask, raises: raisesOf(plan, step) };
}

function raisesOf(plan: Plan, step: PlanStep): UserTaskRaise[] {
  const { steps } = indexPlan(plan);
  return (step.boundaries ?? []).flatMap((id): UserTaskRaise[] => {
    const boundary = steps.get(id);
    const wait = boundary?.wait;
    if (!boundary || (wait?.trigger !== 'error' && wait?.trigger !== 'escalation')) return [];
    const code = wait.trigger === 'error' ? wait.errorCode : wait.escalationCode;
    return [
      {
        kind: wait.trigger,
        boundaryId: id,
        ...(boundary.name ? { name: boundary.name } : {}),
        code: code ?? null,
        interrupting: boundary.boundary?.interrupting !== false,
      },
    ];
  });
}

/** Whether the person is among the task's candidates; a task that names none is open to everyone. */
export function isCandidate(task: UserTaskRow, actor: UserTaskActor): boolean {
  const { candidateUsers, candidateGroups } = task.user_task;
  if (candidateUsers.length === 0 && candidateGroups.length === 0) return true;
  return candidateUsers.includes(actor.userId) || actor.groups.some((g) => candidateGroups.includes(g));
}

export async function claimUserTask(engine: Engine, taskId: string, actor: UserTaskActor): Promise<UserTaskRow> {
  return underLock(engine, taskId, async (tx, instance, task) => {
    if (task.assignee === actor.userId) return task;
    if (task.assignee !== null)
      throw new BatonError('conflict', `User task ${taskId} is claimed by "${task.assignee}"`, { assignee: task.assignee });
    if (!actor.anyTask && !isCandidate(task, actor))
      throw new BatonError(
        'forbidden',
        `"${actor.userId}" is not a candidate for user task ${taskId} (candidate users: ${listOf(task.user_task.candidateUsers)}; candidate groups: ${listOf(task.user_task.candidateGroups)})`,
      );
    return changeAssignee(tx, instance, task, actor.userId, 'claim', 'userTask:claimed', actor);
  });
}

export async function unclaimUserTask(engine: Engine, taskId: string, actor: UserTaskActor): Promise<UserTaskRow> {
  return underLock(engine, taskId, async (tx, instance, task) => {
    if (task.assignee === null) return task;
    if (task.assignee !== actor.userId)
      throw new BatonError('conflict', `User task ${taskId} is claimed by "${task.assignee}", not by "${actor.userId}"`, {
        assignee: task.assignee,
      });
    return changeAssignee(tx, instance, task, null, 'override', 'userTask:unclaimed', actor);
  });
}

/** An operator gives the task to a person (or to nobody), whoever holds it and whoever the candidates are. */
export async function assignUserTask(
  engine: Engine,
  taskId: string,
  assignee: string | null,
  caller: string | undefined,
): Promise<UserTaskRow> {
  return underLock(engine, taskId, async (tx, instance, task) =>
    task.assignee === assignee
      ? task
      : changeAssignee(tx, instance, task, assignee, 'override', 'userTask:assigned', {
          userId: assignee ?? '',
          groups: [],
          ...(caller ? { caller } : {}),
        }),
  );
}

export interface CompleteOptions {
  /** false: an operator completes it whoever holds it, claimed or not (Camunda 7's complete) */
  needsClaim?: boolean;
  /** false: the variables are set without checking them against the form (Camunda 7's complete; submit-form checks) */
  checkForm?: boolean;
  /** runs in the completion's transaction once the instance has moved on, e.g. to keep the variables' Camunda types */
  alongside?: (tx: PoolClient, instanceId: string) => Promise<void>;
}

/**
 * The person who holds the task completes it: the variables are checked against its form, then
 * set on the instance as a message's are, and the process goes on.
 */
export async function completeUserTask(
  engine: Engine,
  taskId: string,
  actor: UserTaskActor,
  variables: Variables,
  opts: CompleteOptions = {},
): Promise<{ instanceId: string }> {
  return withTransaction(engine.pool, async (tx) => {
    const { task, instance } = await lockTask(tx, taskId);
    if (opts.needsClaim !== false) checkHolder(task, actor, 'completes it');
    const { spec, step } = await withStep(engine, task, tx);
    const problems =
      opts.checkForm === false ? [] : checkForm(spec, variables, { ...instance.variables, ...task.local_variables });
    if (problems.length > 0)
      throw new BatonError('validation', `The form of user task ${taskId} is not filled in right: ${problems[0]!.message}`, {
        fields: problems,
      });
    const data = { taskId, completedBy: actor.userId, ...(actor.caller ? { by: actor.caller } : {}) };
    // Output mappings say what of the person's variables reach the process, as a worker's result (a multi-instance element's result).
    const written =
      step.io && (task.loop_index === null || step.io.outputs.length > 0)
        ? taskResultOf(step, instance.variables, task, variables, 'Send the variables the mapping reads, or fix the mapping')
        : variables;
    if (task.loop_index !== null) await completeElementTask(engine, tx, instance, task, written, data);
    else {
      const sub = { ...task, kind: 'user' as const, name: task.step_id, correlation_key: null };
      if (!(await deliverToSubscription(engine, tx, instance, sub, written, data))) throw notFound(taskId);
    }
    await opts.alongside?.(tx, instance.id);
    return { instanceId: instance.id };
  });
}

/**
 * One element of a multi-instance user task is done: what the person sent stays the element's
 * own (it makes the element's result through outputElement, as a multi-instance service task's
 * worker result does), and the step completes when its elements did or its completion condition holds.
 */
async function completeElementTask(
  engine: Engine,
  tx: PoolClient,
  instance: LockedInstance,
  task: UserTaskRow,
  output: Variables,
  data: Record<string, unknown>,
): Promise<void> {
  if (!(await deleteSubscription(tx, task.id))) throw notFound(task.id);
  const plan = await planOf(engine, task.definition_id, tx);
  const variables = { ...instance.variables };
  const fx = emptyEffects();
  fx.events.push({
    kind: 'userTask:completed',
    stepId: task.step_id,
    data: { ...data, loopCounter: task.local_variables?.loopCounter ?? task.loop_index },
  });
  completeLoopElement(plan, task.step_id, task.loop_index as number, output, instance.state, variables, fx);
  await commitTransition(tx, instance, fx, variables, { plan });
}

/** The person who acts on a task must hold it. */
function checkHolder(task: UserTaskRow, actor: UserTaskActor, then: string): void {
  if (task.assignee === null)
    throw new BatonError('conflict', `User task ${task.id} is not claimed: "${actor.userId}" claims it first, then ${then}`);
  if (task.assignee !== actor.userId)
    throw new BatonError('conflict', `User task ${task.id} is claimed by "${task.assignee}", not by "${actor.userId}"`, {
      assignee: task.assignee,
    });
}

export interface UserTaskError {
  errorCode: string;
  errorMessage?: string;
  variables: Variables;
}

/**
 * The person holding the task reports a business error instead of completing it: the error
 * boundary on the task (or an error event subprocess around it) that catches the code takes the
 * token, and the task ends; in a called instance the error goes on to the caller. Nothing that
 * catches it: refused, and nothing changes (the person completes the task instead).
 */
export async function throwUserTaskError(
  engine: Engine,
  taskId: string,
  actor: UserTaskActor,
  error: UserTaskError,
  opts: Pick<CompleteOptions, 'needsClaim' | 'alongside'> = {},
): Promise<{ instanceId: string }> {
  return withTransaction(engine.pool, async (tx) => {
    const { task, instance } = await lockTask(tx, taskId);
    if (opts.needsClaim !== false) checkHolder(task, actor, 'reports an error');
    const plan = await planOf(engine, task.definition_id, tx);
    const variables = { ...instance.variables };
    const fx = emptyEffects();
    const boundary = findErrorBoundary(plan, task.step_id, error.errorCode, instance.state);
    // A catcher with output mappings maps the error's variables; otherwise they are written as the task's.
    if (!catchesMapped(boundary))
      writeVariables(plan, indexPlan(plan).steps.get(task.step_id), instance.state, variables, error.variables, fx);
    fx.events.push({
      kind: 'userTask:bpmn_error',
      stepId: task.step_id,
      data: {
        taskId,
        errorCode: error.errorCode,
        ...(error.errorMessage ? { errorMessage: error.errorMessage } : {}),
        ...(actor.userId ? { userId: actor.userId } : {}),
        ...(actor.caller ? { by: actor.caller } : {}),
      },
    });
    if (boundary?.wait?.trigger === 'error') {
      const caught = { code: error.errorCode, message: error.errorMessage, variables: error.variables };
      catchThrown(plan, boundary, instance.state, variables, fx, caught, { errorCode: error.errorCode });
    } else if (instance.state.calledBy !== undefined) {
      throwToParent(plan, task.step_id, error.errorCode, error.errorMessage ?? null, instance.state, fx);
    } else {
      throw new BatonError(
        'conflict',
        `No error boundary or error event subprocess catches error "${error.errorCode}" thrown at user task ${task.step_id}; nothing changed: complete the task instead`,
        { errorCode: error.errorCode },
      );
    }
    await commitTransition(tx, instance, fx, variables, { plan });
    await opts.alongside?.(tx, instance.id);
    return { instanceId: instance.id };
  });
}

export interface UserTaskEscalation {
  escalationCode: string;
  variables: Variables;
}

/**
 * The person holding the task raises an escalation (Camunda 7's handleEscalation): the innermost
 * escalation boundary on the task, or escalation event subprocess around it, that catches the code
 * fires. An interrupting one ends the task; a non-interrupting one runs its path and the task
 * stays with its holder. Nothing that catches it: refused, and nothing changes (as in Camunda 7).
 * Only the task's own instance is searched: a called instance never locks its parent, so the
 * answer cannot wait on the parent's catchers.
 */
export async function throwUserTaskEscalation(
  engine: Engine,
  taskId: string,
  actor: UserTaskActor,
  escalation: UserTaskEscalation,
  opts: Pick<CompleteOptions, 'needsClaim' | 'alongside'> = {},
): Promise<{ instanceId: string; caughtBy: string; taskOpen: boolean }> {
  return withTransaction(engine.pool, async (tx) => {
    const { task, instance } = await lockTask(tx, taskId);
    if (opts.needsClaim !== false) checkHolder(task, actor, 'raises an escalation');
    const plan = await planOf(engine, task.definition_id, tx);
    const code = escalation.escalationCode;
    const catcher = findEscalationCatcher(plan, task.step_id, code, instance.state);
    if (catcher?.wait?.trigger !== 'escalation')
      throw new BatonError(
        'conflict',
        `No escalation boundary or escalation event subprocess catches escalation "${code}" raised at user task ${task.step_id}; nothing changed: complete the task instead`,
        { escalationCode: code },
      );
    const variables = { ...instance.variables };
    const fx = emptyEffects();
    writeVariables(plan, indexPlan(plan).steps.get(task.step_id), instance.state, variables, escalation.variables, fx);
    fx.events.push({
      kind: 'userTask:escalated',
      stepId: task.step_id,
      data: {
        taskId,
        escalationCode: code,
        caughtBy: catcher.id,
        ...(actor.userId ? { userId: actor.userId } : {}),
        ...(actor.caller ? { by: actor.caller } : {}),
      },
    });
    catchThrown(plan, catcher, instance.state, variables, fx, { code }, { escalationCode: code, thrownBy: task.step_id });
    // An interrupting catcher canceled the task's step; a non-interrupting one left it waiting.
    const taskOpen = instance.state.steps[task.step_id] === 'active';
    await commitTransition(tx, instance, fx, variables, { plan });
    await opts.alongside?.(tx, instance.id);
    return { instanceId: instance.id, caughtBy: catcher.id, taskOpen };
  });
}

async function underLock(
  engine: Engine,
  taskId: string,
  act: (tx: PoolClient, instance: LockedInstance, task: UserTaskRow) => Promise<UserTaskRow>,
): Promise<UserTaskRow> {
  return withTransaction(engine.pool, async (tx) => {
    const { task, instance } = await lockTask(tx, taskId);
    return act(tx, instance, task);
  });
}

// The instance is locked first, then the task read again: a transition that ended the task
// meanwhile has committed, and none can end it until this transaction does.
async function lockTask(tx: PoolClient, taskId: string): Promise<{ task: UserTaskRow; instance: LockedInstance }> {
  const seen = await findUserTask(tx, taskId);
  const instance = seen ? await lockInstance(tx, seen.instance_id) : undefined;
  const task = instance ? await findUserTask(tx, taskId) : undefined;
  if (!task || !instance || task.generation !== instance.generation) throw notFound(taskId);
  if (instance.suspended_at)
    throw new BatonError(
      'conflict',
      `User task ${taskId} belongs to instance ${instance.id}, which is suspended; resume it first`,
      {
        instanceId: instance.id,
        suspended: true,
      },
    );
  return { task, instance };
}

async function changeAssignee(
  tx: PoolClient,
  instance: LockedInstance,
  task: UserTaskRow,
  assignee: string | null,
  mode: 'claim' | 'override',
  kind: string,
  actor: UserTaskActor,
): Promise<UserTaskRow> {
  const result = await setUserTaskAssignee(tx, task.id, assignee, mode);
  if (!result.ok && result.reason === 'not_found') throw notFound(task.id);
  if (!result.ok) throw new BatonError('conflict', `User task ${task.id} is claimed by "${result.assignee ?? '?'}"`);
  const fx = emptyEffects();
  fx.events.push({
    kind,
    stepId: task.step_id,
    data: {
      taskId: task.id,
      assignee,
      ...(actor.userId ? { userId: actor.userId } : {}),
      ...(actor.caller ? { by: actor.caller } : {}),
    },
  });
  await commitTransition(tx, instance, fx, instance.variables);
  return result.task;
}

function notFound(taskId: string): BatonError {
  return new BatonError('not_found', `No open user task with id "${taskId}" (completed, canceled, or never created)`);
}

function listOf(names: string[]): string {
  return names.length === 0 ? 'none' : names.join(', ');
}
