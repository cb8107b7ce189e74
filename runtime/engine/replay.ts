// Operator replay (POST /api/instances/:id/replay): an instance that failed
// (incident), was compensated or was canceled runs again in a new generation.
// Completed steps are kept, with everything they decided; the steps that failed,
// were undone or were cut off run again. Tasks, locks and frames of the old
// generation are closed, so its late writes are refused.
import { keptStep } from './loop-passes.ts';
import type { Plan, PlanStep } from '../compiler/plan.ts';
import { rearmEventSubProcesses, resumeStep } from './advance.ts';
import { indexPlan } from './plan-index.ts';
import { emptyEffects, type Effects, type InstanceState, type Variables } from '../model/effects.ts';
import { planOf, type Engine } from './context.ts';
import { cancelChildren, commitTransition } from './transition.ts';
import type { InstanceStatus } from '../model/vocabulary.ts';
import { withTransaction } from '../store/db.ts';
import { endFrameGeneration } from '../store/frames.ts';
import { cancelOpenWork, lockInstance } from '../store/instances.ts';
import { bumpGeneration, resetForReplay } from '../store/replay.ts';

/** Statuses an operator may replay from. */
export const REPLAYABLE: readonly InstanceStatus[] = ['incident', 'compensated', 'canceled'];

export type ReplayResult =
  | { ok: true; generation: number; status: InstanceStatus }
  | { ok: false; reason: 'not_found' }
  | { ok: false; reason: 'not_replayable'; status: InstanceStatus }
  | { ok: false; reason: 'suspended' };

/** `by`: the caller's token name, kept in the `instance:replayed` event. */
export async function replayInstance(engine: Engine, instanceId: string, by?: string): Promise<ReplayResult> {
  return withTransaction(engine.pool, async (tx) => {
    const instance = await lockInstance(tx, instanceId);
    if (!instance) return { ok: false, reason: 'not_found' };
    if (!REPLAYABLE.includes(instance.status)) return { ok: false, reason: 'not_replayable', status: instance.status };
    if (instance.suspended_at) return { ok: false, reason: 'suspended' };
    const plan = await planOf(engine, instance.definition_id, tx);
    const kept = keptByReplay(plan, instance.state);
    // Old work first: cancelling waits for a fetch that holds a task row, and that
    // fetch may need the old generation's frame head, taken last below.
    await cancelOpenWork(tx, instance.id);
    await cancelChildren(tx, instance.id, null);
    await resetForReplay(tx, { instanceId: instance.id, keepSteps: [...kept.steps], keepFlows: [...kept.flows] });
    const generation = await bumpGeneration(tx, instance.id, instance.generation);
    if (generation === null) throw new Error(`Instance ${instance.id} changed generation under its lock`);
    const state: InstanceState = {
      steps: Object.fromEntries(Object.entries(instance.state.steps).filter(([id]) => kept.steps.has(id))),
      flows: Object.fromEntries(Object.entries(instance.state.flows).filter(([id]) => kept.flows.has(id))),
      completedOrder: (instance.state.completedOrder ?? []).filter((id) => kept.steps.has(id)),
      compensation: { active: false, saga: false },
    };
    const fx = emptyEffects();
    fx.events.push({
      kind: 'instance:replayed',
      data: { fromGeneration: instance.generation, fromStatus: instance.status, kept: [...kept.steps], by: by ?? null },
    });
    reachFrontier(plan, state, instance.variables, fx);
    rearmEventSubProcesses(plan, state, instance.variables, fx);
    // The new generation starts with no status of its own, so its first status is always announced.
    const unannounced = '' as InstanceStatus;
    const status = await commitTransition(tx, { ...instance, generation, state, status: unannounced }, fx, instance.variables, {
      plan,
    });
    await endFrameGeneration(tx, {
      instanceId: instance.id,
      generation: instance.generation,
      status: instance.status,
      nextGeneration: generation,
    });
    return { ok: true, generation, status };
  });
}

/**
 * The steps a replay keeps: completed or skipped steps all of whose inputs come
 * from kept steps (a boundary event's input is its host). A completed step after
 * one that runs again runs again too, so order is kept. Compensation handlers
 * never stay: they run only when compensation asks again. Kept flows are the
 * outgoing flows of kept steps: their decisions stand.
 */
export function keptByReplay(plan: Plan, state: InstanceState): { steps: Set<string>; flows: Set<string> } {
  const flowSource = new Map(plan.flows.map((f) => [f.id, f.source]));
  const { backFlows } = indexPlan(plan);
  const byId = new Map(plan.steps.map((s) => [s.id, s]));
  const memo = new Map<string, boolean>();
  const isKept = (step: PlanStep): boolean => {
    const known = memo.get(step.id);
    if (known !== undefined) return known;
    memo.set(step.id, false); // without back flows the plan is acyclic; this only guards against a malformed one
    const status = state.steps[step.id];
    // A loop keeps its pass number while it runs: the pass goes on from the steps it kept.
    if (step.kind === 'loop') return status === 'active' || status === 'completed';
    let kept = (status === 'completed' || status === 'skipped') && !step.compensationHandler;
    if (kept && step.boundary) {
      const host = byId.get(step.boundary.attachedTo);
      kept = host !== undefined && isKept(host);
    }
    // Inside a subprocess that runs again, every step runs again from its start.
    if (kept && step.scope !== undefined) {
      const scope = byId.get(step.scope);
      kept = scope !== undefined && isKept(scope);
    }
    for (const flowId of step.incoming) {
      if (!kept) break;
      if (backFlows.has(flowId)) continue; // a loop's back flow is no input of its head
      const source = byId.get(flowSource.get(flowId) ?? '');
      kept = source !== undefined && isKept(source) && state.flows[flowId] !== undefined;
    }
    memo.set(step.id, kept);
    return kept;
  };
  const steps = new Set(plan.steps.filter(isKept).map((s) => s.id));
  // A completion kept from an earlier pass stays while the loops of that pass keep their passes.
  for (const key of Object.keys(state.steps)) {
    const { scopePath } = keptStep(key);
    const loops = (scopePath ?? '')
      .split('/')
      .filter(Boolean)
      .map((part) => part.slice(0, part.lastIndexOf('#')));
    if (scopePath !== undefined && loops.every((id) => steps.has(id))) steps.add(key);
  }
  const flows = new Set(plan.flows.filter((f) => steps.has(f.source) && state.flows[f.id] !== undefined).map((f) => f.id));
  return { steps, flows };
}

/**
 * Evaluates every step not reached yet whose inputs are all resolved: one with a
 * taken input runs (as after an incident retry), one with only skipped inputs is
 * skipped and skips its outputs. Repeats until nothing more can be reached.
 */
function reachFrontier(plan: Plan, state: InstanceState, vars: Variables, fx: Effects): void {
  const { backFlows } = indexPlan(plan);
  for (let changed = true; changed && !fx.terminated;) {
    changed = false;
    for (const step of plan.steps) {
      if (state.steps[step.id] !== undefined || step.incoming.length === 0) continue;
      const inputs = step.incoming.filter((f) => !backFlows.has(f)).map((f) => state.flows[f]);
      if (inputs.some((s) => s === undefined)) continue;
      changed = true;
      if (inputs.includes('taken')) {
        resumeStep(plan, step.id, state, vars, fx);
        continue;
      }
      state.steps[step.id] = 'skipped';
      fx.steps.push({ stepId: step.id, status: 'skipped' });
      fx.events.push({ kind: 'step:skipped', stepId: step.id });
      for (const flowId of step.outgoing) {
        state.flows[flowId] = 'skipped';
        fx.flows.push({ flowId, state: 'skipped' });
      }
    }
  }
}
