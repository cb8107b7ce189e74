// Timer rows, message inbox and subscriptions: the rows behind every wait.
import type { Queryable } from './db.ts';

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
 * Locks those of the given instances no other transaction holds, without waiting
 * (a batch of firings must never queue behind, or deadlock with, a transition).
 */
export async function lockIdleInstances(db: Queryable, instanceIds: string[]): Promise<Set<string>> {
  const { rows } = await db.query<{ id: string }>({
    name: 'lock_idle_instances',
    text: 'select id from instances where id = any($1::uuid[]) for no key update skip locked',
    values: [instanceIds],
  });
  return new Set(rows.map((r) => r.id));
}

/**
 * Fires a batch of due timers once: the same guard as markTimerFired, for timers whose
 * instances this transaction already holds. Ordered by instance, then due time: an
 * instance's timers fire in due order, and the frame heads are locked at commit in
 * instance order, like every statement that writes events of several instances.
 */
export async function markTimersFired(db: Queryable, timerIds: string[]): Promise<TimerRow[]> {
  const { rows } = await db.query<TimerRow>({
    name: 'mark_timers_fired',
    text: `update timers t set state = 'fired', fired_at = clock_timestamp()
             from instances i
            where t.id = any($1::uuid[]) and i.id = t.instance_id
              and t.state = 'waiting' and t.due_at <= now() and t.generation = i.generation
        returning t.id, t.instance_id, t.step_id, t.generation, t.due_at`,
    values: [timerIds],
  });
  return rows.sort((a, b) => (a.instance_id < b.instance_id ? -1 : a.instance_id > b.instance_id ? 1 : a.due_at.getTime() - b.due_at.getTime()));
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

/** Fires a due timer once: the guard on state and due_at means a second sweeper, or an early call, changes nothing. */
export async function markTimerFired(db: Queryable, timerId: string, generation: number): Promise<TimerRow | undefined> {
  const { rows } = await db.query<TimerRow>({
    name: 'mark_timer_fired',
    text: `update timers set state = 'fired', fired_at = now()
            where id = $1 and state = 'waiting' and due_at <= now() and generation = $2
        returning id, instance_id, step_id, generation, due_at`,
    values: [timerId, generation],
  });
  return rows[0];
}

// Publishers and new subscriptions of one message name take this lock, so a
// message and the catch it is meant for can never miss each other.
export async function lockMessageName(db: Queryable, name: string): Promise<void> {
  await db.query({ name: 'lock_message_name', text: "select pg_advisory_xact_lock(hashtext('baton:message:' || $1))", values: [name] });
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
}

/** Stores a message in the inbox; undefined when its messageId was seen before. */
export async function insertMessage(db: Queryable, p: InsertMessageParams): Promise<MessageRow | undefined> {
  const { rows } = await db.query<MessageRow>({
    name: 'insert_message',
    text: `insert into messages (message_id, name, correlation_key, instance_id, payload, expires_at)
           values ($1, $2, $3, $4, $5, now() + $6::bigint * interval '1 millisecond')
           on conflict (message_id) do nothing returning *`,
    values: [p.messageId, p.name, p.correlationKey, p.instanceId, p.payload, p.ttlMs],
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

export interface SubscriptionRow {
  id: string;
  instance_id: string;
  step_id: string;
  generation: number;
  kind: 'message' | 'signal';
  name: string;
  correlation_key: string | null;
}

/** The oldest message subscription a message can match: by target instance, else by correlation key. */
export async function findMessageSubscription(db: Queryable, p: { name: string; correlationKey: string | null; instanceId: string | null; skip: string[] }): Promise<SubscriptionRow | undefined> {
  const { rows } = await db.query<SubscriptionRow>({
    name: 'find_message_subscription',
    text: `select * from subscriptions
            where kind = 'message' and name = $1
              and (case when $3::uuid is not null then instance_id = $3::uuid else correlation_key is not distinct from $2 end)
              and id <> all($4::uuid[])
            order by created_at limit 1`,
    values: [p.name, p.correlationKey, p.instanceId, p.skip],
  });
  return rows[0];
}

/** Takes the subscription; undefined when its step already fired or ended. */
export async function deleteSubscription(db: Queryable, id: string): Promise<SubscriptionRow | undefined> {
  const { rows } = await db.query<SubscriptionRow>({ name: 'delete_subscription', text: 'delete from subscriptions where id = $1 returning *', values: [id] });
  return rows[0];
}

/** Consumes the oldest buffered, unexpired message a new subscription of this instance can take. */
export async function takeBufferedMessage(db: Queryable, p: { name: string; correlationKey: string | null; instanceId: string; stepId: string }): Promise<MessageRow | undefined> {
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

export async function listSignalSubscriptions(db: Queryable, name: string): Promise<SubscriptionRow[]> {
  const { rows } = await db.query<SubscriptionRow>(
    `select * from subscriptions where kind = 'signal' and name = $1 order by created_at`,
    [name],
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
