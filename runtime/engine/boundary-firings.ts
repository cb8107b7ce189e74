// Repeating boundaries (docs/events.md, "Repeating boundaries"): a non-interrupting message,
// signal, timer-cycle, escalation or conditional boundary whose path is its own keeps waiting after it fires,
// and each firing runs that path afresh as a pass of the boundary (its steps' scope path is
// `/<boundary>#<firing>`), with fresh step and flow states as a loop's pass has. A firing that
// comes while the path of the one before still runs waits for it: firings of one boundary run
// one after another, none is lost. advance.ts evaluates the steps; this module decides about
// firings and calls back into it (FiringMoves), as loop-passes.ts does.
import type { Plan, PlanStep } from '../compiler/plan.ts';
import type { Effects, InstanceState, NewEvent, PassState } from '../model/effects.ts';
import type { StepStatus } from '../model/vocabulary.ts';
import { indexPlan } from './plan-index.ts';

export interface FiringMoves {
  /** the boundary waits again (a new subscription or timer, or none for an escalation); false: it has fired its last */
  rearm(boundary: PlanStep, firings: number): boolean;
  setStep(stepId: string, status: StepStatus): void;
  event(event: NewEvent): void;
  /** takes the boundary's outgoing flows: its path runs */
  leave(boundary: PlanStep): void;
}

/** Firings started (`pass`) and waiting (`pending`) of a repeating boundary; undefined before its first. */
export function firingsOf(state: InstanceState, boundaryId: string): PassState | undefined {
  const stored = state.loops?.[boundaryId];
  return stored && 'pass' in stored ? stored : undefined;
}

/** The boundary fired: it waits again at once, and its path runs now or after the path of the firing before. */
export function fireRepeating(
  plan: Plan,
  boundary: PlanStep,
  state: InstanceState,
  fx: Effects,
  moves: FiringMoves,
  data?: Record<string, unknown>,
): void {
  const before = firingsOf(state, boundary.id);
  const started = before?.pass ?? 0;
  const pending = before?.pending ?? 0;
  const firing = started + pending + 1;
  // The wait this firing consumed is not written, if this transition made it (a message from the inbox).
  fx.subscriptions = fx.subscriptions.filter((s) => s.stepId !== boundary.id);
  fx.timers = fx.timers.filter((t) => t.stepId !== boundary.id);
  moves.event({ kind: 'step:completed', stepId: boundary.id, data: { trigger: boundary.wait?.trigger, firing, ...data } });
  if (!moves.rearm(boundary, firing)) moves.setStep(boundary.id, 'completed');
  if (started > 0 && pathOpen(plan, boundary, state)) {
    save(boundary.id, { pass: started, pending: pending + 1 }, state, fx);
    moves.event({ kind: 'boundary:queued', stepId: boundary.id, data: { firing, runningFiring: started } });
    return;
  }
  startFiring(plan, boundary, started + 1, pending, state, fx, moves);
}

/** The path of a firing may have ended: a firing that waited for it starts now, unless the boundary was canceled. */
export function settleFirings(plan: Plan, boundary: PlanStep, state: InstanceState, fx: Effects, moves: FiringMoves): void {
  const progress = firingsOf(state, boundary.id);
  if (!progress?.pending || state.steps[boundary.id] === 'canceled' || pathOpen(plan, boundary, state)) return;
  startFiring(plan, boundary, progress.pass + 1, progress.pending - 1, state, fx, moves);
}

/** The host ended: a boundary that fired stops waiting (its path, and firings waiting for it, run on); one that never fired is skipped. */
export function endRepeating(boundary: PlanStep, state: InstanceState, fx: Effects, moves: FiringMoves): boolean {
  const progress = firingsOf(state, boundary.id);
  if (!progress || progress.pass + (progress.pending ?? 0) === 0) return false;
  moves.setStep(boundary.id, 'completed');
  fx.endedWaits.push(boundary.id);
  moves.event({ kind: 'boundary:ended', stepId: boundary.id, data: { firings: progress.pass + (progress.pending ?? 0) } });
  return true;
}

function startFiring(
  plan: Plan,
  boundary: PlanStep,
  pass: number,
  pending: number,
  state: InstanceState,
  fx: Effects,
  moves: FiringMoves,
): void {
  if (pass > 1) resetPath(boundary, state, fx);
  save(boundary.id, pending > 0 ? { pass, pending } : { pass }, state, fx);
  moves.leave(boundary);
}

/** A firing's path is open while a step of it runs, waits in an incident, or has ended with outputs not yet resolved. */
function pathOpen(plan: Plan, boundary: PlanStep, state: InstanceState): boolean {
  const { steps } = indexPlan(plan);
  return (boundary.boundary?.repeats?.steps ?? []).some((id) => {
    const status = state.steps[id];
    if (status === 'active' || status === 'incident') return true;
    if (status !== 'completed' && status !== 'skipped') return false;
    return (steps.get(id)?.outgoing ?? []).some((f) => state.flows[f] === undefined);
  });
}

/** Fresh states for the path: what the firing before wrote is history only (its rows are removed, as a loop pass's are). */
function resetPath(boundary: PlanStep, state: InstanceState, fx: Effects): void {
  const steps = new Set(boundary.boundary?.repeats?.steps ?? []);
  const flows = new Set(boundary.boundary?.repeats?.flows ?? []);
  for (const id of steps) {
    delete state.steps[id];
    delete state.loops?.[id];
    delete fx.loops[id];
  }
  for (const id of flows) delete state.flows[id];
  fx.steps = fx.steps.filter((x) => !steps.has(x.stepId));
  fx.flows = fx.flows.filter((x) => !flows.has(x.flowId));
  fx.endedWaits = fx.endedWaits.filter((id) => !steps.has(id));
  fx.timers = fx.timers.filter((x) => !steps.has(x.stepId));
  fx.subscriptions = fx.subscriptions.filter((x) => !steps.has(x.stepId));
  if (state.completedOrder) state.completedOrder = state.completedOrder.filter((id) => !steps.has(id));
  fx.resetSteps.push(...steps);
  fx.resetFlows.push(...flows);
}

/**
 * A repeating conditional boundary's condition was evaluated: it fires when the condition turns
 * true (BPMN's rule), not again while it stays true; the flip is written with its row.
 */
export function noteCondition(boundaryId: string, holds: boolean, state: InstanceState, fx: Effects): boolean {
  const before = firingsOf(state, boundaryId);
  const turnedTrue = holds && before?.held !== true;
  if ((before?.held === true) !== holds) save(boundaryId, { pass: 0, ...before, held: holds }, state, fx);
  return turnedTrue;
}

/** The boundary's progress, written with its row; a conditional boundary's last evaluation stays. */
function save(boundaryId: string, next: PassState, state: InstanceState, fx: Effects): void {
  const held = firingsOf(state, boundaryId)?.held;
  const progress = held !== undefined && next.held === undefined ? { ...next, held } : next;
  (state.loops ??= {})[boundaryId] = progress;
  fx.loops[boundaryId] = progress;
  fx.steps.push({ stepId: boundaryId, status: state.steps[boundaryId] as StepStatus });
}
