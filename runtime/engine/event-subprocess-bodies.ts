// Non-interrupting event subprocesses whose firings run side by side (docs/scopes.md, "Event
// subprocesses"): each firing runs the body in a child instance of its own, as each element of a
// parallel multi-instance subprocess does (compiler/subprocess-bodies.ts). The start event waits
// in the process and waits again as it fires; the event subprocess is active while a firing runs,
// so its scope waits for it, and its row counts the firings started and running. advance.ts
// evaluates the steps; this module decides about firings and calls back into it (BodyMoves), as
// boundary-firings.ts does.
import type { Plan, PlanStep } from '../compiler/plan.ts';
import type { Effects, ElementReturn, InstanceState, NewEvent, PassState, Variables } from '../model/effects.ts';
import type { IncidentKind, StepStatus } from '../model/vocabulary.ts';
import { firingsOf, ownerOf } from './boundary-firings.ts';
import { inputNames, mapInputs, mapOutputs } from './io-mappings.ts';
import { scopePathOf } from './loop-passes.ts';
import { scopeLocals, visibleVariables } from './scope-variables.ts';

export interface BodyMoves {
  /** the start event waits again; false: it has fired its last (a timer cycle's end) */
  rearm(start: PlanStep, firings: number): boolean;
  setStep(stepId: string, status: StepStatus): void;
  event(event: NewEvent): void;
  raise(stepId: string, kind: IncidentKind, message: string, details: Record<string, unknown>): void;
  /** writes variables from where the step sits */
  write(step: PlanStep, written: Variables | undefined): void;
  /** the event subprocess ended: the scope around it may end */
  ended(eventSub: PlanStep): void;
}

const RETRY = 'Fix the variables, then retry the incident';

/** Whether the event subprocess's firings run in child instances of its body. */
export function firesInChildren(step: PlanStep | undefined): boolean {
  return step?.kind === 'eventSubProcess' && step.call?.body !== undefined;
}

/** The start event of such an event subprocess fired: it waits again at once, and the firing's body starts. */
export function fireInBody(
  plan: Plan,
  start: PlanStep,
  state: InstanceState,
  vars: Variables,
  fx: Effects,
  moves: BodyMoves,
  data?: Record<string, unknown>,
): void {
  const eventSub = ownerOf(plan, start);
  const firing = (firingsOf(state, eventSub.id)?.pass ?? 0) + 1;
  // The wait this firing consumed is not written, if this transition made it (a message from the inbox).
  fx.subscriptions = fx.subscriptions.filter((s) => s.stepId !== start.id);
  fx.timers = fx.timers.filter((t) => t.stepId !== start.id);
  moves.event({ kind: 'step:completed', stepId: start.id, data: { trigger: start.wait?.trigger, firing, ...data } });
  if (!moves.rearm(start, firing)) moves.setStep(start.id, 'completed');
  save(eventSub, { ...progressOf(state, eventSub), pass: firing }, state, fx);
  startFiring(plan, eventSub, firing, state, vars, fx, moves);
}

/**
 * Firing `firing` starts its body: a child instance with every variable the event subprocess sees
 * and its input mappings as the firing's locals. Inputs that fail hold the firing for the retry of
 * the incident they raise; firings that come meanwhile start as they come.
 */
function startFiring(
  plan: Plan,
  eventSub: PlanStep,
  firing: number,
  state: InstanceState,
  vars: Variables,
  fx: Effects,
  moves: BodyMoves,
): void {
  const outer = scopeLocals(plan, eventSub, state) ?? {};
  const inputs = eventSub.io ? mapInputs(eventSub, visibleVariables(plan, eventSub, state, vars), outer) : undefined;
  if (inputs && !inputs.ok) {
    recall(eventSub, firing, state, fx);
    return stop(eventSub, 'io_mapping', inputs.message, { ...inputs.details, firing }, state, moves);
  }
  if (inputs?.writes) moves.write(eventSub, inputs.writes);
  const inherited: Variables = { ...vars, ...outer };
  for (const name of inputNames(eventSub)) delete inherited[name];
  fx.calls.push({
    stepId: eventSub.id,
    key: (eventSub.call?.process as { key: string }).key,
    sameDeployment: true,
    variables: { ...vars, ...(inputs?.locals ?? outer) },
    businessKey: eventSub.call?.businessKey ?? false,
    loopIndex: firing,
    body: true,
    inherited,
    ...scopePathOf(plan, eventSub, state),
  });
  const progress = progressOf(state, eventSub);
  save(eventSub, { ...progress, running: (progress.running ?? 0) + 1 }, state, fx);
  if (state.steps[eventSub.id] !== 'incident') moves.setStep(eventSub.id, 'active');
  moves.event({ kind: 'step:activated', stepId: eventSub.id, data: { firing } });
}

/**
 * A firing's child completed: what its body changed reaches the process (its inputs and the
 * locals of the scopes around it stay theirs), then the event subprocess's output mappings,
 * evaluated over what the body saw as it ended. Mappings that fail keep the return for the retry.
 */
export function returnFiring(
  plan: Plan,
  eventSub: PlanStep,
  back: ElementReturn,
  state: InstanceState,
  vars: Variables,
  fx: Effects,
  moves: BodyMoves,
): void {
  ended(eventSub, state, fx);
  applyReturn(plan, eventSub, back, state, vars, fx, moves);
}

/** A return of a firing that no longer runs: applied as it comes, or kept again by the retry, with the retry's variables over it. */
function applyReturn(
  plan: Plan,
  eventSub: PlanStep,
  back: ElementReturn,
  state: InstanceState,
  vars: Variables,
  fx: Effects,
  moves: BodyMoves,
  fixes?: Variables,
): void {
  const own = new Set([...inputNames(eventSub), ...Object.keys(scopeLocals(plan, eventSub, state, true) ?? {})]);
  const returned = fixes ? { ...back.variables, ...fixes } : back.variables;
  const seen = visibleVariables(plan, eventSub, state, vars);
  const outputs = eventSub.io?.outputs.length ? mapOutputs(eventSub, { ...seen, ...returned }, seen, RETRY) : undefined;
  if (outputs && !outputs.ok) {
    const progress = progressOf(state, eventSub);
    save(eventSub, { ...progress, heldReturns: [...(progress.heldReturns ?? []), back] }, state, fx);
    return stop(
      eventSub,
      'io_mapping',
      outputs.message,
      { ...outputs.details, childInstanceId: back.childInstanceId },
      state,
      moves,
    );
  }
  moves.write(eventSub, Object.fromEntries(Object.entries(back.variables).filter(([name]) => !own.has(name))));
  if (outputs) moves.write(eventSub, outputs.variables);
  moves.event({
    kind: 'eventSubProcess:firing_completed',
    stepId: eventSub.id,
    data: { firing: back.index, childInstanceId: back.childInstanceId },
  });
  settleBodies(eventSub, state, moves);
}

/**
 * A firing's child ended without completing (compensated, or a BPMN error nothing caught): an
 * incident on the event subprocess, whose retry starts that firing again.
 */
export function firingStopped(
  eventSub: PlanStep,
  firing: number,
  kind: IncidentKind,
  message: string,
  details: Record<string, unknown>,
  state: InstanceState,
  fx: Effects,
  moves: BodyMoves,
): void {
  ended(eventSub, state, fx);
  recall(eventSub, firing, state, fx);
  stop(eventSub, kind, message, { ...details, firing }, state, moves);
}

/**
 * The retry of the event subprocess's incident: the firings it held start again, then the returns
 * it kept are applied in the order they came (only the first, whose mappings failed, reads the
 * retry's variables). The firings start first: a return that ends the last running firing must
 * not end the event subprocess while they wait to start.
 */
export function retryFirings(
  plan: Plan,
  eventSub: PlanStep,
  state: InstanceState,
  vars: Variables,
  fx: Effects,
  moves: BodyMoves,
  fixes?: Variables,
): void {
  const { heldReturns, recall: held, ...progress } = progressOf(state, eventSub);
  save(eventSub, progress, state, fx);
  moves.setStep(eventSub.id, 'active');
  for (const firing of held ?? []) {
    moves.event({ kind: 'eventSubProcess:firing_restarted', stepId: eventSub.id, data: { firing } });
    startFiring(plan, eventSub, firing, state, vars, fx, moves);
  }
  (heldReturns ?? []).forEach((back, i) =>
    applyReturn(plan, eventSub, back, state, vars, fx, moves, i === 0 ? fixes : undefined),
  );
  settleBodies(eventSub, state, moves);
}

/** No firing runs any more and none waits in an incident: the event subprocess has ended, and its scope may end. */
function settleBodies(eventSub: PlanStep, state: InstanceState, moves: BodyMoves): void {
  if (state.steps[eventSub.id] !== 'active' || (progressOf(state, eventSub).running ?? 0) > 0) return;
  moves.setStep(eventSub.id, 'completed');
  moves.ended(eventSub);
}

/** Raises the incident, or, when the event subprocess already waits in one, records the firing it holds too. */
function stop(
  eventSub: PlanStep,
  kind: IncidentKind,
  message: string,
  details: Record<string, unknown>,
  state: InstanceState,
  moves: BodyMoves,
): void {
  if (state.steps[eventSub.id] === 'incident')
    return moves.event({ kind: 'eventSubProcess:firing_held', stepId: eventSub.id, data: { kind, message, ...details } });
  moves.raise(eventSub.id, kind, message, details);
}

function ended(eventSub: PlanStep, state: InstanceState, fx: Effects): void {
  const progress = progressOf(state, eventSub);
  save(eventSub, { ...progress, running: Math.max(0, (progress.running ?? 0) - 1) }, state, fx);
}

function recall(eventSub: PlanStep, firing: number, state: InstanceState, fx: Effects): void {
  const progress = progressOf(state, eventSub);
  if (progress.recall?.includes(firing)) return;
  save(eventSub, { ...progress, recall: [...(progress.recall ?? []), firing] }, state, fx);
}

function progressOf(state: InstanceState, eventSub: PlanStep): PassState {
  return firingsOf(state, eventSub.id) ?? { pass: 0 };
}

/** The event subprocess's progress, written with its row. */
function save(eventSub: PlanStep, progress: PassState, state: InstanceState, fx: Effects): void {
  (state.loops ??= {})[eventSub.id] = progress;
  fx.loops[eventSub.id] = progress;
  if (state.steps[eventSub.id] !== undefined)
    fx.steps.push({ stepId: eventSub.id, status: state.steps[eventSub.id] as StepStatus });
}
