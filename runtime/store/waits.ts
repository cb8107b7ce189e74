// Timer rows, message inbox and subscriptions: the rows behind every wait.
import type { FlowCondition, ScriptCondition } from '../compiler/plan.ts';
import type { Queryable } from './db.ts';
import type { InstanceRow } from './instances.ts';
import { WAITING_TIMER_SQL } from './open-states.ts';

export interface TimerRow {
  id: string;
  instance_id: string;
  step_id: string;
  generation: number;
  due_at: Date;
}

/** Due timers, oldest first. Candidates only: the guarded statements of a firing decide. */
export async function findDueTimers(db: Queryable, limit: number): Promise<Pick<TimerRow, 'id' | 'instance_id'>[]> {
  const { rows } = await db.query<Pick<TimerRow, 'id' | 'instance_id'>>({
    name: 'find_due_timers',
    text: `select id, instance_id from timers where state = 'waiting' and due_at <= now() and instance_id is not null
            order by due_at limit $1`,
    values: [limit],
  });
  return rows;
}

/** Milliseconds until the next waiting timer is due (0 when one is overdue), or undefined when none waits. */
export async function msUntilNextTimer(db: Queryable): Promise<number | undefined> {
  const { rows } = await db.query<{ ms: number | null }>({
    name: 'ms_until_next_timer',
    text: `select (extract(epoch from (min(due_at) - now())) * 1000)::float8 as ms from timers where state = 'waiting'`,
  });
  const ms = rows[0]?.ms;
  // No waiting timer: null (greatest(0, null) would have said 0 and made the scheduler spin).
  return ms === null || ms === undefined ? undefined : Math.max(0, ms);
}

/**
 * Fires a batch of due timers once, in one statement: locks those of their instances no
 * other transaction holds, without waiting (a batch of firings must never queue behind, or
 * deadlock with, a transition), and takes the timers of the locked ones with the same guard
 * as markTimerFired. Under read committed the lock answers each instance's latest committed
 * row, and the update re-checks a timer another transaction changed meanwhile, so the guard
 * sees what a statement after the lock would. Answers the instances locked (busy ones are
 * left to fire one by one) and the timers fired, ordered by instance, then due time: an
 * instance's timers fire in due order, and the frame heads are locked at commit in instance
 * order, like every statement that writes events of several instances. The timers are
 * read by instance: with `state = 'waiting'` and `due_at <= now()` the guard would match
 * timers_due_idx, and statistics from when no timer waited make that index look empty, so
 * every batch would read every due timer (docs/PERFORMANCE.md, "Stale statistics and partial
 * indexes"). WAITING_TIMER_SQL rules
 * that index out, and the instances' ids give timers_instance_idx, which it matches, a
 * condition to search by instead of a whole scan.
 */
export async function lockAndMarkDueTimers(
  db: Queryable,
  candidates: { id: string; instance_id: string }[],
): Promise<{ idle: Set<string>; fired: TimerRow[] }> {
  const { rows } = await db.query<{ instance_id: string; id: string | null; step_id: string; generation: number; due_at: Date }>({
    name: 'lock_and_mark_due_timers',
    text: `with idle as (select id, generation from instances where id = any($1::uuid[]) for no key update skip locked),
                fired as (update timers t set state = 'fired', fired_at = clock_timestamp()
                            from idle i
                           where t.id = any($2::uuid[]) and t.instance_id = any($1::uuid[]) and i.id = t.instance_id
                             and t.${WAITING_TIMER_SQL} and t.due_at <= now() and t.generation = i.generation
                       returning t.id, t.instance_id, t.step_id, t.generation, t.due_at)
           select i.id as instance_id, f.id, f.step_id, f.generation, f.due_at
             from idle i left join fired f on f.instance_id = i.id
            order by i.id, f.due_at`,
    values: [[...new Set(candidates.map((c) => c.instance_id))], candidates.map((c) => c.id)],
  });
  const fired: TimerRow[] = [];
  for (const r of rows)
    if (r.id !== null)
      fired.push({ id: r.id, instance_id: r.instance_id, step_id: r.step_id, generation: r.generation, due_at: r.due_at });
  return { idle: new Set(rows.map((r) => r.instance_id)), fired };
}

/** fired_at is when the firing commits, not when its batch began: the last statement before the commit. */
export async function stampTimersFired(db: Queryable, timerIds: string[]): Promise<void> {
  await db.query({
    name: 'stamp_timers_fired',
    text: 'update timers set fired_at = clock_timestamp() where id = any($1::uuid[])',
    values: [timerIds],
  });
}

export async function findTimerInstance(db: Queryable, timerId: string): Promise<string | undefined> {
  const { rows } = await db.query<{ instance_id: string }>('select instance_id from timers where id = $1', [timerId]);
  return rows[0]?.instance_id;
}

/**
 * Fires a due timer once: the guard on state and due_at means a second sweeper, or an early
 * call, changes nothing. Named by its instance too, for the same reason as lockAndMarkDueTimers.
 */
export async function markTimerFired(
  db: Queryable,
  timerId: string,
  instanceId: string,
  generation: number,
): Promise<TimerRow | undefined> {
  const { rows } = await db.query<TimerRow>({
    name: 'mark_timer_fired',
    text: `update timers set state = 'fired', fired_at = now()
            where id = $1 and instance_id = $3 and ${WAITING_TIMER_SQL} and due_at <= now() and generation = $2
        returning id, instance_id, step_id, generation, due_at`,
    values: [timerId, generation, instanceId],
  });
  return rows[0];
}

/**
 * The whole of one message name, exclusively: a deploy checking which process a message
 * starts, and a Camunda correlation (it matches subscriptions by their variables, so any of
 * the name's waits may be the one). Publishers and subscribers hold it shared
 * (lockMessageKey), so they wait for these and not for each other.
 */
export async function lockMessageName(db: Queryable, name: string): Promise<void> {
  await db.query({
    name: 'lock_message_name',
    text: "select pg_advisory_xact_lock(hashtext('baton:message:' || $1))",
    values: [name],
  });
}

/**
 * What a publisher and a new subscription must not miss each other on: the message name
 * shared, then (name, correlation key) and (name, instance) exclusively, in that order. A
 * publisher takes the one it matches by (the instance it addresses, else its key); a
 * subscription takes both, since either kind of message may be meant for it. Messages of one
 * name with different keys go through at once.
 */
export async function lockMessageKey(
  db: Queryable,
  p: { name: string; correlationKey: string | null; instanceId: string | null; byKey: boolean },
): Promise<void> {
  await db.query({
    name: 'lock_message_key',
    text: `select pg_advisory_xact_lock_shared(hashtext('baton:message:' || $1)),
                  case when $4::boolean then pg_advisory_xact_lock(hashtext($1), hashtext(coalesce('key:' || $2::text, 'no key'))) end,
                  case when $3::uuid is not null then pg_advisory_xact_lock(hashtext($1), hashtext('instance:' || $3::uuid)) end`,
    values: [p.name, p.correlationKey, p.instanceId, p.byKey],
  });
}

export interface MessageRow {
  id: string;
  message_id: string;
  name: string;
  correlation_key: string | null;
  payload: Record<string, unknown>;
  state: 'pending' | 'matched' | 'expired';
  instance_id: string | null;
  step_id: string | null;
}

export interface InsertMessageParams {
  messageId: string;
  name: string;
  correlationKey: string | null;
  instanceId: string | null;
  payload: Record<string, unknown>;
  ttlMs: number;
  /** the step of `instanceId` the message was already delivered to: the row is stored matched */
  matchedStepId?: string;
}

/** Stores a message in the inbox; undefined when its messageId was seen before. */
export async function insertMessage(db: Queryable, p: InsertMessageParams): Promise<MessageRow | undefined> {
  const { rows } = await db.query<MessageRow>({
    name: 'insert_message',
    text: `insert into messages (message_id, name, correlation_key, instance_id, payload, expires_at, state, step_id, matched_at)
           values ($1, $2, $3, $4, $5, now() + $6::bigint * interval '1 millisecond',
                   case when $7::text is null then 'pending' else 'matched' end, $7, case when $7::text is null then null else now() end)
           on conflict (message_id) do nothing returning *`,
    values: [p.messageId, p.name, p.correlationKey, p.instanceId, p.payload, p.ttlMs, p.matchedStepId ?? null],
  });
  return rows[0];
}

/**
 * A publisher's key lock (lockMessageKey, by key) and the insert of its message in one
 * statement: the insert selects from the lock, so it runs once the lock is held.
 */
export async function lockKeyAndInsertMessage(
  db: Queryable,
  p: InsertMessageParams & { correlationKey: string | null },
): Promise<MessageRow | undefined> {
  const { rows } = await db.query<MessageRow>({
    name: 'lock_key_insert_message',
    text: `with l as (select pg_advisory_xact_lock_shared(hashtext('baton:message:' || $2)),
                             pg_advisory_xact_lock(hashtext($2), hashtext(coalesce('key:' || $3::text, 'no key'))))
           insert into messages (message_id, name, correlation_key, instance_id, payload, expires_at, state)
           select $1, $2, $3, null, $4, now() + $5::bigint * interval '1 millisecond', 'pending' from l
           on conflict (message_id) do nothing returning *`,
    values: [p.messageId, p.name, p.correlationKey, p.payload, p.ttlMs],
  });
  return rows[0];
}

export async function findMessage(db: Queryable, messageId: string): Promise<MessageRow | undefined> {
  const { rows } = await db.query<MessageRow>('select * from messages where message_id = $1', [messageId]);
  return rows[0];
}

export async function markMessageMatched(db: Queryable, id: string, instanceId: string, stepId: string): Promise<void> {
  await db.query({
    name: 'mark_message_matched',
    text: `update messages set state = 'matched', matched_at = now(), instance_id = $2, step_id = $3 where id = $1`,
    values: [id, instanceId, stepId],
  });
}

/** A message taken for a delivery that did not happen is pending again, addressed as it was published. */
export async function releaseMessage(db: Queryable, id: string, instanceId: string | null): Promise<void> {
  await db.query({
    name: 'release_message',
    text: `update messages set state = 'pending', matched_at = null, instance_id = $2, step_id = null where id = $1`,
    values: [id, instanceId],
  });
}

export interface SubscriptionRow {
  id: string;
  instance_id: string;
  step_id: string;
  generation: number;
  kind: 'message' | 'signal' | 'user';
  name: string;
  correlation_key: string | null;
}

/**
 * The oldest message subscription a message can match (by target instance, else by correlation
 * key), with its instance's row locked: 'busy' when another transition holds that row (the
 * message then waits for it rather than go to a younger subscription), 'gone' when the instance
 * no longer exists (retention deleted it meanwhile), undefined when no subscription matches.
 * One statement; the instance's state is read in the next (stateOfLocked).
 */
export async function findAndLockMessageSubscription(
  db: Queryable,
  p: { name: string; correlationKey: string | null; instanceId: string | null; skip: string[] },
): Promise<{ sub: SubscriptionRow; instance: InstanceRow | 'busy' | 'gone' } | undefined> {
  const { rows } = await db.query<
    InstanceRow & { [K in keyof SubscriptionRow as `sub_${K}`]: SubscriptionRow[K] } & { busy: boolean }
  >({
    name: 'find_and_lock_message_subscription',
    text: `with s as (
             select * from subscriptions
              where kind = 'message' and name = $1
                and (case when $3::uuid is not null then instance_id = $3::uuid else correlation_key is not distinct from $2 end)
                and id <> all($4::uuid[])
              order by created_at limit 1)
           select i.*, s.id as sub_id, s.instance_id as sub_instance_id, s.step_id as sub_step_id, s.generation as sub_generation,
                  s.kind as sub_kind, s.name as sub_name, s.correlation_key as sub_correlation_key,
                  i.id is null and exists (select 1 from instances x where x.id = s.instance_id) as busy
             from s left join lateral (select * from instances n where n.id = s.instance_id for no key update skip locked) i on true`,
    values: [p.name, p.correlationKey, p.instanceId, p.skip],
  });
  const row = rows[0];
  if (!row) return undefined;
  const { sub_id, sub_instance_id, sub_step_id, sub_generation, sub_kind, sub_name, sub_correlation_key, busy, ...instance } =
    row;
  const sub: SubscriptionRow = {
    id: sub_id,
    instance_id: sub_instance_id,
    step_id: sub_step_id,
    generation: sub_generation,
    kind: sub_kind,
    name: sub_name,
    correlation_key: sub_correlation_key,
  };
  if (instance.id !== null) return { sub, instance };
  return { sub, instance: busy ? 'busy' : 'gone' };
}

/** The instance's message waits of this generation, oldest first. */
export async function listMessageSubscriptionsOf(
  db: Queryable,
  instanceId: string,
  generation: number,
): Promise<SubscriptionRow[]> {
  const { rows } = await db.query<SubscriptionRow>({
    name: 'list_message_subscriptions_of',
    text: `select * from subscriptions where instance_id = $1 and generation = $2 and kind = 'message' order by created_at, id`,
    values: [instanceId, generation],
  });
  return rows;
}

/** Takes the subscription; undefined when its step already fired or ended. */
export async function deleteSubscription(db: Queryable, id: string): Promise<SubscriptionRow | undefined> {
  const { rows } = await db.query<SubscriptionRow>({
    name: 'delete_subscription',
    text: 'delete from subscriptions where id = $1 returning *',
    values: [id],
  });
  return rows[0];
}

/**
 * Takes the subscription and marks the message that matched it, in one statement: the mark is
 * made only when the subscription was still there, and before the delivery's own statements,
 * so a catch that waits again at once (a repeating boundary) does not find it in the inbox.
 */
export async function takeSubscriptionFor(
  db: Queryable,
  p: { subscriptionId: string; messageRowId: string },
): Promise<SubscriptionRow | undefined> {
  const { rows } = await db.query<SubscriptionRow>({
    name: 'take_subscription_for_message',
    text: `with d as (delete from subscriptions where id = $1 returning *),
                m as (update messages set state = 'matched', matched_at = now(), instance_id = d.instance_id, step_id = d.step_id
                        from d where messages.id = $2)
           select * from d`,
    values: [p.subscriptionId, p.messageRowId],
  });
  return rows[0];
}

/** Consumes the oldest buffered, unexpired message a new subscription of this instance can take. */
export async function takeBufferedMessage(
  db: Queryable,
  p: { name: string; correlationKey: string | null; instanceId: string; stepId: string },
): Promise<MessageRow | undefined> {
  const { rows } = await db.query<MessageRow>({
    name: 'take_buffered_message',
    text: `with m as (
             select id from messages
              where state = 'pending' and name = $1 and expires_at > now()
                and (instance_id = $3 or (instance_id is null and correlation_key is not distinct from $2))
              order by received_at limit 1
              for update skip locked)
           update messages set state = 'matched', matched_at = now(), instance_id = $3, step_id = $4
             from m where messages.id = m.id
         returning messages.*`,
    values: [p.name, p.correlationKey, p.instanceId, p.stepId],
  });
  return rows[0];
}

/** `waitingAt`: only the subscriptions that were waiting then (a thrown signal reaches those, not later ones). */
export async function listSignalSubscriptions(db: Queryable, name: string, waitingAt?: Date): Promise<SubscriptionRow[]> {
  const { rows } = await db.query<SubscriptionRow>(
    `select * from subscriptions where kind = 'signal' and name = $1 and ($2::timestamptz is null or created_at <= $2)
      order by created_at`,
    [name, waitingAt ?? null],
  );
  return rows;
}

export interface EventStartRow {
  definition_id: string;
  key: string;
  version: number;
  step_id: string;
}

/** Start events of the latest version of every key that start on this message or signal name. */
export interface ConditionalStartRow {
  definition_id: string;
  key: string;
  version: number;
  step_id: string;
  /** the start event's condition: FEEL or JavaScript, and as written */
  condition: FlowCondition | ScriptCondition;
}

/** The conditional start events of every key's latest version (or of one key's), in key order. */
export async function findConditionalStarts(db: Queryable, key: string | null): Promise<ConditionalStartRow[]> {
  const { rows } = await db.query<ConditionalStartRow>({
    name: 'find_conditional_starts',
    text: `select d.id as definition_id, d.key, d.version, s->>'id' as step_id,
                  s->'wait'->'condition' as condition
             from (select distinct on (key) id, key, version, plan from definitions
                    where $1::text is null or key = $1 order by key, version desc) d
             cross join lateral jsonb_array_elements(d.plan->'steps') s
            where s->>'kind' = 'startEvent' and s->'wait'->>'trigger' = 'conditional'
            order by d.key, s->>'id'`,
    values: [key],
  });
  return rows;
}

export async function findEventStarts(db: Queryable, trigger: 'message' | 'signal', name: string): Promise<EventStartRow[]> {
  const { rows } = await db.query<EventStartRow>({
    name: 'find_event_starts',
    text: `select d.id as definition_id, d.key, d.version, s->>'id' as step_id
             from (select distinct on (key) id, key, version, plan from definitions order by key, version desc) d
             cross join lateral jsonb_array_elements(d.plan->'steps') s
            where s->>'kind' = 'startEvent' and s->'wait'->>'trigger' = $1 and s->'wait'->>'name' = $2
            order by d.key, s->>'id'`,
    values: [trigger, name],
  });
  return rows;
}
