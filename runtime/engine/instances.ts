// Instance-level transitions: start (or find by business key) and cancel.
import { deriveStatus, startPlan } from './advance.ts';
import { emptyEffects, type InstanceState, type Variables } from '../model/effects.ts';
import { planOf, type Engine } from './context.ts';
import { indexPlan } from './plan-index.ts';
import { claimParkedPolls, deliverHanded, settleUnwritten } from './poll-delivery.ts';
import { commitTransition, needsCommitTransition } from './transition.ts';
import type { InstanceStatus } from '../model/vocabulary.ts';
import { withTransaction, type PoolClient } from '../store/db.ts';
import { BatonError } from '../shared/errors.ts';
import { newInstanceId } from '../shared/uuid.ts';
import { findDefinition } from '../store/definitions.ts';
import { insertInstance, lockInstance, type InstanceRow, type LockedInstance } from '../store/instances.ts';
import { TRANSITION_GUARD_LOST, writeTransitions } from '../store/transition-writer.ts';

export interface StartInstanceRequest {
  definitionKey: string;
  businessKey?: string | null;
  variables?: Variables;
  version?: number;
}

export type StartInstanceResult =
  { ok: true; created: boolean; instance: InstanceRow } | { ok: false; reason: 'definition_not_found' };

/**
 * Starts an instance of the latest version, or answers the instance that already
 * holds (definition key, business key): concurrent starts with one key yield one instance.
 */
export async function startInstance(engine: Engine, req: StartInstanceRequest): Promise<StartInstanceResult> {
  return (await startOptimistically(engine, req)) ?? withTransaction(engine.pool, (tx) => startInTransaction(engine, tx, req));
}

/**
 * The common start in one statement and one commit: the instance row and its first
 * transition written together (writeTransitions, an `insert` write), computed against the definition
 * this node last started for the key. Answers undefined, having written nothing, when
 * the transactional path must decide: the business key is taken, a newer version was
 * deployed, the definition is unknown here, or the start needs reads inside a
 * transaction (message waits look in the inbox) or has no none start event.
 */
async function startOptimistically(engine: Engine, req: StartInstanceRequest): Promise<StartInstanceResult | undefined> {
  const targetKey = req.version === undefined ? req.definitionKey : `${req.definitionKey}@${req.version}`;
  let target = engine.startTargets.get(targetKey);
  if (!target) {
    const def = await findDefinition(engine.pool, req.definitionKey, req.version);
    if (!def) return undefined;
    engine.plans.set(def.id, def.plan);
    target = { id: def.id, key: def.key, version: def.version };
    engine.startTargets.set(targetKey, target);
  }
  const plan = await planOf(engine, target.id);
  if (plan.bodyOf || !plan.steps.some((s) => s.kind === 'startEvent' && s.wait === undefined && s.scope === undefined))
    return undefined;
  const variables = req.variables ?? {};
  const instance: LockedInstance = {
    id: newInstanceId(),
    definition_id: target.id,
    definition_key: target.key,
    definition_version: target.version,
    business_key: req.businessKey ?? null,
    status: 'running',
    variables,
    generation: 1,
    revision: 0,
    created_at: new Date(0),
    updated_at: new Date(0),
    ended_at: null,
    parent_instance_id: null,
    parent_step_id: null,
    parent_scope_path: null,
    parent_generation: null,
    parent_loop_index: null,
    suspended_at: null,
    state: { flows: {}, steps: {} },
  };
  const fx = emptyEffects();
  fx.events.push({
    kind: 'instance:started',
    data: { businessKey: instance.business_key, definitionId: instance.definition_id },
  });
  startPlan(plan, instance.state, variables, fx);
  if (needsCommitTransition(fx)) return undefined;
  const status = deriveStatus(instance.state, fx);
  if (status !== 'running') fx.events.push({ kind: `instance:${status}` });
  const delivery = claimParkedPolls(engine, fx);
  try {
    const insert = { latestOnly: req.version === undefined };
    let createdAt: Date;
    if (delivery.length === 0) createdAt = await engine.starts.write({ instance, effects: fx, status, variables, insert });
    else {
      const written = await writeTransitions(engine.pool, [
        { instance, effects: fx, status, variables, insert, delivery: delivery.map((h) => h.task) },
      ]);
      createdAt = written.createdAt;
      await deliverHanded(engine, delivery, written.delivered);
    }
    const ended = status === 'completed' || status === 'compensated';
    return {
      ok: true,
      created: true,
      instance: {
        ...instance,
        status,
        revision: 1,
        created_at: createdAt,
        updated_at: createdAt,
        ended_at: ended ? createdAt : null,
      },
    };
  } catch (err) {
    await settleUnwritten(engine, delivery, err);
    if ((err as { code?: string }).code !== TRANSITION_GUARD_LOST) throw err;
    engine.startTargets.delete(targetKey);
    return undefined;
  }
}

/** The start transition inside the caller's transaction; `startEventId` picks a timer start event. */
export async function startInTransaction(
  engine: Engine,
  tx: PoolClient,
  req: StartInstanceRequest,
  startEventId?: string,
): Promise<StartInstanceResult> {
  const variables = req.variables ?? {};
  const inserted = await insertInstance(tx, {
    definitionKey: req.definitionKey,
    businessKey: req.businessKey ?? null,
    variables,
    ...(req.version !== undefined ? { version: req.version } : {}),
  });
  if (!inserted.ok || !inserted.created) return inserted;
  const instance: typeof inserted.instance & { state: InstanceState } = { ...inserted.instance, state: { flows: {}, steps: {} } };
  const plan = await planOf(engine, instance.definition_id, tx);
  if (plan.bodyOf)
    throw new BatonError(
      'conflict',
      `${plan.processKey} is the body of the parallel multi-instance subprocess ${plan.bodyOf.elementId}: it runs only as that subprocess's elements. Start process ${plan.bodyOf.processKey} instead`,
      { bodyOf: plan.bodyOf },
    );
  if (!startEventId && !plan.steps.some((s) => s.kind === 'startEvent' && s.wait === undefined && s.scope === undefined)) {
    // Thrown, so the transaction rolls back the inserted row.
    throw new BatonError(
      'conflict',
      `Process ${plan.processKey} has no none start event: it starts only when its timer start event fires, on its message or signal, or when its start condition holds (POST /api/conditions)`,
    );
  }
  // A message, signal or conditional start event with output mappings writes only their targets
  // (Zeebe's rule): the payload is held on its row until they ran (advance.ts).
  const startStep = startEventId ? indexPlan(plan).steps.get(startEventId) : undefined;
  let vars = variables;
  if (startStep?.io?.outputs.length && Object.keys(variables).length > 0) {
    instance.state.loops = { [startStep.id]: { heldPayload: variables } };
    vars = {};
  }
  const fx = emptyEffects();
  fx.events.push({
    kind: 'instance:started',
    data: {
      businessKey: instance.business_key,
      definitionId: instance.definition_id,
      ...(startEventId ? { startEvent: startEventId } : {}),
    },
  });
  startPlan(plan, instance.state, vars, fx, startEventId);
  // The row was inserted as 'running'; only a change (an instant end or incident) is an event.
  const status = await commitTransition(tx, { ...instance, status: 'running' }, fx, vars, { plan });
  return { ok: true, created: true, instance: { ...instance, variables: vars, status, revision: 1 } };
}

export type CancelInstanceResult =
  | { ok: true; status: InstanceStatus }
  | { ok: false; reason: 'not_found' | 'already_ended'; status?: InstanceStatus }
  | { ok: false; reason: 'called'; parentInstanceId: string; parentStepId: string };

/** Cancels a running instance: its open tasks become unfetchable and late results get a conflict. */
/** `by`: the caller's token name, kept in the `instance:canceled` event. */
export async function cancelInstance(engine: Engine, instanceId: string, by?: string): Promise<CancelInstanceResult> {
  return withTransaction(engine.pool, (tx) => cancelInTransaction(tx, instanceId, by));
}

/** The cancel inside the caller's transaction (a batch writes its result row in it too). */
export async function cancelInTransaction(tx: PoolClient, instanceId: string, by?: string): Promise<CancelInstanceResult> {
  const instance = await lockInstance(tx, instanceId);
  if (!instance) return { ok: false, reason: 'not_found' };
  if (instance.status === 'completed' || instance.status === 'canceled' || instance.status === 'compensated') {
    return { ok: false, reason: 'already_ended', status: instance.status };
  }
  // A called instance ends with its call activity: cancel the parent, whose cancel reaches it.
  if (instance.parent_instance_id)
    return {
      ok: false,
      reason: 'called',
      parentInstanceId: instance.parent_instance_id,
      parentStepId: instance.parent_step_id ?? '',
    };
  const status = await commitTransition(tx, instance, emptyEffects(), instance.variables, {
    status: 'canceled',
    statusData: { by: by ?? null },
  });
  return { ok: true, status };
}
