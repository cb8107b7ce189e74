// Compensation (saga), pure like advance.ts: which completed steps to undo, in
// which order, and what happens as each handler finishes. The queue itself is
// stored by the caller (compensations table) from Effects.compensationRuns/Moves.
import type { Plan, PlanStep } from '../compiler/plan.ts';
import { type CompensationTarget, type Effects, type InstanceState } from '../model/effects.ts';
import { indexPlan, isInsideScope } from './plan-index.ts';
import { keptStep, scopePathOf } from './loop-passes.ts';

export interface QueuedCompensation {
  host_step_id: string;
  handler_step_id: string;
  position: number;
  throw_step_id: string | null;
  state: 'pending' | 'running' | 'done';
}

/**
 * Completed steps that have a handler, most recently completed first; optionally
 * one step only (a subprocess: the steps inside it), and only inside `scope` when
 * the throw sits in a subprocess.
 */
export function compensableHosts(plan: Plan, state: InstanceState, only?: string, scope?: string): CompensationTarget[] {
  const steps = indexPlan(plan).steps;
  const named = (id: string) =>
    only === undefined || only === id || (steps.get(only)?.kind === 'subProcess' && isInsideScope(plan, id, only));
  const inScope = (id: string) => scope === undefined || isInsideScope(plan, id, scope);
  // A kept completion of an earlier loop pass is its step's, in that pass (loop-passes.ts).
  return [...(state.completedOrder ?? [])].reverse().flatMap((id) => {
    const { stepId } = keptStep(id);
    const handler = steps.get(stepId)?.compensation?.handler;
    return handler && state.steps[id] === 'completed' && named(stepId) && inScope(stepId) ? [{ host: id, handler }] : [];
  });
}

/**
 * A compensation throw or end event: queue the handlers and start the first. Answers false
 * when there is nothing to undo: the caller then completes the throw at once.
 */
export function startCompensationThrow(plan: Plan, step: PlanStep, state: InstanceState, fx: Effects): boolean {
  const hosts = compensableHosts(plan, state, step.throwCompensation?.activityRef, step.scope);
  fx.events.push({ kind: 'compensation:requested', stepId: step.id, data: { hosts: hosts.map((h) => h.host) } });
  if (hosts.length === 0) return false;
  fx.compensationRuns.push({ throwStepId: step.id, hosts });
  startHandler(plan, hosts[0] as CompensationTarget, state, fx);
  return true;
}

/**
 * Retries of a step with onExhausted: compensate ran out: the rest of the instance
 * stops (the caller has canceled its open work), the step is failed, and every
 * completed step is compensated, newest first. The instance ends compensated.
 */
export function startSaga(plan: Plan, failedStepId: string, state: InstanceState, fx: Effects): void {
  for (const [stepId, status] of Object.entries(state.steps)) {
    if (stepId === failedStepId || (status !== 'active' && status !== 'incident')) continue;
    setStatus(state, fx, stepId, 'canceled');
    fx.events.push({ kind: 'step:canceled', stepId, data: { by: failedStepId } });
    if (indexPlan(plan).steps.get(stepId)?.kind === 'callActivity') fx.canceledCalls.push(stepId);
  }
  fx.tasks = [];
  fx.timers = [];
  fx.subscriptions = [];
  setStatus(state, fx, failedStepId, 'failed');
  fx.events.push({ kind: 'step:failed', stepId: failedStepId, data: { onExhausted: 'compensate' } });
  state.compensation = { active: false, saga: true };
  const hosts = compensableHosts(plan, state);
  fx.events.push({ kind: 'compensation:requested', stepId: failedStepId, data: { hosts: hosts.map((h) => h.host) } });
  if (hosts.length === 0) return;
  fx.compensationRuns.push({ throwStepId: null, hosts });
  startHandler(plan, hosts[0] as CompensationTarget, state, fx);
}

/**
 * A handler's task completed: its host is compensated; the next handler of the run starts,
 * or the run ends. Answers the throw step the caller then completes, when the run that ended
 * was a throw's (a saga's has none).
 */
export function finishHandler(
  plan: Plan,
  handlerStepId: string,
  queue: QueuedCompensation[],
  state: InstanceState,
  fx: Effects,
): string | undefined {
  const row = queue.find((q) => q.handler_step_id === handlerStepId && q.state === 'running');
  if (!row) throw new Error(`Handler ${handlerStepId} finished but no compensation of it is running`);
  setStatus(state, fx, handlerStepId, 'completed');
  setStatus(state, fx, row.host_step_id, 'compensated');
  fx.compensationMoves.push({ host: row.host_step_id, to: 'done' });
  fx.events.push({ kind: 'compensation:completed', stepId: row.host_step_id, data: { handler: handlerStepId } });
  const next = queue.find((q) => q.state === 'pending' && q.throw_step_id === row.throw_step_id);
  if (next) {
    startHandler(plan, { host: next.host_step_id, handler: next.handler_step_id }, state, fx);
    return undefined;
  }
  state.compensation = { active: false, saga: state.compensation?.saga ?? row.throw_step_id === null };
  return row.throw_step_id ?? undefined;
}

function startHandler(plan: Plan, target: CompensationTarget, state: InstanceState, fx: Effects): void {
  const handler = indexPlan(plan).steps.get(target.handler);
  if (!handler?.task) throw new Error(`Compensation handler ${target.handler} is not a task of plan ${plan.processKey}`);
  setStatus(state, fx, handler.id, 'active');
  // Undoing a step of a loop pass runs in that pass: each pass's handler task is its own.
  const kept = keptStep(target.host);
  const hostStep = indexPlan(plan).steps.get(kept.stepId);
  const scopePath = kept.scopePath ?? (hostStep ? scopePathOf(plan, hostStep, state).scopePath : undefined);
  fx.tasks.push({ stepId: handler.id, ...handler.task, ...(scopePath ? { scopePath } : {}) });
  fx.compensationMoves.push({ host: target.host, to: 'running' });
  fx.events.push({ kind: 'compensation:started', stepId: target.host, data: { handler: handler.id } });
  state.compensation = { active: true, saga: state.compensation?.saga ?? false };
}

// Handler and host statuses are not completions that compensation could undo.
function setStatus(state: InstanceState, fx: Effects, stepId: string, status: InstanceState['steps'][string]): void {
  state.steps[stepId] = status;
  fx.steps.push({ stepId, status });
}
