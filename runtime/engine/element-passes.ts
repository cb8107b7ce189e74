// Sequential multi-instance subprocesses (docs/scopes.md, "Loop markers"): a loop scope
// whose passes run the subprocess once per element of its collection, read when the loop
// starts. The element variable and loopCounter (from 0 as in Camunda 7, from 1 in Camunda 8 files) are locals of the pass
// (engine/scope-variables.ts): every step inside reads them, and a task gets them as its own locals. After each pass its result is kept (outputElement) and the
// completion condition may end the loop early; the results land in outputCollection in input order.
import type { Plan, PlanStep } from '../compiler/plan.ts';
import type { InstanceState, PassState, Variables } from '../model/effects.ts';
import { testCondition } from './conditions.ts';
import { evaluateElements, evaluateValue } from './loops.ts';
import { indexPlan } from './plan-index.ts';
import { insideVariables, visibleVariables } from './scope-variables.ts';

/** What stops a loop in an incident: the caller raises it on the step it names. */
export interface PassProblem {
  message: string;
  details: Record<string, unknown>;
}

/**
 * The first pass's progress: the collection read over what the loop step sees. An empty
 * collection answers an empty list (the subprocess is skipped); one that is not a list is a problem.
 */
export function readElements(
  plan: Plan,
  loop: PlanStep,
  state: InstanceState,
  vars: Variables,
): { ok: true; progress: Omit<PassState, 'pass'> & { elements: unknown[] } } | ({ ok: false } & PassProblem) {
  const spec = loop.cycle?.repeat?.elements;
  if (!spec) throw new Error(`Loop ${loop.id} does not run elements`);
  const items = evaluateElements(spec, visibleVariables(plan, loop, state, vars));
  if (!items.ok)
    return {
      ok: false,
      message: `${spec.collection !== undefined ? 'Collection' : 'Cardinality'} of multi-instance subprocess ${loop.cycle?.head}: ${items.message}. Fix the variables, then retry the incident.`,
      details: items.details,
    };
  return { ok: true, progress: { elements: items.value, outputs: items.value.map(() => null) } };
}

/**
 * The counters a completion condition reads, under both dialects' names. Camunda 7 keeps
 * nrOfActiveInstances at 1 for a sequential loop; Zeebe's numberOfActiveInstances counts the
 * elements still running. No element counts as terminated when the condition is evaluated:
 * a terminated element ends the whole loop.
 */
export function instanceCounts(p: { total: number; completed: number; active: number; sequential: boolean }) {
  return {
    nrOfInstances: p.total,
    nrOfCompletedInstances: p.completed,
    nrOfActiveInstances: p.sequential ? 1 : p.active,
    numberOfInstances: p.total,
    numberOfCompletedInstances: p.completed,
    numberOfActiveInstances: p.active,
    numberOfTerminatedInstances: 0,
  };
}

/**
 * A pass ended with its subprocess completed: its element's result is kept, and the loop runs
 * the next element unless every element ran or the completion condition holds. On the last
 * pass the caller writes outputCollection (`written`) from where the loop sits.
 */
export function elementPassEnded(
  plan: Plan,
  loop: PlanStep,
  state: InstanceState,
  vars: Variables,
): { again: boolean; data: Record<string, unknown>; written?: Variables } | ({ again?: undefined } & PassProblem) {
  const spec = loop.cycle?.repeat?.elements;
  const progress = state.loops?.[loop.id];
  if (!spec || !progress || !('pass' in progress) || !progress.elements) throw new Error(`Loop ${loop.id} has no elements`);
  const index = progress.pass - 1;
  const head = indexPlan(plan).steps.get(loop.cycle?.head ?? '') as PlanStep;
  // The output element is evaluated over what the body saw: the subprocess's locals too.
  const seen = insideVariables(plan, head, state, vars);
  const result = spec.outputElement ? evaluateValue(spec.outputElement, seen) : { ok: true as const, value: null };
  const outputs = progress.outputs ?? progress.elements.map(() => null);
  outputs[index] = result.ok ? result.value : null;
  progress.outputs = outputs;
  const counts = instanceCounts({ total: progress.elements.length, completed: index + 1, active: 0, sequential: true });
  const data = {
    loopCounter: index + (spec.counterFrom ?? 0),
    nrOfCompletedInstances: index + 1,
    ...(result.ok ? {} : { outputError: result.message }),
  };
  let done = index + 1 >= progress.elements.length;
  if (!done && spec.completionCondition) {
    const holds = testCondition(spec.completionCondition, { ...seen, ...counts });
    if (!holds.ok)
      return {
        message: `Completion condition of multi-instance subprocess ${head.id}: ${holds.message}. Fix the variables, then retry the incident.`,
        details: { completionCondition: spec.completionCondition.source },
      };
    done = holds.value;
  }
  const written = done && spec.outputCollection ? { [spec.outputCollection]: outputs } : undefined;
  return { again: !done, data, ...(written ? { written } : {}) };
}
