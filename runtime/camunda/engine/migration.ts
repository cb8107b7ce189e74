// Camunda 7's migration plans on Baton's migration (engine/migration.ts). A Camunda plan names
// two process definitions and one-to-one activity instructions; Baton migrates within one key,
// by an element mapping over the mapping by equal ids. Camunda validates a plan without any
// instance: here each instruction is checked against both versions' plans, and each instance
// is checked by a dry run of Baton's migration before anything moves.
import type { Engine } from '../../engine/context.ts';
import { migrateInstance } from '../../engine/migration.ts';
import { generatedMapping } from '../../engine/migration-plan.ts';
import { indexPlan } from '../../engine/plan-index.ts';
import { findDefinitionById, type DefinitionRow } from '../../store/definitions.ts';
import { isUuid } from '../../shared/validate.ts';
import type { PlanStep } from '../../compiler/plan.ts';

export interface CamundaInstruction {
  sourceActivityIds: string[];
  targetActivityIds: string[];
  updateEventTrigger?: boolean | null;
}

export interface CamundaMigrationPlan {
  sourceProcessDefinitionId: string;
  targetProcessDefinitionId: string;
  instructions: CamundaInstruction[];
  variables?: Record<string, unknown> | null;
}

export interface InstructionReport {
  instruction: { sourceActivityIds: string[]; targetActivityIds: string[]; updateEventTrigger: boolean };
  failures: string[];
}

export type VersionPair =
  | { ok: true; source: DefinitionRow; target: DefinitionRow }
  | { ok: false; reason: 'not_found'; id: string }
  | { ok: false; reason: 'other_key'; sourceKey: string; targetKey: string };

/** Both definitions of a plan, of one key (Baton moves an instance between versions of its own process only). */
export async function loadVersionPair(engine: Engine, sourceId: string, targetId: string): Promise<VersionPair> {
  const [source, target] = await Promise.all(
    [sourceId, targetId].map((id) => (isUuid(id) ? findDefinitionById(engine.pool, id) : Promise.resolve(undefined))),
  );
  if (!source) return { ok: false, reason: 'not_found', id: sourceId };
  if (!target) return { ok: false, reason: 'not_found', id: targetId };
  if (source.key !== target.key) return { ok: false, reason: 'other_key', sourceKey: source.key, targetKey: target.key };
  return { ok: true, source, target };
}

/** Camunda's generated plan: one instruction per element whose id and kind both versions share. */
export function generateInstructions(source: DefinitionRow, target: DefinitionRow): InstructionReport['instruction'][] {
  const { mapped } = generatedMapping(source.plan, target.plan);
  return Object.entries(mapped).map(([from, to]) => ({
    sourceActivityIds: [from],
    targetActivityIds: [to],
    updateEventTrigger: false,
  }));
}

/** Each instruction checked against both versions: the elements exist, are one to one, and are of one kind. */
export function validateInstructions(
  source: DefinitionRow,
  target: DefinitionRow,
  instructions: CamundaInstruction[],
): InstructionReport[] {
  const from = indexPlan(source.plan).steps;
  const to = indexPlan(target.plan).steps;
  const seenSource = new Map<string, number>();
  const seenTarget = new Map<string, number>();
  for (const i of instructions) {
    for (const id of i.sourceActivityIds) seenSource.set(id, (seenSource.get(id) ?? 0) + 1);
    for (const id of i.targetActivityIds) seenTarget.set(id, (seenTarget.get(id) ?? 0) + 1);
  }
  return instructions.map((i) => {
    const failures: string[] = [];
    if (i.sourceActivityIds.length !== 1 || i.targetActivityIds.length !== 1)
      failures.push('Baton maps one source activity to one target activity per instruction');
    if (i.updateEventTrigger)
      failures.push('updateEventTrigger is not supported: a migrated wait keeps the trigger it subscribed with');
    const [sourceId, targetId] = [i.sourceActivityIds[0], i.targetActivityIds[0]];
    const old = sourceId === undefined ? undefined : from.get(sourceId);
    const next = targetId === undefined ? undefined : to.get(targetId);
    if (sourceId !== undefined && !old)
      failures.push(`Source activity '${sourceId}' does not exist in version ${source.version} of ${source.key}`);
    if (targetId !== undefined && !next)
      failures.push(`Target activity '${targetId}' does not exist in version ${target.version} of ${target.key}`);
    if (old && next && !sameKind(old, next))
      failures.push(`Source activity '${old.id}' and target activity '${next.id}' are not of the same type`);
    if (sourceId !== undefined && (seenSource.get(sourceId) ?? 0) > 1)
      failures.push(`There are multiple mappings for source activity id '${sourceId}'`);
    if (targetId !== undefined && (seenTarget.get(targetId) ?? 0) > 1)
      failures.push(`There are multiple mappings for target activity id '${targetId}'`);
    return {
      instruction: {
        sourceActivityIds: i.sourceActivityIds,
        targetActivityIds: i.targetActivityIds,
        updateEventTrigger: !!i.updateEventTrigger,
      },
      failures,
    };
  });
}

/** Baton's mapping from the instructions: only what differs from the mapping by equal ids needs naming, but naming it too is harmless. */
export function mappingOf(instructions: CamundaInstruction[]): Record<string, string> {
  const mapping: Record<string, string> = {};
  for (const i of instructions) {
    const [from, to] = [i.sourceActivityIds[0], i.targetActivityIds[0]];
    if (from !== undefined && to !== undefined && from !== to) mapping[from] = to;
  }
  return mapping;
}

export interface InstanceRefusal {
  instanceId: string;
  failures: string[];
}

/**
 * Camunda's execute is all or nothing; Baton migrates each instance in its own transaction.
 * So every instance is dry run first, and any refusal stops the migration before one instance
 * moves. An instance that changes between its dry run and its move can still be refused there:
 * the instances moved before it stay moved, and the refusal is answered.
 */
export async function migrateInstances(
  engine: Engine,
  p: { instanceIds: string[]; version: number; mapping: Record<string, string>; by: string | undefined },
): Promise<{ ok: true } | { ok: false; refusals: InstanceRefusal[]; migrated: number }> {
  const run = async (instanceId: string, dryRun: boolean): Promise<InstanceRefusal | undefined> => {
    const r = await migrateInstance(engine, {
      instanceId,
      version: p.version,
      mapping: p.mapping,
      dryRun,
      ...(p.by !== undefined ? { by: p.by } : {}),
    });
    return r.ok ? undefined : { instanceId, failures: refusalMessages(r) };
  };
  const refusals: InstanceRefusal[] = [];
  for (const id of p.instanceIds) {
    const refused = await run(id, true);
    if (refused) refusals.push(refused);
  }
  if (refusals.length > 0) return { ok: false, refusals, migrated: 0 };
  let migrated = 0;
  for (const id of p.instanceIds) {
    const refused = await run(id, false);
    if (refused) return { ok: false, refusals: [refused], migrated };
    migrated++;
  }
  return { ok: true };
}

function refusalMessages(r: Exclude<Awaited<ReturnType<typeof migrateInstance>>, { ok: true }>): string[] {
  switch (r.reason) {
    case 'not_found':
      return ['the process instance does not exist'];
    case 'no_version':
      return [`there is no version ${r.version} of ${r.key}`];
    case 'same_version':
      return [`the process instance already runs version ${r.version}`];
    case 'not_running':
      return [`the process instance is ${r.status}`];
    case 'suspended':
      return ['the process instance is suspended: activate it, then migrate'];
    case 'invalid':
      return r.problems.map((x) => `${x.elementId}: ${x.message}`);
  }
}

function sameKind(a: PlanStep, b: PlanStep): boolean {
  return a.kind === b.kind && a.elementType === b.elementType && a.wait?.trigger === b.wait?.trigger;
}
