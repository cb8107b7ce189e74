// Waits that end from outside a task: a due timer, a published message, a broadcast signal.
import { emptyEffects, fireWait, type Variables } from './advance.ts';
import { planOf, type Engine } from './context.ts';
import { startOnMessage, startOnSignal } from './event-starts.ts';
import { fireDueStartTimers } from './start-timers.ts';
import { commitTransition } from './transition.ts';
import { withTransaction, type PoolClient } from '../store/db.ts';
import { instanceExists, lockInstance, readHeldInstances, tryLockInstance, type LockedInstance } from '../store/instances.ts';
import {
  deleteSubscription,
  findDueTimers,
  findMessage,
  findMessageSubscription,
  findTimerInstance,
  insertMessage,
  lockIdleInstances,
  listSignalSubscriptions,
  lockMessageName,
  markMessageMatched,
  markTimerFired,
  markTimersFired,
  stampTimersFired,
  type SubscriptionRow,
  type TimerRow,
} from '../store/waits.ts';
import { BatonError } from '../shared/errors.ts';
import { fault } from '../shared/faults.ts';
import { timerLatenessSeconds } from '../ops/instruments.ts';

/** Fires one due timer in its instance's transition; false when it was not due or already fired or canceled. */
export async function fireTimer(engine: Engine, timerId: string): Promise<boolean> {
  return withTransaction(engine.pool, async (tx) => {
    const instanceId = await findTimerInstance(tx, timerId);
    const instance = instanceId ? await lockInstance(tx, instanceId) : undefined;
    if (!instance) return false;
    const timer = await markTimerFired(tx, timerId, instance.generation);
    if (!timer) return false;
    await advanceOnTimer(engine, tx, instance, timer);
    timerLatenessSeconds.observe(Math.max(0, Date.now() - timer.due_at.getTime()) / 1000);
    return true;
  });
}

async function advanceOnTimer(engine: Engine, tx: PoolClient, instance: LockedInstance, timer: TimerRow): Promise<void> {
  const plan = await planOf(engine, instance.definition_id, tx);
  const fx = emptyEffects();
  // A boundary whose host already ended consumes its timer and does nothing.
  if (fireWait(plan, timer.step_id, instance.state, instance.variables, fx, { timerId: timer.id, dueAt: timer.due_at })) {
    await commitTransition(tx, instance, fx, instance.variables, { plan });
  }
}

/** Batches fire side by side, one connection each; one instance's timers still serialize on its row lock. */
const FIRING_LANES = 4;
/**
 * Most firings one transaction commits. One commit for many firings is most of the
 * gain (a firing alone was 7 round trips and a commit); a larger batch holds its
 * instances' locks longer and loses more work to a rollback.
 */
const FIRINGS_PER_TRANSACTION = 25;

/** Fires every due timer, of instances and of timer start events; answers how many fired. */
export async function fireDueTimers(engine: Engine, batch: number): Promise<number> {
  const due = await findDueTimers(engine.pool, batch);
  const chunks = chunkFor(due, FIRING_LANES, FIRINGS_PER_TRANSACTION);
  let next = 0;
  let fired = 0;
  await Promise.all(Array.from({ length: Math.min(FIRING_LANES, chunks.length) }, async () => {
    for (let chunk = chunks[next++]; chunk; chunk = chunks[next++]) {
      const n = await fireTimerBatch(engine, chunk); // not `fired += await …`: that reads fired before the wait
      fired += n;
    }
  }));
  return fired + (await fireDueStartTimers(engine, batch));
}

// Enough chunks to keep every lane busy, none above the per-transaction cap; in due order.
function chunkFor<T>(items: T[], lanes: number, cap: number): T[][] {
  const size = Math.max(1, Math.min(cap, Math.ceil(items.length / lanes)));
  const chunks: T[][] = [];
  for (let i = 0; i < items.length; i += size) chunks.push(items.slice(i, i + size));
  return chunks;
}

/**
 * Fires a batch of due timers in one transaction: lock the instances no one else
 * holds (without waiting), take their timers with one guarded update, run each
 * firing's transition, commit once. Timers of busy instances then fire one by one,
 * waiting for their instance like any transition; so does the whole batch if one
 * firing fails, so that one bad instance cannot hold back the others.
 */
async function fireTimerBatch(engine: Engine, candidates: { id: string; instance_id: string }[]): Promise<number> {
  for (let i = 0; i < candidates.length; i++) await fault('timer:before-fire');
  let busy: string[];
  let fired: TimerRow[];
  try {
    ({ busy, fired } = await withTransaction(engine.pool, async (tx) => {
      const idle = await lockIdleInstances(tx, [...new Set(candidates.map((c) => c.instance_id))]);
      const timers = await markTimersFired(tx, candidates.filter((c) => idle.has(c.instance_id)).map((c) => c.id));
      // Loaded after the locks are held (a fresh snapshot), once for the batch.
      const held = timers.length > 0 ? await readHeldInstances(tx, [...new Set(timers.map((t) => t.instance_id))]) : new Map<string, LockedInstance>();
      for (const timer of timers) {
        const instance = held.get(timer.instance_id);
        // A second timer of one instance reads the state its first firing left.
        held.delete(timer.instance_id);
        const current = instance ?? (await lockInstance(tx, timer.instance_id));
        if (current) await advanceOnTimer(engine, tx, current, timer);
      }
      if (timers.length > 0) await stampTimersFired(tx, timers.map((t) => t.id));
      return { busy: candidates.filter((c) => !idle.has(c.instance_id)).map((c) => c.id), fired: timers };
    }));
  } catch (err) {
    engine.log.warn({ err: (err as Error).message, count: candidates.length }, 'timers:batch_failed');
    return fireOneByOne(engine, candidates.map((c) => c.id));
  }
  const now = Date.now();
  for (const t of fired) timerLatenessSeconds.observe(Math.max(0, now - t.due_at.getTime()) / 1000);
  return fired.length + (await fireOneByOne(engine, busy));
}

async function fireOneByOne(engine: Engine, timerIds: string[]): Promise<number> {
  let fired = 0;
  for (const id of timerIds) if (await fireTimer(engine, id)) fired++;
  return fired;
}

export interface PublishMessageRequest {
  name: string;
  correlationKey?: string;
  businessKey?: string;
  instanceId?: string;
  messageId?: string;
  variables?: Variables;
  /** how long an unmatched message waits in the inbox; 0: refuse it instead */
  ttlMs?: number;
}

export type PublishMessageResult =
  | { status: 'matched'; instanceId: string; messageId: string }
  /** no instance waited, and a message start event started this one */
  | { status: 'started'; instanceId: string; messageId: string }
  | { status: 'buffered'; messageId: string }
  | { status: 'duplicate'; messageId: string; instanceId?: string };

const DEFAULT_TTL_MS = 60 * 60 * 1000;

/**
 * Stores the message, then hands it to exactly one waiting subscription; with none,
 * starts the definition whose message start event names it; else keeps it until a
 * matching catch starts waiting (ttlMs). A repeated messageId changes nothing.
 */
export async function publishMessage(engine: Engine, req: PublishMessageRequest): Promise<PublishMessageResult> {
  const messageId = req.messageId ?? crypto.randomUUID();
  // An instance busy in another transition is not waited for while we hold the
  // message-name lock (that transition may want the same lock): retry instead.
  for (let attempt = 0; ; attempt++) {
    const result = await withTransaction(engine.pool, (tx) => tryPublish(engine, tx, req, messageId));
    if (result !== 'busy') return result;
    if (attempt > 200) throw new Error(`Message ${messageId}: the matching instance stayed busy; try again`);
    await new Promise((r) => setTimeout(r, Math.min(50, 2 + attempt)));
  }
}

async function tryPublish(engine: Engine, tx: PoolClient, req: PublishMessageRequest, messageId: string): Promise<PublishMessageResult | 'busy'> {
  await lockMessageName(tx, req.name);
  if (req.instanceId && !(await instanceExists(tx, req.instanceId))) {
    throw new BatonError('not_found', `No instance with id "${req.instanceId}" to address message "${req.name}" to`);
  }
  const correlationKey = req.correlationKey ?? req.businessKey ?? null;
  const stored = await insertMessage(tx, {
    messageId,
    name: req.name,
    correlationKey,
    instanceId: req.instanceId ?? null,
    payload: req.variables ?? {},
    ttlMs: req.ttlMs ?? DEFAULT_TTL_MS,
  });
  if (!stored) {
    const earlier = await findMessage(tx, messageId);
    return { status: 'duplicate', messageId, ...(earlier?.instance_id ? { instanceId: earlier.instance_id } : {}) };
  }
  await fault('message:before-match');
  const skip: string[] = [];
  for (;;) {
    const sub = await findMessageSubscription(tx, { name: req.name, correlationKey, instanceId: req.instanceId ?? null, skip });
    if (!sub) break;
    const instance = await tryLockInstance(tx, sub.instance_id);
    if (instance === 'busy') return 'busy';
    if (instance && (await deliverToSubscription(engine, tx, instance, sub, req.variables ?? {}, { messageId }))) {
      await markMessageMatched(tx, stored.id, instance.id, sub.step_id);
      return { status: 'matched', instanceId: instance.id, messageId };
    }
    skip.push(sub.id);
  }
  const started = req.instanceId ? undefined : await startOnMessage(engine, tx, req, { id: stored.id, messageId });
  if (started) return started;
  if (req.ttlMs === 0) {
    throw new BatonError('no_match', `No instance waits for message "${req.name}"${correlationKey ? ` with correlation key "${correlationKey}"` : ''}, and ttlMs 0 forbids keeping it`);
  }
  return { status: 'buffered', messageId };
}

/** Takes a subscription of a locked instance and fires its step; false when the step no longer waits. */
async function deliverToSubscription(engine: Engine, tx: PoolClient, instance: LockedInstance, sub: SubscriptionRow, payload: Variables, data: Record<string, unknown>): Promise<boolean> {
  if (sub.generation !== instance.generation || !(await deleteSubscription(tx, sub.id))) return false;
  const plan = await planOf(engine, instance.definition_id, tx);
  const variables = { ...instance.variables, ...payload };
  const fx = emptyEffects();
  if (!fireWait(plan, sub.step_id, instance.state, variables, fx, data)) return false;
  await commitTransition(tx, instance, fx, variables, { plan });
  return true;
}

/**
 * Delivers a signal to every subscription waiting at this moment (signals are not
 * kept), then starts every definition with a signal start event of that name.
 */
export async function broadcastSignal(engine: Engine, name: string, variables: Variables = {}): Promise<{ delivered: number; started: string[] }> {
  let delivered = 0;
  for (const sub of await listSignalSubscriptions(engine.pool, name)) {
    const ok = await withTransaction(engine.pool, async (tx) => {
      const instance = await lockInstance(tx, sub.instance_id);
      return instance ? deliverToSubscription(engine, tx, instance, sub, variables, { signal: name }) : false;
    });
    if (ok) delivered++;
  }
  return { delivered, started: await startOnSignal(engine, name, variables) };
}
