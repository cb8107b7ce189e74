// Pure step-graph evaluation (docs/ARCHITECTURE.md, "Execution rule: acyclic step graphs with
// dead-path elimination", loops one pass at a time): given the resolved flows and reached steps
// of one instance, compute what a transition changes. No I/O: the store writes the returned
// Effects in one statement.
import type { Plan, PlanStep, StepKind } from '../compiler/plan.ts';
import { evaluateKey } from '../shared/feel.ts';
import { testCondition } from './conditions.ts';
import { nextCycleDue, timerDue } from './timer-due.ts';
import {
  endRepeating,
  fireRepeating,
  noteCondition,
  ownerOf,
  repeatsOf,
  settleFirings,
  type FiringMoves,
} from './boundary-firings.ts';
import { startCompensationThrow } from './compensate.ts';
import {
  fireInBody,
  firesInChildren,
  firingStopped,
  retryFirings,
  returnFiring,
  type BodyMoves,
} from './event-subprocess-bodies.ts';
import { decideOutgoing } from './gateway-decisions.ts';
import { inputNames, mapInputs, mapOutputs, passingMappings, resultVariables, signalPayload } from './io-mappings.ts';
import { runScript } from './scripts.ts';
import { evaluateUserTask } from './user-task-details.ts';
import { pinOf, prepareCall, returnedVariables, type CallReturn } from './call-variables.ts';
import { indexPlan } from './plan-index.ts';
import {
  armEventSubProcesses,
  disarmEventSubProcesses,
  eventStartsOf,
  fireEventSubProcess,
  interruptScope,
  rearm,
  settleProcess,
  type ScopeMoves,
} from './event-subprocesses.ts';
import type { FlowState, IncidentKind, StepStatus } from '../model/vocabulary.ts';
import {
  type Effects,
  type ElementReturn,
  type HeldPayload,
  type InstanceState,
  type NewEvent,
  type Variables,
} from '../model/effects.ts';
import { passOf, scopePathOf, settleLoops, startPass, type PassMoves } from './loop-passes.ts';
import { elementPassEnded, readElements } from './element-passes.ts';
import {
  enterSubprocess,
  leaveSubprocess,
  scopeLocals,
  visibleVariables,
  writeCaughtVariables,
  writeVariables,
} from './scope-variables.ts';
import {
  callElementAgain,
  completeElement,
  elementLocals,
  elementsOf,
  settleElements,
  startElements,
  type ElementMoves,
} from './multi-instance.ts';

/** The steps the token passes at once whose mappings run as it passes (compiler/io-mappings.ts). */
const PASSING: ReadonlySet<StepKind> = new Set<StepKind>(['startEvent', 'endEvent', 'passThrough', 'signalThrow']);

/**
 * Lets the new instance's token leave its start event: the given one (a timer start
 * event that fired), else the none start event. Other start events are skipped.
 */
export function startPlan(plan: Plan, state: InstanceState, vars: Variables, fx: Effects, startEventId?: string): void {
  const starts = plan.steps.filter((s) => s.kind === 'startEvent' && s.scope === undefined);
  const chosen = starts.find((s) => (startEventId ? s.id === startEventId : s.wait === undefined));
  for (const step of starts) {
    if (step === chosen) continue;
    setStep(state, fx, step.id, 'skipped');
    resolveFlows(plan, step, [], state, vars, fx);
  }
  if (!chosen) return;
  armEventSubProcesses(plan, undefined, scopeMoves(plan, state, vars, fx));
  activateStep(plan, chosen, state, vars, fx);
  settleConditions(plan, state, vars, fx);
}

/** Completes a waiting step (a task) and moves the token on; its boundary events that did not fire are skipped. */
export function completeStep(
  plan: Plan,
  stepId: string,
  state: InstanceState,
  vars: Variables,
  fx: Effects,
  data?: Record<string, unknown>,
): void {
  const step = stepById(plan, stepId);
  setStep(state, fx, step.id, 'completed');
  pushEvent(plan, state, fx, { kind: 'step:completed', stepId: step.id, ...(data ? { data } : {}) });
  skipOpenBoundaries(plan, step, state, vars, fx);
  leaveStep(plan, step, state, vars, fx);
  settleConditions(plan, state, vars, fx);
}

/**
 * A catch or boundary event's wait is over (timer due, message matched, signal
 * received, error caught). An interrupting boundary cancels its host first: the
 * host's task, its other boundaries and its outgoing flows. Answers false when
 * the step is no longer waiting (it already fired, or its host ended).
 */
export function fireWait(
  plan: Plan,
  stepId: string,
  state: InstanceState,
  vars: Variables,
  fx: Effects,
  data?: Record<string, unknown>,
  /** an interrupting boundary whose host its message already interrupted (its payload's retry) */
  hostInterrupted = false,
): boolean {
  const fired = fireWaitNow(plan, stepId, state, vars, fx, data, hostInterrupted);
  if (fired) settleConditions(plan, state, vars, fx);
  return fired;
}

/**
 * The conditional events waiting in the instance look at the variables as the transition leaves
 * them: each whose condition holds fires, which may move the token to more of them, so they look
 * again until none fires. One whose condition cannot be evaluated stops in an incident; its retry
 * waits again. Every transition's entry point ends here, so a variable change (a worker's result,
 * a message's payload, a retry's variables, a script) is seen in the transition that makes it.
 */
function settleConditions(plan: Plan, state: InstanceState, vars: Variables, fx: Effects): void {
  const waiting = indexPlan(plan).conditionals;
  if (waiting.length === 0 || fx.terminated) return;
  for (let round = 0; round <= waiting.length; round++) {
    let fired = false;
    for (const step of waiting) {
      if (state.steps[step.id] !== 'active' || step.wait?.trigger !== 'conditional') continue;
      const { source } = step.wait.condition;
      const result = testCondition(step.wait.condition, visibleVariables(plan, step, state, vars));
      // A repeating boundary (or non-interrupting event subprocess) fires each time its condition turns true, not at every look while it holds.
      if (result.ok && firesAgain(plan, step) && !noteCondition(step.id, result.value, state, fx)) continue;
      if (!result.ok) {
        raiseIncident(
          plan,
          state,
          fx,
          step.id,
          'condition_error',
          `Condition of ${step.id} failed: ${result.message}. Fix the variables, then retry the incident.`,
          { condition: source },
        );
        continue;
      }
      if (!result.value) continue;
      const data = { condition: source };
      if (mapsWhenFired(step)) {
        if (mapFired(plan, step, state, vars, {}, fx, data)) fireWaitNow(plan, step.id, state, vars, fx, data);
        fired = true;
      } else if (fireWaitNow(plan, step.id, state, vars, fx, data)) fired = true;
    }
    if (!fired) return;
  }
}

/**
 * A catch or boundary event's wait is over (timer due, message matched, signal
 * received, error caught). An interrupting boundary cancels its host first: the
 * host's task (a receive task's wait), its other boundaries and its outgoing flows;
 * a receive task whose message came first skips its boundaries. Answers false when
 * the step is no longer waiting (it already fired, or its host ended).
 */
function fireWaitNow(
  plan: Plan,
  stepId: string,
  state: InstanceState,
  vars: Variables,
  fx: Effects,
  data?: Record<string, unknown>,
  hostInterrupted = false,
): boolean {
  const step = stepById(plan, stepId);
  if (state.steps[step.id] === 'active' && step.kind === 'eventSubProcessStart') {
    if (firesInChildren(ownerOf(plan, step))) fireInBody(plan, step, state, vars, fx, bodyMoves(plan, state, vars, fx), data);
    else if (repeatsOf(ownerOf(plan, step))) fireRepeating(plan, step, state, fx, firingMoves(plan, state, vars, fx), data);
    else fireEventSubProcess(plan, step, scopeMoves(plan, state, vars, fx), data);
    return true;
  }
  if (state.steps[step.id] !== 'active' || (step.kind !== 'catchEvent' && step.kind !== 'boundaryEvent')) return false;
  if (step.boundary?.repeats) {
    fireRepeating(plan, step, state, fx, firingMoves(plan, state, vars, fx), data);
    return true;
  }
  // An interrupting boundary whose payload could not be mapped interrupted its host when the
  // message came (interruptHost); the retry that maps it only moves on.
  const host = step.boundary?.interrupting && !hostInterrupted ? stepById(plan, step.boundary.attachedTo) : undefined;
  if (host && !cancelHost(plan, step, host, state, fx)) return false;
  setStep(state, fx, step.id, 'completed');
  fx.endedWaits.push(step.id);
  pushEvent(plan, state, fx, { kind: 'step:completed', stepId: step.id, data: { trigger: step.wait?.trigger, ...data } });
  endRace(plan, step, state, vars, fx);
  skipOpenBoundaries(plan, step, state, vars, fx); // a receive task's: its message came first
  if (host) {
    skipOpenBoundaries(plan, host, state, vars, fx);
    resolveFlows(plan, host, [], state, vars, fx); // the host's own path is dead
  }
  leaveStep(plan, step, state, vars, fx);
  return true;
}

/**
 * An interrupting boundary cancels its host: its task, wait, call or scope. A host in an incident
 * is still open: its boundaries still fire (its failed task is canceled, its incident resolved), as
 * they would in Camunda; a deadline does not wait for an operator. Answers false when the host is
 * no longer open.
 */
function cancelHost(plan: Plan, boundary: PlanStep, host: PlanStep, state: InstanceState, fx: Effects): boolean {
  const hostStatus = state.steps[host.id];
  if (hostStatus !== 'active' && hostStatus !== 'incident') return false;
  setStep(state, fx, host.id, 'canceled');
  // A receive task waits (its subscription ends); canceledTasks makes a task unfetchable and resolves an incident.
  if (host.kind === 'catchEvent') fx.endedWaits.push(host.id);
  if (host.kind !== 'catchEvent' || hostStatus === 'incident') fx.canceledTasks.push(host.id);
  if (host.kind === 'callActivity') fx.canceledCalls.push(host.id);
  pushEvent(plan, state, fx, { kind: 'step:canceled', stepId: host.id, data: { by: boundary.id } });
  if (host.kind === 'subProcess') cancelScope(plan, host.id, boundary.id, state, fx);
  return true;
}

/**
 * An interrupting boundary's message came but its output mappings could not map the payload: the
 * host is interrupted all the same (Zeebe's order: the host ends, then the boundary's mappings
 * run), its other boundaries and its path end, and the boundary waits in its incident.
 */
function interruptHost(plan: Plan, boundary: PlanStep, state: InstanceState, vars: Variables, fx: Effects): void {
  const host = stepById(plan, boundary.boundary!.attachedTo);
  if (!cancelHost(plan, boundary, host, state, fx)) return;
  skipOpenBoundaries(plan, host, state, vars, fx, boundary.id);
  resolveFlows(plan, host, [], state, vars, fx);
}

/**
 * A message or signal reaches the step waiting for it, or its timer falls due (an empty
 * payload): the payload is written (through a catch event's output mappings, when it has some)
 * and the wait fires. Answers whether it fired.
 */
export function deliverPayload(
  plan: Plan,
  stepId: string,
  state: InstanceState,
  vars: Variables,
  payload: Variables,
  fx: Effects,
  data?: Record<string, unknown>,
): boolean {
  const step = stepById(plan, stepId);
  if (mapsWhenFired(step)) {
    if (state.steps[stepId] !== 'active') return false;
    mapPayload(plan, step, state, vars, payload, fx, data);
    return true;
  }
  writeVariables(plan, step, state, vars, payload, fx);
  return fireWait(plan, stepId, state, vars, fx, data);
}

/**
 * Writes what the output mappings make of `payload` and fires the wait. A mapping that fails
 * writes nothing: the wait ends, the payload is kept on the step's row and the step stops in an
 * io_mapping incident, whose retry maps the payload again (Zeebe's rule).
 */
function mapPayload(
  plan: Plan,
  step: PlanStep,
  state: InstanceState,
  vars: Variables,
  payload: Variables,
  fx: Effects,
  data?: Record<string, unknown>,
  /** the retry of its io_mapping incident, which maps the payload it kept */
  retried = false,
): void {
  if (mapFired(plan, step, state, vars, payload, fx, data))
    fireWait(plan, step.id, state, vars, fx, data, retried && step.boundary?.interrupting === true);
}

/**
 * An error or escalation boundary (or event subprocess) catches what was thrown: its code and
 * message go to the variables the catcher names; a catcher with output mappings maps what an
 * error carries (a worker's or a person's variables; an escalation carries none), writing only
 * their targets. One that fails holds them in the catcher's incident, its host (or scope)
 * interrupted all the same when it interrupts. Without mappings the caller has written the
 * error's variables as the reporting step's (catchesMapped).
 */
export function catchThrown(
  plan: Plan,
  catcher: PlanStep,
  state: InstanceState,
  vars: Variables,
  fx: Effects,
  caught: { code: string | null; message?: string | null; variables?: Variables },
  data: Record<string, unknown>,
): void {
  writeCaughtVariables(plan, catcher, state, vars, caught, fx);
  if (catchesMapped(catcher)) return mapPayload(plan, catcher, state, vars, caught.variables ?? {}, fx, data);
  fireWait(plan, catcher.id, state, vars, fx, data);
}

/** Whether the catcher maps what was thrown (its output mappings), instead of writing it. */
export function catchesMapped(catcher: PlanStep | undefined): boolean {
  const trigger = catcher?.wait?.trigger;
  return catcher !== undefined && (trigger === 'error' || trigger === 'escalation') && mapsWhenFired(catcher);
}

/** Whether a firing of `step` goes through its output mappings (compiler/io-mappings.ts): a timer's and a condition's over the variables alone. */
function mapsWhenFired(step: PlanStep): boolean {
  const trigger = step.wait?.trigger;
  return (
    (step.kind === 'catchEvent' || step.kind === 'boundaryEvent' || step.kind === 'eventSubProcessStart') &&
    (step.io?.outputs.length ?? 0) > 0 &&
    trigger !== undefined &&
    ['message', 'signal', 'timer', 'conditional', 'error', 'escalation'].includes(trigger)
  );
}

/** The output mappings of a firing, written; false when they failed and the step holds the payload in its incident. */
function mapFired(
  plan: Plan,
  step: PlanStep,
  state: InstanceState,
  vars: Variables,
  payload: Variables,
  fx: Effects,
  data?: Record<string, unknown>,
): boolean {
  const mapped = resultVariables(
    step,
    visibleVariables(plan, step, state, vars),
    {},
    payload,
    'Fix the variables, then retry the incident',
  );
  const stored = state.loops?.[step.id];
  const wasHeld = stored !== undefined && 'heldPayload' in stored && stored.heldPayload !== null;
  // A repeating boundary's row also counts its firings, a catch event's holds its inputs' locals:
  // the payload is kept beside them.
  const keep = (held: HeldPayload): void => {
    const kept = stored !== undefined && ('pass' in stored || 'locals' in stored) ? { ...stored, ...held } : held;
    (state.loops ??= {})[step.id] = kept;
    fx.loops[step.id] = kept;
  };
  if (!mapped.ok) {
    keep({ heldPayload: payload, ...(data ? { heldData: data } : {}) });
    fx.endedWaits.push(step.id);
    if (step.boundary?.interrupting) interruptHost(plan, step, state, vars, fx);
    // An interrupting event subprocess's trigger has interrupted its scope all the same (Zeebe's order).
    if (step.kind === 'eventSubProcessStart' && ownerOf(plan, step).eventSubProcess?.interrupting !== false)
      interruptScope(plan, step, scopeMoves(plan, state, vars, fx));
    // After an event-based gateway it won the race all the same: the other events stop waiting.
    endRace(plan, step, state, vars, fx);
    raiseIncident(plan, state, fx, step.id, 'io_mapping', mapped.message, mapped.details);
    return false;
  }
  if (wasHeld) keep({ heldPayload: null });
  writeVariables(plan, step, state, vars, mapped.variables, fx);
  return true;
}

/**
 * A catch event after an event-based gateway fired first: the gateway's other events stop
 * waiting and their paths are skipped in the same transition, so a later timer or message
 * for them finds nothing to fire (a message goes to the inbox like any unmatched one).
 */
function endRace(plan: Plan, winner: PlanStep, state: InstanceState, vars: Variables, fx: Effects): void {
  const index = indexPlan(plan);
  for (const flowId of winner.incoming) {
    const gateway = index.steps.get(index.flows.get(flowId)?.source ?? '');
    if (gateway?.kind !== 'eventBasedGateway') continue;
    for (const outgoing of gateway.outgoing) {
      const other = index.steps.get(index.flows.get(outgoing)?.target ?? '');
      const status = other ? state.steps[other.id] : undefined;
      if (!other || other === winner || (status !== 'active' && status !== 'incident')) continue;
      setStep(state, fx, other.id, 'skipped');
      fx.endedWaits.push(other.id);
      if (status === 'incident') fx.canceledTasks.push(other.id); // resolves its incident (a correlation key that failed)
      pushEvent(plan, state, fx, { kind: 'step:skipped', stepId: other.id, data: { by: winner.id } });
      resolveFlows(plan, other, [], state, vars, fx);
    }
  }
}

/**
 * The open error boundary that catches `code` thrown at `hostId`: on the host
 * itself, else on its enclosing subprocesses, innermost first. On each, an exact
 * code match first, then a catch-all.
 */
export function findErrorBoundary(
  plan: Plan,
  hostId: string | undefined,
  code: string | undefined,
  state: InstanceState,
): PlanStep | undefined {
  return findCatcher(plan, 'error', hostId, code, state);
}

/** The open boundary or event subprocess start that catches an escalation raised at `hostId` (a user task's holder raises one). */
export function findEscalationCatcher(plan: Plan, hostId: string, code: string, state: InstanceState): PlanStep | undefined {
  return findCatcher(plan, 'escalation', hostId, code, state);
}

/**
 * The open boundary or event subprocess start that catches an error or escalation thrown at
 * `hostId`: the host's own boundaries, then the event subprocesses of the scope it is in, then the
 * same for each enclosing subprocess outward. At each level an exact code match beats a catch-all.
 */
function findCatcher(
  plan: Plan,
  trigger: 'error' | 'escalation',
  hostId: string | undefined,
  code: string | undefined,
  state: InstanceState,
  status: 'active' | 'completed' = 'active',
): PlanStep | undefined {
  const codeOf = (b: PlanStep) =>
    b.wait?.trigger === 'error' ? b.wait.errorCode : b.wait?.trigger === 'escalation' ? b.wait.escalationCode : undefined;
  const catching = (candidates: string[]): PlanStep | undefined => {
    const open = candidates
      .map((id) => stepById(plan, id))
      .filter((b) => b.wait?.trigger === trigger && state.steps[b.id] === status);
    return open.find((b) => code !== undefined && codeOf(b) === code) ?? open.find((b) => codeOf(b) === undefined);
  };
  for (let at = hostId; at !== undefined; at = stepById(plan, at).scope) {
    const found = catching(stepById(plan, at).boundaries ?? []) ?? catching(eventStartsOf(plan, stepById(plan, at).scope));
    if (found) return found;
  }
  return undefined;
}

/** Runs a step that stopped in an incident again: a gateway decides again. */
export function resumeStep(
  plan: Plan,
  stepId: string,
  state: InstanceState,
  vars: Variables,
  fx: Effects,
  /** the variables the retry sets: a call's kept return is mapped again with them over it */
  fixes?: Variables,
): void {
  activateStep(plan, stepById(plan, stepId), state, vars, fx, true, fixes);
  settleConditions(plan, state, vars, fx);
}

/** The instance status implied by its step statuses after the transition. */
export function deriveStatus(
  state: InstanceState,
  fx: Effects,
): 'running' | 'incident' | 'completed' | 'compensating' | 'compensated' {
  if (fx.terminated) return 'completed';
  const statuses = Object.values(state.steps);
  if (statuses.includes('incident')) return 'incident';
  if (state.compensation?.active) return 'compensating';
  if (state.compensation?.saga) return statuses.includes('active') ? 'compensating' : 'compensated';
  return statuses.includes('active') ? 'running' : 'completed';
}

function stepById(plan: Plan, stepId: string): PlanStep {
  const step = indexPlan(plan).steps.get(stepId);
  if (!step) throw new Error(`Step ${stepId} is not in plan ${plan.processKey}`);
  return step;
}

function setStep(state: InstanceState, fx: Effects, stepId: string, status: StepStatus): void {
  state.steps[stepId] = status;
  fx.steps.push({ stepId, status });
  if (status === 'completed') (state.completedOrder ??= []).push(stepId);
}

function activateStep(
  plan: Plan,
  step: PlanStep,
  state: InstanceState,
  vars: Variables,
  fx: Effects,
  resumed = false,
  fixes?: Variables,
): void {
  if (fx.terminated) return;
  if (step.kind === 'loop') {
    // A loop marker's condition that failed was retried: decide again.
    setStep(state, fx, step.id, 'active');
    settleLoops(plan, new Set([step.id]), state, fx, passMoves(plan, state, vars, fx));
    return;
  }
  const cycle = indexPlan(plan).loopOfHead.get(step.id);
  if (cycle && state.steps[cycle.id] !== 'active' && cycle.cycle?.repeat?.elements) {
    const first = readElements(plan, cycle, state, vars);
    if (!first.ok) return raiseIncident(plan, state, fx, step.id, 'condition_error', first.message, first.details);
    if (first.progress.elements.length === 0) return skipLoopedStep(plan, step, state, vars, fx, { nrOfInstances: 0 });
    startPass(cycle, 1, state, fx, passMoves(plan, state, vars, fx), first.progress);
  } else if (cycle && state.steps[cycle.id] !== 'active') {
    if (cycle.cycle?.repeat?.testBefore) {
      const first = repeatHolds(plan, cycle, 0, state, vars, fx, step.id);
      if (first === undefined) return;
      if (!first) return skipLoopedStep(plan, step, state, vars, fx, { loopCondition: false });
    }
    startPass(cycle, 1, state, fx, passMoves(plan, state, vars, fx));
  }
  // What the step reads: the locals of the scopes around it over the process variables.
  let seen = visibleVariables(plan, step, state, vars);
  const elementsRun =
    (step.kind === 'serviceTask' && step.task) || (step.kind === 'callActivity' && step.call) || step.wait?.trigger === 'user';
  if (elementsRun && step.multiInstance) {
    const loop = elementsOf(state, step.id);
    if (resumed && loop) {
      // An incident of the completion condition, or of an element's outputs, was retried: the
      // element returns it kept are applied in the order they came; else decide again. Never restart.
      setStep(state, fx, step.id, 'active');
      const held = loop.heldReturns;
      const recall = loop.recall;
      delete loop.recall;
      if (!held?.length && !recall?.length)
        return settleElements(plan, step, loop, state, vars, fx, elementMoves(plan, state, vars, fx));
      delete loop.heldReturns;
      // The first is the one whose mappings failed: only it reads the retry's variables over its child's.
      (held ?? []).forEach((back, i) => {
        if (state.steps[step.id] === 'incident') holdElementReturn(step, back, state, fx);
        else if (state.steps[step.id] === 'active') returnElement(plan, step, back, state, vars, fx, i === 0 ? fixes : undefined);
      });
      // Elements whose child ended without completing are called again, unless the step is done or stopped again.
      for (const index of recall ?? []) {
        if (state.steps[step.id] === 'active')
          callElementAgain(plan, step, loop, index, state, vars, fx, elementMoves(plan, state, vars, fx));
        else if (state.steps[step.id] === 'incident') recallElement(step, index, state, fx);
      }
    } else {
      startElements(plan, step, state, vars, fx, elementMoves(plan, state, vars, fx));
    }
    return;
  }
  if (step.kind === 'serviceTask' && step.task) {
    // A task with a loop marker sees its pass as loopCounter, a local of its task.
    const counter = cycle?.cycle?.repeat && !cycle.cycle.repeat.elements ? { loopCounter: passOf(state, cycle.id) } : undefined;
    const own = scopeLocals(plan, step, state);
    const base = own || counter ? { ...own, ...counter } : undefined;
    const inputs = step.io ? mapInputs(step, vars, base) : undefined;
    if (inputs && !inputs.ok) return raiseIncident(plan, state, fx, step.id, 'io_mapping', inputs.message, inputs.details);
    const locals = inputs?.ok ? inputs.locals : base;
    if (inputs?.ok) writeVariables(plan, step, state, vars, inputs.writes, fx);
    setStep(state, fx, step.id, 'active');
    fx.tasks.push(
      locals
        ? { stepId: step.id, ...step.task, localVariables: locals, ...scopePathOf(plan, step, state) }
        : { stepId: step.id, ...step.task, ...scopePathOf(plan, step, state) },
    );
    pushEvent(plan, state, fx, { kind: 'step:activated', stepId: step.id });
    for (const boundaryId of step.boundaries ?? []) startWait(plan, stepById(plan, boundaryId), state, vars, fx);
    return;
  }
  // A boundary is armed with its host, an event subprocess's start with its scope: they activate
  // here only when their incident (a key or timer that could not be computed) is retried.
  if (step.kind === 'catchEvent' || step.kind === 'boundaryEvent' || step.kind === 'eventSubProcessStart') {
    // A payload its output mappings could not map waits on its row: the retry maps it again (its boundaries still wait).
    // Any other start of the step drops one left by a canceled wait.
    const held = state.loops?.[step.id];
    if (held && 'heldPayload' in held && held.heldPayload) {
      if (resumed) {
        setStep(state, fx, step.id, 'active');
        mapPayload(plan, step, state, vars, held.heldPayload, fx, held.heldData, true);
        return;
      }
      state.loops![step.id] = fx.loops[step.id] = { heldPayload: null };
    }
    startWait(plan, step, state, vars, fx);
    // A receive task's boundaries wait with it, once its own wait started (not while its key is in an incident).
    if (state.steps[step.id] === 'active')
      for (const boundaryId of step.boundaries ?? []) startWait(plan, stepById(plan, boundaryId), state, vars, fx);
    return;
  }
  // A called instance ended but the call's output mappings failed: its return is mapped again, not called again.
  const kept = step.kind === 'callActivity' && resumed ? heldPayloadOf(state, step.id) : undefined;
  if (kept) {
    const held = state.loops?.[step.id] as HeldPayload;
    setStep(state, fx, step.id, 'active');
    return returnCall(
      plan,
      step,
      { index: 0, variables: kept, childInstanceId: String(held.heldData?.childInstanceId ?? '') },
      state,
      vars,
      fx,
      fixes,
    );
  }
  if (step.kind === 'callActivity' && step.call) {
    const call = prepareCall(step, seen);
    if (!call.ok) return raiseIncident(plan, state, fx, step.id, 'call_activity', call.message, call.details);
    setStep(state, fx, step.id, 'active');
    fx.calls.push({
      stepId: step.id,
      key: call.key,
      ...pinOf(step.call),
      variables: call.variables,
      businessKey: step.call.businessKey,
      ...scopePathOf(plan, step, state),
    });
    pushEvent(plan, state, fx, { kind: 'step:activated', stepId: step.id, data: { calls: call.key } });
    for (const boundaryId of step.boundaries ?? []) startWait(plan, stepById(plan, boundaryId), state, vars, fx);
    return;
  }
  // A step the token passes at once runs its mappings as it passes: inputs are its locals, outputs
  // reach the scopes around it, and a signal's payload reads both. One that fails stops it in an incident.
  let payload: Variables | undefined;
  if (step.io && PASSING.has(step.kind)) {
    // A message or signal start's payload, held by instances.ts: what its outputs map, under the
    // variables (a retry's variables fix it).
    const held = heldPayloadOf(state, step.id);
    const passed = passingMappings(step, held ? { ...held, ...vars } : vars, scopeLocals(plan, step, state));
    if (!passed.ok) {
      if (held) fx.loops[step.id] = { heldPayload: held };
      return raiseIncident(plan, state, fx, step.id, 'io_mapping', passed.message, passed.details);
    }
    if (held) state.loops![step.id] = fx.loops[step.id] = { heldPayload: null };
    writeVariables(plan, step, state, vars, passed.writes, fx);
    seen = visibleVariables(plan, step, state, vars);
    payload = passed.payload;
  } else if (step.throwSignal?.payload) {
    const carried = signalPayload(step, step.throwSignal.payload, seen, {});
    if (!carried.ok) return raiseIncident(plan, state, fx, step.id, 'io_mapping', carried.message, carried.details);
    payload = carried.variables;
  }
  if (step.kind === 'signalThrow' && step.throwSignal) {
    // Broadcast once this transition commits (engine/signal-broadcasts.ts); the token does not wait for the receivers.
    fx.signals.push(
      payload
        ? { stepId: step.id, name: step.throwSignal.name, variables: payload }
        : { stepId: step.id, name: step.throwSignal.name },
    );
    setStep(state, fx, step.id, 'completed');
    pushEvent(plan, state, fx, { kind: 'step:completed', stepId: step.id, data: { signal: step.throwSignal.name } });
    leaveStep(plan, step, state, vars, fx);
    return;
  }
  if (step.kind === 'scriptTask' && step.script) {
    // Input mappings are the script's own variables; output mappings say what of its writes reach the process.
    const inputs = step.io ? mapInputs(step, vars, scopeLocals(plan, step, state)) : undefined;
    if (inputs && !inputs.ok) return raiseIncident(plan, state, fx, step.id, 'io_mapping', inputs.message, inputs.details);
    const locals = inputs?.ok ? inputs.locals : {};
    // A script that fails stops here; the incident's retry runs it again over the variables then.
    const outcome = runScript(step.script, { ...seen, ...inputs?.writes, ...locals });
    if (!outcome.ok)
      return raiseIncident(
        plan,
        state,
        fx,
        step.id,
        'script_error',
        `Script task ${step.id}: ${outcome.message}. Fix the script or the variables, then retry the incident.`,
        outcome.details,
      );
    const written = resultVariables(step, vars, locals, outcome.writes, 'Fix the mapping or the script, then retry the incident');
    if (!written.ok) return raiseIncident(plan, state, fx, step.id, 'io_mapping', written.message, written.details);
    writeVariables(plan, step, state, vars, { ...inputs?.writes, ...written.variables }, fx);
    setStep(state, fx, step.id, 'completed');
    pushEvent(plan, state, fx, { kind: 'step:completed', stepId: step.id, data: { wrote: Object.keys(written.variables) } });
    skipUnarmedBoundaries(plan, step, state, vars, fx);
    leaveStep(plan, step, state, vars, fx);
    return;
  }
  if (step.kind === 'subProcess' && step.subProcess) {
    // A retry of outputs that failed ends the subprocess; its body ran.
    if (resumed && (indexPlan(plan).children.get(step.id) ?? []).some((s) => state.steps[s.id] !== undefined))
      return endScope(plan, step, state, vars, fx);
    const entered = step.io ? enterSubprocess(plan, step, state, vars, fx) : undefined;
    if (entered && !entered.ok) return raiseIncident(plan, state, fx, step.id, 'io_mapping', entered.message, entered.details);
    setStep(state, fx, step.id, 'active');
    pushEvent(plan, state, fx, { kind: 'step:activated', stepId: step.id });
    for (const boundaryId of step.boundaries ?? []) startWait(plan, stepById(plan, boundaryId), state, vars, fx);
    armEventSubProcesses(plan, step.id, scopeMoves(plan, state, vars, fx));
    activateStep(plan, stepById(plan, step.subProcess.start), state, vars, fx);
    return;
  }
  // The retry of an incident of a non-interrupting event subprocess whose firings run in child instances.
  if (firesInChildren(step) && resumed) return retryFirings(plan, step, state, vars, fx, bodyMoves(plan, state, vars, fx), fixes);
  if (step.kind === 'eventSubProcess' && step.io && resumed) {
    // The retry of an interrupting event subprocess's mappings: outputs that failed end it (its
    // body ran); inputs that failed enter it and run its body from the start event that fired.
    const start = stepById(plan, step.eventSubProcess?.start ?? '');
    const children = indexPlan(plan).children.get(step.id) ?? [];
    if (children.some((s) => s !== start && state.steps[s.id] !== undefined)) return endScope(plan, step, state, vars, fx);
    const entered = enterSubprocess(plan, step, state, vars, fx);
    if (!entered.ok) return raiseIncident(plan, state, fx, step.id, 'io_mapping', entered.message, entered.details);
    setStep(state, fx, step.id, 'active');
    pushEvent(plan, state, fx, { kind: 'step:activated', stepId: step.id, data: { trigger: start.wait?.trigger } });
    leaveStep(plan, start, state, vars, fx);
    return;
  }
  if (step.kind === 'errorEndEvent') {
    throwError(plan, step, state, vars, fx);
    return;
  }
  if (step.kind === 'escalationThrow' && step.throwEscalation) {
    throwEscalation(plan, step, step.throwEscalation.escalationCode, state, vars, fx);
    return;
  }
  if (step.kind === 'compensationThrow') {
    setStep(state, fx, step.id, 'active');
    pushEvent(plan, state, fx, { kind: 'step:activated', stepId: step.id });
    if (!startCompensationThrow(plan, step, state, fx)) completeStep(plan, step.id, state, vars, fx);
    return;
  }
  if (step.kind === 'parallelGateway' && !resumed) {
    const skipped = step.incoming.filter((f) => state.flows[f] === 'skipped');
    if (skipped.length > 0) {
      raiseIncident(
        plan,
        state,
        fx,
        step.id,
        'join_skipped',
        `Parallel join ${step.id} can never fire: incoming flow(s) ${skipped.join(', ')} were skipped. Check the gateways upstream of it.`,
        { skippedFlows: skipped },
      );
      return;
    }
  }
  const decision = decideOutgoing(plan, step, seen);
  if (!decision.ok) {
    raiseIncident(plan, state, fx, step.id, decision.kind, decision.message, decision.details, decision.tested);
    return;
  }
  setStep(state, fx, step.id, 'completed');
  // A choosing gateway's event says what it tested and which variables were missing (gateway-decisions.ts).
  const data = decision.record ?? (isGateway(step) ? { taken: decision.taken } : undefined);
  pushEvent(plan, state, fx, { kind: 'step:completed', stepId: step.id, ...(data ? { data: { ...data } } : {}) });
  skipUnarmedBoundaries(plan, step, state, vars, fx);
  if (step.kind === 'terminateEndEvent' && step.scope !== undefined) {
    // Inside a subprocess, terminate ends that subprocess only: its other open steps are canceled.
    cancelScope(plan, step.scope, step.id, state, fx);
    endScope(plan, stepById(plan, step.scope), state, vars, fx);
    return;
  }
  if (step.kind === 'terminateEndEvent') {
    fx.terminated = true;
    pushEvent(plan, state, fx, { kind: 'instance:terminated', stepId: step.id });
    return;
  }
  resolveFlows(plan, step, decision.taken, state, vars, fx);
}

function leaveStep(plan: Plan, step: PlanStep, state: InstanceState, vars: Variables, fx: Effects): void {
  resolveFlows(plan, step, step.outgoing, state, vars, fx);
}

/** A catch or boundary event starts waiting: a timer row or a subscription; an error boundary needs neither. */
function startWait(plan: Plan, step: PlanStep, state: InstanceState, vars: Variables, fx: Effects): void {
  const wait = step.wait;
  if (!wait) return;
  // A repeating boundary armed again in a new loop pass counts that pass's firings from 0: its row,
  // written again in the statement that resets the pass, would keep the last pass's count.
  if (step.boundary?.repeats && fx.resetSteps.includes(step.id) && state.loops?.[step.id] === undefined) {
    const fresh = { pass: 0 };
    (state.loops ??= {})[step.id] = fresh;
    fx.loops[step.id] = fresh;
  }
  // A key or a time computed from variables that cannot be had stops the event in an incident; its retry starts the wait again.
  const stuck = (what: string, message: string, details: Record<string, unknown>) =>
    raiseIncident(
      plan,
      state,
      fx,
      step.id,
      'condition_error',
      `${what} of ${step.id}: ${message}. Fix the variables, then retry the incident.`,
      details,
    );
  // A catch event's input mappings are its locals, which its key, timer, condition and outputs read.
  if (step.kind === 'catchEvent' && wait.trigger !== 'user' && step.io?.inputs.length) {
    const inputs = mapInputs(step, vars, scopeLocals(plan, step, state));
    if (!inputs.ok) return raiseIncident(plan, state, fx, step.id, 'io_mapping', inputs.message, inputs.details);
    if (inputs.writes) writeVariables(plan, step, state, vars, inputs.writes, fx);
    const own = { locals: inputs.locals };
    (state.loops ??= {})[step.id] = own;
    fx.loops[step.id] = own;
  }
  if (wait.trigger === 'message' && wait.correlationKey) {
    const key = evaluateKey(wait.correlationKey, visibleVariables(plan, step, state, vars));
    if (!key.ok) return stuck('Correlation key', key.message, { correlationKey: wait.correlationKey });
    fx.subscriptions.push({
      stepId: step.id,
      kind: 'message',
      name: wait.name,
      correlationKey: key.value,
      ...scopePathOf(plan, step, state),
    });
  } else if (wait.trigger === 'message' || wait.trigger === 'signal') {
    fx.subscriptions.push({
      stepId: step.id,
      kind: wait.trigger,
      name: wait.name,
      correlationKey: null,
      ...scopePathOf(plan, step, state),
    });
  } else if (wait.trigger === 'user') {
    // Input mappings are the task's locals, as a service task's: its attributes and form read them, and the person sees them.
    const inputs = step.io ? mapInputs(step, vars, scopeLocals(plan, step, state)) : undefined;
    if (inputs && !inputs.ok) return raiseIncident(plan, state, fx, step.id, 'io_mapping', inputs.message, inputs.details);
    if (inputs?.ok) writeVariables(plan, step, state, vars, inputs.writes, fx);
    const seen = visibleVariables(plan, step, state, vars);
    const details = evaluateUserTask(wait.userTask, inputs?.ok ? { ...seen, ...inputs.locals } : seen);
    if (!details.ok) return stuck('User task', details.message, {});
    fx.subscriptions.push({
      stepId: step.id,
      kind: 'user',
      name: step.id,
      correlationKey: null,
      userTask: step.name ? { name: step.name, ...details.details } : details.details,
      ...(inputs?.ok && Object.keys(inputs.locals).length > 0 ? { localVariables: inputs.locals } : {}),
      ...scopePathOf(plan, step, state),
    });
  } else if (wait.trigger === 'timer') {
    const due = timerDue(wait.timer, visibleVariables(plan, step, state, vars));
    if (!due.ok) return stuck('Timer', due.message, { timer: wait.timer.expression });
    fx.timers.push({ stepId: step.id, due: due.due });
  }
  setStep(state, fx, step.id, 'active');
  pushEvent(plan, state, fx, { kind: 'step:activated', stepId: step.id, data: { waitsFor: wait.trigger } });
}

/**
 * An error end event: the innermost enclosing subprocess with a matching error
 * boundary is interrupted and the boundary path runs; caught nowhere, the error
 * end event stops in an incident (never a silent end).
 */
function throwError(plan: Plan, step: PlanStep, state: InstanceState, vars: Variables, fx: Effects): void {
  const code = step.throwError?.errorCode;
  const boundary = findErrorBoundary(plan, step.id, code, state);
  if (boundary?.wait?.trigger !== 'error' && state.calledBy !== undefined) {
    throwToParent(plan, step.id, code ?? null, null, state, fx);
    return;
  }
  if (boundary?.wait?.trigger !== 'error') {
    raiseIncident(
      plan,
      state,
      fx,
      step.id,
      'bpmn_error',
      `Error end event ${step.id} threw ${code !== undefined ? `error ${code}` : 'an error without a code'} and no error boundary of an enclosing subprocess catches it`,
      { errorCode: code ?? null },
    );
    return;
  }
  setStep(state, fx, step.id, 'completed');
  pushEvent(plan, state, fx, {
    kind: 'step:completed',
    stepId: step.id,
    data: { errorCode: code ?? null, caughtBy: boundary.id },
  });
  catchThrown(plan, boundary, state, vars, fx, { code: code ?? null }, { errorCode: code ?? null, thrownBy: step.id });
}

/**
 * An escalation is not an error: the innermost catcher fires and the throwing path goes on,
 * unless the catcher interrupts (then the scope around the throw is canceled with it). Nothing
 * catching it, the path goes on too, as in Camunda 7 and Zeebe, and the history says so.
 */
function throwEscalation(plan: Plan, step: PlanStep, code: string, state: InstanceState, vars: Variables, fx: Effects): void {
  const catcher = findCatcher(plan, 'escalation', step.id, code, state);
  setStep(state, fx, step.id, 'completed');
  pushEvent(plan, state, fx, {
    kind: 'step:completed',
    stepId: step.id,
    data: { escalationCode: code, ...(catcher ? { caughtBy: catcher.id } : {}) },
  });
  if (!catcher) {
    // A non-interrupting boundary runs its path once per activation of its host: a later escalation finds it spent.
    const spent = findCatcher(plan, 'escalation', step.id, code, state, 'completed');
    const spentBoundary = spent?.boundary && !spent.boundary.interrupting && state.steps[spent.boundary.attachedTo] === 'active';
    const firedBefore = spentBoundary ? { firedBefore: spent.id } : {};
    if (state.calledBy !== undefined) {
      // A called instance passes it on to its call activity (call-returns.ts delivers it) and runs on meanwhile.
      (fx.escalatedToParent ??= []).push({ escalationCode: code, stepId: step.id });
      pushEvent(plan, state, fx, {
        kind: 'escalation:toParent',
        stepId: step.id,
        data: { escalationCode: code, parentInstanceId: state.calledBy, ...firedBefore },
      });
    } else
      pushEvent(plan, state, fx, {
        kind: 'escalation:uncaught',
        stepId: step.id,
        data: { escalationCode: code, ...firedBefore },
      });
    leaveStep(plan, step, state, vars, fx);
    return;
  }
  writeCaughtVariables(plan, catcher, state, vars, { code }, fx);
  const interrupting = catcher.kind === 'eventSubProcessStart' || catcher.boundary?.interrupting === true;
  // Fired before the throw's path moves on: that path could end the subprocess and with it the boundary.
  const data = { escalationCode: code, thrownBy: step.id };
  if (!catchesMapped(catcher) || mapFired(plan, catcher, state, vars, {}, fx, data))
    fireWaitNow(plan, catcher.id, state, vars, fx, data);
  if (!interrupting) leaveStep(plan, step, state, vars, fx);
}

/**
 * A BPMN error nothing in this instance catches, in an instance a call activity started: the
 * step that threw it ends, the instance ends (its open work canceled) and the error goes to the
 * call activity, where the parent's boundaries may catch it.
 */
export function throwToParent(
  plan: Plan,
  stepId: string,
  errorCode: string | null,
  errorMessage: string | null,
  state: InstanceState,
  fx: Effects,
): void {
  setStep(state, fx, stepId, 'completed');
  pushEvent(plan, state, fx, { kind: 'step:completed', stepId, data: { errorCode, thrownTo: state.calledBy } });
  fx.thrownError = { stepId, errorCode, errorMessage };
  fx.terminated = true;
}

/**
 * A call activity that could not start its child (the called process or version is not
 * deployed, its business key is taken): the step activated in this transition stops in an
 * incident instead; its boundaries stay armed, as on a failed task.
 */
export function failCall(
  plan: Plan,
  stepId: string,
  state: InstanceState,
  fx: Effects,
  message: string,
  details: Record<string, unknown>,
): void {
  const removed = fx.calls.filter((c) => c.stepId === stepId).length;
  fx.calls = fx.calls.filter((c) => c.stepId !== stepId);
  fx.steps = fx.steps.filter((s) => s.stepId !== stepId);
  // A multi-instance call activity's retry creates again the elements whose children did not start.
  const loop = elementsOf(state, stepId);
  if (loop) {
    loop.created -= removed;
    if (loop.created === 0) {
      delete state.loops?.[stepId];
      delete fx.loops[stepId];
    } else fx.loops[stepId] = loop;
  }
  raiseIncident(plan, state, fx, stepId, 'call_activity', message, details);
}

/** Cancels every open step inside a subprocess, nested ones too: tasks unfetchable, waits ended. */
function cancelScope(plan: Plan, scopeId: string, by: string, state: InstanceState, fx: Effects): void {
  for (const child of indexPlan(plan).children.get(scopeId) ?? []) cancelStep(plan, child, by, state, fx);
}

/** Cancels an open step: its task unfetchable, its wait ended, its child instances canceled, what is inside it too. */
function cancelStep(plan: Plan, step: PlanStep, by: string, state: InstanceState, fx: Effects): void {
  const status = state.steps[step.id];
  // An event subprocess that never fired holds only its armed start event.
  if (step.kind === 'eventSubProcess' && status === undefined) return cancelScope(plan, step.id, by, state, fx);
  if ((status !== 'active' && status !== 'incident') || step.compensationHandler) return;
  setStep(state, fx, step.id, 'canceled');
  pushEvent(plan, state, fx, { kind: 'step:canceled', stepId: step.id, data: { by } });
  // canceledTasks also resolves the step's open incident
  if (step.kind === 'serviceTask' || status === 'incident') fx.canceledTasks.push(step.id);
  if (step.kind === 'catchEvent' || step.kind === 'boundaryEvent' || step.kind === 'eventSubProcessStart')
    fx.endedWaits.push(step.id);
  if (step.kind === 'callActivity' || firesInChildren(step)) fx.canceledCalls.push(step.id);
  if (step.kind === 'subProcess' || step.kind === 'eventSubProcess') cancelScope(plan, step.id, by, state, fx);
}

/** A subprocess whose inner steps have all ended completes and leaves through its outgoing flows. */
function settleScope(plan: Plan, scopeId: string | undefined, state: InstanceState, vars: Variables, fx: Effects): void {
  if (scopeId === undefined || fx.terminated || state.steps[scopeId] !== 'active') return;
  // The body of an event subprocess whose firings run in child instances is not here: its children end it.
  if (firesInChildren(stepById(plan, scopeId))) return;
  const children = indexPlan(plan).children.get(scopeId) ?? [];
  // After an event subprocess interrupted the scope, what its token never reached stays unreached.
  const interrupted = children.some(
    (s) => s.kind === 'eventSubProcess' && s.eventSubProcess?.interrupting !== false && state.steps[s.id] !== undefined,
  );
  // A non-interrupting event subprocess's start event keeps waiting while its body runs: the body is what ends.
  const ownStart = stepById(plan, scopeId).eventSubProcess?.repeats ? stepById(plan, scopeId).eventSubProcess?.start : undefined;
  const open = children.some((s) => {
    const status = state.steps[s.id];
    if (s.id === ownStart) return false;
    if (s.kind === 'eventSubProcess') return status === 'active' || status === 'incident'; // one that never fired waits for nothing
    return !s.compensationHandler && ((status === undefined && !interrupted) || status === 'active' || status === 'incident');
  });
  if (open) return;
  endScope(plan, stepById(plan, scopeId), state, vars, fx);
}

/** A scope whose body ended completes: its outputs written (one that fails holds it in an incident), its event subprocesses disarmed. */
function endScope(plan: Plan, scope: PlanStep, state: InstanceState, vars: Variables, fx: Effects): void {
  const left = leaveSubprocess(plan, scope, state, vars, fx);
  if (!left.ok) return raiseIncident(plan, state, fx, scope.id, 'io_mapping', left.message, left.details);
  disarmEventSubProcesses(plan, scope.id, state, scopeMoves(plan, state, vars, fx));
  completeStep(plan, scope.id, state, vars, fx);
}

function skipOpenBoundaries(
  plan: Plan,
  host: PlanStep,
  state: InstanceState,
  vars: Variables,
  fx: Effects,
  except?: string,
): void {
  for (const boundaryId of host.boundaries ?? []) {
    const status = state.steps[boundaryId];
    if (boundaryId === except || (status !== 'active' && status !== 'incident')) continue;
    // A firing whose payload waits in its incident has happened: its retry runs its path.
    if (status === 'incident' && heldPayloadOf(state, boundaryId)) continue;
    const boundary = stepById(plan, boundaryId);
    if (boundary.boundary?.repeats && endRepeating(boundary, state, fx, firingMoves(plan, state, vars, fx))) continue;
    setStep(state, fx, boundaryId, 'skipped');
    fx.endedWaits.push(boundaryId);
    if (status === 'incident') fx.canceledTasks.push(boundaryId); // resolves its incident (a timer that could not be set)
    pushEvent(plan, state, fx, { kind: 'step:skipped', stepId: boundaryId });
    resolveFlows(plan, boundary, [], state, vars, fx);
  }
}

/** The payload kept on the step's row: one its output mappings could not map yet, or a start event's. */
function heldPayloadOf(state: InstanceState, stepId: string): Variables | undefined {
  const stored = state.loops?.[stepId];
  return stored !== undefined && 'heldPayload' in stored && stored.heldPayload ? stored.heldPayload : undefined;
}

/** A host that completes where it starts (a plain or script task) never arms its boundaries: they are skipped with it. */
function skipUnarmedBoundaries(plan: Plan, host: PlanStep, state: InstanceState, vars: Variables, fx: Effects): void {
  for (const boundaryId of host.boundaries ?? []) {
    if (state.steps[boundaryId] !== undefined) continue;
    setStep(state, fx, boundaryId, 'skipped');
    pushEvent(plan, state, fx, { kind: 'step:skipped', stepId: boundaryId });
    resolveFlows(plan, stepById(plan, boundaryId), [], state, vars, fx);
  }
}

export function raiseIncident(
  plan: Plan,
  state: InstanceState,
  fx: Effects,
  stepId: string,
  kind: IncidentKind,
  message: string,
  details?: Record<string, unknown>,
  eventData?: object,
): void {
  setStep(state, fx, stepId, 'incident');
  fx.incidents.push({ stepId, kind, message, ...(details ? { details } : {}) });
  pushEvent(plan, state, fx, { kind: 'incident:created', stepId, data: { kind, message, ...eventData } });
}

function isGateway(step: PlanStep): boolean {
  return (
    step.kind === 'exclusiveGateway' ||
    step.kind === 'inclusiveGateway' ||
    step.kind === 'parallelGateway' ||
    step.kind === 'eventBasedGateway'
  );
}

/** Marks the step's outgoing flows taken or skipped and evaluates the steps they lead to. */
function resolveFlows(plan: Plan, from: PlanStep, taken: string[], state: InstanceState, vars: Variables, fx: Effects): void {
  const queue: string[] = [];
  const touched = new Set<string>(from.inLoop !== undefined ? [from.inLoop] : []);
  // A non-interrupting event subprocess that ends may let a firing that waited for it start.
  if (from.eventSubProcess?.repeats) touched.add(from.id);
  for (const flowId of from.outgoing) markFlow(plan, flowId, taken.includes(flowId) ? 'taken' : 'skipped', state, fx, queue);
  propagate(plan, queue, touched, state, vars, fx);
  if (touched.size > 0) settleLoops(plan, touched, state, fx, passMoves(plan, state, vars, fx));
  settleScope(plan, from.scope, state, vars, fx);
  if (from.scope === undefined && !fx.terminated) settleProcess(plan, state, scopeMoves(plan, state, vars, fx));
}

/** A back or exit flow of a loop is held: the loop's pass decides when its target is evaluated. */
function markFlow(plan: Plan, flowId: string, flowState: FlowState, state: InstanceState, fx: Effects, queue: string[]): void {
  state.flows[flowId] = flowState;
  fx.flows.push({ flowId, state: flowState });
  const index = indexPlan(plan);
  const flow = index.flows.get(flowId);
  if (flow && !index.heldFlows.has(flowId)) queue.push(flow.target);
}

/** Evaluates the queued steps, and the steps their outputs lead to, until nothing more is ready. */
function propagate(plan: Plan, queue: string[], touched: Set<string>, state: InstanceState, vars: Variables, fx: Effects): void {
  const { backFlows } = indexPlan(plan);
  while (queue.length > 0 && !fx.terminated) {
    const step = stepById(plan, queue.shift() as string);
    if (state.steps[step.id] !== undefined) continue;
    // An error or terminate end event earlier in this loop may have ended the subprocess.
    if (step.scope !== undefined && state.steps[step.scope] !== 'active') continue;
    const incoming = step.incoming.filter((f) => !backFlows.has(f)).map((f) => state.flows[f]);
    if (incoming.some((s) => s === undefined)) continue; // not all inputs resolved yet
    if (step.inLoop !== undefined) touched.add(step.inLoop);
    if (incoming.includes('taken')) {
      activateStep(plan, step, state, vars, fx);
    } else {
      // Dead-path elimination: every input skipped, so the step, its boundary events and its outputs are skipped.
      setStep(state, fx, step.id, 'skipped');
      pushEvent(plan, state, fx, { kind: 'step:skipped', stepId: step.id });
      for (const flowId of step.outgoing) markFlow(plan, flowId, 'skipped', state, fx, queue);
      for (const boundaryId of step.boundaries ?? []) {
        if (state.steps[boundaryId] !== undefined) continue;
        setStep(state, fx, boundaryId, 'skipped');
        pushEvent(plan, state, fx, { kind: 'step:skipped', stepId: boundaryId });
        for (const flowId of stepById(plan, boundaryId).outgoing) markFlow(plan, flowId, 'skipped', state, fx, queue);
      }
    }
  }
}

/** A history event; one about a step inside a loop names the pass it belongs to (`scopePath`). */
function pushEvent(plan: Plan, state: InstanceState, fx: Effects, event: NewEvent): void {
  const step = event.stepId === undefined ? undefined : indexPlan(plan).steps.get(event.stepId);
  const where = step?.inLoop !== undefined || step?.cycle !== undefined ? scopePathOf(plan, step, state) : {};
  fx.events.push(where.scopePath === undefined ? event : { ...event, data: { ...event.data, ...where } });
}

/** What a loop's pass needs of this module: run a step, evaluate steps, set a status, record an event, decide a loop marker. */
function passMoves(plan: Plan, state: InstanceState, vars: Variables, fx: Effects): PassMoves {
  return {
    activate: (step) => activateStep(plan, step, state, vars, fx),
    propagate: (queue, touched) => propagate(plan, queue, touched, state, vars, fx),
    setStep: (stepId, status) => setStep(state, fx, stepId, status),
    event: (event) => pushEvent(plan, state, fx, event),
    nextFiring: (boundary) => settleFirings(plan, boundary, state, fx, firingMoves(plan, state, vars, fx)),
    repeats: (loop) => {
      // An activity that did not complete (an interrupting boundary fired) ends its loop.
      if (state.steps[loop.cycle?.head ?? ''] !== 'completed') return false;
      if (!loop.cycle?.repeat?.elements) return repeatHolds(plan, loop, passOf(state, loop.id), state, vars, fx, loop.id);
      const ended = elementPassEnded(plan, loop, state, vars);
      if (ended.again === undefined) {
        raiseIncident(plan, state, fx, loop.id, 'condition_error', ended.message, ended.details);
        return undefined;
      }
      pushEvent(plan, state, fx, { kind: 'loop:element_completed', stepId: loop.id, data: ended.data });
      writeVariables(plan, loop, state, vars, ended.written, fx);
      return ended.again;
    },
  };
}

/**
 * Whether a loop marker runs another pass after `passes` of them: fewer than its maximum and its
 * condition (over the variables and `loopCounter`) holds. A condition that cannot be evaluated
 * stops `incidentAt` in an incident (answers undefined); its retry decides again.
 */
function repeatHolds(
  plan: Plan,
  loop: PlanStep,
  passes: number,
  state: InstanceState,
  vars: Variables,
  fx: Effects,
  incidentAt: string,
): boolean | undefined {
  const repeat = loop.cycle?.repeat;
  if (!repeat) return false;
  if (repeat.maximum !== undefined && passes >= repeat.maximum) return false;
  if (!repeat.condition) return true;
  const result = testCondition(repeat.condition, { ...visibleVariables(plan, loop, state, vars), loopCounter: passes });
  if (result.ok) return result.value;
  raiseIncident(
    plan,
    state,
    fx,
    incidentAt,
    'condition_error',
    `Loop condition of ${loop.cycle?.head} ("${repeat.condition.source}"): ${result.message}. Fix the variables, then retry the incident.`,
    { loopCondition: repeat.condition.source },
  );
  return undefined;
}

/**
 * testBefore found the condition false before the first pass, or a multi-instance subprocess's
 * collection is empty: the activity does not run, the token moves on past it.
 */
function skipLoopedStep(
  plan: Plan,
  step: PlanStep,
  state: InstanceState,
  vars: Variables,
  fx: Effects,
  why: Record<string, unknown>,
): void {
  setStep(state, fx, step.id, 'skipped');
  pushEvent(plan, state, fx, { kind: 'step:skipped', stepId: step.id, data: why });
  for (const boundaryId of step.boundaries ?? []) {
    setStep(state, fx, boundaryId, 'skipped');
    resolveFlows(plan, stepById(plan, boundaryId), [], state, vars, fx);
  }
  resolveFlows(plan, step, step.outgoing, state, vars, fx);
}

/**
 * After an operator replay: the event subprocesses of the process and of every running
 * subprocess wait again (the replayed generation's waits are new rows), unless one already ran.
 */
export function rearmEventSubProcesses(plan: Plan, state: InstanceState, vars: Variables, fx: Effects): void {
  rearm(plan, state, scopeMoves(plan, state, vars, fx));
  settleConditions(plan, state, vars, fx);
}

/**
 * Variables changed outside a step: an operator edited them, or a resume took kept messages (a
 * suspended instance's edits wait for its resume). Conditional events look at them again.
 */
export function settleConditionalEvents(plan: Plan, state: InstanceState, vars: Variables, fx: Effects): void {
  settleConditions(plan, state, vars, fx);
}

/**
 * An operator's modification starts the step now, whatever its incoming flows say: a task gets
 * its task, a gateway decides, a subprocess starts at its start event. When those flows resolve
 * later, the step already has its state and they change nothing.
 */
export function startBefore(plan: Plan, stepId: string, state: InstanceState, vars: Variables, fx: Effects): void {
  activateStep(plan, stepById(plan, stepId), state, vars, fx);
  settleConditions(plan, state, vars, fx);
}

/**
 * An operator's modification cancels an open step: its task, wait, child instances and inner
 * steps end, its boundary events are skipped, and its outgoing flows are skipped, so the paths
 * only it would have reached are skipped too.
 */
export function cancelOpenStep(plan: Plan, stepId: string, state: InstanceState, vars: Variables, fx: Effects): void {
  const step = stepById(plan, stepId);
  cancelStep(plan, step, 'modification', state, fx);
  skipOpenBoundaries(plan, step, state, vars, fx);
  resolveFlows(plan, step, [], state, vars, fx);
  settleConditions(plan, state, vars, fx);
}

/**
 * After a migration to another version: the new version's flows out of steps the instance had
 * already left were not taken (its token left by the old version's flows), so they are skipped;
 * every step whose inputs are then all resolved is evaluated as usual (a join that lost an input
 * may go on); the new version's event subprocesses that nothing armed yet start waiting.
 */
export function settleMigration(plan: Plan, untaken: string[], state: InstanceState, vars: Variables, fx: Effects): void {
  const queue: string[] = [];
  for (const flowId of untaken) markFlow(plan, flowId, 'skipped', state, fx, queue);
  for (const step of plan.steps) if (state.steps[step.id] === undefined && step.incoming.length > 0) queue.push(step.id);
  propagate(plan, queue, new Set(), state, vars, fx);
  rearmEventSubProcesses(plan, state, vars, fx);
}

/** What event subprocesses need of this module: arm a wait, cancel a step, set a status, record an event, move on. */
function scopeMoves(plan: Plan, state: InstanceState, vars: Variables, fx: Effects): ScopeMoves {
  return {
    startWait: (step) => startWait(plan, step, state, vars, fx),
    cancel: (step, by) => cancelStep(plan, step, by, state, fx),
    setStep: (stepId, status) => setStep(state, fx, stepId, status),
    endWait: (stepId) => fx.endedWaits.push(stepId),
    event: (event) => pushEvent(plan, state, fx, event),
    leave: (step) => leaveStep(plan, step, state, vars, fx),
    enter: (eventSub) => enterEventSubProcess(plan, eventSub, state, vars, fx),
  };
}

/**
 * One element of a multi-instance step completed (its task, or its called instance): see
 * multi-instance.ts completeElement.
 */
export function completeLoopElement(
  plan: Plan,
  stepId: string,
  index: number,
  output: Variables,
  state: InstanceState,
  vars: Variables,
  fx: Effects,
): void {
  completeElement(plan, stepId, index, output, state, vars, fx, elementMoves(plan, state, vars, fx));
  settleConditions(plan, state, vars, fx);
}

/** What to do about a call's output mapping that failed: its called instance has ended and is not called again. */
const KEPT_RETURN_NEXT =
  "The called instance's variables are kept: retry the incident, with variables that fix the mapping (they are read over the called instance's)";

/** What a call's output mappings make of a return; a retry's variables go over the child's. */
function mapReturn(step: PlanStep, back: ElementReturn, vars: Variables, fixes: Variables | undefined): CallReturn {
  return returnedVariables(step, vars, fixes ? { ...back.variables, ...fixes } : back.variables, KEPT_RETURN_NEXT);
}

/**
 * A called instance ended: the call's output mappings say what reaches the process, and the call
 * activity completes. Mappings that fail keep the return on the step's row and stop the step in
 * an incident, whose retry maps it again (with the retry's variables over the child's).
 */
export function returnCall(
  plan: Plan,
  step: PlanStep,
  back: ElementReturn,
  state: InstanceState,
  vars: Variables,
  fx: Effects,
  fixes?: Variables,
): void {
  const returned = mapReturn(step, back, vars, fixes);
  const child = { childInstanceId: back.childInstanceId };
  if (!returned.ok) {
    const held: HeldPayload = { heldPayload: back.variables, heldData: child };
    (state.loops ??= {})[step.id] = fx.loops[step.id] = held;
    return raiseIncident(plan, state, fx, step.id, 'io_mapping', returned.message, { ...returned.details, ...child });
  }
  if (heldPayloadOf(state, step.id)) state.loops![step.id] = fx.loops[step.id] = { heldPayload: null };
  writeVariables(plan, step, state, vars, returned.variables, fx);
  completeStep(plan, step.id, state, vars, fx, child);
}

/**
 * A multi-instance call activity's element ended: its call's output mappings make the element's
 * result (a parallel subprocess body's changes are written as an embedded subprocess's are; its
 * element variable, loopCounter and the passes' around it stay theirs). Mappings that fail keep
 * the return on the step's row, with the returns of the elements that end meanwhile, and stop the
 * step in an incident; its retry applies them in the order they came, mapping the failed one
 * again with the retry's variables over its child's (the others as they came). The element is
 * not called again.
 */
export function returnElement(
  plan: Plan,
  step: PlanStep,
  back: ElementReturn,
  state: InstanceState,
  vars: Variables,
  fx: Effects,
  fixes?: Variables,
): void {
  const returned = mapReturn(step, back, vars, fixes);
  if (!returned.ok) {
    holdElementReturn(step, back, state, fx);
    return raiseIncident(plan, state, fx, step.id, 'io_mapping', returned.message, {
      ...returned.details,
      childInstanceId: back.childInstanceId,
    });
  }
  if (step.call?.body) {
    // The subprocess's output mappings run as each element ends, over what its body saw (as a
    // sequential one's run after each pass); they fail before anything of the element is written.
    const seen = visibleVariables(plan, step, state, vars);
    const items = elementsOf(state, step.id)?.items ?? [];
    const outputs = step.io?.outputs.length
      ? mapOutputs(step, { ...seen, ...elementLocals(step, items, back.index), ...returned.variables }, seen, KEPT_RETURN_NEXT)
      : undefined;
    if (outputs && !outputs.ok) {
      holdElementReturn(step, back, state, fx);
      return raiseIncident(plan, state, fx, step.id, 'io_mapping', outputs.message, {
        ...outputs.details,
        childInstanceId: back.childInstanceId,
      });
    }
    const own = new Set([
      step.multiInstance?.elementVariable,
      'loopCounter',
      ...inputNames(step),
      ...Object.keys(scopeLocals(plan, step, state, true) ?? {}),
    ]);
    const changed = Object.entries(returned.variables).filter(([name]) => !own.has(name));
    writeVariables(plan, step, state, vars, Object.fromEntries(changed), fx);
    if (outputs) writeVariables(plan, step, state, vars, outputs.variables, fx);
  }
  completeLoopElement(plan, step.id, back.index, returned.variables, state, vars, fx);
}

/** Keeps an element's return on its step's row, for the retry of the step's incident. */
export function holdElementReturn(step: PlanStep, back: ElementReturn, state: InstanceState, fx: Effects): void {
  const loop = elementsOf(state, step.id);
  if (!loop) return;
  loop.heldReturns = [...(loop.heldReturns ?? []), back];
  fx.loops[step.id] = loop;
  fx.steps.push({ stepId: step.id, status: state.steps[step.id] as StepStatus });
}

/** An element's child ended without completing: the retry of the step's incident calls it again. */
export function recallElement(step: PlanStep, index: number, state: InstanceState, fx: Effects): void {
  const loop = elementsOf(state, step.id);
  if (!loop || loop.recall?.includes(index)) return;
  loop.recall = [...(loop.recall ?? []), index];
  fx.loops[step.id] = loop;
  fx.steps.push({ stepId: step.id, status: state.steps[step.id] as StepStatus });
}

/** A firing's child completed, for a non-interrupting event subprocess whose firings run in child instances. */
export function returnEventFiring(
  plan: Plan,
  step: PlanStep,
  back: ElementReturn,
  state: InstanceState,
  vars: Variables,
  fx: Effects,
): void {
  returnFiring(plan, step, back, state, vars, fx, bodyMoves(plan, state, vars, fx));
}

/** A firing's child ended without completing: an incident on the event subprocess, whose retry starts the firing again. */
export function stopEventFiring(
  plan: Plan,
  step: PlanStep,
  firing: number,
  stopped: { kind: IncidentKind; message: string; details: Record<string, unknown> },
  state: InstanceState,
  vars: Variables,
  fx: Effects,
): void {
  firingStopped(step, firing, stopped.kind, stopped.message, stopped.details, state, fx, bodyMoves(plan, state, vars, fx));
}

/** Whether a catch event fires again and again: a repeating boundary's, or a non-interrupting event subprocess's start. */
function firesAgain(plan: Plan, step: PlanStep): boolean {
  const owner = ownerOf(plan, step);
  return repeatsOf(owner) !== undefined || firesInChildren(owner);
}

/** What firings in child instances need of this module: wait again, set a status, record an event, write, end. */
function bodyMoves(plan: Plan, state: InstanceState, vars: Variables, fx: Effects): BodyMoves {
  const { rearm } = firingMoves(plan, state, vars, fx);
  return {
    rearm,
    setStep: (stepId, status) => setStep(state, fx, stepId, status),
    event: (event) => pushEvent(plan, state, fx, event),
    raise: (stepId, kind, message, details) => raiseIncident(plan, state, fx, stepId, kind, message, details),
    write: (step, written) => writeVariables(plan, step, state, vars, written, fx),
    ended: (eventSub) => resolveFlows(plan, eventSub, [], state, vars, fx),
  };
}

/** What repeating boundaries need of this module: wait again, set a status, record an event, run the path. */
function firingMoves(plan: Plan, state: InstanceState, vars: Variables, fx: Effects): FiringMoves {
  return {
    rearm: (boundary, firings) => {
      // The retry of a firing held in its incident after the host ended: nothing more to wait for.
      const hostStatus = state.steps[boundary.boundary?.attachedTo ?? ''];
      if (boundary.boundary && hostStatus !== 'active' && hostStatus !== 'incident') return false;
      const wait = boundary.wait;
      if (wait?.trigger === 'escalation' || wait?.trigger === 'conditional') {
        setStep(state, fx, boundary.id, 'active');
        return true;
      }
      if (wait?.trigger !== 'timer') {
        startWait(plan, boundary, state, vars, fx);
        return true;
      }
      const due = nextCycleDue(wait.timer, visibleVariables(plan, boundary, state, vars))(firings);
      if (due === undefined) return false;
      if (!due.ok) {
        raiseIncident(
          plan,
          state,
          fx,
          boundary.id,
          'condition_error',
          `Timer of ${boundary.id}: ${due.message}. Fix the variables, then retry the incident.`,
          {
            timer: wait.timer.expression,
          },
        );
        return true;
      }
      setStep(state, fx, boundary.id, 'active');
      fx.timers.push({ stepId: boundary.id, due: due.due });
      return true;
    },
    setStep: (stepId, status) => setStep(state, fx, stepId, status),
    event: (event) => pushEvent(plan, state, fx, event),
    leave: (boundary) => leaveStep(plan, boundary, state, vars, fx),
    enter: (eventSub) => enterEventSubProcess(plan, eventSub, state, vars, fx),
  };
}

/** An event subprocess's inputs become its locals as its trigger comes; false: they failed, and it stopped in an incident. */
function enterEventSubProcess(plan: Plan, eventSub: PlanStep, state: InstanceState, vars: Variables, fx: Effects): boolean {
  if (!eventSub.io) return true;
  const entered = enterSubprocess(plan, eventSub, state, vars, fx);
  if (!entered.ok) raiseIncident(plan, state, fx, eventSub.id, 'io_mapping', entered.message, entered.details);
  return entered.ok;
}

/** What multi-instance steps need of this module: arm a boundary, set a status, record an event, raise an incident, complete. */
function elementMoves(plan: Plan, state: InstanceState, vars: Variables, fx: Effects): ElementMoves {
  return {
    startWait: (step) => startWait(plan, step, state, vars, fx),
    setStep: (stepId, status) => setStep(state, fx, stepId, status),
    event: (event) => pushEvent(plan, state, fx, event),
    raise: (stepId, kind, message, details) => raiseIncident(plan, state, fx, stepId, kind, message, details),
    complete: (stepId) => completeStep(plan, stepId, state, vars, fx),
  };
}
