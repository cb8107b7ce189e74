// Instance rows: start, lock-with-state, apply a transition's effects, cancel, read.
import type { InstanceState, Variables } from '../model/effects.ts';
import type { InstanceStatus } from '../model/vocabulary.ts';
import { afterCommit, isPool, type Queryable } from './db.ts';
import { readyTaskNotices, notifyAfterCommit, type FrameNotice } from './notifications.ts';
import { newInstanceId } from '../shared/uuid.ts';
import { OPEN_INCIDENT_SQL, OPEN_TASK_SQL, OPEN_TIMER_SQL } from './open-states.ts';
import { applyEffectsStatement, framesOf, waitingTimers, type ApplyEffectsParams, type DeliveredTask } from './apply-effects.ts';

export type { ApplyEffectsParams } from './apply-effects.ts';
import { applyEffectsTogetherStatement, framingCtes, type FramedTransition, type TogetherKind } from './apply-together.ts';
import type { LockedTaskRow } from './tasks.ts';

export { idempotencyKey } from './apply-effects.ts';
export { framableInStatement } from './apply-together.ts';

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
    text: `insert into instances (id, definition_id, definition_key, definition_version, business_key, variables, revision)
           select $5, d.id, d.key, d.version, $2, $3, 0 from definitions d
            where d.key = $1 and ($4::int is null or d.version = $4)
            order by d.version desc limit 1
           on conflict (definition_key, business_key) where business_key is not null do nothing
           returning *`,
    values: [p.definitionKey, p.businessKey, p.variables, p.version ?? null, newInstanceId()],
  });
  if (rows[0]) return { ok: true, created: true, instance: rows[0] };
  // Miss path: either the business key is taken (the caller gets that instance) or no definition.
  if (p.businessKey !== null) {
    const existing = await db.query<InstanceRow>('select * from instances where definition_key = $1 and business_key = $2', [
      p.definitionKey,
      p.businessKey,
    ]);
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
  const { rows } = await db.query({
    name: 'instance_exists',
    text: 'select 1 from instances where id = $1',
    values: [instanceId],
  });
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

type StateColumns = {
  flows: InstanceState['flows'];
  steps: InstanceState['steps'];
  completed: string[];
  compensating: boolean;
  saga: boolean;
  loops: NonNullable<InstanceState['loops']>;
};

// The DAG state of an instance: `:id` and `:generation` stand for SQL expressions.
const STATE_COLUMNS = `
  coalesce((select jsonb_object_agg(flow_id, state) from flows where instance_id = :id), '{}') as flows,
  coalesce((select jsonb_object_agg(step_id, status) from steps where instance_id = :id), '{}') as steps,
  coalesce((select jsonb_agg(step_id order by completed_seq) from steps
             where instance_id = :id and status = 'completed' and completed_seq is not null), '[]') as completed,
  exists (select 1 from compensations where instance_id = :id and generation = :generation and state <> 'done') as compensating,
  exists (select 1 from compensations where instance_id = :id and generation = :generation and throw_step_id is null) as saga,
  coalesce((select jsonb_object_agg(step_id, loop) from steps where instance_id = :id and loop is not null), '{}') as loops`;
const STATE_OF_PARAMS_SQL = STATE_COLUMNS.replaceAll(':id', '$1').replaceAll(':generation', '$2');
const STATE_OF_ROW_SQL = STATE_COLUMNS.replaceAll(':id', 'i.id').replaceAll(':generation', 'i.generation');

function withState(instance: InstanceRow, state: StateColumns | undefined): LockedInstance {
  const s = state ?? { flows: {}, steps: {}, completed: [], compensating: false, saga: false, loops: {} };
  return {
    ...instance,
    state: {
      flows: s.flows,
      steps: s.steps,
      completedOrder: s.completed,
      compensation: { active: s.compensating, saga: s.saga },
      loops: s.loops,
    },
  };
}

// A separate statement on purpose: under READ COMMITTED a statement that waited
// for the row lock still reads other tables with the snapshot it started with,
// so flows committed by the transition it waited for would be invisible.
async function loadState(db: Queryable, instance: InstanceRow): Promise<LockedInstance> {
  const { rows } = await db.query<StateColumns>({
    name: 'load_instance_state',
    text: `select ${STATE_OF_PARAMS_SQL}`,
    values: [instance.id, instance.generation],
  });
  return withState(instance, rows[0]);
}

/**
 * Instances this transaction already holds locked, with their state, in one statement
 * for many (lockInstance reads one with two statements).
 */
export async function readHeldInstances(db: Queryable, instanceIds: string[]): Promise<Map<string, LockedInstance>> {
  const { rows } = await db.query<InstanceRow & StateColumns>({
    name: 'read_held_instances',
    text: `select i.*, ${STATE_OF_ROW_SQL} from instances i where i.id = any($1::uuid[])`,
    values: [instanceIds],
  });
  return new Map(
    rows.map(({ flows, steps, completed, compensating, saga, loops, ...row }) => [
      row.id,
      withState(row, { flows, steps, completed, compensating, saga, loops }),
    ]),
  );
}

/** The fields of a task that the optimistic complete checks and uses. */
export interface TaskSnapshot {
  id: string;
  step_id: string;
  generation: number;
  state: string;
  worker_id: string | null;
  lock_token: string | null;
  attempt: number;
  topic: string;
  loop_index: number;
}

const TASK_SNAPSHOT_SQL = `jsonb_build_object('id', t.id, 'step_id', t.step_id, 'generation', t.generation, 'state', t.state, 'worker_id', t.worker_id,
                                  'lock_token', t.lock_token, 'attempt', t.attempt, 'topic', t.topic, 'loop_index', t.loop_index)`;

/**
 * A task with its instance and the instance's state, read in one statement (one
 * snapshot) and without locks: the optimistic complete computes its transition from
 * this and writes it with applyEffects' guard, which fails if anything moved meanwhile.
 */
export async function readTaskTransition(
  db: Queryable,
  taskId: string,
): Promise<{ instance: LockedInstance; task: TaskSnapshot } | undefined> {
  const { rows } = await db.query<InstanceRow & StateColumns & { task: TaskSnapshot }>({
    name: 'read_task_transition',
    text: `select i.*, ${STATE_OF_ROW_SQL},
                  ${TASK_SNAPSHOT_SQL} as task
             from external_tasks t join instances i on i.id = t.instance_id
            where t.id = $1`,
    values: [taskId],
  });
  const row = rows[0];
  if (!row) return undefined;
  const { flows, steps, completed, compensating, saga, loops, task, ...instance } = row;
  return { instance: withState(instance, { flows, steps, completed, compensating, saga, loops }), task };
}

/**
 * Locks the instances of these tasks, in id order (the order every writer of several
 * instances takes them in), and answers their ids; unknown tasks lock nothing.
 */
export async function lockInstancesOfTasks(db: Queryable, taskIds: string[]): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>({
    name: 'lock_instances_of_tasks',
    text: `select i.id from instances i
            where i.id in (select t.instance_id from external_tasks t where t.id = any(array(select unnest($1::uuid[]))))
            order by i.id for no key update of i`,
    values: [taskIds],
  });
  return rows.map((r) => r.id);
}

/**
 * readTaskTransition for many tasks in one statement. Inside a transaction that holds
 * their instances (lockInstancesOfTasks, an earlier statement: see loadState) it reads
 * what the transitions must start from. The ids go through a sub-select so the planner
 * cannot count them: otherwise a custom plan (knowing the batch's size) always looked
 * cheaper than the generic one and was made afresh on every call, costing as much as
 * running it (test/db/generic-plans.test.ts).
 */
export async function readTaskTransitions(
  db: Queryable,
  taskIds: string[],
): Promise<Map<string, { instance: LockedInstance; task: TaskSnapshot }>> {
  const { rows } = await db.query<InstanceRow & StateColumns & { task: TaskSnapshot }>({
    name: 'read_task_transitions',
    text: `select i.*, ${STATE_OF_ROW_SQL}, ${TASK_SNAPSHOT_SQL} as task
             from external_tasks t join instances i on i.id = t.instance_id
            where t.id = any(array(select unnest($1::uuid[])))`,
    values: [taskIds],
  });
  return new Map(
    rows.map(({ flows, steps, completed, compensating, saga, loops, task, ...instance }) => [
      task.id,
      { instance: withState(instance, { flows, steps, completed, compensating, saga, loops }), task },
    ]),
  );
}

/** SQLSTATE of an optimistic transition whose guard no longer held (nothing was written). */
export const TRANSITION_GUARD_LOST = 'BT409';

/**
 * Writes one transition of an instance in a single statement: step and flow states,
 * new tasks, incidents, history events, the instance row (revision + 1, or the new row
 * of a start). Its notifications ring once it has committed (store/notifications.ts). Answers the row's created_at.
 * The statement has only the parts this transition uses (store/apply-effects.ts).
 */
export async function applyEffects(db: Queryable, p: ApplyEffectsParams): Promise<Date> {
  const fx = p.effects;
  const { rows } = await db.query<{ created_at: Date; frame_seq?: number | null }>(
    applyEffectsStatement({
      instance: p.instance,
      effects: fx,
      status: p.status,
      variables: p.variables,
      incidentTaskIds: p.incidentTaskIds ?? fx.incidents.map(() => null),
      ...(p.guard ? { guard: p.guard } : {}),
      ...(p.insert ? { insert: p.insert } : {}),
      ...(p.framesAtEnd ? { framesAtEnd: true } : {}),
      alone: isPool(db),
    }),
  );
  ringTransitions(db, [{ p, topics: fx.tasks.map((t) => t.topic), frameSeq: rows[0]?.frame_seq }]);
  return rows[0]!.created_at;
}

/**
 * Writes the transitions of many instances in one statement (store/apply-together.ts):
 * starts (each with `insert`, the statement alone in its transaction), guarded completes
 * inside a batch's transaction (`guard` with `completes`), or transitions of instances the
 * transaction holds locked (a timer batch); the last two framed by frameTransitions at the
 * transaction's end, or a batch's completes by this statement (`frame`: every transition of
 * the batch so far, framableInStatement), which must then be the transaction's last. If
 * any one's guard does not hold, nothing is written and it fails with TRANSITION_GUARD_LOST.
 * Each transition's notifications ring once committed, as applyEffects'. Answers the rows'
 * created_at (one transaction, one now()).
 */
export async function applyEffectsTogether(
  db: Queryable,
  kind: TogetherKind,
  list: ApplyEffectsParams[],
  frame?: FramedTransition[],
): Promise<Date> {
  const { rows } = await db.query<{
    created_at: Date;
    instance_id?: string | null;
    generation?: number | null;
    last_seq?: number | null;
  }>(applyEffectsTogetherStatement(kind, list, frame));
  ringTransitions(
    db,
    list.map((p) => ({
      p,
      topics: p.effects.tasks.map((t) => t.topic),
      frameSeq: kind === 'starts' ? framesOf(p.effects.events).kinds.length : undefined,
    })),
  );
  if (frame)
    ringHeads(
      db,
      rows.map((r) => ({ instance_id: r.instance_id ?? null, generation: r.generation ?? null, last_seq: r.last_seq ?? null })),
    );
  return rows[0]!.created_at;
}

/**
 * applyEffects for a start (`insert`) or an optimistic complete (`guard` with `completes`),
 * alone in its transaction, that inserts the tasks in `delivery` locked for parked polls of
 * this node (engine/poll-delivery.ts) and answers them as fetch-and-lock would; the other new
 * tasks are rung as usual. Fails with TRANSITION_GUARD_LOST, writing nothing, where
 * applyEffects would, and when a flow limit covers a handed task's topic. `at`: the
 * transaction's now() (a start's created_at).
 */
export async function applyEffectsDelivering(
  db: Queryable,
  p: ApplyEffectsParams & { delivery: DeliveredTask[] },
): Promise<{ at: Date; handed: LockedTaskRow[] }> {
  const fx = p.effects;
  const { rows } = await db.query<LockedTaskRow>(
    applyEffectsStatement({
      instance: p.instance,
      effects: fx,
      status: p.status,
      variables: p.variables,
      incidentTaskIds: p.incidentTaskIds ?? fx.incidents.map(() => null),
      ...(p.guard ? { guard: p.guard } : {}),
      ...(p.insert ? { insert: p.insert } : {}),
      delivery: p.delivery,
      alone: isPool(db),
    }),
  );
  // Handed tasks ring nobody: their poll is answered by the caller, and no one else may take them.
  const handedAt = new Set(p.delivery.map((h) => h.index));
  ringTransitions(db, [
    {
      p,
      topics: fx.tasks.filter((_, i) => !handedAt.has(i)).map((t) => t.topic),
      frameSeq: (rows[0] as { frame_seq?: number | null } | undefined)?.frame_seq,
    },
  ]);
  // created_at of a handed task row is the transaction's now(), as the instance's of a start
  const handed = rows.filter((r) => r.id !== null);
  for (const r of handed) delete (r as { frame_seq?: unknown }).frame_seq;
  return { at: rows[0]!.created_at, handed };
}

interface WrittenTransition {
  p: ApplyEffectsParams;
  /** the topic of each ready task it created (and did not hand to a poll) */
  topics: string[];
  /** its last frame's seq, when the statement framed it */
  frameSeq: number | null | undefined;
}

/**
 * What written transitions ring once committed, together: how many ready tasks each topic
 * got (so that only that many parked polls wake, engine/parked-polls.ts), whether a timer
 * was created, their frames.
 */
function ringTransitions(db: Queryable, written: WrittenTransition[]): void {
  noteLifecycle(db, written);
  notifyAfterCommit(db, {
    ...readyTaskNotices(written.flatMap((w) => w.topics)),
    timers: written.some((w) => waitingTimers(w.p.effects).length > 0),
    frames: written
      .filter((w) => w.frameSeq != null)
      .map((w) => ({ instanceId: w.p.instance.id, generation: w.p.instance.generation, seq: w.frameSeq! })),
  });
}

/** A committed transition started its instance, or ended it (ops/instruments.ts counts them). */
export interface InstanceLifecycleEvent {
  definitionKey: string;
  kind: 'started' | 'completed' | 'canceled' | 'compensated';
}

const LIFECYCLE_KINDS = new Map<string, InstanceLifecycleEvent['kind']>([
  ['instance:started', 'started'],
  ['instance:completed', 'completed'],
  ['instance:canceled', 'canceled'],
  ['instance:compensated', 'compensated'],
]);
const lifecycleListeners = new Set<(events: readonly InstanceLifecycleEvent[]) => void>();

/** Told, after each commit, which instances its transitions started or ended; answers an unsubscribe. */
export function onInstanceLifecycle(listener: (events: readonly InstanceLifecycleEvent[]) => void): () => void {
  lifecycleListeners.add(listener);
  return () => lifecycleListeners.delete(listener);
}

// Read off the transitions' own history events (instance:started, and instance:<status> at
// every change of status), once their transaction has committed: a rolled-back write is not counted.
function noteLifecycle(db: Queryable, written: WrittenTransition[]): void {
  if (lifecycleListeners.size === 0) return;
  const events: InstanceLifecycleEvent[] = [];
  for (const w of written) {
    for (const e of w.p.effects.events) {
      const kind = LIFECYCLE_KINDS.get(e.kind);
      if (kind) events.push({ definitionKey: w.p.instance.definition_key, kind });
    }
  }
  if (events.length === 0) return;
  afterCommit(db, () => {
    for (const l of lifecycleListeners) {
      try {
        l(events);
      } catch {
        // a listener's failure is its own
      }
    }
  });
}

/**
 * The frames of transitions written with framesAtEnd, one statement for all of them
 * (framingCtes, store/apply-together.ts): the last statement of their transaction, so the
 * frame heads are its last locks, taken in instance order like the trigger's at commit,
 * with one notification per instance. What the trigger would do for those events at commit,
 * without a call per event. Transitions are given in the order they were written.
 *
 * With progress pending for any of the instances it writes nothing and fails (BT409,
 * TRANSITION_GUARD_LOST): the caller goes one by one, where the trigger flushes the
 * progress before the frame that ends its step. Checked here, once, rather than by each
 * write: this statement comes after every write of the batch, and a report on a task a
 * write touched cannot commit meanwhile (recordProgress takes FOR SHARE on the task row,
 * which the write holds), so this check sees every report the writes' own checks would.
 */
export async function frameTransitions(db: Queryable, transitions: FramedTransition[]): Promise<void> {
  const values: unknown[] = [];
  const ctes = framingCtes(transitions, (v) => values.push(v));
  if (!ctes) return;
  const { rows } = await db.query<{ instance_id: string; generation: number; last_seq: number }>({
    name: 'frame_transitions',
    text: 'with ' + ctes.join(',\n           ') + '\n           select instance_id, generation, last_seq from head',
    values,
  });
  ringHeads(db, rows);
}

function ringHeads(
  db: Queryable,
  heads: { instance_id: string | null; generation: number | null; last_seq: number | null }[],
): void {
  notifyAfterCommit(db, {
    frames: heads
      .filter((r) => r.instance_id !== null)
      .map((r): FrameNotice => ({ instanceId: r.instance_id!, generation: r.generation!, seq: r.last_seq! })),
  });
}

/**
 * Cancels every open task, timer and subscription and resolves every open incident
 * of an instance (cancel, terminate, saga); `keepTaskId` is left as it is.
 */
export async function cancelOpenWork(db: Queryable, instanceId: string, keepTaskId: string | null = null): Promise<void> {
  await db.query({
    name: 'cancel_open_work',
    text: `with t as (update external_tasks set state = 'canceled', ended_at = now()
                       where instance_id = $1 and ${OPEN_TASK_SQL} and id is distinct from $2::uuid),
                tm as (update timers set state = 'canceled' where instance_id = $1 and ${OPEN_TIMER_SQL}),
                sb as (delete from subscriptions where instance_id = $1)
           update incidents set status = 'resolved', resolved_at = now()
            where instance_id = $1 and ${OPEN_INCIDENT_SQL}`,
    values: [instanceId, keepTaskId],
  });
}
