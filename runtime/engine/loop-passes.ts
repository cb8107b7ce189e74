// Loops run one pass at a time (docs/scopes.md, "Loops"): a pass that has no
// open step left either starts the next one at the loop's head, with fresh step and flow states,
// or ends the loop and lets its exit flows move the token on. advance.ts evaluates the steps;
// this module decides about passes and calls back into it (PassMoves), so neither imports the other
// in a cycle.
import type { CycleSpec, Plan, PlanStep } from '../compiler/plan.ts';
import type { Effects, InstanceState, NewEvent, PassState } from '../model/effects.ts';
import type { StepStatus } from '../model/vocabulary.ts';
import { indexPlan } from './plan-index.ts';

/** What a pass needs of the step evaluation (advance.ts). */
export interface PassMoves {
  /** runs a step: the head of the next pass */
  activate(step: PlanStep): void;
  /** evaluates the queued steps and what they lead to; loops whose body changes join `touched` */
  propagate(queue: string[], touched: Set<string>): void;
  setStep(stepId: string, status: StepStatus): void;
  event(event: NewEvent): void;
  /** a repeating boundary's path (a non-interrupting event subprocess's body) may have ended: a firing waiting for it starts (boundary-firings.ts) */
  nextFiring(owner: PlanStep): void;
  /** a loop marker's decision after a pass: another pass, the end, or undefined (an incident waits) */
  repeats(loop: PlanStep): boolean | undefined;
}

function stepById(plan: Plan, stepId: string): PlanStep {
  const step = indexPlan(plan).steps.get(stepId);
  if (!step) throw new Error(`Step ${stepId} is not in plan ${plan.processKey}`);
  return step;
}

/** The pass a loop runs, 1 for the first. */
export function passOf(state: InstanceState, loopId: string): number {
  const stored = state.loops?.[loopId];
  return stored && 'pass' in stored ? stored.pass : 1;
}

/**
 * A pass begins: the loop step is active with its number (written on its row). A multi-instance
 * subprocess's elements and results go from pass to pass; its first pass brings them.
 */
export function startPass(
  loop: PlanStep,
  pass: number,
  state: InstanceState,
  fx: Effects,
  moves: PassMoves,
  first?: Omit<PassState, 'pass'>,
): void {
  const before = state.loops?.[loop.id];
  const carried = first ?? (pass > 1 && before && 'pass' in before ? { ...before } : {});
  const progress: PassState = { ...carried, pass };
  (state.loops ??= {})[loop.id] = progress;
  fx.loops[loop.id] = progress;
  moves.setStep(loop.id, 'active');
  moves.event({ kind: 'loop:pass_started', stepId: loop.id, data: { pass } });
}

/** Where a step runs: the passes of the loops around it, outermost first; nothing at the top. */
export function scopePathOf(plan: Plan, step: PlanStep, state: InstanceState): { scopePath?: string } {
  const parts: string[] = [];
  for (let at = step.inLoop; at !== undefined; at = stepById(plan, at).inLoop) parts.unshift(`${at}#${passOf(state, at)}`);
  return parts.length === 0 ? {} : { scopePath: `/${parts.join('/')}` };
}

/**
 * Loops whose body changed, innermost first: a loop whose pass has no open step left
 * either starts its next pass at its head (a back flow was taken) or ends, letting its
 * exit flows move the token on as the last pass resolved them.
 */
export function settleLoops(plan: Plan, touched: Set<string>, state: InstanceState, fx: Effects, moves: PassMoves): void {
  const depth = (id: string): number => {
    let d = 0;
    for (let at = stepById(plan, id).inLoop; at !== undefined; at = stepById(plan, at).inLoop) d++;
    return d;
  };
  while (touched.size > 0 && !fx.terminated) {
    const loopId = [...touched].sort((a, b) => depth(b) - depth(a))[0] as string;
    touched.delete(loopId);
    const loop = stepById(plan, loopId);
    if (loop.boundary?.repeats || loop.eventSubProcess?.repeats) {
      moves.nextFiring(loop);
      // A firing that ended may have been the last open work of the pass around it.
      if (loop.inLoop !== undefined) touched.add(loop.inLoop);
      continue;
    }
    const cycle = loop.cycle;
    const status = state.steps[loop.id];
    if (!cycle || (status !== undefined && status !== 'active') || state.steps[cycle.head] === undefined) continue;
    if (cycle.steps.some((id) => passOpenAt(plan, id, state))) continue;
    // A loop marker decides by its condition; a loop of sequence flows by the back flow its pass took.
    const again = cycle.repeat
      ? status === 'active'
        ? moves.repeats(loop)
        : false
      : cycle.backFlows.some((f) => state.flows[f] === 'taken');
    if (again === undefined) continue;
    if (again) {
      nextPass(plan, loop, cycle, state, fx, moves);
    } else {
      endLoop(plan, loop, cycle, touched, state, fx, moves);
    }
  }
}

/** A step keeps its pass open while it runs, waits in an incident, or has ended with outputs not yet resolved. */
function passOpenAt(plan: Plan, stepId: string, state: InstanceState): boolean {
  const status = state.steps[stepId];
  if (status === 'active' || status === 'incident') return true;
  if (status !== 'completed' && status !== 'skipped') return false;
  const step = stepById(plan, stepId);
  // An event subprocess's start disarmed with its scope is skipped for good: its flow never runs.
  if (status === 'skipped' && step.scope !== undefined && stepById(plan, step.scope).eventSubProcess?.start === step.id)
    return false;
  return step.outgoing.some((f) => state.flows[f] === undefined);
}

function nextPass(plan: Plan, loop: PlanStep, cycle: CycleSpec, state: InstanceState, fx: Effects, moves: PassMoves): void {
  const index = indexPlan(plan);
  const pass = passOf(state, loop.id) + 1;
  const inner = plan.steps
    .filter((s) => s !== loop && s.cycle !== undefined && cycle.steps.includes(s.cycle.head))
    .map((s) => s.id);
  const steps = new Set([...cycle.steps, ...inner]);
  const flows = new Set(plan.flows.filter((f) => cycle.steps.includes(f.source)).map((f) => f.id));
  keepCompletions(plan, steps, state, fx);
  // Fresh states for the body: what this transition wrote of the pass before is history only.
  for (const id of steps) {
    delete state.steps[id];
    delete state.loops?.[id];
    delete fx.loops[id];
  }
  for (const id of flows) delete state.flows[id];
  fx.steps = fx.steps.filter((x) => !steps.has(x.stepId));
  fx.flows = fx.flows.filter((x) => !flows.has(x.flowId));
  // Waits of the pass before are ended by the reset (resetSteps); waits this transition started
  // and ended in that pass are never written; the new pass's waits are its own.
  fx.endedWaits = fx.endedWaits.filter((id) => !steps.has(id));
  fx.timers = fx.timers.filter((x) => !steps.has(x.stepId));
  fx.subscriptions = fx.subscriptions.filter((x) => !steps.has(x.stepId));
  if (state.completedOrder) state.completedOrder = state.completedOrder.filter((id) => !steps.has(id));
  fx.resetSteps.push(...steps);
  fx.resetFlows.push(...flows);
  startPass(loop, pass, state, fx, moves);
  moves.activate(index.steps.get(cycle.head) as PlanStep);
}

/**
 * The pass's completed steps that compensation may undo outlive it: each is kept as
 * `<step>@<scope path of the pass>` (a row of its own, completed, in the same completion order),
 * so a compensation after the loop undoes every pass's steps, newest first (engine/compensate.ts).
 */
function keepCompletions(plan: Plan, steps: Set<string>, state: InstanceState, fx: Effects): void {
  const index = indexPlan(plan);
  // In completion order: those this transition completed get their numbers in that order.
  for (const id of (state.completedOrder ?? []).filter((x) => steps.has(x))) {
    const step = index.steps.get(id);
    if (state.steps[id] !== 'completed' || !step?.compensation?.handler) continue;
    const as = `${id}${KEPT}${scopePathOf(plan, step, state).scopePath ?? '/'}`;
    state.steps[as] = 'completed';
    if (state.completedOrder) state.completedOrder = state.completedOrder.map((x) => (x === id ? as : x));
    fx.keptCompletions.push({ stepId: id, as });
  }
}

/** Separates a kept completion's step id from the pass it completed in. */
export const KEPT = '@';

/** The step id and the pass of a steps key: a kept completion's, or a step's own (no pass). */
export function keptStep(key: string): { stepId: string; scopePath?: string } {
  const at = key.indexOf(KEPT);
  return at < 0 ? { stepId: key } : { stepId: key.slice(0, at), scopePath: key.slice(at + 1) };
}

function endLoop(
  plan: Plan,
  loop: PlanStep,
  cycle: CycleSpec,
  touched: Set<string>,
  state: InstanceState,
  fx: Effects,
  moves: PassMoves,
): void {
  const ran = state.steps[loop.id] === 'active';
  moves.setStep(loop.id, ran ? 'completed' : 'skipped');
  if (ran) {
    fx.loops[loop.id] = (state.loops?.[loop.id] as PassState | undefined) ?? { pass: passOf(state, loop.id) };
    moves.event({ kind: 'loop:completed', stepId: loop.id, data: { passes: passOf(state, loop.id) } });
  } else {
    moves.event({ kind: 'step:skipped', stepId: loop.id });
  }
  // An exit flow that leaves the enclosing loop too waits for that loop's end.
  const parent = loop.inLoop !== undefined ? stepById(plan, loop.inLoop).cycle : undefined;
  const queue = cycle.exitFlows
    .filter((f) => state.flows[f] !== undefined)
    .map((f) => indexPlan(plan).flows.get(f)?.target ?? '')
    .filter((target) => parent === undefined || parent.steps.includes(target));
  if (loop.inLoop !== undefined) touched.add(loop.inLoop);
  moves.propagate(queue, touched);
}
