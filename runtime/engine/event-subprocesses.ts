// Event subprocesses (docs/scopes.md, "Event subprocesses"): armed while their scope runs,
// an interrupting one's trigger cancels the scope's open work and runs its body, and they stop
// waiting when the scope's own flow ends first. Non-interrupting ones fire as repeating
// boundaries do (boundary-firings.ts). advance.ts evaluates the steps; this module
// decides about event subprocesses and calls back into it (ScopeMoves), as loop-passes.ts does.
import type { Plan, PlanStep } from '../compiler/plan.ts';
import type { InstanceState, NewEvent } from '../model/effects.ts';
import type { StepStatus } from '../model/vocabulary.ts';
import { indexPlan, isInsideScope } from './plan-index.ts';

/** What event subprocesses need of the step evaluation (advance.ts). */
export interface ScopeMoves {
  /** arms a catching step: its timer row or subscription, status active */
  startWait(step: PlanStep): void;
  /** cancels an open step and what it holds */
  cancel(step: PlanStep, by: string): void;
  setStep(stepId: string, status: StepStatus): void;
  /** the step's timer or subscription ends */
  endWait(stepId: string): void;
  event(event: NewEvent): void;
  /** the step's outgoing flows are taken */
  leave(step: PlanStep): void;
  /** an event subprocess's input mappings become its locals; false: they failed, and it stopped in an incident */
  enter(eventSub: PlanStep): boolean;
}

function stepById(plan: Plan, stepId: string): PlanStep {
  const step = indexPlan(plan).steps.get(stepId);
  if (!step) throw new Error(`Step ${stepId} is not in plan ${plan.processKey}`);
  return step;
}

/** The start events of the event subprocesses directly in `scope` (the process when undefined). */
export function eventStartsOf(plan: Plan, scope: string | undefined): string[] {
  return (indexPlan(plan).eventSubProcesses.get(scope ?? '') ?? []).map((e) => e.eventSubProcess?.start ?? '');
}

/** A scope starts running: the start events of its event subprocesses wait for their triggers. */
export function armEventSubProcesses(plan: Plan, scope: string | undefined, moves: ScopeMoves): void {
  for (const start of eventStartsOf(plan, scope)) moves.startWait(stepById(plan, start));
}

/**
 * An event subprocess's trigger came (timer, message, signal, or an error thrown in its scope):
 * it interrupts its scope, whose other open work is canceled in this transition, and its body
 * runs; when the body ends, the scope ends with it.
 */
export function fireEventSubProcess(plan: Plan, start: PlanStep, moves: ScopeMoves, data?: Record<string, unknown>): void {
  const eventSub = interruptScope(plan, start, moves);
  // Inputs that fail hold it in an incident before its body runs; the retry enters it (advance.ts).
  const entered = moves.enter(eventSub);
  if (entered) {
    moves.setStep(eventSub.id, 'active');
    moves.event({ kind: 'step:activated', stepId: eventSub.id, data: { trigger: start.wait?.trigger } });
  }
  moves.setStep(start.id, 'completed');
  moves.endWait(start.id);
  moves.event({ kind: 'step:completed', stepId: start.id, data: { trigger: start.wait?.trigger, ...data } });
  if (entered) moves.leave(start);
}

/**
 * An interrupting event subprocess's trigger came: everything else in its scope ends,
 * non-interrupting event subprocesses that run included, and so do its siblings' waits. Done
 * again when it fires after its start's incident, it finds nothing more open.
 */
export function interruptScope(plan: Plan, start: PlanStep, moves: Pick<ScopeMoves, 'cancel'>): PlanStep {
  const eventSub = stepById(plan, start.scope as string);
  const scope = eventSub.scope;
  for (const step of plan.steps) {
    if (step === eventSub || step === start || isInsideScope(plan, step.id, eventSub.id)) continue;
    if (scope !== undefined && !isInsideScope(plan, step.id, scope)) continue;
    moves.cancel(step, eventSub.id);
  }
  for (const other of eventStartsOf(plan, scope)) if (other !== start.id) moves.cancel(stepById(plan, other), eventSub.id);
  return eventSub;
}

/** The scope's own work is done: its event subprocesses that never fired stop waiting. */
export function disarmEventSubProcesses(plan: Plan, scope: string | undefined, state: InstanceState, moves: ScopeMoves): void {
  for (const start of eventStartsOf(plan, scope)) {
    if (state.steps[start] !== 'active') continue;
    moves.setStep(start, 'skipped');
    moves.endWait(start);
    moves.event({ kind: 'step:skipped', stepId: start });
  }
}

/**
 * At the process level nothing completes a scope step: once every step outside the event
 * subprocesses has ended (and none of them runs), their start events stop waiting, so the
 * instance can complete.
 */
export function settleProcess(plan: Plan, state: InstanceState, moves: ScopeMoves): void {
  const armed = eventStartsOf(plan, undefined).filter((id) => state.steps[id] === 'active');
  if (armed.length === 0) return;
  const open = plan.steps.some((s) => {
    if (s.scope !== undefined || s.compensationHandler) return false;
    const status = state.steps[s.id];
    if (s.kind === 'eventSubProcess') return status === 'active' || status === 'incident';
    return status === undefined || status === 'active' || status === 'incident';
  });
  if (!open) disarmEventSubProcesses(plan, undefined, state, moves);
}

/** Arms again, after a replay, the event subprocesses of the process and of every running subprocess, unless one of them already ran. */
export function rearm(plan: Plan, state: InstanceState, moves: ScopeMoves): void {
  for (const [scope, eventSubs] of indexPlan(plan).eventSubProcesses) {
    if (scope !== '' && state.steps[scope] !== 'active') continue;
    if (eventSubs.some((e) => state.steps[e.id] !== undefined)) continue;
    for (const e of eventSubs) {
      const start = e.eventSubProcess?.start ?? '';
      if (state.steps[start] === undefined) moves.startWait(stepById(plan, start));
    }
  }
}
