// Task statements the Camunda API needs beyond store/tasks.ts: Camunda callers name
// only their workerId, so the lease is found by (task, worker); failures carry an
// absolute retry count (an option of store/tasks.ts failTask); a task can be locked by id.
import type { Pool, Queryable } from '../../store/db.ts';
import { HELD_TASK_SQL, READY_TASK_SQL } from '../../store/open-states.ts';
import {
  fetchWithinFlowLimits,
  flowLimitsCover,
  limitedPickSql,
  SPEND_TOKENS_SQL,
  TRAFFIC_WAIT_SET_SQL,
} from '../../store/flow-limits.ts';
import type { ExternalTaskRow, TaskResultCall } from '../../store/tasks.ts';

/** The lock token of the worker's current lease on the task, if it holds one. */
export async function lockTokenOf(
  db: Queryable,
  taskId: string,
  workerId: string,
): Promise<{ lockToken: string; instanceId: string } | undefined> {
  const { rows } = await db.query<{ lock_token: string; instance_id: string }>({
    name: 'camunda_lock_token_of',
    text: `select lock_token, instance_id from external_tasks where id = $1 and ${HELD_TASK_SQL} and worker_id = $2`,
    values: [taskId, workerId],
  });
  return rows[0] ? { lockToken: rows[0].lock_token, instanceId: rows[0].instance_id } : undefined;
}

export type TaskGlance = Pick<ExternalTaskRow, 'state' | 'worker_id' | 'lock_token' | 'last_result' | 'topic'>;

/** Miss path: what the task looks like now, to explain a refused call. */
export async function glanceAtTask(db: Queryable, taskId: string): Promise<TaskGlance | undefined> {
  const { rows } = await db.query<TaskGlance>({
    name: 'camunda_glance_at_task',
    text: 'select state, worker_id, lock_token, last_result, topic from external_tasks where id = $1',
    values: [taskId],
  });
  return rows[0];
}

/** Did this worker already end the task's latest attempt with this call? (a repeat answers success) */
export function isRepeat(task: TaskGlance, workerId: string, call: TaskResultCall): boolean {
  return task.last_result === call && task.worker_id === workerId && task.state !== 'locked';
}

export type LockByIdResult =
  | { ok: true; task: ExternalTaskRow }
  | { ok: false; reason: 'not_found' | 'locked_by_other' | 'not_lockable'; task?: TaskGlance };

/**
 * Camunda's lock-by-id: a ready task (retry backoff ignored: the caller asks for this
 * task explicitly), or one whose lease expired before the sweeper returned it, gets a
 * new lease; the worker's own live lease is renewed (same token).
 */
export async function lockTaskById(
  db: Pool,
  p: { taskId: string; workerId: string; lockDurationMs: number },
): Promise<LockByIdResult> {
  const { rows } = await db.query<ExternalTaskRow>({
    name: 'camunda_lock_task_by_id',
    text: `with old as (
             select id, (state = 'locked' and worker_id = $2 and lock_expires_at > now()) as renew
               from external_tasks
              where id = $1 and (state = 'locked' and (worker_id = $2 or lock_expires_at <= now())
                                 -- a ready task of a flow-limited topic is locked under its limit (below)
                                 or state = 'ready' and not exists (select 1 from flow_limit_topics fl where fl.topic = external_tasks.topic))
                for update),
           u as (
             update external_tasks t
                set state = 'locked', lock_expires_at = now() + $3::bigint * interval '1 millisecond', worker_id = $2,
                    lock_token = case when old.renew then t.lock_token else gen_random_uuid() end,
                    attempt = case when old.renew then t.attempt else t.attempt + 1 end,
                    last_result = case when old.renew then t.last_result end
               from old where t.id = old.id
          returning t.*, old.renew),
           ev as (insert into events (seq, instance_id, generation, kind, step_id, task_id, attempt, data)
                  select baton_event_seq(instance_id), instance_id, generation, 'task:locked', step_id, id, attempt,
                         jsonb_build_object('workerId', worker_id, 'lockExpiresAt', lock_expires_at)
                    from u where not u.renew)
           select * from u`,
    values: [p.taskId, p.workerId, p.lockDurationMs],
  });
  if (rows[0]) return { ok: true, task: rows[0] };
  const task = await glanceAtTask(db, p.taskId);
  if (!task || task.state === 'done' || task.state === 'canceled') return { ok: false, reason: 'not_found' };
  if (task.state === 'ready' && (await flowLimitsCover(db, [task.topic]))) {
    const limited = await lockTaskByIdWithinFlowLimits(db, { ...p, topic: task.topic });
    if (limited) return { ok: true, task: limited };
  }
  return { ok: false, reason: task.state === 'locked' ? 'locked_by_other' : 'not_lockable', task };
}

// A ready task of a flow-limited topic: locked only if its resource has capacity now (no capacity: not_lockable).
async function lockTaskByIdWithinFlowLimits(
  pool: Pool,
  p: { taskId: string; workerId: string; lockDurationMs: number; topic: string },
): Promise<ExternalTaskRow | undefined> {
  const { tasks } = await fetchWithinFlowLimits(pool, [p.topic], async (tx, resources) => {
    const { rows } = await tx.query<ExternalTaskRow>({
      name: 'camunda_lock_task_by_id_limited',
      text: `with ${limitedPickSql({
        topics: '$4',
        maxTasks: '1',
        resources: '$5',
        order: (a) => `${a}.created_at`,
        candidates: `select t.id, t.priority, t.created_at from external_tasks t
                             where t.id = $1 and t.topic = any(g.topics) and t.${READY_TASK_SQL}`,
      })},
           locked as (
             update external_tasks t
                set state = 'locked', lock_expires_at = statement_timestamp() + $3::bigint * interval '1 millisecond', worker_id = $2,
                    lock_token = gen_random_uuid(), attempt = t.attempt + 1, last_result = null,
                    ${TRAFFIC_WAIT_SET_SQL}
               from picked where t.id = picked.id
          returning t.*),
           ${SPEND_TOKENS_SQL},
           ev as (insert into events (seq, instance_id, generation, kind, step_id, task_id, attempt, data)
                  select baton_event_seq(instance_id), instance_id, generation, 'task:locked', step_id, id, attempt,
                         jsonb_build_object('workerId', worker_id, 'lockExpiresAt', lock_expires_at, 'trafficWaitMs', traffic_wait_ms)
                    from locked)
           select * from locked`,
      values: [p.taskId, p.workerId, p.lockDurationMs, [p.topic], resources],
    });
    return rows;
  });
  return tasks[0];
}

/** Camunda's unlock names no worker: whoever holds the lease loses it. */
export async function currentHolder(db: Queryable, taskId: string): Promise<{ workerId: string; lockToken: string } | undefined> {
  const { rows } = await db.query<{ worker_id: string; lock_token: string }>({
    name: 'camunda_current_holder',
    text: `select worker_id, lock_token from external_tasks where id = $1 and ${HELD_TASK_SQL}`,
    values: [taskId],
  });
  return rows[0] ? { workerId: rows[0].worker_id, lockToken: rows[0].lock_token } : undefined;
}

/** PUT retries on a live task (ready, locked or suspended): the remaining attempts become `retries`. */
export async function setTaskRetries(db: Queryable, taskId: string, retries: number): Promise<ExternalTaskRow | undefined> {
  const { rows } = await db.query<ExternalTaskRow>({
    name: 'camunda_set_task_retries',
    text: `update external_tasks set retries_left = $2::int - 1
            where id = $1 and state in ('ready', 'locked', 'suspended') returning *`,
    values: [taskId, Math.max(retries, 1)],
  });
  return rows[0];
}

/** PUT retries 0 on a live task: it fails now; the caller raises the incident. Notifies nobody. */
export async function exhaustTaskRetries(db: Queryable, taskId: string): Promise<ExternalTaskRow | undefined> {
  const { rows } = await db.query<ExternalTaskRow>({
    name: 'camunda_exhaust_task_retries',
    text: `update external_tasks set state = 'failed', retries_left = 0, lock_expires_at = null, ended_at = now(),
                  error_message = coalesce(error_message, 'Retries set to 0')
            where id = $1 and state in ('ready', 'locked') returning *`,
    values: [taskId],
  });
  return rows[0];
}

/** The open incident that holds a failed task, if any. */
export async function openIncidentOfTask(db: Queryable, taskId: string): Promise<string | undefined> {
  const { rows } = await db.query<{ id: string }>({
    name: 'camunda_open_incident_of_task',
    text: `select id from incidents where task_id = $1 and status = 'open' order by created_at desc limit 1`,
    values: [taskId],
  });
  return rows[0]?.id;
}
