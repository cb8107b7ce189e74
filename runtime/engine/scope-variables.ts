// What a step reads and where its writes go (docs/scopes.md, "Scope variables"). Two kinds of
// scope hold local variables: the pass of a sequential multi-instance subprocess (its element
// variable and loopCounter, read from the pass's progress) and an embedded subprocess with
// input or output mappings (its inputs, kept on its steps row while it is open). A read sees the
// innermost scope that has the name, then outward to the process variables. A write goes to the
// innermost open subprocess that holds the name, else to the process: Camunda 7's and Zeebe's
// rule. A subprocess's outputs are evaluated inside it when it ends and written from where it
// sits; its locals end with it.
import type { Plan, PlanStep } from '../compiler/plan.ts';
import type { Effects, InstanceState, PassState, ScopeLocals, Variables } from '../model/effects.ts';
import { mapInputs, mapOutputs, type MappingFailure } from './io-mappings.ts';
import { indexPlan } from './plan-index.ts';

const RETRY = 'Fix the variables, then retry the incident';

/** The scopes around `step`, innermost first: the loops (passes, firings) and subprocesses that hold it. */
function enclosing(plan: Plan, step: PlanStep): PlanStep[] {
  const { steps } = indexPlan(plan);
  const chain: PlanStep[] = [];
  for (let at = parentOf(steps, step); at !== undefined; at = parentOf(steps, at)) chain.push(at);
  return chain;
}

function parentOf(steps: Map<string, PlanStep>, step: PlanStep): PlanStep | undefined {
  const loop = step.inLoop === undefined ? undefined : steps.get(step.inLoop);
  const sub = step.scope === undefined ? undefined : steps.get(step.scope);
  if (!loop || !sub) return loop ?? sub;
  // A loop inside the subprocess is the nearer one; otherwise the subprocess sits inside the loop.
  return loop === sub || loop.scope === step.scope ? loop : sub;
}

/** A subprocess's own locals, while it is open; undefined for any other scope or when it has none. */
function subprocessLocals(scope: PlanStep, state: InstanceState): Variables | undefined {
  if ((scope.kind !== 'subProcess' && scope.kind !== 'eventSubProcess') || !scope.io) return undefined;
  const status = state.steps[scope.id];
  if (status !== 'active' && status !== 'incident') return undefined;
  const stored = state.loops?.[scope.id];
  return stored && 'locals' in stored ? stored.locals : undefined;
}

/** A sequential multi-instance subprocess pass's locals: its element variable and loopCounter. */
function passLocalsOf(scope: PlanStep, state: InstanceState): Variables | undefined {
  const elements = scope.cycle?.repeat?.elements;
  const progress = state.loops?.[scope.id];
  if (!elements || !progress || !('pass' in progress) || !progress.elements) return undefined;
  const index = progress.pass - 1;
  return {
    ...(elements.elementVariable ? { [elements.elementVariable]: progress.elements[index] ?? null } : {}),
    loopCounter: index + (elements.counterFrom ?? 0),
  };
}

/**
 * The locals of the scopes around `step`, an inner scope's over an outer one's; undefined outside
 * any. `passesOnly`: only the passes' element variables and counters, which no write changes.
 */
export function scopeLocals(plan: Plan, step: PlanStep, state: InstanceState, passesOnly = false): Variables | undefined {
  let locals: Variables | undefined;
  for (const scope of enclosing(plan, step)) {
    const own = (passesOnly ? undefined : subprocessLocals(scope, state)) ?? passLocalsOf(scope, state);
    if (own) locals = { ...own, ...locals };
  }
  return locals;
}

/**
 * The variables `step` reads: the process variables with the locals of the scopes around it over
 * them, and a catch event's own inputs over those (its key, timer, condition and outputs read them).
 */
export function visibleVariables(plan: Plan, step: PlanStep, state: InstanceState, vars: Variables): Variables {
  const locals = scopeLocals(plan, step, state);
  const own = waitLocals(step, state);
  return locals || own ? { ...vars, ...locals, ...own } : vars;
}

/** The locals a catch event's input mappings made as it started waiting (a user task keeps its own on its task). */
export function waitLocals(step: PlanStep, state: InstanceState): Variables | undefined {
  if (step.kind !== 'catchEvent' || step.elementType === 'bpmn:UserTask' || !step.io?.inputs.length) return undefined;
  const stored = state.loops?.[step.id];
  return stored && 'locals' in stored ? stored.locals : undefined;
}

/**
 * What the steps inside subprocess `sub` see: its own locals over what it sees. Its locals are
 * read from its row even once it ended, for what is evaluated as it ends (its outputs, the
 * output element of a multi-instance pass).
 */
export function insideVariables(plan: Plan, sub: PlanStep, state: InstanceState, vars: Variables): Variables {
  const outside = visibleVariables(plan, sub, state, vars);
  const stored = sub.io ? state.loops?.[sub.id] : undefined;
  return stored && 'locals' in stored ? { ...outside, ...stored.locals } : outside;
}

/**
 * Writes what `step` (or the subprocess `step` when it ends) sets: each name to the innermost open
 * subprocess around it that holds the name, written back on that subprocess's row, else to the
 * process variables `vars`.
 */
export function writeVariables(
  plan: Plan,
  step: PlanStep | undefined,
  state: InstanceState,
  vars: Variables,
  written: Variables | undefined,
  fx: Effects,
): void {
  if (!written) return;
  const holders = step ? enclosing(plan, step).filter((s) => subprocessLocals(s, state) !== undefined) : [];
  if (holders.length === 0) {
    Object.assign(vars, written);
    return;
  }
  const changed = new Map<string, Variables>();
  for (const [name, value] of Object.entries(written)) {
    const holder = holders.find((s) => name in (changed.get(s.id) ?? (subprocessLocals(s, state) as Variables)));
    if (!holder) {
      vars[name] = value;
      continue;
    }
    const locals = changed.get(holder.id) ?? { ...(subprocessLocals(holder, state) as Variables) };
    locals[name] = value;
    changed.set(holder.id, locals);
  }
  for (const [id, locals] of changed) keepLocals(id, { locals }, state, fx);
}

/** A non-interrupting event subprocess keeps its firing count beside the locals. */
function withLocals(id: string, kept: ScopeLocals, state: InstanceState): ScopeLocals | PassState {
  const stored = state.loops?.[id];
  return stored && 'pass' in stored ? { ...stored, ...kept } : kept;
}

/** Stores a subprocess's locals with its row: the status it has is written again with them. */
function keepLocals(id: string, kept: ScopeLocals, state: InstanceState, fx: Effects): void {
  const next = withLocals(id, kept, state);
  (state.loops ??= {})[id] = next;
  fx.loops[id] = next;
  const status = state.steps[id];
  if (status !== undefined) fx.steps.push({ stepId: id, status });
}

/**
 * A subprocess with mappings starts: its inputs, evaluated over what it sees, become its locals
 * (an input's script writes go where the subprocess's writes go). Call before it is active.
 */
export function enterSubprocess(
  plan: Plan,
  sub: PlanStep,
  state: InstanceState,
  vars: Variables,
  fx: Effects,
): { ok: true } | MappingFailure {
  const inputs = mapInputs(sub, visibleVariables(plan, sub, state, vars));
  if (!inputs.ok) return inputs;
  writeVariables(plan, sub, state, vars, inputs.writes, fx);
  const entered = withLocals(sub.id, { locals: inputs.locals }, state);
  (state.loops ??= {})[sub.id] = entered;
  fx.loops[sub.id] = entered;
  return { ok: true };
}

/**
 * A subprocess with output mappings ends: each is evaluated over what the subprocess's inner
 * steps see (its locals over the variables around it), and the targets are written from where
 * the subprocess sits. Nothing is written when one fails.
 */
export function leaveSubprocess(
  plan: Plan,
  sub: PlanStep,
  state: InstanceState,
  vars: Variables,
  fx: Effects,
): { ok: true } | MappingFailure {
  if (!sub.io?.outputs.length) return { ok: true };
  const out = mapOutputs(sub, insideVariables(plan, sub, state, vars), visibleVariables(plan, sub, state, vars), RETRY);
  if (!out.ok) return out;
  writeVariables(plan, sub, state, vars, out.variables, fx);
  return { ok: true };
}

/**
 * An operator's edit of subprocess `scopeId`'s locals (the repair of a mapping that read a bad
 * local): answers the new locals, written with its row; not ok when it holds none now.
 */
export function editScopeLocals(
  plan: Plan,
  scopeId: string,
  state: InstanceState,
  set: Variables,
  deleted: string[],
  fx: Effects,
): { ok: true; variables: Variables } | { ok: false; message: string } {
  const scope = indexPlan(plan).steps.get(scopeId);
  const locals = scope ? subprocessLocals(scope, state) : undefined;
  if (!scope || !locals)
    return {
      ok: false,
      message: `${scope?.kind === 'subProcess' && scope.io ? `Subprocess ${scopeId} is not open` : `${scopeId} is no subprocess with input or output mappings`}, so it holds no local variables: edit the process's variables (leave out scope)`,
    };
  const edited = { ...locals, ...set };
  for (const name of deleted) delete edited[name];
  keepLocals(scopeId, { locals: edited }, state, fx);
  return { ok: true, variables: edited };
}

/**
 * What a catching error or escalation event stores (`camunda:errorCodeVariable`,
 * `errorMessageVariable`, `escalationCodeVariable`), written from where the catcher sits.
 */
export function writeCaughtVariables(
  plan: Plan,
  catcher: PlanStep,
  state: InstanceState,
  vars: Variables,
  caught: { code: string | null; message?: string | null },
  fx: Effects,
): void {
  const wait = catcher.wait;
  const written: Variables = {};
  if (wait?.trigger === 'error') {
    if (wait.errorCodeVariable) written[wait.errorCodeVariable] = caught.code;
    if (wait.errorMessageVariable) written[wait.errorMessageVariable] = caught.message ?? null;
  } else if (wait?.trigger === 'escalation' && wait.escalationCodeVariable) {
    written[wait.escalationCodeVariable] = caught.code;
  }
  if (Object.keys(written).length > 0) writeVariables(plan, catcher, state, vars, written, fx);
}
