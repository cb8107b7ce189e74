// An operator's pause of a running instance, and its resume. While suspended nothing moves the
// instance on: its tasks are not handed out and a holder's lease is taken back, its timers wait
// (one due meanwhile fires on resume), a message for it stays in the inbox, a child's return
// waits, and a signal passes it by. Cancel and variable edits still apply. Each is one
// transition with an `instance:suspended` or `instance:resumed` event naming the operator.
import { deliverPayload, settleConditionalEvents } from './advance.ts';
import { planOf, type Engine } from './context.ts';
import { isEnded } from './incidents.ts';
import { commitTransition } from './transition.ts';
import { emptyEffects, type Effects, type Variables } from '../model/effects.ts';
import type { InstanceStatus } from '../model/vocabulary.ts';
import { announceCallReturn } from '../store/calls.ts';
import { withTransaction, type PoolClient } from '../store/db.ts';
import { lockInstance, type LockedInstance } from '../store/instances.ts';
import { resumeOpenWork, suspendOpenWork } from '../store/suspension.ts';
import { deleteSubscription, listMessageSubscriptionsOf, lockMessageKey, takeBufferedMessage } from '../store/waits.ts';
import type { Plan } from '../compiler/plan.ts';

export type SuspensionResult =
  | { ok: true; changed: boolean; status: InstanceStatus; suspended: boolean; revision: number }
  | { ok: false; reason: 'not_found' }
  | { ok: false; reason: 'ended'; status: InstanceStatus };

export interface SuspensionRequest {
  instanceId: string;
  /** the caller's token name, kept in the history event */
  by?: string;
}

/** Suspends the instance; one already suspended answers `changed: false` and changes nothing. */
export async function suspendInstance(engine: Engine, req: SuspensionRequest): Promise<SuspensionResult> {
  return withTransaction(engine.pool, (tx) => suspendInTransaction(tx, req));
}

/** The suspend inside the caller's transaction (a batch writes its result row in the same one). */
export async function suspendInTransaction(tx: PoolClient, req: SuspensionRequest): Promise<SuspensionResult> {
  const instance = await lockInstance(tx, req.instanceId);
  if (!instance) return { ok: false, reason: 'not_found' };
  if (isEnded(instance.status)) return { ok: false, reason: 'ended', status: instance.status };
  if (instance.suspended_at) return unchanged(instance, true);
  const parked = await suspendOpenWork(tx, instance.id);
  const fx = emptyEffects();
  fx.events.push({ kind: 'instance:suspended', data: { by: req.by ?? null, ...parked } });
  const status = await commitTransition(tx, instance, fx, instance.variables);
  return { ok: true, changed: true, status, suspended: true, revision: instance.revision + 1 };
}

/**
 * Resumes the instance: its parked tasks and timers come back, and in the same transition its
 * waiting message catches take what the inbox kept for them meanwhile. A child's return that
 * waited is announced to the deliverers after the commit.
 */
export async function resumeInstance(engine: Engine, req: SuspensionRequest): Promise<SuspensionResult> {
  return withTransaction(engine.pool, (tx) => resumeInTransaction(engine, tx, req));
}

/** The resume inside the caller's transaction. */
export async function resumeInTransaction(engine: Engine, tx: PoolClient, req: SuspensionRequest): Promise<SuspensionResult> {
  const instance = await lockInstance(tx, req.instanceId);
  if (!instance) return { ok: false, reason: 'not_found' };
  if (isEnded(instance.status)) return { ok: false, reason: 'ended', status: instance.status };
  if (!instance.suspended_at) return unchanged(instance, false);
  const parked = await resumeOpenWork(tx, instance.id);
  instance.suspended_at = null;
  const fx = emptyEffects();
  fx.events.push({ kind: 'instance:resumed', data: { by: req.by ?? null, tasks: parked.tasks, timers: parked.timers } });
  const variables = { ...instance.variables };
  const plan = await planOf(engine, instance.definition_id, tx);
  await takeKeptMessages(tx, instance, plan, fx, variables);
  settleConditionalEvents(plan, instance.state, variables, fx);
  const status = await commitTransition(tx, instance, fx, variables, { plan });
  if (parked.callReturns) announceCallReturn(tx);
  return { ok: true, changed: true, status, suspended: false, revision: instance.revision + 1 };
}

function unchanged(instance: LockedInstance, suspended: boolean): SuspensionResult {
  return { ok: true, changed: false, status: instance.status, suspended, revision: instance.revision };
}

/** Each message catch of the instance takes the oldest message the inbox kept for it, as a new wait would. */
async function takeKeptMessages(
  tx: PoolClient,
  instance: LockedInstance,
  plan: Plan,
  fx: Effects,
  variables: Variables,
): Promise<void> {
  for (const sub of await listMessageSubscriptionsOf(tx, instance.id, instance.generation)) {
    // A message taken earlier in this loop may have ended this wait (an interrupting boundary's host).
    if (fx.endedWaits.includes(sub.step_id) || instance.state.steps[sub.step_id] !== 'active') continue;
    const correlationKey = sub.correlation_key ?? instance.business_key;
    await lockMessageKey(tx, { name: sub.name, correlationKey, instanceId: instance.id, byKey: true });
    const message = await takeBufferedMessage(tx, {
      name: sub.name,
      correlationKey,
      instanceId: instance.id,
      stepId: sub.step_id,
    });
    if (!message) continue;
    await deleteSubscription(tx, sub.id);
    // As any delivery: through the event's output mappings, each write to the scope that holds its name.
    deliverPayload(plan, sub.step_id, instance.state, variables, message.payload, fx, { messageId: message.message_id });
  }
}
