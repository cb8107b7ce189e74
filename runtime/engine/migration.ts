// An operator moves a running instance to another version of its process, in one transition:
// the plan (engine/migration-plan.ts) says where each step goes or why it cannot, the store
// moves the rows and the open work with it, and the new version's flows out of steps the
// instance already left are skipped (advance.ts settleMigration). Recorded as
// `instance:migrated` with the versions, the open steps' moves and the operator.
import { settleMigration } from './advance.ts';
import { planOf, type Engine } from './context.ts';
import { isEnded } from './incidents.ts';
import { planMigration, type MigrationMoves, type ElementProblem } from './migration-plan.ts';
import { commitTransition } from './transition.ts';
import { emptyEffects, type InstanceState, type Variables } from '../model/effects.ts';
import type { InstanceStatus } from '../model/vocabulary.ts';
import { withTransaction, type PoolClient } from '../store/db.ts';
import { findDefinition } from '../store/definitions.ts';
import { lockInstance } from '../store/instances.ts';
import { moveInstanceToVersion } from '../store/migration.ts';
import type { Plan } from '../compiler/plan.ts';

export interface MigrateRequest {
  instanceId: string;
  /** the version of the instance's process to move to */
  version: number;
  /** old element id -> new element id, over the mapping by equal ids */
  mapping?: Record<string, string>;
  /** validate and answer the moves without changing anything */
  dryRun?: boolean;
  /** the caller's token name, kept in the history event */
  by?: string;
}

export interface MigrationSummary {
  fromVersion: number;
  toVersion: number;
  /** each open step and the element it moves to */
  open: Record<string, string>;
  /** open boundary events and event-subprocess starts the new version does not have */
  endedWaits: string[];
  /** new flows out of steps already left, skipped */
  untaken: string[];
}

export type MigrateResult =
  | { ok: true; status: InstanceStatus; dryRun: boolean; summary: MigrationSummary }
  | { ok: false; reason: 'not_found' }
  | { ok: false; reason: 'no_version'; key: string; version: number }
  | { ok: false; reason: 'same_version'; version: number }
  | { ok: false; reason: 'not_running'; status: InstanceStatus }
  | { ok: false; reason: 'suspended' }
  | { ok: false; reason: 'invalid'; problems: ElementProblem[] };

export async function migrateInstance(engine: Engine, req: MigrateRequest): Promise<MigrateResult> {
  return withTransaction(engine.pool, (tx) => migrateInTransaction(engine, tx, req));
}

/** The migration inside the caller's transaction (a batch writes its result row in the same one). */
export async function migrateInTransaction(engine: Engine, tx: PoolClient, req: MigrateRequest): Promise<MigrateResult> {
  const instance = await lockInstance(tx, req.instanceId);
  if (!instance) return { ok: false, reason: 'not_found' };
  if (isEnded(instance.status) || instance.status === 'compensating')
    return { ok: false, reason: 'not_running', status: instance.status };
  if (instance.suspended_at) return { ok: false, reason: 'suspended' };
  if (req.version === instance.definition_version) return { ok: false, reason: 'same_version', version: req.version };
  const target = await findDefinition(tx, instance.definition_key, req.version);
  if (!target) return { ok: false, reason: 'no_version', key: instance.definition_key, version: req.version };
  const from = await planOf(engine, instance.definition_id, tx);
  const to = target.plan;
  engine.plans.set(target.id, to);
  const planned = planMigration(from, to, instance.state, req.mapping);
  if (!planned.ok) return { ok: false, reason: 'invalid', problems: planned.problems };
  const { moves } = planned;
  const stuck = joinsLeftWaiting(to, moves, instance.state, instance.variables);
  if (stuck.length > 0) return { ok: false, reason: 'invalid', problems: stuck };
  const summary: MigrationSummary = {
    fromVersion: instance.definition_version,
    toVersion: target.version,
    open: moves.open,
    endedWaits: moves.endedWaits,
    untaken: moves.untaken,
  };
  if (req.dryRun) return { ok: true, status: instance.status, dryRun: true, summary };

  await moveInstanceToVersion(tx, {
    instanceId: instance.id,
    definitionId: target.id,
    version: target.version,
    steps: moves.steps,
    topics: topicsOf(to, moves),
    flows: moves.flows,
    endedWaits: moves.endedWaits,
  });
  const fromDefinitionId = instance.definition_id;
  instance.definition_id = target.id;
  instance.definition_version = target.version;
  instance.state = movedState(instance.state, moves);
  const variables = { ...instance.variables };
  const fx = emptyEffects();
  fx.events.push({
    kind: 'instance:migrated',
    data: {
      fromVersion: summary.fromVersion,
      toVersion: summary.toVersion,
      fromDefinitionId,
      toDefinitionId: target.id,
      open: moves.open,
      endedWaits: moves.endedWaits,
      by: req.by ?? null,
    },
  });
  settleMigration(to, moves.untaken, instance.state, variables, fx);
  const status = await commitTransition(tx, instance, fx, variables, { plan: to });
  return { ok: true, status, dryRun: false, summary };
}

/**
 * Parallel joins of the new version that a skipped flow would reach: the branch the flow starts
 * never runs, so the join would stop in an incident when its other inputs arrive. Found by
 * settling a copy of the moved state.
 */
function joinsLeftWaiting(to: Plan, moves: MigrationMoves, state: InstanceState, variables: Variables): ElementProblem[] {
  const trial = structuredClone(movedState(state, moves));
  settleMigration(to, moves.untaken, trial, structuredClone(variables), emptyEffects());
  return to.steps
    .filter((s) => s.kind === 'parallelGateway' && trial.steps[s.id] === undefined)
    .flatMap((join) => {
      const skipped = join.incoming.filter((f) => trial.flows[f] === 'skipped');
      return skipped.length === 0
        ? []
        : [
            {
              elementId: join.id,
              message: `parallel join ${join.id} of the target version would wait for ${skipped.join(', ')}, on a branch the instance has already passed by: it would stop there in an incident. Migrate after the join, or to a version without that branch`,
            },
          ];
    });
}

/** The new version's topic of each open service task that moves. */
function topicsOf(to: Plan, moves: MigrationMoves): Map<string, string> {
  const topics = new Map<string, string>();
  for (const newId of Object.values(moves.open)) {
    const topic = to.steps.find((s) => s.id === newId)?.task?.topic;
    if (topic) topics.set(newId, topic);
  }
  return topics;
}

/** The instance's state under the new version's ids: the kept steps and flows, in the same order. */
function movedState(state: InstanceState, moves: MigrationMoves): InstanceState {
  const rename = (id: string) => moves.steps.get(id);
  const steps: InstanceState['steps'] = {};
  for (const [oldId, status] of Object.entries(state.steps)) {
    const newId = rename(oldId);
    if (newId !== undefined) steps[newId] = status;
  }
  const flows: InstanceState['flows'] = {};
  for (const flowId of moves.flows) flows[flowId] = state.flows[flowId]!;
  const loops: NonNullable<InstanceState['loops']> = {};
  for (const [oldId, loop] of Object.entries(state.loops ?? {})) {
    const newId = rename(oldId);
    if (newId !== undefined) loops[newId] = loop;
  }
  return {
    ...state,
    steps,
    flows,
    loops,
    completedOrder: (state.completedOrder ?? []).flatMap((id) => {
      const newId = rename(id);
      return newId === undefined ? [] : [newId];
    }),
  };
}
