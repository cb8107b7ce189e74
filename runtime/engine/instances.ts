// Instance-level transitions: start (or find by business key) and cancel.
import { emptyEffects, startPlan, type Variables } from './advance.ts';
import { planOf, type Engine } from './context.ts';
import { commitTransition } from './transition.ts';
import type { InstanceStatus } from './vocabulary.ts';
import { withTransaction, type PoolClient } from '../store/db.ts';
import { BatonError } from '../shared/errors.ts';
import { insertInstance, lockInstance, type InstanceRow } from '../store/instances.ts';

export interface StartInstanceRequest {
  definitionKey: string;
  businessKey?: string | null;
  variables?: Variables;
  version?: number;
}

export type StartInstanceResult =
  | { ok: true; created: boolean; instance: InstanceRow }
  | { ok: false; reason: 'definition_not_found' };

/**
 * Starts an instance of the latest version, or answers the instance that already
 * holds (definition key, business key): concurrent starts with one key yield one instance.
 */
export async function startInstance(engine: Engine, req: StartInstanceRequest): Promise<StartInstanceResult> {
  return withTransaction(engine.pool, (tx) => startInTransaction(engine, tx, req));
}

/** The start transition inside the caller's transaction; `startEventId` picks a timer start event. */
export async function startInTransaction(engine: Engine, tx: PoolClient, req: StartInstanceRequest, startEventId?: string): Promise<StartInstanceResult> {
  const variables = req.variables ?? {};
  const inserted = await insertInstance(tx, {
    definitionKey: req.definitionKey,
    businessKey: req.businessKey ?? null,
    variables,
    ...(req.version !== undefined ? { version: req.version } : {}),
  });
  if (!inserted.ok || !inserted.created) return inserted;
  const instance = { ...inserted.instance, state: { flows: {}, steps: {} } };
  const plan = await planOf(engine, instance.definition_id, tx);
  if (!startEventId && !plan.steps.some((s) => s.kind === 'startEvent' && s.wait === undefined && s.scope === undefined)) {
    // Thrown, so the transaction rolls back the inserted row.
    throw new BatonError('conflict', `Process ${plan.processKey} has no none start event: it starts only when its timer start event fires, or on its message or signal`);
  }
  const fx = emptyEffects();
  fx.events.push({ kind: 'instance:started', data: { businessKey: instance.business_key, definitionId: instance.definition_id, ...(startEventId ? { startEvent: startEventId } : {}) } });
  startPlan(plan, instance.state, variables, fx, startEventId);
  // The row was inserted as 'running'; only a change (an instant end or incident) is an event.
  const status = await commitTransition(tx, { ...instance, status: 'running' }, fx, variables, { plan });
  return { ok: true, created: true, instance: { ...instance, status, revision: 1 } };
}

export type CancelInstanceResult =
  | { ok: true; status: InstanceStatus }
  | { ok: false; reason: 'not_found' | 'already_ended'; status?: InstanceStatus };

/** Cancels a running instance: its open tasks become unfetchable and late results get a conflict. */
export async function cancelInstance(engine: Engine, instanceId: string): Promise<CancelInstanceResult> {
  return withTransaction(engine.pool, async (tx) => {
    const instance = await lockInstance(tx, instanceId);
    if (!instance) return { ok: false, reason: 'not_found' };
    if (instance.status === 'completed' || instance.status === 'canceled' || instance.status === 'compensated') {
      return { ok: false, reason: 'already_ended', status: instance.status };
    }
    const status = await commitTransition(tx, instance, emptyEffects(), instance.variables, { status: 'canceled' });
    return { ok: true, status };
  });
}
