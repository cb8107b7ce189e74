// FEEL values for multi-instance steps: the collection (a list) and each element's result.
// The compiler refuses expressions that iterate, so these run inline (no budget thread).
import { evaluate } from 'feelin';
import type { MultiInstanceSpec } from '../compiler/plan.ts';
import type { Variables } from '../model/effects.ts';

export type ValueResult = { ok: true; value: unknown } | { ok: false; message: string };

export function evaluateValue(feel: string, variables: Variables): ValueResult {
  try {
    const value: unknown = evaluate(feel, variables).value;
    return { ok: true, value: value === undefined ? null : toJson(value) };
  } catch (cause) {
    return { ok: false, message: `expression "${feel}" failed: ${cause instanceof Error ? cause.message : String(cause)}` };
  }
}

/** The collection must be a list; null (an unset variable) is refused too, not read as empty. */
export function evaluateList(
  feel: string,
  variables: Variables,
): { ok: true; value: unknown[] } | { ok: false; message: string } {
  const result = evaluateValue(feel, variables);
  if (!result.ok) return result;
  if (!Array.isArray(result.value))
    return { ok: false, message: `"${feel}" is ${result.value === null ? 'null' : typeof result.value}, not a list` };
  return { ok: true, value: result.value };
}

/** loopCardinality runs at most this many elements: more would be a runaway expression, not a process. */
export const MAX_CARDINALITY = 10_000;

/**
 * The elements of a multi-instance activity: its collection, or as many nulls as its
 * cardinality says (a whole number from 0 to MAX_CARDINALITY).
 */
export function evaluateElements(
  spec: MultiInstanceSpec,
  variables: Variables,
): { ok: true; value: unknown[] } | { ok: false; message: string; details: Record<string, unknown> } {
  if (spec.collection !== undefined) {
    const list = evaluateList(spec.collection, variables);
    return list.ok ? list : { ...list, details: { collection: spec.collection } };
  }
  const count = evaluateValue(spec.cardinality ?? '0', variables);
  const details = { loopCardinality: spec.cardinality };
  if (!count.ok) return { ...count, details };
  const n = count.value;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0 || n > MAX_CARDINALITY)
    return {
      ok: false,
      message: `loopCardinality "${spec.cardinality}" is ${JSON.stringify(n)}, not a whole number from 0 to ${MAX_CARDINALITY}`,
      details,
    };
  return { ok: true, value: Array.from({ length: n }, () => null) };
}

// FEEL gives back plain JSON for JSON input; dates and durations become their text.
function toJson(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value) ?? 'null');
}
