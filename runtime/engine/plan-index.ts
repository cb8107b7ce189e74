import type { Plan, PlanFlow, PlanStep } from '../compiler/plan.ts';

export interface PlanIndex {
  steps: Map<string, PlanStep>;
  flows: Map<string, PlanFlow>;
  /** subprocess id -> the steps directly inside it */
  children: Map<string, PlanStep[]>;
  /** head step id -> its loop step */
  loopOfHead: Map<string, PlanStep>;
  /** back flows of every loop: never an input that makes the head ready */
  backFlows: Set<string>;
  /** back and exit flows of every loop: resolved without moving the token on; the loop's end moves it on */
  heldFlows: Set<string>;
  /** scope id ('' for the process) -> the event subprocesses directly in it */
  eventSubProcesses: Map<string, PlanStep[]>;
  /** catch, boundary and event subprocess start events that wait for a condition */
  conditionals: PlanStep[];
}

const cache = new WeakMap<Plan, PlanIndex>();

/** Maps of a plan's steps and flows by id, built once per plan object. */
export function indexPlan(plan: Plan): PlanIndex {
  let index = cache.get(plan);
  if (!index) {
    const children = new Map<string, PlanStep[]>();
    for (const s of plan.steps) if (s.scope !== undefined) children.set(s.scope, [...(children.get(s.scope) ?? []), s]);
    const loops = plan.steps.filter((s) => s.cycle !== undefined);
    const backFlows = new Set(loops.flatMap((l) => l.cycle?.backFlows ?? []));
    const eventSubProcesses = new Map<string, PlanStep[]>();
    for (const s of plan.steps)
      if (s.kind === 'eventSubProcess')
        eventSubProcesses.set(s.scope ?? '', [...(eventSubProcesses.get(s.scope ?? '') ?? []), s]);
    index = {
      steps: new Map(plan.steps.map((s) => [s.id, s])),
      flows: new Map(plan.flows.map((f) => [f.id, f])),
      children,
      loopOfHead: new Map(loops.map((l) => [l.cycle?.head ?? '', l])),
      backFlows,
      heldFlows: new Set([...backFlows, ...loops.flatMap((l) => l.cycle?.exitFlows ?? [])]),
      eventSubProcesses,
      conditionals: plan.steps.filter((s) => s.wait?.trigger === 'conditional'),
    };
    cache.set(plan, index);
  }
  return index;
}

/** True when `stepId` is inside subprocess `scope`, at any depth. */
export function isInsideScope(plan: Plan, stepId: string, scope: string): boolean {
  const steps = indexPlan(plan).steps;
  for (let at = steps.get(stepId)?.scope; at !== undefined; at = steps.get(at)?.scope) {
    if (at === scope) return true;
  }
  return false;
}
