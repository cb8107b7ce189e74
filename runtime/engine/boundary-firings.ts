// Repeating boundaries (docs/events.md, "Repeating boundaries"): a non-interrupting message,
// signal, timer-cycle, escalation or conditional boundary whose path is its own keeps waiting after it fires,
// and each firing runs that path afresh as a pass of the boundary (its steps' scope path is
// `/<boundary>#<firing>`), with fresh step and flow states as a loop's pass has. A firing that
// comes while the path of the one before still runs waits for it: firings of one boundary run
// one after another, none is lost. A non-interrupting event subprocess runs its body once per
// firing of its start event the same way: the event subprocess keeps the count and its inner
// steps are the pass. advance.ts evaluates the steps; this module decides about firings and calls
// back into it (FiringMoves), as loop-passes.ts does.
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
  /** a non-interrupting event subprocess's input mappings become the firing's locals; false: they failed, and it stopped in an incident */
  enter(eventSub: PlanStep): boolean;
}

/** Firings started (`pass`) and waiting (`pending`) of a repeating boundary; undefined before its first. */
export function firingsOf(state: InstanceState, boundaryId: string): PassState | undefined {
  const stored = state.loops?.[boundaryId];
  return stored && 'pass' in stored ? stored : undefined;
}

/** The step that counts the firings of `catcher`: a boundary itself, or the event subprocess a start event starts. */
export function ownerOf(plan: Plan, catcher: PlanStep): PlanStep {
  return catcher.kind === 'eventSubProcessStart' ? (indexPlan(plan).steps.get(catcher.scope ?? '') as PlanStep) : catcher;
}

/** What a firing runs afresh, for a repeating boundary or a non-interrupting event subprocess. */
export function repeatsOf(step: PlanStep): { steps: string[]; flows: string[] } | undefined {
  return step.boundary?.repeats ?? step.eventSubProcess?.repeats;
}

/**
 * The boundary (or the start event of a non-interrupting event subprocess) fired: it waits again
 * at once, and its path (the body) runs now or after the one of the firing before.
 */
export function fireRepeating(
  plan: Plan,
  catcher: PlanStep,
  state: InstanceState,
  fx: Effects,
  moves: FiringMoves,
  data?: Record<string, unknown>,
): void {
  const owner = ownerOf(plan, catcher);
  const before = firingsOf(state, owner.id);
  const started = before?.pass ?? 0;
  const pending = before?.pending ?? 0;
  const firing = started + pending + 1;
  // The wait this firing consumed is not written, if this transition made it (a message from the inbox).
  fx.subscriptions = fx.subscriptions.filter((s) => s.stepId !== catcher.id);
  fx.timers = fx.timers.filter((t) => t.stepId !== catcher.id);
  moves.event({ kind: 'step:completed', stepId: catcher.id, data: { trigger: catcher.wait?.trigger, firing, ...data } });
  if (!moves.rearm(catcher, firing)) moves.setStep(catcher.id, 'completed');
  if (started > 0 && firingOpen(plan, owner, state)) {
    save(owner.id, { pass: started, pending: pending + 1 }, state, fx);
    const kind = owner.eventSubProcess ? 'eventSubProcess:queued' : 'boundary:queued';
    moves.event({ kind, stepId: owner.id, data: { firing, runningFiring: started } });
    return;
  }
  startFiring(plan, owner, started + 1, pending, state, fx, moves);
}

/**
 * The path of a firing may have ended: a firing that waited for it starts now, unless the boundary
 * was canceled (or the event subprocess, or its start event, with an interrupted scope).
 */
export function settleFirings(plan: Plan, owner: PlanStep, state: InstanceState, fx: Effects, moves: FiringMoves): void {
  const progress = firingsOf(state, owner.id);
  if (!progress?.pending || state.steps[owner.id] === 'canceled' || firingOpen(plan, owner, state)) return;
  if (owner.eventSubProcess && state.steps[owner.eventSubProcess.start] === 'canceled') return;
  startFiring(plan, owner, progress.pass + 1, progress.pending - 1, state, fx, moves);
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
  owner: PlanStep,
  pass: number,
  pending: number,
  state: InstanceState,
  fx: Effects,
  moves: FiringMoves,
): void {
  if (pass > 1) resetPath(owner, state, fx);
  if (owner.eventSubProcess) moves.setStep(owner.id, 'active');
  // A firing starts afresh: the locals of the one before (an event subprocess's inputs) are gone.
  save(owner.id, pending > 0 ? { pass, pending } : { pass }, state, fx, false);
  if (!owner.eventSubProcess) return moves.leave(owner);
  // Inputs that fail hold the event subprocess in an incident before this firing's body runs; the retry enters it (advance.ts).
  if (!moves.enter(owner)) return;
  moves.event({ kind: 'step:activated', stepId: owner.id, data: { firing: pass } });
  moves.leave(indexPlan(plan).steps.get(owner.eventSubProcess.start) as PlanStep);
}

/** A firing is open while its event subprocess runs, or while a step of its boundary path runs, waits in an incident, or has ended with outputs not yet resolved. */
function firingOpen(plan: Plan, owner: PlanStep, state: InstanceState): boolean {
  if (owner.eventSubProcess) return state.steps[owner.id] === 'active' || state.steps[owner.id] === 'incident';
  const { steps } = indexPlan(plan);
  return (owner.boundary?.repeats?.steps ?? []).some((id) => {
    const status = state.steps[id];
    if (status === 'active' || status === 'incident') return true;
    if (status !== 'completed' && status !== 'skipped') return false;
    return (steps.get(id)?.outgoing ?? []).some((f) => state.flows[f] === undefined);
  });
}

/** Fresh states for the path: what the firing before wrote is history only (its rows are removed, as a loop pass's are). */
function resetPath(owner: PlanStep, state: InstanceState, fx: Effects): void {
  const steps = new Set(repeatsOf(owner)?.steps ?? []);
  const flows = new Set(repeatsOf(owner)?.flows ?? []);
  // The owner's count stays: an event subprocess's row is removed with its body and written again as it starts.
  const kept = state.loops?.[owner.id];
  for (const id of steps) {
    delete state.steps[id];
    delete state.loops?.[id];
    delete fx.loops[id];
  }
  if (kept !== undefined) (state.loops ??= {})[owner.id] = kept;
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

/**
 * The boundary's progress, written with its row; a conditional boundary's last evaluation stays,
 * and so do the locals of the firing that runs unless `keepLocals` is false (a new firing starts).
 */
function save(boundaryId: string, next: PassState, state: InstanceState, fx: Effects, keepLocals = true): void {
  const before = firingsOf(state, boundaryId);
  const held = before?.held;
  let progress: PassState = held !== undefined && next.held === undefined ? { ...next, held } : next;
  if (keepLocals && before?.locals) progress = { ...progress, locals: before.locals };
  (state.loops ??= {})[boundaryId] = progress;
  fx.loops[boundaryId] = progress;
  fx.steps.push({ stepId: boundaryId, status: state.steps[boundaryId] as StepStatus });
}
