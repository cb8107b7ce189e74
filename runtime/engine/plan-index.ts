import type { Plan, PlanFlow, PlanStep } from '../compiler/plan.ts';

export interface PlanIndex {
  steps: Map<string, PlanStep>;
  flows: Map<string, PlanFlow>;
}

const cache = new WeakMap<Plan, PlanIndex>();

/** Maps of a plan's steps and flows by id, built once per plan object. */
export function indexPlan(plan: Plan): PlanIndex {
  let index = cache.get(plan);
  if (!index) {
    index = {
      steps: new Map(plan.steps.map((s) => [s.id, s])),
      flows: new Map(plan.flows.map((f) => [f.id, f])),
    };
    cache.set(plan, index);
  }
  return index;
}
