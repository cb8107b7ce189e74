// Instance rows: start, lock-with-state, apply a transition's effects, cancel, read.
import type { Effects, InstanceState, Variables } from '../engine/advance.ts';
import type { InstanceStatus } from '../engine/vocabulary.ts';
import { afterCommit, type Queryable } from './db.ts';

export const TASKS_CHANNEL = 'baton_tasks';

type TopicsListener = (topics: string[]) => void;
const topicsListeners = new Set<TopicsListener>();

/**
 * Tells fn the topics that got new tasks whenever a transition of this process commits
 * them: local long polls wake without waiting for the NOTIFY to come back. Answers an unsubscribe.
 */
export function onTasksCommitted(fn: TopicsListener): () => void {
  topicsListeners.add(fn);
  return () => topicsListeners.delete(fn);
}
/** rung when a timer row is created, so schedulers recompute their next wake-up */
export const TIMERS_CHANNEL = 'baton_timers';

export interface InstanceRow {
  id: string;
  definition_id: string;
  definition_key: string;
  definition_version: number;
  business_key: string | null;
  status: InstanceStatus;
  variables: Variables;
  generation: number;
  revision: number;
  created_at: Date;
  updated_at: Date;
  ended_at: Date | null;
}

/** An instance row locked FOR UPDATE together with its resolved flows and reached steps. */
export interface LockedInstance extends InstanceRow {
  state: InstanceState;
}

export type InsertInstanceResult =
  | { ok: true; created: true; instance: InstanceRow }
  | { ok: true; created: false; instance: InstanceRow }
  | { ok: false; reason: 'definition_not_found' };

export interface InsertInstanceParams {
  definitionKey: string;
  businessKey: string | null;
  variables: Variables;
  version?: number;
}

/** Inserts a new instance of the latest (or given) version, or finds the one holding the business key. */
export async function insertInstance(db: Queryable, p: InsertInstanceParams): Promise<InsertInstanceResult> {
  const { rows } = await db.query<InstanceRow>({
    name: 'insert_instance',
    text: `insert into instances (definition_id, definition_key, definition_version, business_key, variables, revision)
           select d.id, d.key, d.version, $2, $3, 0 from definitions d
            where d.key = $1 and ($4::int is null or d.version = $4)
            order by d.version desc limit 1
           on conflict (definition_key, business_key) where business_key is not null do nothing
           returning *`,
    values: [p.definitionKey, p.businessKey, p.variables, p.version ?? null],
  });
  if (rows[0]) return { ok: true, created: true, instance: rows[0] };
  // Miss path: either the business key is taken (the caller gets that instance) or no definition.
  if (p.businessKey !== null) {
    const existing = await db.query<InstanceRow>(
      'select * from instances where definition_key = $1 and business_key = $2',
      [p.definitionKey, p.businessKey],
    );
    if (existing.rows[0]) return { ok: true, created: false, instance: existing.rows[0] };
  }
  return { ok: false, reason: 'definition_not_found' };
}

/**
 * Locks the instance row (serializing its transitions) and loads its DAG state.
 * NO KEY UPDATE, not UPDATE: task-only statements insert history rows whose
 * foreign key takes KEY SHARE on this row while they hold task rows; a full
 * UPDATE lock would deadlock with them.
 */
/** Whether an instance with this id exists (a message addressed to it must name a real one). */
export async function instanceExists(db: Queryable, instanceId: string): Promise<boolean> {
  const { rows } = await db.query({ name: 'instance_exists', text: 'select 1 from instances where id = $1', values: [instanceId] });
  return rows.length > 0;
}

export async function lockInstance(db: Queryable, instanceId: string): Promise<LockedInstance | undefined> {
  const { rows } = await db.query<InstanceRow>({
    name: 'lock_instance',
    text: 'select * from instances where id = $1 for no key update',
    values: [instanceId],
  });
  return rows[0] ? loadState(db, rows[0]) : undefined;
}

/** Like lockInstance, but answers 'busy' instead of waiting when another transition holds the row. */
export async function tryLockInstance(db: Queryable, instanceId: string): Promise<LockedInstance | 'busy' | undefined> {
  const { rows } = await db.query<InstanceRow>({
    name: 'try_lock_instance',
    text: 'select * from instances where id = $1 for no key update skip locked',
    values: [instanceId],
  });
  if (rows[0]) return loadState(db, rows[0]);
  const exists = await db.query('select 1 from instances where id = $1', [instanceId]);
  return exists.rowCount ? 'busy' : undefined;
}

/** Same as lockInstance, found through one of its external tasks. */
export async function lockInstanceOfTask(db: Queryable, taskId: string): Promise<LockedInstance | undefined> {
  const { rows } = await db.query<InstanceRow>({
    name: 'lock_instance_of_task',
    text: `select i.* from instances i
            where i.id = (select t.instance_id from external_tasks t where t.id = $1) for no key update of i`,
    values: [taskId],
  });
  return rows[0] ? loadState(db, rows[0]) : undefined;
}

// A separate statement on purpose: under READ COMMITTED a statement that waited
// for the row lock still reads other tables with the snapshot it started with,
// so flows committed by the transition it waited for would be invisible.
async function loadState(db: Queryable, instance: InstanceRow): Promise<LockedInstance> {
  type StateRow = { flows: InstanceState['flows']; steps: InstanceState['steps']; completed: string[]; compensating: boolean; saga: boolean; loops: NonNullable<InstanceState['loops']> };
  const { rows } = await db.query<StateRow>({
    name: 'load_instance_state',
    text: `select coalesce((select jsonb_object_agg(flow_id, state) from flows where instance_id = $1), '{}') as flows,
                  coalesce((select jsonb_object_agg(step_id, status) from steps where instance_id = $1), '{}') as steps,
                  coalesce((select jsonb_agg(step_id order by completed_seq) from steps
                             where instance_id = $1 and status = 'completed' and completed_seq is not null), '[]') as completed,
                  exists (select 1 from compensations where instance_id = $1 and generation = $2 and state <> 'done') as compensating,
                  exists (select 1 from compensations where instance_id = $1 and generation = $2 and throw_step_id is null) as saga,
                  coalesce((select jsonb_object_agg(step_id, loop) from steps where instance_id = $1 and loop is not null), '{}') as loops`,
    values: [instance.id, instance.generation],
  });
  const state = rows[0] ?? { flows: {}, steps: {}, completed: [], compensating: false, saga: false, loops: {} };
  return {
    ...instance,
    state: {
      flows: state.flows,
      steps: state.steps,
      completedOrder: state.completed,
      compensation: { active: state.compensating, saga: state.saga },
      loops: state.loops,
    },
  };
}

export interface ApplyEffectsParams {
  instance: InstanceRow;
  effects: Effects;
  status: InstanceStatus;
  variables: Variables;
  /** incident rows of this transition that belong to an existing task */
  incidentTaskIds?: (string | null)[];
}

/**
 * Writes one transition of a locked instance in a single statement: step and flow
 * states, new tasks, incidents, history events, the instance row (revision + 1),
 * and a notification per topic that got work.
 */
export async function applyEffects(db: Queryable, p: ApplyEffectsParams): Promise<void> {
  const fx = p.effects;
  const steps = lastStatusPerStep(fx.steps);
  const incidentTasks = p.incidentTaskIds ?? fx.incidents.map(() => null);
  const ended = p.status === 'completed' || p.status === 'canceled' || p.status === 'compensated';
  // A wait that starts and ends within one transition never needs a row.
  const timers = fx.timers.filter((t) => !fx.endedWaits.includes(t.stepId));
  const subscriptions = fx.subscriptions.filter((x) => !fx.endedWaits.includes(x.stepId));
  await db.query({
    name: 'apply_effects',
    text: `with
      s as (insert into steps (instance_id, step_id, generation, status, ended_at, completed_seq, loop)
            select $1::uuid, x.step_id, $2::int, x.status,
                   case when x.status in ('completed', 'skipped', 'canceled', 'failed', 'compensated') then now() end,
                   case when x.status = 'completed' then nextval('events_seq') end,
                   x.loop
              from unnest($3::text[], $4::text[], $33::jsonb[]) with ordinality as x(step_id, status, loop, n)
             order by x.n
            on conflict (instance_id, step_id)
            do update set status = excluded.status, ended_at = excluded.ended_at,
                          completed_seq = coalesce(excluded.completed_seq, steps.completed_seq),
                          loop = coalesce(excluded.loop, steps.loop)),
      f as (insert into flows (instance_id, flow_id, generation, state)
            select $1, x.flow_id, $2, x.state from unnest($5::text[], $6::text[]) as x(flow_id, state)),
      t as (insert into external_tasks (instance_id, step_id, generation, topic, priority, retries, retries_left, idempotency_key, loop_index, local_variables)
            select $1, x.step_id, $2, x.topic, x.priority, x.retries, x.retries, x.idempotency_key, x.loop_index, x.local_variables
              from unnest($7::text[], $8::text[], $9::int[], $10::int[], $22::text[], $34::int[], $35::jsonb[])
                   as x(step_id, topic, priority, retries, idempotency_key, loop_index, local_variables)),
      inc as (insert into incidents (instance_id, step_id, generation, kind, message, details, task_id)
            select $1, x.step_id, $2, x.kind, x.message, x.details, x.task_id
              from unnest($11::text[], $12::text[], $13::text[], $14::jsonb[], $15::uuid[]) as x(step_id, kind, message, details, task_id)),
      e as (insert into events (instance_id, generation, kind, step_id, task_id, data)
            select $1, $2, x.kind, x.step_id, x.task_id, x.data
              from unnest($16::text[], $17::text[], $18::jsonb[], $32::uuid[]) with ordinality as x(kind, step_id, data, task_id, n)
             order by x.n),
      tm as (insert into timers (instance_id, step_id, generation, due_at)
            select $1, x.step_id, $2,
                   case when x.at is not null then greatest(x.at::timestamptz, now()) else now() + x.delay::interval end
              from unnest($23::text[], $24::text[], $25::text[]) as x(step_id, delay, at)),
      sb as (insert into subscriptions (instance_id, step_id, generation, kind, name, correlation_key)
            select $1, x.step_id, $2, x.kind, x.name, coalesce(x.correlation_key, (select business_key from instances where id = $1))
              from unnest($26::text[], $27::text[], $28::text[], $29::text[]) as x(step_id, kind, name, correlation_key)),
      tc as (update timers set state = 'canceled' where instance_id = $1 and step_id = any($30::text[]) and state = 'waiting'),
      sd as (delete from subscriptions where instance_id = $1 and step_id = any($30::text[])),
      kc as (update external_tasks set state = 'canceled', ended_at = now()
              where instance_id = $1 and step_id = any($31::text[]) and state in ('ready', 'locked')),
      ki as (update incidents set status = 'resolved', resolved_at = now()
              where instance_id = $1 and step_id = any($31::text[]) and status = 'open'),
      i as (update instances set status = $19, variables = $20, revision = revision + 1, updated_at = now(),
                   ended_at = case when $21 then now() end
             where id = $1)
      select pg_notify('${TASKS_CHANNEL}', topic) from (select distinct unnest($8::text[]) as topic) as n
      union all
      select pg_notify('${TIMERS_CHANNEL}', '') where cardinality($23::text[]) > 0`,
    values: [
      p.instance.id, p.instance.generation,
      steps.map((s) => s.stepId), steps.map((s) => s.status),
      fx.flows.map((f) => f.flowId), fx.flows.map((f) => f.state),
      fx.tasks.map((t) => t.stepId), fx.tasks.map((t) => t.topic), fx.tasks.map((t) => t.priority), fx.tasks.map((t) => t.retries),
      fx.incidents.map((x) => x.stepId), fx.incidents.map((x) => x.kind), fx.incidents.map((x) => x.message),
      fx.incidents.map((x) => x.details ?? null), incidentTasks,
      fx.events.map((e) => e.kind), fx.events.map((e) => e.stepId ?? null), fx.events.map((e) => e.data ?? {}),
      p.status, p.variables, ended,
      fx.tasks.map((t) => idempotencyKey(p.instance.id, t.stepId, p.instance.generation, t.loopIndex)),
      timers.map((t) => t.stepId), timers.map((t) => ('interval' in t.due ? t.due.interval : null)), timers.map((t) => ('at' in t.due ? t.due.at : null)),
      subscriptions.map((x) => x.stepId), subscriptions.map((x) => x.kind), subscriptions.map((x) => x.name), subscriptions.map((x) => x.correlationKey),
      fx.endedWaits, fx.canceledTasks,
      fx.events.map((e) => e.taskId ?? null),
      steps.map((s) => fx.loops[s.stepId] ?? null),
      fx.tasks.map((t) => t.loopIndex ?? 0), fx.tasks.map((t) => t.localVariables ?? {}),
    ],
  });
  if (fx.tasks.length > 0 && topicsListeners.size > 0) {
    const topics = [...new Set(fx.tasks.map((t) => t.topic))];
    afterCommit(db, () => topicsListeners.forEach((fn) => fn(topics)));
  }
}

/** The same for every attempt of one step (one element of a multi-instance step) in one generation, different for anything else. */
export function idempotencyKey(instanceId: string, stepId: string, generation: number, loopIndex?: number): string {
  return `${instanceId}/${stepId}/${generation}${loopIndex === undefined ? '' : `/${loopIndex}`}`;
}

// A step may change twice in one transition (an incident resolved, then completed);
// one statement may touch a row once, so only the last status is written.
function lastStatusPerStep(steps: Effects['steps']): Effects['steps'] {
  const last = new Map<string, Effects['steps'][number]>();
  for (const s of steps) last.set(s.stepId, s);
  return [...last.values()];
}

/**
 * Cancels every open task, timer and subscription and resolves every open incident
 * of an instance (cancel, terminate, saga); `keepTaskId` is left as it is.
 */
export async function cancelOpenWork(db: Queryable, instanceId: string, keepTaskId: string | null = null): Promise<void> {
  await db.query({
    name: 'cancel_open_work',
    text: `with t as (update external_tasks set state = 'canceled', ended_at = now()
                       where instance_id = $1 and state in ('ready', 'locked', 'failed') and id is distinct from $2::uuid),
                tm as (update timers set state = 'canceled' where instance_id = $1 and state = 'waiting'),
                sb as (delete from subscriptions where instance_id = $1)
           update incidents set status = 'resolved', resolved_at = now()
            where instance_id = $1 and status = 'open'`,
    values: [instanceId, keepTaskId],
  });
}
