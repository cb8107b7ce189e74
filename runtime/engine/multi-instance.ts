// Multi-instance steps (docs/events.md, "Multi-instance service tasks"; user tasks and call
// activities too): one task, user task or called instance per element of a collection, all at once or one after another, each
// element's result gathered in input order. The step's progress (LoopState) is written on its
// steps row. advance.ts evaluates the steps; this module decides about elements and calls back
// into it (ElementMoves), as loop-passes.ts does.
import type { MultiInstanceSpec, Plan, PlanStep } from '../compiler/plan.ts';
import type { Effects, InstanceState, LoopState, NewEvent, UserTaskDetails, Variables } from '../model/effects.ts';
import type { IncidentKind, StepStatus } from '../model/vocabulary.ts';
import { testCondition } from './conditions.ts';
import { evaluateUserTask } from './user-task-details.ts';
import { pinOf, prepareCall } from './call-variables.ts';
import { inputNames, mapInputs, type InputsResult } from './io-mappings.ts';
import { scopePathOf } from './loop-passes.ts';
import { instanceCounts } from './element-passes.ts';
import { scopeLocals, visibleVariables, writeVariables } from './scope-variables.ts';
import { evaluateElements, evaluateValue } from './loops.ts';
import { indexPlan } from './plan-index.ts';

/** What multi-instance steps need of the step evaluation (advance.ts). */
export interface ElementMoves {
  /** arms a boundary event of the step */
  startWait(step: PlanStep): void;
  setStep(stepId: string, status: StepStatus): void;
  event(event: NewEvent): void;
  raise(stepId: string, kind: IncidentKind, message: string, details: Record<string, unknown>): void;
  /** the step completes and the token moves on */
  complete(stepId: string): void;
}

function stepById(plan: Plan, stepId: string): PlanStep {
  const step = indexPlan(plan).steps.get(stepId);
  if (!step) throw new Error(`Step ${stepId} is not in plan ${plan.processKey}`);
  return step;
}

/**
 * A multi-instance service task starts: one external task per element of the
 * collection, all at once (parallel) or the first only (sequential). An empty
 * collection completes the step at once.
 */
export function startElements(
  plan: Plan,
  step: PlanStep,
  state: InstanceState,
  vars: Variables,
  fx: Effects,
  moves: ElementMoves,
): void {
  const mi = step.multiInstance as MultiInstanceSpec;
  const items = evaluateElements(mi, visibleVariables(plan, step, state, vars));
  if (!items.ok) {
    moves.raise(
      step.id,
      'condition_error',
      `${mi.collection !== undefined ? 'Collection' : 'Cardinality'} of multi-instance step ${step.id}: ${items.message}. Fix the variables, then retry the incident.`,
      items.details,
    );
    return;
  }
  // Every element created now gets its inputs before any is: a failing one leaves no task or child behind.
  const first: ElementStart[] = [];
  for (let i = 0; i < (mi.sequential ? Math.min(1, items.value.length) : items.value.length); i++) {
    const start = elementStart(step, items.value, i, vars, scopeLocals(plan, step, state));
    if (!start.ok) return moves.raise(step.id, start.kind, start.message, start.details);
    first.push(start);
  }
  // What input scripts set reaches the process once every element has its inputs.
  for (const start of first) if (start.ok) writeVariables(plan, step, state, vars, start.writes, fx);
  moves.setStep(step.id, 'active');
  moves.event({
    kind: 'step:activated',
    stepId: step.id,
    data: { nrOfInstances: items.value.length, sequential: mi.sequential },
  });
  for (const boundaryId of step.boundaries ?? []) moves.startWait(stepById(plan, boundaryId));
  const loop: LoopState = { items: items.value, created: 0, completed: [], results: items.value.map(() => null) };
  (state.loops ??= {})[step.id] = loop;
  fx.loops[step.id] = loop;
  if (items.value.length === 0) {
    settleElements(plan, step, loop, state, vars, fx, moves);
    return;
  }
  for (const start of first) createElement(plan, step, loop, state, fx, start);
}

/** How one element starts: a task's local variables, a child's variables and called key, or a user task's details. */
type ElementStart =
  | { ok: true; locals: Variables; writes?: Variables; key?: string; inherited?: Variables; userTask?: UserTaskDetails }
  | { ok: false; kind: 'io_mapping' | 'call_activity' | 'condition_error'; message: string; details: Record<string, unknown> };

/**
 * An element's own variables: the locals of the subprocess passes around the step (`outer`), its
 * element variable and loopCounter, then a task's input mappings over them; a call activity's
 * child gets what the call passes in, with the element's own on top, and a subprocess body's child
 * its input mappings' locals too (kept out of `inherited`, so its return carries them).
 */
function elementStart(
  step: PlanStep,
  items: unknown[],
  index: number,
  vars: Variables,
  outer: Variables | undefined,
): ElementStart {
  const base: Variables = { ...outer, ...elementLocals(step, items, index) };
  if (step.kind === 'callActivity') {
    const call = prepareCall(step, { ...vars, ...base });
    if (!call.ok) return { ...call, kind: 'call_activity' };
    const inherited = { ...call.variables, ...base };
    if (!step.io) return { ok: true, locals: inherited, key: call.key };
    const inputs = mapInputs(step, vars, base);
    if (!inputs.ok) return { ...inputs, kind: 'io_mapping' };
    for (const name of inputNames(step)) delete inherited[name];
    return {
      ok: true,
      locals: { ...call.variables, ...inputs.locals },
      inherited,
      key: call.key,
      ...(inputs.writes ? { writes: inputs.writes } : {}),
    };
  }
  const inputs: InputsResult = step.io ? mapInputs(step, vars, base) : { ok: true, locals: base };
  if (!inputs.ok) return { ...inputs, kind: 'io_mapping' };
  if (step.wait?.trigger !== 'user') return inputs;
  // Who works on the element and when is read with its own variables: an assignee per element of a list of people.
  const details = evaluateUserTask(step.wait.userTask, { ...vars, ...inputs.locals });
  if (!details.ok)
    return {
      ok: false,
      kind: 'condition_error',
      message: `User task of ${step.id}: ${details.message}. Fix the variables, then retry the incident.`,
      details: { loopCounter: base.loopCounter },
    };
  return { ...inputs, userTask: step.name ? { name: step.name, ...details.details } : details.details };
}

/** The element variable and loopCounter of element `index` (loopCounter from 0, or from 1 in Camunda 8 files). */
export function elementLocals(step: PlanStep, items: unknown[], index: number): Variables {
  const mi = step.multiInstance as MultiInstanceSpec;
  return {
    ...(mi.elementVariable ? { [mi.elementVariable]: items[index] } : {}),
    loopCounter: index + (mi.counterFrom ?? 0),
  };
}

function createElement(
  plan: Plan,
  step: PlanStep,
  loop: LoopState,
  state: InstanceState,
  fx: Effects,
  start: ElementStart,
): void {
  if (!start.ok) return;
  pushElement(plan, step, loop.created++, state, fx, start);
}

/**
 * The retry of a multi-instance call activity's incident calls element `index` again: its child
 * ended without completing. Its variables are read afresh; inputs that fail stop the step again,
 * and the element waits for the next retry.
 */
export function callElementAgain(
  plan: Plan,
  step: PlanStep,
  loop: LoopState,
  index: number,
  state: InstanceState,
  vars: Variables,
  fx: Effects,
  moves: ElementMoves,
): void {
  const start = elementStart(step, loop.items, index, vars, scopeLocals(plan, step, state));
  if (!start.ok) {
    loop.recall = [...(loop.recall ?? []), index];
    fx.loops[step.id] = loop;
    return moves.raise(step.id, start.kind, start.message, start.details);
  }
  writeVariables(plan, step, state, vars, start.writes, fx);
  moves.event({
    kind: 'loop:element_called_again',
    stepId: step.id,
    data: { loopCounter: elementLocals(step, loop.items, index).loopCounter },
  });
  pushElement(plan, step, index, state, fx, start);
}

function pushElement(
  plan: Plan,
  step: PlanStep,
  index: number,
  state: InstanceState,
  fx: Effects,
  start: Extract<ElementStart, { ok: true }>,
): void {
  if (step.kind === 'callActivity' && step.call) {
    fx.calls.push({
      stepId: step.id,
      key: start.key ?? '',
      ...pinOf(step.call),
      variables: start.locals,
      businessKey: step.call.businessKey,
      loopIndex: index,
      ...(step.call.body ? { body: true } : {}),
      ...(start.inherited ? { inherited: start.inherited } : {}),
      ...scopePathOf(plan, step, state),
    });
    return;
  }
  if (start.userTask) {
    fx.subscriptions.push({
      stepId: step.id,
      kind: 'user',
      name: step.id,
      correlationKey: null,
      userTask: start.userTask,
      loopIndex: index,
      localVariables: start.locals,
      ...scopePathOf(plan, step, state),
    });
    return;
  }
  const task = step.task as NonNullable<PlanStep['task']>;
  fx.tasks.push({ stepId: step.id, ...task, loopIndex: index, localVariables: start.locals, ...scopePathOf(plan, step, state) });
}

/** A multi-instance step's progress (a loop step's row holds its pass instead). */
export function elementsOf(state: InstanceState, stepId: string): LoopState | undefined {
  const stored = state.loops?.[stepId];
  return stored && 'items' in stored ? stored : undefined;
}

/**
 * One element's task completed: its result is kept (outputElement over the
 * completion variables, which stay local to the element), then the step completes
 * when every element did or the completion condition holds (open elements are
 * canceled); a sequential step starts its next element.
 */
export function completeElement(
  plan: Plan,
  stepId: string,
  index: number,
  output: Variables,
  state: InstanceState,
  vars: Variables,
  fx: Effects,
  moves: ElementMoves,
): void {
  const step = stepById(plan, stepId);
  const loop = elementsOf(state, stepId);
  if (!step.multiInstance || !loop || loop.completed.includes(index)) return;
  loop.completed.push(index);
  const locals = elementLocals(step, loop.items, index);
  const scope = { ...visibleVariables(plan, step, state, vars), ...locals, ...output };
  const result = step.multiInstance.outputElement
    ? evaluateValue(step.multiInstance.outputElement, scope)
    : { ok: true as const, value: output };
  loop.results[index] = result.ok ? result.value : null;
  fx.loops[stepId] = loop;
  fx.steps.push({ stepId, status: state.steps[stepId] as StepStatus }); // carries the new progress
  moves.event({
    kind: 'loop:element_completed',
    stepId,
    data: {
      loopCounter: locals.loopCounter,
      nrOfCompletedInstances: loop.completed.length,
      ...(result.ok ? {} : { outputError: result.message }),
    },
  });
  if (state.steps[stepId] === 'active') settleElements(plan, step, loop, state, vars, fx, moves);
}

/**
 * After an element completed (or none exist): the step completes when every element did or the
 * completion condition holds (open elements are canceled); a sequential step starts its next element.
 */
export function settleElements(
  plan: Plan,
  step: PlanStep,
  loop: LoopState,
  state: InstanceState,
  vars: Variables,
  fx: Effects,
  moves: ElementMoves,
): void {
  const mi = step.multiInstance as MultiInstanceSpec;
  const total = loop.items.length;
  const counts = instanceCounts({
    total,
    completed: loop.completed.length,
    active: loop.created - loop.completed.length,
    sequential: mi.sequential,
  });
  let done = loop.completed.length === total;
  if (!done && mi.completionCondition) {
    const holds = testCondition(mi.completionCondition, { ...visibleVariables(plan, step, state, vars), ...counts });
    if (!holds.ok) {
      moves.raise(
        step.id,
        'condition_error',
        `Completion condition of multi-instance step ${step.id}: ${holds.message}. Fix the variables, then retry the incident.`,
        { completionCondition: mi.completionCondition.source },
      );
      return;
    }
    done = holds.value;
  }
  if (!done) {
    if (!mi.sequential || loop.created >= total) return;
    // A failing input stops the step in an incident; its retry settles the loop again and creates this element.
    const start = elementStart(step, loop.items, loop.created, vars, scopeLocals(plan, step, state));
    if (!start.ok) return moves.raise(step.id, start.kind, start.message, start.details);
    writeVariables(plan, step, state, vars, start.writes, fx);
    createElement(plan, step, loop, state, fx, start);
    return;
  }
  if (mi.outputCollection) writeVariables(plan, step, state, vars, { [mi.outputCollection]: loop.results }, fx);
  // Elements still open when the condition holds are canceled: their workers get LockLost.
  if (loop.completed.length < loop.created) {
    if (step.kind === 'callActivity') fx.canceledCalls.push(step.id);
    else if (step.wait?.trigger === 'user') fx.endedWaits.push(step.id);
    else fx.canceledTasks.push(step.id);
  }
  moves.event({
    kind: 'loop:completed',
    stepId: step.id,
    data: { ...counts, canceled: loop.created - loop.completed.length },
  });
  moves.complete(step.id);
}
