// Input and output mappings of service tasks at run time (docs/ARCHITECTURE.md, "Input and output
// mappings"). Inputs become the task's local variables when it is created; outputs decide what
// of a worker's result reaches the process. A JavaScript parameter (camunda:script) runs in the
// script sandbox: its value is the parameter's, and what it sets through execution.setVariable
// is written to the process variables, as Camunda 7 writes it to the scope that has the name or
// else the process instance. Pure: the callers write what these return. A step
// without mappings never gets here (each caller tests `step.io` first), so tasks without
// mappings cost nothing extra.
import type { IoMapping, PlanStep, ScriptMapping, SignalPayload } from '../compiler/plan.ts';
import type { Variables } from '../model/effects.ts';
import { evaluateValue } from './loops.ts';
import { runJavaScript } from './script-sandbox.ts';

export type MappingFailure = { ok: false; message: string; details: Record<string, unknown> };
/** `writes`: process variables the input scripts set (execution.setVariable), absent when none did. */
export type InputsResult = { ok: true; locals: Variables; writes?: Variables } | MappingFailure;

/**
 * The local variables of one task of `step`: `base` (a multi-instance element's variable and
 * loopCounter) and then each input in order, evaluated over the process variables under the
 * locals so far (a later input sees the earlier ones). A missing variable reads as null.
 */
export function mapInputs(step: PlanStep, vars: Variables, base: Variables = {}): InputsResult {
  const locals: Variables = { ...base };
  let writes: Variables | undefined;
  for (const mapping of step.io?.inputs ?? []) {
    const value = evaluateMapping(mapping, { ...vars, ...writes, ...locals });
    if (!value.ok) return failure(step, 'Input', mapping, value.message, 'Fix the variables, then retry the incident');
    if (value.writes) writes = { ...writes, ...value.writes };
    assignPath(locals, mapping.target, value.value, locals);
  }
  return writes ? { ok: true, locals, writes } : { ok: true, locals };
}

type MappingValue = { ok: true; value: unknown; writes?: Variables } | { ok: false; message: string };

function evaluateMapping(mapping: IoMapping | ScriptMapping, scope: Variables): MappingValue {
  if ('feel' in mapping) return evaluateValue(mapping.feel, scope);
  const run = runJavaScript(mapping.javascript, scope);
  if (!run.ok) return { ok: false, message: run.message };
  return Object.keys(run.writes).length > 0 ? { ok: true, value: run.value, writes: run.writes } : { ok: true, value: run.value };
}

export type ResultVariablesResult = { ok: true; variables: Variables } | MappingFailure;

/**
 * What a worker's result writes to the process variables. With output mappings: only their
 * targets, each evaluated over the process variables, then the task's locals (its inputs), then
 * the result. Without: the result, less the names the task holds locally (its inputs), which
 * stay on the task (a write goes to the innermost scope that has the name).
 */
export function resultVariables(
  step: PlanStep,
  vars: Variables,
  locals: Variables,
  result: Variables,
  next = WORKER_NEXT,
): ResultVariablesResult {
  const io = step.io;
  if (!io) return { ok: true, variables: result };
  if (io.outputs.length === 0) {
    const kept: Variables = { ...result };
    for (const name of inputNames(step)) delete kept[name];
    return { ok: true, variables: kept };
  }
  return mapOutputs(step, { ...vars, ...locals, ...result }, vars, next);
}

/** What a worker does when its result cannot be mapped. */
const WORKER_NEXT = 'The task stays locked: report a failure for it, or complete it with variables the mapping can read';

/** The outputs' targets over `scope`; a dotted target updates a copy of the object variable it names. */
export function mapOutputs(step: PlanStep, scope: Variables, vars: Variables, next = WORKER_NEXT): ResultVariablesResult {
  const out: Variables = {};
  for (const mapping of step.io?.outputs ?? []) {
    const value = evaluateMapping(mapping, scope);
    if (!value.ok) return failure(step, 'Output', mapping, value.message, next);
    if (value.writes) Object.assign(out, value.writes);
    assignPath(out, mapping.target, value.value, vars);
  }
  return { ok: true, variables: out };
}

/** The variables a step's input mappings make its own: the first name of each target. */
export function inputNames(step: PlanStep): string[] {
  return (step.io?.inputs ?? []).map((mapping) => topName(mapping.target));
}

/** `order.total` -> `order`. */
function topName(target: string): string {
  const dot = target.indexOf('.');
  return dot < 0 ? target : target.slice(0, dot);
}

/**
 * Sets `target` in `into`. A dotted path starts from the object already in `into`, else the one
 * in `from` (copied, never changed in place), else an empty object; a non-object on the way is replaced.
 */
export function assignPath(into: Variables, target: string, value: unknown, from: Variables): void {
  const path = target.split('.');
  const head = path[0] as string;
  if (path.length === 1) {
    into[head] = value;
    return;
  }
  const start = head in into ? into[head] : from[head];
  const root = copyObject(start);
  into[head] = root;
  let at = root;
  for (let i = 1; i < path.length - 1; i++) {
    const key = path[i] as string;
    const next = copyObject(at[key]);
    at[key] = next;
    at = next;
  }
  at[path[path.length - 1] as string] = value;
}

function copyObject(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? { ...(value as Record<string, unknown>) } : {};
}

/** What an incident's message calls the element whose mapping failed, when not a task or a catch event. */
const WHAT_MAPS: Partial<Record<PlanStep['kind'], string>> = {
  subProcess: 'subprocess',
  eventSubProcess: 'subprocess',
  startEvent: 'event',
  eventSubProcessStart: 'event',
  endEvent: 'event',
  signalThrow: 'event',
  boundaryEvent: 'event',
  passThrough: 'element',
};

function failure(
  step: PlanStep,
  kind: 'Input' | 'Output' | 'Signal variable',
  mapping: IoMapping | ScriptMapping,
  message: string,
  next: string,
): MappingFailure {
  // A catch event without an element type is an event; a receive or user task is a task.
  const what = WHAT_MAPS[step.kind] ?? (step.kind === 'catchEvent' && !step.elementType ? 'event' : 'task');
  const direction = kind === 'Signal variable' ? 'signal' : kind.toLowerCase();
  return {
    ok: false,
    message: `${kind} mapping of ${what} ${step.id} to ${mapping.target} ("${mapping.source}") failed: ${message}. ${next}.`,
    details: { mapping: { direction, target: mapping.target, source: mapping.source } },
  };
}

export type PassingResult = { ok: true; locals: Variables; writes: Variables; payload?: Variables } | MappingFailure;

const PASSING_NEXT = 'Fix the variables, then retry the incident';

/**
 * The mappings of a step the token passes at once (a none start, end or throw event, a signal
 * throw, a task that does nothing): its inputs over the variables, `base` (the scopes' locals)
 * under them; then its outputs over the variables and its locals. `writes`: what reaches the
 * scopes around it. A signal throw's `payload` is what its signal carries, computed last, so
 * nothing is written unless all of it can be.
 */
export function passingMappings(step: PlanStep, vars: Variables, base: Variables | undefined): PassingResult {
  const inputs = mapInputs(step, vars, base);
  if (!inputs.ok) return inputs;
  const scope = { ...vars, ...inputs.writes, ...inputs.locals };
  const outputs = mapOutputs(step, scope, vars, PASSING_NEXT);
  if (!outputs.ok) return outputs;
  const writes = { ...inputs.writes, ...outputs.variables };
  const spec = step.throwSignal?.payload;
  if (!spec) return { ok: true, locals: inputs.locals, writes };
  const own: Variables = {};
  for (const name of inputNames(step)) if (name in inputs.locals) own[name] = inputs.locals[name];
  const payload = signalPayload(step, spec, scope, own);
  return payload.ok ? { ok: true, locals: inputs.locals, writes, payload: payload.variables } : payload;
}

/** What a thrown signal carries: all the event sees or its own inputs, then each camunda:in over what it sees. */
export function signalPayload(step: PlanStep, spec: SignalPayload, seen: Variables, own: Variables): ResultVariablesResult {
  const payload: Variables = spec.all === 'visible' ? { ...seen } : spec.all === 'locals' ? { ...own } : {};
  for (const mapping of spec.mappings) {
    const value = evaluateMapping(mapping, seen);
    if (!value.ok) return failure(step, 'Signal variable', mapping, value.message, PASSING_NEXT);
    assignPath(payload, mapping.target, value.value, payload);
  }
  return { ok: true, variables: payload };
}
