// Waits that end from outside a task: a due timer, a published message, a broadcast signal.
import { deliverPayload } from './advance.ts';
import { emptyEffects, type Effects, type Variables } from '../model/effects.ts';
import { planOf, type Engine } from './context.ts';
import type { PublishMessageRequest, PublishMessageResult } from '../model/messages.ts';
import { startOnMessage, startOnSignal } from './event-starts.ts';
import { fireDueStartTimers } from './start-timers.ts';
import { commitTransition, plainFramedWrite, needsCommitTransition } from './transition.ts';
import { withPipelinedTransaction, withTransaction, type PoolClient } from '../store/db.ts';
import { runPipelined, valuesOf } from '../store/pipeline.ts';
import { instanceExists, lockInstance, readHeldInstances, stateOfLocked, type LockedInstance } from '../store/instances.ts';
import { framableInStatement, type TransitionWrite } from '../store/transition-statement.ts';
import { frameTransitions, writeTransitions } from '../store/transition-writer.ts';
import {
  deleteSubscription,
  findDueTimers,
  findMessage,
  findAndLockMessageSubscription,
  findTimerInstance,
  insertMessage,
  lockAndMarkDueTimers,
  listSignalSubscriptions,
  lockMessageKey,
  lockKeyAndInsertMessage,
  markMessageMatched,
  takeSubscriptionFor,
  releaseMessage,
  markTimerFired,
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
    const timer = await markTimerFired(tx, timerId, instance.id, instance.generation);
    if (!timer) return false;
    await advanceOnTimer(engine, tx, instance, timer);
    timerLatenessSeconds.observe(Math.max(0, Date.now() - timer.due_at.getTime()) / 1000);
    return true;
  });
}

async function advanceOnTimer(engine: Engine, tx: PoolClient, instance: LockedInstance, timer: TimerRow): Promise<void> {
  await (await timerTransition(engine, tx, instance, timer))?.commit();
}

interface TimerTransition {
  commit: () => Promise<unknown>;
  /** its commit reads inside the transaction (the inbox) or sends more than one statement (compensation, terminate) */
  alone: boolean;
  /** with framesAtEnd and not alone: its one write, which a batch may send together with others' (commit sends it alone) */
  write?: TransitionWrite;
  /** its instance and effects, for frameTransitions (the events are complete once commit has sent its statement) */
  framed: { instance: LockedInstance; effects: Effects };
}

/**
 * The transition a due timer makes, computed in memory; undefined when its step no longer
 * waits. With framesAtEnd its events are written framed, for frameTransitions at the end
 * of the transaction.
 */
async function timerTransition(
  engine: Engine,
  tx: PoolClient,
  instance: LockedInstance,
  timer: TimerRow,
  framesAtEnd = false,
): Promise<TimerTransition | undefined> {
  const plan = await planOf(engine, instance.definition_id, tx);
  const fx = emptyEffects();
  // A boundary whose host already ended consumes its timer and does nothing.
  const data = { timerId: timer.id, dueAt: timer.due_at };
  if (!deliverPayload(plan, timer.step_id, instance.state, instance.variables, {}, fx, data)) return undefined;
  const alone = needsCommitTransition(fx);
  if (framesAtEnd && !alone) {
    const write = plainFramedWrite(instance, fx, instance.variables);
    return { alone, write, framed: { instance, effects: fx }, commit: () => writeTransitions(tx, [write]) };
  }
  return {
    alone,
    framed: { instance, effects: fx },
    commit: () => commitTransition(tx, instance, fx, instance.variables, { plan, framesAtEnd }),
  };
}

/** Batches fire side by side, one connection each; one instance's timers still serialize on its row lock. */
export const FIRING_LANES = 4;
/**
 * Most firings one transaction commits. One commit for many firings is most of the
 * gain (a firing alone is 7 round trips and a commit); a larger batch holds its
 * instances' locks longer and loses more work to a rollback. At 25 a burst of 167 takes
 * two transactions a lane; at 50 it takes one of 42 a lane, which costs Node 12% less CPU
 * per firing and ends the bursts sooner (docs/PERFORMANCE.md, "Timer bursts").
 */
export const FIRINGS_PER_TRANSACTION = 50;

/**
 * Fires the due timers (up to `batch` of them, oldest first) and the due timer start
 * events; answers how many fired. The whole page is split once into equal chunks, a
 * multiple of the lanes, so every lane ends at about the same time: 167 timers due at
 * one instant are 4 transactions of 42 (41) in 4 lanes, and 250 are 8 of 32 (26), not
 * 50, 50, 50, 50, then 50 in one lane while the other three idle.
 */
export async function fireDueTimers(engine: Engine, batch: number): Promise<number> {
  const due = await findDueTimers(engine.pool, batch);
  const chunks = chunkFor(due, FIRING_LANES, FIRINGS_PER_TRANSACTION);
  let next = 0;
  let fired = 0;
  await Promise.all(
    Array.from({ length: Math.min(FIRING_LANES, chunks.length) }, async () => {
      for (let chunk = chunks[next++]; chunk; chunk = chunks[next++]) {
        const n = await fireTimerBatch(engine, chunk); // not `fired += await …`: that reads fired before the wait
        fired += n;
      }
    }),
  );
  return fired + (await fireDueStartTimers(engine, batch));
}

/** Equal chunks in due order, their count a multiple of the lanes (when there are that many items), none above cap. */
export function chunkFor<T>(items: T[], lanes: number, cap: number): T[][] {
  const rounds = Math.ceil(items.length / (lanes * cap));
  const size = Math.max(1, Math.ceil(items.length / (lanes * rounds)));
  const chunks: T[][] = [];
  for (let i = 0; i < items.length; i += size) chunks.push(items.slice(i, i + size));
  return chunks;
}

/**
 * Fires a batch of due timers in one transaction of two round trips: the first write
 * begins, locks the instances no one else holds (without waiting) and takes their timers
 * in one guarded statement, and reads the held instances (a fresh snapshot, after the
 * locks); the second runs each firing's transition, frames them all (the last write's
 * statement does), stamps the timers fired, and commits. Timers
 * of busy instances then fire one by one, waiting for their instance like any transition;
 * so does the whole batch if one firing fails, so that one bad instance cannot hold back
 * the others, or if progress is pending for one of its instances (the framing statement
 * fails with BT409: one by one, the trigger flushes that progress before the firing's frames).
 */
async function fireTimerBatch(engine: Engine, candidates: { id: string; instance_id: string }[]): Promise<number> {
  for (let i = 0; i < candidates.length; i++) await fault('timer:before-fire');
  let busy: string[];
  let fired: TimerRow[];
  try {
    ({ busy, fired } = await withPipelinedTransaction(engine.pool, async (tx, edges) => {
      // An instance whose timer the guard refused, or that another transaction holds, is read for nothing.
      const [, { idle, fired: timers }, held] = valuesOf(
        await runPipelined<unknown>(tx, [
          edges.begin,
          () => lockAndMarkDueTimers(tx, candidates),
          () => readHeldInstances(tx, [...new Set(candidates.map((c) => c.instance_id))]),
        ]),
      ) as [void, Awaited<ReturnType<typeof lockAndMarkDueTimers>>, Map<string, LockedInstance>];
      // The firings' writes go out as one statement (store/transition-statement.ts), pipelined with
      // what follows them, in instance order (the order the locks were taken in); one that
      // must read first goes alone, after those before it.
      let writes: TransitionWrite[] = [];
      let pending: (() => Promise<unknown>)[] = [];
      const framed: TimerTransition['framed'][] = [];
      const flush = async () => {
        const together = writes;
        const calls = [...(together.length > 0 ? [() => writeTransitions(tx, together)] : []), ...pending];
        writes = [];
        pending = [];
        if (calls.length > 0) valuesOf(await runPipelined(tx, calls));
      };
      for (const timer of timers) {
        let instance = held.get(timer.instance_id);
        // A second timer of one instance reads the state its first firing left.
        held.delete(timer.instance_id);
        if (!instance) {
          await flush();
          instance = await lockInstance(tx, timer.instance_id);
        }
        const transition = instance ? await timerTransition(engine, tx, instance, timer, true) : undefined;
        if (!transition) continue;
        framed.push(transition.framed);
        if (transition.alone) {
          await flush();
          await transition.commit();
        } else if (transition.write) writes.push(transition.write);
        else pending.push(transition.commit);
      }
      // Every firing's events were written framed (the trigger is not queued for them): the
      // last write frames them all after its other parts (or, when none is left to write or a
      // firing raised an incident, a statement of its own does), so the frame heads are the
      // transaction's last locks, taken in instance order as the trigger's were at commit; the
      // stamp after it updates only timers the batch already holds. It is called after the
      // statements before it were sent, so every effects list is complete.
      if (writes.length > 0 && framableInStatement(framed)) {
        const last = writes;
        writes = [];
        pending.push(() => writeTransitions(tx, last, framed));
      } else if (framed.length > 0) pending.push(() => frameTransitions(tx, framed));
      if (timers.length > 0)
        pending.push(() =>
          stampTimersFired(
            tx,
            timers.map((t) => t.id),
          ),
        );
      pending.push(edges.commit);
      await flush();
      return { busy: candidates.filter((c) => !idle.has(c.instance_id)).map((c) => c.id), fired: timers };
    }));
  } catch (err) {
    engine.log.warn({ err: (err as Error).message, count: candidates.length }, 'timers:batch_failed');
    return fireOneByOne(
      engine,
      candidates.map((c) => c.id),
    );
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

const DEFAULT_TTL_MS = 60 * 60 * 1000;

/**
 * Stores the message, then hands it to exactly one waiting subscription; with none,
 * starts the definition whose message start event names it; else keeps it until a
 * matching catch starts waiting (ttlMs). A repeated messageId changes nothing.
 */
export async function publishMessage(engine: Engine, req: PublishMessageRequest): Promise<PublishMessageResult> {
  const messageId = req.messageId ?? crypto.randomUUID();
  return retryWhileBusy(engine, `Message ${messageId}`, (tx) => tryPublish(engine, tx, req, messageId));
}

/** Rolls back an attempt whose instance was busy. */
class InstanceBusy extends Error {}

/**
 * Runs `attempt` in a transaction of its own until it answers something other than 'busy'.
 * A publisher holds message locks, so it never waits for an instance another transition
 * holds (that transition may want the same lock): it answers 'busy', and what it wrote so far
 * (the stored message) is rolled back before it tries again shortly; kept, the message would
 * be found by its own retry as a duplicate and never reach the instance. A deadlock is tried
 * again the same way: two deliveries whose instances go on to wait on the same message name
 * with each other's keys take the key locks in opposite orders.
 */
export async function retryWhileBusy<T>(
  engine: Engine,
  what: string,
  attempt: (tx: PoolClient) => Promise<T | 'busy'>,
): Promise<T> {
  for (let n = 0; ; n++) {
    try {
      return await withTransaction(engine.pool, async (tx) => {
        const result = await attempt(tx);
        if (result === 'busy') throw new InstanceBusy();
        return result;
      });
    } catch (err) {
      if (!(err instanceof InstanceBusy) && (err as { code?: string }).code !== '40P01') throw err;
    }
    if (n > 200) throw new Error(`${what}: the matching instance stayed busy; try again`);
    await new Promise((r) => setTimeout(r, Math.min(50, 2 + n)));
  }
}

async function tryPublish(
  engine: Engine,
  tx: PoolClient,
  req: PublishMessageRequest,
  messageId: string,
): Promise<PublishMessageResult | 'busy'> {
  const correlationKey = req.correlationKey ?? req.businessKey ?? null;
  const message = {
    messageId,
    name: req.name,
    correlationKey,
    instanceId: req.instanceId ?? null,
    payload: req.variables ?? {},
    ttlMs: req.ttlMs ?? DEFAULT_TTL_MS,
  };
  let stored;
  if (req.instanceId) {
    // A message addressed to an instance matches that instance's waits whatever their key.
    await lockMessageKey(tx, { name: req.name, correlationKey, instanceId: req.instanceId, byKey: false });
    if (!(await instanceExists(tx, req.instanceId)))
      throw new BatonError('not_found', `No instance with id "${req.instanceId}" to address message "${req.name}" to`);
    stored = await insertMessage(tx, message);
  } else {
    stored = await lockKeyAndInsertMessage(tx, message);
  }
  if (!stored) {
    const earlier = await findMessage(tx, messageId);
    return { status: 'duplicate', messageId, ...(earlier?.instance_id ? { instanceId: earlier.instance_id } : {}) };
  }
  await fault('message:before-match');
  const skip: string[] = [];
  for (;;) {
    const found = await findAndLockMessageSubscription(tx, {
      name: req.name,
      correlationKey,
      instanceId: req.instanceId ?? null,
      skip,
    });
    if (!found) break;
    const { sub } = found;
    if (found.instance === 'busy') return 'busy';
    if (found.instance !== 'gone') {
      const instance = await stateOfLocked(tx, found.instance);
      // The message is marked with the take of its subscription (takeSubscriptionFor).
      if (await deliverToSubscription(engine, tx, instance, sub, req.variables ?? {}, { messageId }, stored.id))
        return { status: 'matched', instanceId: instance.id, messageId };
      await releaseMessage(tx, stored.id, req.instanceId ?? null);
    }
    skip.push(sub.id);
  }
  // The message's business key, else its correlation key, becomes the started instance's.
  const businessKey = req.businessKey ?? req.correlationKey ?? null;
  const started = req.instanceId
    ? undefined
    : await startOnMessage(engine, tx, { name: req.name, businessKey, variables: req.variables ?? {} });
  if (started) {
    await markMessageMatched(tx, stored.id, started.instanceId, started.stepId);
    // A second message with the same key answers the instance the first one started.
    return { status: started.created ? 'started' : 'duplicate', instanceId: started.instanceId, messageId };
  }
  if (req.ttlMs === 0) {
    throw new BatonError(
      'no_match',
      `No instance waits for message "${req.name}"${correlationKey ? ` with correlation key "${correlationKey}"` : ''}, and ttlMs 0 forbids keeping it`,
    );
  }
  return { status: 'buffered', messageId };
}

/** Takes a subscription of a locked instance and fires its step; false when the step no longer waits. */
export async function deliverToSubscription(
  engine: Engine,
  tx: PoolClient,
  instance: LockedInstance,
  sub: SubscriptionRow,
  payload: Variables,
  data: Record<string, unknown>,
  /** the stored message this delivers: marked matched as the subscription is taken */
  messageRowId?: string,
): Promise<boolean> {
  // A suspended instance takes nothing: a message stays in the inbox for its resume, a signal passes it.
  if (instance.suspended_at || sub.generation !== instance.generation) return false;
  const taken = messageRowId
    ? await takeSubscriptionFor(tx, { subscriptionId: sub.id, messageRowId })
    : await deleteSubscription(tx, sub.id);
  if (!taken) return false;
  const plan = await planOf(engine, instance.definition_id, tx);
  const variables = { ...instance.variables };
  const fx = emptyEffects();
  if (!deliverPayload(plan, sub.step_id, instance.state, variables, payload, fx, data)) return false;
  await commitTransition(tx, instance, fx, variables, { plan });
  return true;
}

/**
 * Delivers a signal to every subscription waiting at this moment (signals are not
 * kept), then starts every definition with a signal start event of that name.
 */
export async function broadcastSignal(
  engine: Engine,
  name: string,
  variables: Variables = {},
): Promise<{ delivered: number; started: string[] }> {
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
