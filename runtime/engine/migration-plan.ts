// Which element of the new version each of a running instance's elements becomes, and whether
// the instance can move there. Pure: the transaction (engine/migration.ts) writes the result.
//
// A step keeps its state under the element it maps to: by default the element with the same id
// in the new version, or the one the operator names. An open step (active, or held by an
// incident) must map to an element of the same kind, waiting for the same trigger, in the
// matching subprocess: its task, timer or subscription moves with it. A finished step keeps its
// status under the same id whatever the element became there (the token passed it). A flow keeps
// its state when the new version has it between the same (mapped) elements; a new flow out of a
// step the instance already left was not taken, and is skipped when the migration settles.
import { KEPT, keptStep } from './loop-passes.ts';
import type { Plan, PlanStep } from '../compiler/plan.ts';
import type { InstanceState } from '../model/effects.ts';
import type { StepStatus } from '../model/vocabulary.ts';
import { indexPlan } from './plan-index.ts';

/** A refusal about one element, for the operator to fix. */
export interface ElementProblem {
  elementId: string;
  message: string;
}

export interface MigrationMoves {
  /** old step id -> new step id, for every step row the instance keeps (identity included) */
  steps: Map<string, string>;
  /** the flows whose state is kept (same id in both versions, between the same elements) */
  flows: string[];
  /** new flows out of steps the instance already left: skipped when the migration settles */
  untaken: string[];
  /** open boundary events and event-subprocess starts the new version does not have: their waits end */
  endedWaits: string[];
  /** the open steps and where they go, for the answer and the history */
  open: Record<string, string>;
}

export type MigrationPlanResult = { ok: true; moves: MigrationMoves } | { ok: false; problems: ElementProblem[] };

const OPEN: ReadonlySet<StepStatus> = new Set(['active', 'incident']);

/** The element mapping by equal ids, for an operator to start from: every element whose id and kind both versions share. */
export function generatedMapping(
  from: Plan,
  to: Plan,
): { mapped: Record<string, string>; onlyInSource: string[]; onlyInTarget: string[] } {
  const target = indexPlan(to).steps;
  const mapped: Record<string, string> = {};
  const onlyInSource: string[] = [];
  for (const step of from.steps) {
    const twin = target.get(step.id);
    if (twin && sameKind(step, twin)) mapped[step.id] = step.id;
    else onlyInSource.push(step.id);
  }
  const source = indexPlan(from).steps;
  const onlyInTarget = to.steps.filter((s) => !source.has(s.id) || !(s.id in mapped)).map((s) => s.id);
  return { mapped, onlyInSource, onlyInTarget };
}

export function planMigration(
  from: Plan,
  to: Plan,
  state: InstanceState,
  explicit: Record<string, string> = {},
): MigrationPlanResult {
  const problems: ElementProblem[] = [];
  const oldSteps = indexPlan(from).steps;
  const newSteps = indexPlan(to).steps;
  for (const [oldId, newId] of Object.entries(explicit)) {
    if (!oldSteps.has(oldId))
      problems.push({
        elementId: oldId,
        message: `The mapping names ${oldId}, an element the instance's version does not have`,
      });
    if (!newSteps.has(newId))
      problems.push({
        elementId: newId,
        message: `The mapping maps ${oldId} to ${newId}, an element the target version does not have`,
      });
  }
  if (problems.length > 0) return { ok: false, problems };
  if (state.compensation?.active)
    return {
      ok: false,
      problems: [{ elementId: from.processKey, message: 'The instance is compensating: migrate it after its compensation ends' }],
    };

  const mapped = (oldId: string): string | undefined => explicit[oldId] ?? (newSteps.has(oldId) ? oldId : undefined);
  // A completion kept from an earlier loop pass moves with its step (engine/loop-passes.ts).
  const target = (oldId: string): string | undefined => {
    const kept = keptStep(oldId);
    const newId = mapped(kept.stepId);
    return newId === undefined || kept.scopePath === undefined ? newId : `${newId}${KEPT}${kept.scopePath}`;
  };
  const steps = new Map<string, string>();
  const open: Record<string, string> = {};
  const endedWaits: string[] = [];
  const taken = new Map<string, string>();
  const entries = Object.entries(state.steps);
  for (const [oldId, status] of entries) {
    if (!OPEN.has(status)) continue;
    const newId = target(oldId);
    const old = oldSteps.get(oldId);
    if (!old) {
      problems.push({
        elementId: oldId,
        message: `Open step ${oldId} is not in the instance's own version; it cannot be migrated`,
      });
      continue;
    }
    if (newId === undefined) {
      if (isArmedWait(from, old)) endedWaits.push(oldId);
      else
        problems.push({
          elementId: oldId,
          message: `${describe(old)} is open in the instance and the target version has no element ${oldId}: map it to an element of the same kind`,
        });
      continue;
    }
    const next = newSteps.get(newId)!;
    const why = openMismatch(old, next, target);
    if (why) {
      problems.push({
        elementId: oldId,
        message: `${describe(old)} is open in the instance and cannot become ${describe(next)}: ${why}`,
      });
      continue;
    }
    const before = taken.get(newId);
    if (before !== undefined) {
      problems.push({
        elementId: oldId,
        message: `${oldId} and ${before} both map to ${newId}: one element can hold one of them`,
      });
      continue;
    }
    taken.set(newId, oldId);
    steps.set(oldId, newId);
    open[oldId] = newId;
  }
  // A finished step keeps its status where the element is still free; otherwise it is history only.
  for (const [oldId, status] of entries) {
    const newId = target(oldId);
    if (OPEN.has(status) || newId === undefined || taken.has(newId)) continue;
    taken.set(newId, oldId);
    steps.set(oldId, newId);
  }
  // A renamed row must not land on an id another kept row still holds (a swap or a chain).
  for (const [oldId, newId] of steps)
    if (newId !== oldId && steps.has(newId))
      problems.push({
        elementId: oldId,
        message: `${oldId} maps to ${newId}, an element the instance also keeps state of: map ${newId} elsewhere first, in a migration of its own`,
      });
  // A boundary the new version adds to an open host would never be armed.
  for (const [oldId, newId] of Object.entries(open)) {
    const host = newSteps.get(newId)!;
    for (const boundaryId of host.boundaries ?? [])
      if (!Object.values(open).includes(boundaryId))
        problems.push({
          elementId: boundaryId,
          message: `Boundary event ${boundaryId} on ${newId} is new in the target version, and ${oldId} is already waiting there: its trigger would never be armed. Migrate after ${oldId} ends, or leave the boundary out`,
        });
  }
  if (problems.length > 0) return { ok: false, problems };

  const mappedId = (oldId: string | undefined): string | undefined =>
    oldId === undefined ? undefined : (steps.get(oldId) ?? target(oldId));
  const newFlows = indexPlan(to).flows;
  const flows: string[] = [];
  for (const flowId of Object.keys(state.flows)) {
    const old = indexPlan(from).flows.get(flowId);
    const next = newFlows.get(flowId);
    if (old && next && mappedId(old.source) === next.source && mappedId(old.target) === next.target) flows.push(flowId);
  }
  const kept = new Set(flows);
  const statusOf = new Map([...steps].map(([oldId, newId]) => [newId, state.steps[oldId]]));
  const untaken = to.flows.filter((f) => !kept.has(f.id) && isLeft(statusOf.get(f.source))).map((f) => f.id);
  return { ok: true, moves: { steps, flows, untaken, endedWaits, open } };
}

/** What the new element must share with the open one: kind, trigger, host and subprocess. */
function openMismatch(old: PlanStep, next: PlanStep, target: (id: string) => string | undefined): string | undefined {
  if (old.kind !== next.kind || old.elementType !== next.elementType) return 'a different kind of element';
  if (old.wait?.trigger !== next.wait?.trigger)
    return `it waits for a ${next.wait?.trigger ?? 'nothing'} instead of a ${old.wait?.trigger ?? 'nothing'}`;
  if (old.multiInstance || next.multiInstance) return 'multi-instance steps are migrated only when no element runs';
  if (old.inLoop !== undefined || next.inLoop !== undefined || old.cycle || next.cycle)
    return 'steps inside a loop are migrated only once the loop has ended';
  if ((old.scope === undefined ? undefined : target(old.scope)) !== next.scope) return 'it lies in another subprocess';
  if (old.boundary || next.boundary) {
    const host = old.boundary?.attachedTo === undefined ? undefined : target(old.boundary.attachedTo);
    if (host !== next.boundary?.attachedTo) return 'it is attached to another element';
    if (old.boundary?.interrupting !== next.boundary?.interrupting) return 'one interrupts its host and the other does not';
  }
  return undefined;
}

/** An open boundary event or event-subprocess start: a wait the instance can drop when the new version has none. */
function isArmedWait(plan: Plan, step: PlanStep): boolean {
  if (step.boundary) return true;
  return plan.steps.some((s) => s.eventSubProcess?.start === step.id);
}

function isLeft(status: StepStatus | undefined): boolean {
  return status !== undefined && !OPEN.has(status);
}

function describe(step: PlanStep): string {
  return `${step.elementType?.slice(5) ?? step.kind} ${step.id}`;
}

function sameKind(a: PlanStep, b: PlanStep): boolean {
  return a.kind === b.kind && a.elementType === b.elementType && a.wait?.trigger === b.wait?.trigger;
}
