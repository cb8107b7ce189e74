// An operator's repair of a running instance, in one transition: start an element now (its
// incoming flows need not have fired) and cancel open ones. The starts apply first, then the
// cancels: a cancel skips the paths only its step would have reached, so a step started in the
// same modification keeps running even when it lies on such a path (cancel a stuck gateway and
// start the task after it). Recorded as `instance:modified` with the operator.
import { cancelOpenStep, startBefore } from './advance.ts';
import { planOf, type Engine } from './context.ts';
import { isEnded } from './incidents.ts';
import { indexPlan } from './plan-index.ts';
import { commitTransition } from './transition.ts';
import { emptyEffects } from '../model/effects.ts';
import type { InstanceStatus } from '../model/vocabulary.ts';
import { withTransaction } from '../store/db.ts';
import { lockInstance } from '../store/instances.ts';
import type { Plan, PlanStep } from '../compiler/plan.ts';
import type { ElementProblem } from './migration-plan.ts';

export interface ModificationInstruction {
  type: 'startBefore' | 'cancel';
  elementId: string;
}

export interface ModifyRequest {
  instanceId: string;
  instructions: ModificationInstruction[];
  /** why, kept in the history event */
  annotation?: string;
  dryRun?: boolean;
  by?: string;
}

export type ModifyResult =
  | { ok: true; status: InstanceStatus; dryRun: boolean; started: string[]; canceled: string[] }
  | { ok: false; reason: 'not_found' }
  | { ok: false; reason: 'not_running'; status: InstanceStatus }
  | { ok: false; reason: 'suspended' }
  | { ok: false; reason: 'invalid'; problems: ElementProblem[] };

const OPEN = new Set(['active', 'incident']);

export async function modifyInstance(engine: Engine, req: ModifyRequest): Promise<ModifyResult> {
  return withTransaction(engine.pool, async (tx) => {
    const instance = await lockInstance(tx, req.instanceId);
    if (!instance) return { ok: false, reason: 'not_found' };
    if (isEnded(instance.status) || instance.status === 'compensating')
      return { ok: false, reason: 'not_running', status: instance.status };
    if (instance.suspended_at) return { ok: false, reason: 'suspended' };
    const plan = await planOf(engine, instance.definition_id, tx);
    const state = instance.state;
    const starts = req.instructions.filter((i) => i.type === 'startBefore').map((i) => i.elementId);
    const cancels = req.instructions.filter((i) => i.type === 'cancel').map((i) => i.elementId);
    const problems = [
      ...starts.flatMap((id) => startProblem(plan, id, state.steps, starts)),
      ...cancels.flatMap((id) => cancelProblem(plan, id, state.steps, cancels)),
    ];
    if (problems.length > 0) return { ok: false, reason: 'invalid', problems };
    const status = (s: InstanceStatus) => ({
      ok: true as const,
      status: s,
      dryRun: !!req.dryRun,
      started: starts,
      canceled: cancels,
    });
    if (req.dryRun) return status(instance.status);

    const variables = { ...instance.variables };
    const fx = emptyEffects();
    fx.events.push({
      kind: 'instance:modified',
      data: { started: starts, canceled: cancels, by: req.by ?? null, ...(req.annotation ? { annotation: req.annotation } : {}) },
    });
    for (const id of starts) startBefore(plan, id, state, variables, fx);
    for (const id of cancels) if (OPEN.has(state.steps[id] ?? '')) cancelOpenStep(plan, id, state, variables, fx);
    // Canceling the last open step ends the instance canceled, as in Camunda, unless an end event was reached.
    const open = Object.values(state.steps).some((s) => OPEN.has(s));
    const ended = plan.steps.some(
      (s) => s.kind === 'endEvent' && fx.steps.some((x) => x.stepId === s.id && x.status === 'completed'),
    );
    const forced = !open && !ended && cancels.length > 0 ? { status: 'canceled' as const } : {};
    return status(await commitTransition(tx, instance, fx, variables, { plan, ...forced }));
  });
}

function startProblem(plan: Plan, id: string, steps: Record<string, string>, all: string[]): ElementProblem[] {
  const step = indexPlan(plan).steps.get(id);
  if (!step) return [{ elementId: id, message: `The version of ${plan.processKey} the instance runs has no element ${id}` }];
  if (all.indexOf(id) !== all.lastIndexOf(id))
    return [{ elementId: id, message: `${id} is started twice: a step runs once per pass` }];
  if (steps[id] !== undefined)
    return [
      {
        elementId: id,
        message: `${id} is already ${steps[id]} in this instance: a step runs once (replay the instance, or migrate it, to run it again)`,
      },
    ];
  const why = unmovable(step);
  if (why) return [{ elementId: id, message: `${id} cannot be started: ${why}` }];
  if (step.scope !== undefined && !OPEN.has(steps[step.scope] ?? ''))
    return [
      { elementId: id, message: `${id} lies in subprocess ${step.scope}, which is not running: start ${step.scope} instead` },
    ];
  return [];
}

function cancelProblem(plan: Plan, id: string, steps: Record<string, string>, all: string[]): ElementProblem[] {
  const step = indexPlan(plan).steps.get(id);
  if (!step) return [{ elementId: id, message: `The version of ${plan.processKey} the instance runs has no element ${id}` }];
  if (all.indexOf(id) !== all.lastIndexOf(id)) return [{ elementId: id, message: `${id} is canceled twice` }];
  if (!OPEN.has(steps[id] ?? ''))
    return [{ elementId: id, message: `${id} is not open in this instance (${steps[id] ?? 'not reached'})` }];
  if (step.inLoop !== undefined || step.cycle || step.multiInstance)
    return [
      {
        elementId: id,
        message: `${id} cannot be canceled alone: it runs inside a loop or as multi-instance; cancel the loop's subprocess or the instance`,
      },
    ];
  return [];
}

/** Elements a modification does not start: they have no token of their own to start with. */
function unmovable(step: PlanStep): string | undefined {
  if (step.boundary) return 'a boundary event fires from its host, not on its own';
  if (step.compensationHandler) return 'a compensation handler runs only when compensation reaches it';
  if (step.kind === 'startEvent') return 'a start event starts its process or subprocess; start that instead';
  if (step.kind === 'eventSubProcess' || step.kind === 'eventSubProcessStart') return 'an event subprocess starts on its trigger';
  if (step.inLoop !== undefined || step.cycle || step.multiInstance) return 'it runs inside a loop or as multi-instance';
  return undefined;
}
