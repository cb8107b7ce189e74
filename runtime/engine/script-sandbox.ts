// JavaScript of script tasks runs in QuickJS compiled to WebAssembly: no file system, network,
// process, timers or require, only the variables handed in. Each run gets a QuickJS runtime of
// its own with a memory limit, a stack limit and a deadline its interpreter checks. QuickJS
// checks the deadline only every few thousand loop iterations and not inside a native call
// (`new Array(1e5).fill(1)` in a loop ran 9 s past a 100 ms deadline), so the runs happen in a
// budgeted thread that is terminated when the budget is over: a script that loops or
// allocates forever costs its run's budget, never the server. The caller blocks meanwhile, as
// a transition is synchronous; most scripts take well under a millisecond.
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import type { Variables } from '../model/effects.ts';
import { BudgetedThread } from '../shared/budgeted-thread.ts';

export interface ScriptBudget {
  /** wall-clock milliseconds one run may take */
  timeMs: number;
  /** heap of one run's QuickJS runtime */
  memoryMb: number;
  /** JSON bytes of the variables one run may write (the instance variables limit) */
  maxWriteBytes: number;
}

export const DEFAULT_SCRIPT_BUDGET: ScriptBudget = { timeMs: 100, memoryMb: 32, maxWriteBytes: 1_048_576 };

let budget: ScriptBudget = { ...DEFAULT_SCRIPT_BUDGET };

/** Set once at start from the environment (runtime/cli.ts); tests set it directly. */
export function configureScriptBudget(next: Partial<ScriptBudget>): void {
  budget = { ...budget, ...next };
}

export function scriptBudget(): ScriptBudget {
  return budget;
}

export type SandboxResult =
  { ok: true; value: unknown; writes: Variables } | { ok: false; message: string; details: Record<string, unknown> };

/** What the thread answers: a result, a script's error as QuickJS reports it, or a fault of QuickJS itself. */
type RunAnswer =
  | { ok: true; json: string }
  | { ok: false; error: { name?: string; message?: string; stack?: string }; fault?: true; notJson?: true };

const resolve = (name: string) => pathToFileURL(createRequire(import.meta.url).resolve(name)).href;

// What a script sees besides its variables: Camunda 7's execution object, over the same values,
// and the JSON part of Camunda Spin (S(...)), which Camunda 7 scripts use to read and build JSON
// variables. A Spin node written as a variable is stored as the JSON it holds.
const PRELUDE = `
const __vars = JSON.parse(__input);
const __writes = {};
const __read = (name) => (name in __writes ? __writes[name] : (__vars[name] ?? null));
const __kind = (v) => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v);
class SpinJsonNode {
  #v;
  constructor(v) { this.#v = v; }
  #need(kind, what) {
    if (__kind(this.#v) !== kind) throw new TypeError('Spin: ' + what + ' needs a JSON ' + kind + ', this node is ' + __kind(this.#v));
    return this.#v;
  }
  prop(name, value) {
    const object = this.#need('object', 'prop');
    if (arguments.length > 1) { object[name] = __plain(value); return this; }
    if (!Object.prototype.hasOwnProperty.call(object, name)) throw new Error('Spin: the JSON object has no property "' + name + '"');
    return new SpinJsonNode(object[name]);
  }
  hasProp(name) { return __kind(this.#v) === 'object' && Object.prototype.hasOwnProperty.call(this.#v, name); }
  deleteProp(name) { delete this.#need('object', 'deleteProp')[name]; return this; }
  propertyNames() { return Object.keys(this.#need('object', 'propertyNames')); }
  elements() { return this.#need('array', 'elements').map((e) => new SpinJsonNode(e)); }
  append(value) { this.#need('array', 'append').push(__plain(value)); return this; }
  stringValue() { return this.#need('string', 'stringValue'); }
  numberValue() { return this.#need('number', 'numberValue'); }
  boolValue() { return this.#need('boolean', 'boolValue'); }
  value() { return this.#v; }
  isObject() { return __kind(this.#v) === 'object'; }
  isArray() { return __kind(this.#v) === 'array'; }
  isString() { return __kind(this.#v) === 'string'; }
  isNumber() { return __kind(this.#v) === 'number'; }
  isBoolean() { return __kind(this.#v) === 'boolean'; }
  isNull() { return this.#v === null; }
  isValue() { return !['object', 'array'].includes(__kind(this.#v)); }
  toString() { return JSON.stringify(this.#v); }
  toJSON() { return this.#v; }
}
const __plain = (value) => (value instanceof SpinJsonNode ? value.toJSON() : value === undefined ? null : value);
globalThis.S = (value, format) => {
  if (format !== undefined && format !== 'application/json') throw new Error('Spin: Baton reads JSON only, not ' + format);
  if (typeof value !== 'string') return new SpinJsonNode(__plain(value));
  try { return new SpinJsonNode(JSON.parse(value)); } catch { throw new SyntaxError('Spin: S() got a string that is not JSON'); }
};
globalThis.execution = Object.freeze({
  getVariable: __read,
  setVariable: (name, value) => { __writes[String(name)] = __plain(value); },
  hasVariable: (name) => name in __writes || name in __vars,
  getVariables: () => ({ ...__vars, ...__writes }),
  getVariableTyped: (name) => {
    const value = __read(name);
    return Object.freeze({ getValue: () => value, getValueSerialized: () => JSON.stringify(value) });
  },
});
for (const name of Object.keys(__vars)) {
  if (/^[A-Za-z_$][A-Za-z0-9_$]*$/.test(name) && !(name in globalThis)) globalThis[name] = __vars[name];
}
`;

// The thread: QuickJS loaded once; per run a runtime and context, disposed after. A QuickJS
// fault (a WebAssembly abort) leaves the module unusable: the answer says so and the thread is replaced.
const THREAD_SOURCE = `
const { newQuickJSWASMModuleFromVariant, shouldInterruptAfterDeadline } = await import(data.core);
const loaded = await import(data.variant);
const quickjs = await newQuickJSWASMModuleFromVariant(loaded.default ?? loaded);
const PRELUDE = ${JSON.stringify(PRELUDE)};
const evaluate = (context, code, file, keep) => {
  const result = context.evalCode(code, file);
  if (result.error) {
    const error = context.dump(result.error);
    result.error.dispose();
    return { ok: false, error: typeof error === 'object' && error !== null ? error : { message: String(error) } };
  }
  if (keep) context.setProp(context.global, '__result', result.value);
  const value = keep ? undefined : context.dump(result.value);
  result.value.dispose();
  return { ok: true, value };
};
const handle = ({ source, input, timeMs, memoryMb }) => {
  const started = Date.now();
  let runtime;
  let context;
  try {
    runtime = quickjs.newRuntime();
    runtime.setMemoryLimit(memoryMb * 1024 * 1024);
    runtime.setMaxStackSize(256 * 1024);
    runtime.setInterruptHandler(shouldInterruptAfterDeadline(started + timeMs));
    context = runtime.newContext();
    const text = context.newString(input);
    context.setProp(context.global, '__input', text);
    text.dispose();
    const prelude = evaluate(context, PRELUDE, 'prelude.js', false);
    if (!prelude.ok) return prelude;
    const script = evaluate(context, source, 'script.js', true);
    if (!script.ok) return script;
    const out = evaluate(context, 'JSON.stringify([__result === undefined ? null : __result, __writes])', 'result.js', false);
    if (!out.ok || typeof out.value !== 'string') return { ok: false, notJson: true, error: out.ok ? {} : out.error };
    return { ok: true, json: out.value };
  } catch (cause) {
    return { ok: false, fault: true, error: { message: cause instanceof Error ? cause.message : String(cause) } };
  } finally {
    context?.dispose();
    runtime?.dispose();
  }
};
`;

const thread = new BudgetedThread<{ source: string; input: string; timeMs: number; memoryMb: number }, RunAnswer>(() => ({
  source: THREAD_SOURCE,
  data: { core: resolve('quickjs-emscripten-core'), variant: resolve('@jitl/quickjs-wasmfile-release-sync') },
  heapMb: 64,
  warmUp: { source: '1 + 1', input: '{}', timeMs: 10_000, memoryMb: 32 },
}));

/** Past QuickJS's own deadline, the thread gets this long to answer before it is terminated. */
const GRACE_MS = 20;

/** Loads QuickJS in its thread now (about 0.1 s), so the first script does not wait for it inside a transition. */
export function startScriptSandbox(): void {
  thread.start();
}

/**
 * Runs `source` over the variables: its completion value (the value of its last expression
 * statement) and what it set with execution.setVariable, both as JSON.
 */
export function runJavaScript(source: string, variables: Variables): SandboxResult {
  thread.start(); // loading QuickJS (and its first run) after a terminated run is not part of the next run's budget
  const started = Date.now();
  const { timeMs, memoryMb } = budget;
  const call = thread.call({ source, input: JSON.stringify(variables), timeMs, memoryMb }, timeMs + GRACE_MS);
  const details = { language: 'javascript' };
  if (!call.ok && call.reason === 'budget') return overBudget(details, started);
  if (!call.ok) return { ok: false, message: 'the script sandbox gave no answer; retry the incident', details };
  const answer = call.answer;
  if (answer.ok) {
    const [value, writes] = JSON.parse(answer.json) as [unknown, Variables];
    return { ok: true, value, writes };
  }
  if (answer.fault) {
    thread.stop();
    return { ok: false, message: `the script sandbox failed (${answer.error.message}); retry the incident`, details };
  }
  if (answer.notJson)
    return {
      ok: false,
      message: `the script's result or the variables it set cannot be written as JSON${answer.error.message ? ` (${answer.error.message})` : ''}`,
      details,
    };
  return failed(answer.error, details, started);
}

function overBudget(details: Record<string, unknown>, started: number): SandboxResult {
  return {
    ok: false,
    message: `the script did not finish within the budget of ${budget.timeMs} ms (BATON_SCRIPT_TIME_BUDGET_MS); it was stopped`,
    details: { ...details, elapsedMs: Date.now() - started },
  };
}

function failed(
  error: { name?: string; message?: string; stack?: string },
  base: Record<string, unknown>,
  started: number,
): SandboxResult {
  if (error.message === 'interrupted') return overBudget(base, started);
  const details: Record<string, unknown> = { ...base, error: error.name ?? 'Error' };
  if (error.message === 'out of memory')
    return {
      ok: false,
      message: `the script needed more than ${budget.memoryMb} MB (BATON_SCRIPT_MEMORY_MB); it was stopped`,
      details,
    };
  const where = /script\.js:(\d+):(\d+)/.exec(error.stack ?? '');
  return {
    ok: false,
    message: `the script threw ${error.name ?? 'Error'}: ${error.message ?? 'no message'}`,
    details: { ...details, ...(where ? { line: Number(where[1]), column: Number(where[2]) } : {}) },
  };
}
