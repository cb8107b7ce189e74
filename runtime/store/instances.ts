// Instance rows: start, lock with their state, read for a transition, cancel open work.
// A transition's own write is store/transition-writer.ts.
import type { InstanceState, Variables } from '../model/effects.ts';
import type { InstanceStatus } from '../model/vocabulary.ts';
import type { Queryable } from './db.ts';
import { newInstanceId } from '../shared/uuid.ts';
import { OPEN_INCIDENT_SQL, OPEN_TASK_SQL, OPEN_TIMER_SQL } from './open-states.ts';

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
  /** set when a call activity started the instance: the parent and the step that waits for it */
  parent_instance_id: string | null;
  parent_step_id: string | null;
  parent_scope_path: string | null;
  parent_generation: number | null;
  parent_loop_index: number | null;
  /** set while an operator has the instance suspended (store/suspension.ts) */
  suspended_at: Date | null;
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

/**
 * The conflict a start with a business key arbitrates: another instance of the process, started
 * on its own, holds it (migration 0043; called instances share their parent's freely).
 */
export const BUSINESS_KEY_CONFLICT_SQL = `on conflict (business_key, definition_key,
             (case when parent_instance_id is null then '00000000-0000-0000-0000-000000000000'::uuid else id end))
           where business_key is not null do nothing`;

/** Inserts a new instance of the latest (or given) version, or finds the one holding the business key. */
export async function insertInstance(db: Queryable, p: InsertInstanceParams): Promise<InsertInstanceResult> {
  const { rows } = await db.query<InstanceRow>({
    name: 'insert_instance',
    text: `insert into instances (id, definition_id, definition_key, definition_version, business_key, variables, revision)
           select $5, d.id, d.key, d.version, $2, $3, 0 from definitions d
            where d.key = $1 and ($4::int is null or d.version = $4)
            order by d.version desc limit 1
           ${BUSINESS_KEY_CONFLICT_SQL}
           returning *`,
    values: [p.definitionKey, p.businessKey, p.variables, p.version ?? null, newInstanceId()],
  });
  if (rows[0]) return { ok: true, created: true, instance: rows[0] };
  // Miss path: either the business key is taken (the caller gets that instance) or no definition.
  if (p.businessKey !== null) {
    const existing = await db.query<InstanceRow>(
      'select * from instances where definition_key = $1 and business_key = $2 and parent_instance_id is null',
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

/** The state of an instance whose row this transaction has just locked, read in a statement of its own (loadState). */
export async function stateOfLocked(db: Queryable, instance: InstanceRow): Promise<LockedInstance> {
  return loadState(db, instance);
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
      ...(instance.parent_instance_id ? { calledBy: instance.parent_instance_id } : {}),
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
 * this and writes it with a guarded write (store/transition-writer.ts), which fails if
 * anything moved meanwhile.
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
 * cannot count them: otherwise a custom plan (knowing the batch's size) always looks
 * cheaper than the generic one and is made afresh on every call, costing as much as
 * running it (test/db/store/generic-plans.test.ts).
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
                sb as (delete from subscriptions where instance_id = $1),
                -- an ended instance is not suspended, whatever it was when it ended
                su as (update instances set suspended_at = null where id = $1 and suspended_at is not null)
           update incidents set status = 'resolved', resolved_at = now()
            where instance_id = $1 and ${OPEN_INCIDENT_SQL}`,
    values: [instanceId, keepTaskId],
  });
}
