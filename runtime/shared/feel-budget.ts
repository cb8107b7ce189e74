// The budget of a FEEL evaluation. feelin interprets synchronously and cannot be
// interrupted, so a measured time alone would only report a stall after it has
// happened. Instead expressions are sorted by shape when first seen:
// - straight-line ones (comparisons, arithmetic, paths, calls on values) cost time
//   linear in their length and in the variables, both bounded (expression length
//   and depth at deploy, BATON_MAX_VARIABLES_BYTES per instance): they run inline;
// - ones that can multiply work (for, some/every, function definitions) run in a
//   worker thread the caller waits on for at most the time budget; past it the
//   thread is terminated (and replaced), and the evaluation fails naming the budget.
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { parseExpression } from 'feelin';
import { BudgetedThread } from './budgeted-thread.ts';

export interface FeelBudget {
  /** characters of one expression, checked at deploy */
  maxLength: number;
  /** nesting depth of its syntax tree, checked at deploy */
  maxDepth: number;
  /** wall-clock milliseconds one evaluation of an expression that loops may take */
  timeMs: number;
  /** heap of the evaluation thread; an evaluation that needs more fails */
  heapMb: number;
  /** characters of a string result (correlation keys) */
  maxResultLength: number;
}

export const DEFAULT_FEEL_BUDGET: FeelBudget = { maxLength: 4000, maxDepth: 64, timeMs: 200, heapMb: 64, maxResultLength: 1000 };

let budget: FeelBudget = { ...DEFAULT_FEEL_BUDGET };

/** Set once at start from the environment (runtime/cli.ts); tests set it directly. */
export function configureFeelBudget(next: Partial<FeelBudget>): void {
  budget = { ...budget, ...next };
}

export function feelBudget(): FeelBudget {
  return budget;
}

/** Node types whose work is not bounded by the size of the expression and its input. */
const MULTIPLYING = new Set(['ForExpression', 'QuantifiedExpression', 'FunctionDefinition']);

export interface FeelShape {
  depth: number;
  multiplies: boolean;
}

export function shapeOf(feel: string): FeelShape {
  let depth = 0;
  let current = 0;
  let multiplies = false;
  parseExpression(feel, {}, undefined).iterate({
    enter(node) {
      current++;
      if (current > depth) depth = current;
      if (MULTIPLYING.has(node.type.name)) multiplies = true;
    },
    leave() {
      current--;
    },
  });
  return { depth, multiplies };
}

/** Deploy-time check: undefined when the expression fits the budget, else what is wrong. */
export function checkFeelSize(feel: string): string | undefined {
  if (feel.length > budget.maxLength) {
    return `FEEL expression of ${feel.length} characters is longer than the limit of ${budget.maxLength} (BATON_FEEL_MAX_LENGTH)`;
  }
  const { depth } = shapeOf(feel);
  if (depth > budget.maxDepth) {
    return `FEEL expression "${feel.slice(0, 40)}${feel.length > 40 ? '...' : ''}" nests ${depth} levels deep, more than the limit of ${budget.maxDepth} (BATON_FEEL_MAX_DEPTH)`;
  }
  return undefined;
}

const multiplying = new Map<string, boolean>();

/** Whether the expression runs in the budgeted thread; remembered per expression text. */
export function needsThread(feel: string): boolean {
  let known = multiplying.get(feel);
  if (known === undefined) {
    if (multiplying.size >= 10_000) multiplying.clear();
    known = shapeOf(feel).multiplies;
    multiplying.set(feel, known);
  }
  return known;
}

/**
 * A name feelin looked up and did not find (its warnings NO_VARIABLE_FOUND and
 * NO_FUNCTION_FOUND), by its place in the expression: feel.ts names the missing variables.
 */
export interface NotFound {
  type: 'variable' | 'function';
  from: number;
  to: number;
}

/**
 * What the thread sends back: only the JSON-like part of a result crosses; `whole` evaluations
 * (script tasks) get lists and contexts too, as JSON.
 */
export type ThreadResult =
  | { ok: true; value: string | number | boolean | null; type: string; notFound: NotFound[]; whole?: unknown }
  | { ok: false; message: string };

/** The not-found warnings of one evaluation, each place once (a loop repeats them). THREAD_SOURCE has a copy. */
export function notFoundOf(warnings: readonly { type: string; position: { from: number; to: number } }[]): NotFound[] {
  const seen = new Map<string, NotFound>();
  for (const w of warnings) {
    if (w.type !== 'NO_VARIABLE_FOUND' && w.type !== 'NO_FUNCTION_FOUND') continue;
    const type = w.type === 'NO_VARIABLE_FOUND' ? 'variable' : 'function';
    const key = `${type}:${w.position.from}:${w.position.to}`;
    if (!seen.has(key)) seen.set(key, { type, from: w.position.from, to: w.position.to });
  }
  return [...seen.values()];
}

const FEELIN_URL = pathToFileURL(createRequire(import.meta.url).resolve('feelin')).href;

// The thread's handler; notFoundOf below, as plain JavaScript.
const THREAD_SOURCE = `
const { evaluate } = await import(data.feelin);
const notFoundOf = (warnings) => {
  const seen = new Map();
  for (const w of warnings) {
    if (w.type !== 'NO_VARIABLE_FOUND' && w.type !== 'NO_FUNCTION_FOUND') continue;
    const type = w.type === 'NO_VARIABLE_FOUND' ? 'variable' : 'function';
    const key = type + ':' + w.position.from + ':' + w.position.to;
    if (!seen.has(key)) seen.set(key, { type, from: w.position.from, to: w.position.to });
  }
  return [...seen.values()];
};
const handle = ({ feel, variables, whole }) => {
  try {
    const { value, warnings } = evaluate(feel, variables);
    const plain = value === null || value === undefined || ['string', 'number', 'boolean'].includes(typeof value);
    const answer = { ok: true, value: plain ? (value ?? null) : null, type: value === null || value === undefined ? 'null' : Array.isArray(value) ? 'list' : typeof value,
      notFound: notFoundOf(warnings) };
    if (whole) answer.whole = JSON.parse(JSON.stringify(value ?? null) ?? 'null');
    return answer;
  } catch (cause) {
    // Deep recursion ends on the thread's stack before the time budget on a fast machine.
    const deep = cause instanceof RangeError && /call stack/i.test(cause.message);
    return { ok: false, message: deep ? 'evaluation recursed past the stack budget of the evaluation thread; it was stopped'
      : cause instanceof Error ? cause.message : String(cause) };
  }
};
`;

const thread = new BudgetedThread<{ feel: string; variables: Record<string, unknown>; whole: boolean }, ThreadResult>(() => ({
  source: THREAD_SOURCE,
  data: { feelin: FEELIN_URL },
  heapMb: budget.heapMb,
  warmUp: { feel: '1 + 1', variables: {}, whole: true },
}));

/** Starts the thread now (about 0.4 s), so the first looping evaluation does not wait for it inside a transition. */
export function startFeelThread(): void {
  thread.start();
}

/**
 * Evaluates in the thread, blocking the caller for at most budget.timeMs.
 * Synchronous on purpose: conditions are decided inside a transition.
 */
export function evaluateInThread(feel: string, variables: Record<string, unknown>, whole = false): ThreadResult {
  const result = thread.call({ feel, variables, whole }, budget.timeMs);
  if (result.ok) return result.answer;
  if (result.reason === 'budget')
    return {
      ok: false,
      message: `evaluation did not finish within the budget of ${budget.timeMs} ms and ${budget.heapMb} MB (BATON_FEEL_TIME_BUDGET_MS, BATON_FEEL_HEAP_MB); it was stopped`,
    };
  return { ok: false, message: 'the FEEL evaluation thread gave no answer' };
}
