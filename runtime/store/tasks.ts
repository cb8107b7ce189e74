// External task rows: the lease lifecycle (runtime/store/README.md, "Status diagrams"), one guarded statement each.
import type { Variables } from '../model/effects.ts';
import type { TaskState } from '../model/vocabulary.ts';
import type { Pool, Queryable } from './db.ts';
import { HELD_TASK_SQL } from './open-states.ts';
import { appendHeadsCte } from './frames.ts';
import {
  fetchWithinFlowLimits,
  limitedPickSql,
  NO_FLOW_LIMIT_SQL,
  SPEND_TOKENS_SQL,
  TRAFFIC_WAIT_SET_SQL,
  type FetchOutcome,
} from './flow-limits.ts';
import { readyTaskNotices, notifyAfterCommit, type FrameNotice } from './notifications.ts';

export interface ExternalTaskRow {
  id: string;
  instance_id: string;
  step_id: string;
  generation: number;
  topic: string;
  priority: number;
  state: TaskState;
  retries: number;
  retries_left: number;
  attempt: number;
  retry_at: Date;
  worker_id: string | null;
  lock_token: string | null;
  lock_expires_at: Date | null;
  last_result: TaskResultCall | null;
  error_message: string | null;
  error_details: string | null;
  idempotency_key: string;
  created_at: Date;
  ended_at: Date | null;
  /** how long the latest attempt waited for flow-limit capacity */
  traffic_wait_ms: number;
  flow_waiting_since: Date | null;
  /** the task's own variables: a multi-instance element's, its input mappings' */
  local_variables: Variables;
  /** inside a loop, the pass it belongs to (`/loop:Review#2`); `/` outside loops */
  scope_path: string;
  /** its step's task headers (zeebe:taskHeaders, camunda:properties); null without any */
  headers: Record<string, string> | null;
  /** leases of this task that expired without a result (expireLocks counts them) */
  lease_expiries: number;
}

/** The holder calls that end an attempt. */
export type TaskResultCall = 'complete' | 'failure' | 'bpmn-error';

export interface LockedTaskRow extends ExternalTaskRow {
  business_key: string | null;
  variables: Variables;
}

/** priority: priority desc, then oldest; oldest: oldest first whatever the priority (a fair turn, engine/fetch.ts). */
export type FetchOrder = 'priority' | 'oldest';

export interface FetchAndLockParams {
  workerId: string;
  maxTasks: number;
  topics: { name: string; lockDurationMs: number }[];
  order?: FetchOrder;
}

const ORDER_SQL: Record<FetchOrder, (alias: string) => string> = {
  priority: (a) => `${a}.priority desc, ${a}.created_at`,
  oldest: (a) => `${a}.created_at`,
};

/**
 * Locks up to maxTasks ready tasks of the given topics; concurrent callers skip
 * each other's rows. One statement when no flow limit covers the topics; else a
 * limited fetch (store/flow-limits.ts) that never exceeds a limit.
 */
export async function fetchAndLock(pool: Pool, p: FetchAndLockParams): Promise<FetchOutcome<LockedTaskRow>> {
  const order = p.order ?? 'priority';
  const topics = p.topics.map((t) => t.name);
  const values = [topics, p.topics.map((t) => t.lockDurationMs), p.maxTasks, p.workerId];
  const perTopic = new Set(topics).size * p.maxTasks <= PER_TOPIC_PICK_BUDGET;
  const pickSql = perTopic ? perTopicPickSql(order) : widePickSql(order);
  const answerSql = perTopic ? PER_TOPIC_ANSWER_SQL : WIDE_ANSWER_SQL;
  const { rows } = await pool.query<LockedTaskRow & { flow_limited: boolean | null; released: number; frame_seq: number | null }>(
    {
      name: `fetch_and_lock_${order}${perTopic ? '' : '_wide'}`,
      text: `with ${pickSql},
           ${lockPickedSql(FRAMED_HERE_SQL)},
           ${FRAME_LOCKED_SQL}
           ${answerSql}`,
      values,
    },
  );
  const released = rows[0]?.released ?? 0;
  const tasks: LockedTaskRow[] = [];
  const frames = new Map<string, FrameNotice>();
  for (const row of rows) {
    if (row.id === null) continue;
    if (row.frame_seq !== null)
      frames.set(row.instance_id, { instanceId: row.instance_id, generation: row.generation, seq: row.frame_seq });
    delete (row as { flow_limited?: unknown }).flow_limited;
    delete (row as { released?: unknown }).released;
    delete (row as { frame_seq?: unknown }).frame_seq;
    tasks.push(row);
  }
  // Rows the pick locked and did not take were free again at its commit; a poll that found them locked has parked.
  notifyAfterCommit(pool, { frames: [...frames.values()], ...(released > 0 ? { topics } : {}) });
  if (tasks.length > 0 || rows[0]?.flow_limited !== true) return { tasks };
  return fetchWithinFlowLimits(pool, topics, async (tx, resources) => {
    const limited = await tx.query<LockedTaskRow>({
      name: `fetch_and_lock_limited_${order}`,
      text: `with ${limitedPickSql({
        topics: '$1',
        maxTasks: '$3',
        resources: '$5',
        order: ORDER_SQL[order],
        candidates: `select t.id, t.priority, t.created_at from external_tasks t
                             where t.state = 'ready' and t.topic = any(g.topics) and t.retry_at <= statement_timestamp()
                             order by ${ORDER_SQL[order]('t')} limit $3`,
      })},
           ${lockPickedSql(FRAMED_BY_TRIGGER_SQL)},
           ${SPEND_TOKENS_SQL}
           ${ANSWER_SQL}`,
      values: [...values, resources],
    });
    return limited.rows;
  });
}

/**
 * Most rows the per-topic pick may lock (distinct topics × maxTasks); a larger fetch picks
 * across the topics' whole ready set instead (widePickSql).
 */
export const PER_TOPIC_PICK_BUDGET = 200;

// The pick: each topic's first maxTasks ready tasks in fetch order, read from its ready index
// and locked (skipping rows other fetches hold), then the first maxTasks of them all. It reads
// and locks at most topics × maxTasks rows however many tasks wait; picking across the topics
// at once reads and sorts every waiting task of them (a bitmap scan: 12.8 ms per fetch with
// 1,500 tasks waiting in the three-step bench, against 0.11 ms this way; docs/PERFORMANCE.md,
// "fetch-and-lock with a backlog"). The rows it
// locked and did not take (`released`) stay locked until the commit, and the fetch rings their topics.
function perTopicPickSql(order: FetchOrder): string {
  return `cand as (
             select c.* from (select distinct unnest($1::text[]) as topic) tp
              cross join lateral (
                select t.id, t.priority, t.created_at from external_tasks t
                 where t.state = 'ready' and t.topic = tp.topic and t.retry_at <= now() and ${NO_FLOW_LIMIT_SQL('$1')}
                 order by ${ORDER_SQL[order]('t')}
                 limit $3
                 for update skip locked) c),
           picked as (select c.id from cand c order by ${ORDER_SQL[order]('c')} limit $3)`;
}

// The pick across all the topics' ready tasks: locks only what it takes, but reads them all.
function widePickSql(order: FetchOrder): string {
  return `picked as (
             select t.id from external_tasks t
              where t.state = 'ready' and t.topic = any($1::text[]) and t.retry_at <= now() and ${NO_FLOW_LIMIT_SQL('$1')}
              order by ${ORDER_SQL[order]('t')}
              limit $3
              for update skip locked)`;
}

// Locks the rows of `picked` (new token, attempt + 1, per-topic expiry) and records task:locked
// in `ev`. Its rows go to the deferred trigger (framed null), which frames them at commit, or,
// after FRAME_LOCKED_SQL, are framed by the statement itself.
// `events.framed` of the fetch's events: framed by FRAME_LOCKED_SQL in the statement, unless
// progress is pending for the instance; or left to the trigger: the limited fetch is a
// transaction with more statements after its lock.
const FRAMED_HERE_SQL = 'case when p.pending then null else true end';
const FRAMED_BY_TRIGGER_SQL = 'null::boolean';

function lockPickedSql(framedSql: string): string {
  return `locked as (
             update external_tasks t
                set state = 'locked', worker_id = $4, lock_token = gen_random_uuid(), attempt = t.attempt + 1, last_result = null,
                    lock_expires_at = statement_timestamp() + ($2::int[])[array_position($1::text[], t.topic)] * interval '1 millisecond',
                    ${TRAFFIC_WAIT_SET_SQL}
               from picked where t.id = picked.id
             returning t.*),
           pend as (
             -- whether progress reports of the instance wait to be flushed: then its events go to the trigger,
             -- which flushes a step's reports before its frames (a ready task has no holder to report, so this is rare)
             select l.instance_id, bool_or(exists (select 1 from progress_reports r where r.instance_id = l.instance_id)) as pending
               from locked l group by l.instance_id),
           ev as (
             -- ordered by instance: frame heads are locked in this order, so fetchers cannot deadlock
             insert into events (seq, instance_id, generation, kind, step_id, task_id, attempt, data, framed)
             select baton_event_seq(o.instance_id), o.* from (
               select l.instance_id, l.generation, 'task:locked', l.step_id, l.id, l.attempt,
                      jsonb_build_object('workerId', l.worker_id, 'lockExpiresAt', l.lock_expires_at, 'trafficWaitMs', l.traffic_wait_ms),
                      ${framedSql}
                 from locked l join pend p on p.instance_id = l.instance_id
                order by l.instance_id, l.id) o
             returning instance_id, generation, seq, kind, step_id, task_id, attempt, data, at, framed)`;
}

// The frames of the fetch's own events (those `ev` wrote framed), written by the fetch's
// statement as the trigger of migration 0011 would at commit: one head update per instance,
// in instance order, as the statement's last row locks (the statement is its own
// transaction, so the commit follows at once), the frames; the answer carries each head's
// seq for the notification rung after the commit (store/notifications.ts).
// A task:locked never ends a generation; a head already ended takes no frames, as in the
// trigger. Saves a deferred trigger call and its framing statement per instance and fetch.
const FRAME_LOCKED_SQL = `counted as (
             select instance_id, generation, count(*)::int as n from ev where framed group by instance_id, generation),
           ${appendHeadsCte('instance_id, generation, n, null::timestamptz from counted order by instance_id')},
           fw as (
             insert into frame_runs (instance_id, generation, last_seq, kinds, data, at)
             select e.instance_id, e.generation, head.last_seq, array_agg(e.kind order by e.seq),
                    array_agg(jsonb_strip_nulls(jsonb_build_object('stepId', e.step_id, 'taskId', e.task_id, 'attempt', e.attempt)) || e.data order by e.seq),
                    min(e.at)
               from ev e join head on head.instance_id = e.instance_id and head.generation = e.generation
              where e.framed
              group by e.instance_id, e.generation, head.last_seq)`;

// A multi-instance element's own variables (element variable, loopCounter) win over the instance's.
const ANSWER_SQL = `select l.*, i.business_key, i.variables || l.local_variables as variables
             from locked l join instances i on i.id = l.instance_id
            order by l.priority desc, l.created_at`;

// The unlimited fetch's answer: the locked rows, or when it locked none, one row of nulls
// whose flow_limited says whether a flow limit covers the topics (then the limited fetch
// decides). In the same statement, not a second one (flow_limits_cover) after every empty
// fetch: that would be a round trip before every long poll parks.
// Each row also carries its frame head's seq (FRAME_LOCKED_SQL), for the notification.
// `released`: how many rows the pick locked and did not take (perTopicPickSql).
const answerOrCoveredSql = (releasedSql: string): string => `select a.*, c.flow_limited, c.released,
                  (select h.last_seq from head h where h.instance_id = a.instance_id and h.generation = a.generation) as frame_seq
             from (select exists (select 1 from flow_limit_topics fl where fl.topic = any($1::text[])) as flow_limited, (${releasedSql})::int as released) c
             left join (${ANSWER_SQL}) a on true
            order by a.priority desc, a.created_at`;
const PER_TOPIC_ANSWER_SQL = answerOrCoveredSql('(select count(*) from cand) - (select count(*) from picked)');
const WIDE_ANSWER_SQL = answerOrCoveredSql('0');

export interface LockHolder {
  taskId: string;
  workerId: string;
  lockToken: string;
}

export type TaskMiss = 'not_found' | 'lock_lost' | 'already_applied';
export type GuardedTaskResult = { ok: true; task: ExternalTaskRow } | { ok: false; reason: TaskMiss };

/** Marks a locked task done for its holder. The caller holds the instance lock. */
export async function markTaskDone(db: Queryable, p: LockHolder & { generation: number }): Promise<GuardedTaskResult> {
  const { rows } = await db.query<ExternalTaskRow>({
    name: 'mark_task_done',
    text: `update external_tasks set state = 'done', ended_at = now(), last_result = 'complete'
            where id = $1 and ${HELD_TASK_SQL} and worker_id = $2 and lock_token = $3 and generation = $4
        returning *`,
    values: [p.taskId, p.workerId, p.lockToken, p.generation],
  });
  return rows[0] ? { ok: true, task: rows[0] } : { ok: false, reason: await explainMiss(db, p, 'complete') };
}

export interface FailTaskParams extends LockHolder {
  generation: number;
  errorMessage: string | null;
  errorDetails: string | null;
  backoffBaseMs: number;
  backoffMaxMs: number;
  /** the attempts still allowed, set by the worker (0: failed now); absent: one fewer than before */
  retries?: number | undefined;
  /** the wait before the retry is fetchable; absent: the exponential backoff */
  retryTimeoutMs?: number | undefined;
}

/**
 * Records a failure of the holder's attempt: back to ready while retries are left, else
 * failed (the caller raises the incident). Without `retries` one retry is used up; with
 * it (Camunda's absolute count, or a native worker that knows better) `retries − 1`
 * failures stay tolerated. The retry waits `retryTimeoutMs`, else an exponential backoff.
 * The lock token stays on the row so a repeated failure is recognised. A retry due now
 * rings the topic's notification after the commit; a later one is found by the pollers'
 * periodic re-check.
 */
export async function failTask(db: Queryable, p: FailTaskParams): Promise<GuardedTaskResult> {
  const { rows } = await db.query<ExternalTaskRow & { due_now?: boolean }>({
    name: 'fail_task',
    text: `with u as (
             update external_tasks
                set state = case when coalesce($9::int > 0, retries_left > 0) then 'ready' else 'failed' end,
                    retries_left = greatest(coalesce($9::int, retries_left) - 1, 0),
                    retry_at = now() + coalesce($10::float8, least($6::float8 * power(2, retries - retries_left), $7::float8))
                                       * interval '1 millisecond',
                    lock_expires_at = null, error_message = $5, error_details = $8, last_result = 'failure',
                    ended_at = case when coalesce($9::int > 0, retries_left > 0) then null else now() end
              where id = $1 and ${HELD_TASK_SQL} and worker_id = $2 and lock_token = $3 and generation = $4
          returning *)
           select u.*, u.state = 'ready' and u.retry_at <= now() as due_now from u`,
    values: [
      p.taskId,
      p.workerId,
      p.lockToken,
      p.generation,
      p.errorMessage,
      p.backoffBaseMs,
      p.backoffMaxMs,
      p.errorDetails,
      p.retries ?? null,
      p.retryTimeoutMs ?? null,
    ],
  });
  const task = rows[0];
  if (!task) return { ok: false, reason: await explainMiss(db, p, 'failure') };
  if (task.due_now) notifyAfterCommit(db, { topics: [task.topic], counts: [1] });
  delete task.due_now;
  return { ok: true, task };
}

/** Ends the holder's attempt with a BPMN error; with nothing to catch it the task waits in an incident. */
export async function markTaskErrored(
  db: Queryable,
  p: LockHolder & { generation: number; errorCode: string; errorMessage: string | null },
): Promise<GuardedTaskResult> {
  const { rows } = await db.query<ExternalTaskRow>({
    name: 'mark_task_errored',
    text: `update external_tasks set state = 'failed', ended_at = now(), lock_expires_at = null,
                  error_message = $5, error_details = $6, last_result = 'bpmn-error'
            where id = $1 and ${HELD_TASK_SQL} and worker_id = $2 and lock_token = $3 and generation = $4
        returning *`,
    values: [p.taskId, p.workerId, p.lockToken, p.generation, `BPMN error ${p.errorCode}`, p.errorMessage],
  });
  return rows[0] ? { ok: true, task: rows[0] } : { ok: false, reason: await explainMiss(db, p, 'bpmn-error') };
}

/** A BPMN error an error boundary caught ends the task as done, not failed: no incident holds it. */
export async function markTaskCaught(db: Queryable, taskId: string): Promise<void> {
  await db.query({
    name: 'mark_task_caught',
    text: `update external_tasks set state = 'done' where id = $1 and state = 'failed'`,
    values: [taskId],
  });
}

/** Extends the holder's lease from now; the database clock decides. */
export async function extendLock(db: Queryable, p: LockHolder & { lockDurationMs: number }): Promise<GuardedTaskResult> {
  const { rows } = await db.query<ExternalTaskRow>({
    name: 'extend_lock',
    text: `update external_tasks set lock_expires_at = now() + $4::int * interval '1 millisecond'
            where id = $1 and ${HELD_TASK_SQL} and worker_id = $2 and lock_token = $3
        returning *`,
    values: [p.taskId, p.workerId, p.lockToken, p.lockDurationMs],
  });
  return rows[0] ? { ok: true, task: rows[0] } : { ok: false, reason: await explainMiss(db, p) };
}

/** Gives the task back without using a retry; it is fetchable again at once. */
export async function unlockTask(db: Queryable, p: LockHolder): Promise<GuardedTaskResult> {
  const { rows } = await db.query<ExternalTaskRow>({
    name: 'unlock_task',
    text: `with u as (
             update external_tasks set state = 'ready', worker_id = null, lock_token = null, lock_expires_at = null, retry_at = now()
              where id = $1 and ${HELD_TASK_SQL} and worker_id = $2 and lock_token = $3
          returning *),
           ev as (insert into events (seq, instance_id, generation, kind, step_id, task_id, attempt, data)
                  select baton_event_seq(instance_id), instance_id, generation, 'task:unlocked', step_id, id, attempt, jsonb_build_object('workerId', $2::text) from u)
           select u.* from u`,
    values: [p.taskId, p.workerId, p.lockToken],
  });
  if (rows[0]) notifyAfterCommit(db, { topics: [rows[0].topic], counts: [1] });
  return rows[0] ? { ok: true, task: rows[0] } : { ok: false, reason: await explainMiss(db, p) };
}

/**
 * Returns expired leases to ready (any number of sweepers converge), counting each
 * expiry; a lease whose task used up `retries + allowance` expiries is left for
 * exhaustExpiredLease (findExhaustedLeases). Answers how many went back to ready.
 */
export async function expireLocks(db: Queryable, limit: number, allowance: number): Promise<number> {
  const { rows } = await db.query<{ id: string; topic: string }>({
    name: 'expire_locks',
    text: `with expired as (
             select id, worker_id from external_tasks
              where state = 'locked' and lock_expires_at <= now() and lease_expiries + 1 <= retries + $2
              order by lock_expires_at limit $1
              for update skip locked),
           u as (
             update external_tasks t set state = 'ready', worker_id = null, lock_token = null, lock_expires_at = null, retry_at = now(),
                                         lease_expiries = t.lease_expiries + 1
               from expired where t.id = expired.id
           returning t.*, expired.worker_id as previous_worker),
           ev as (insert into events (seq, instance_id, generation, kind, step_id, task_id, attempt, data)
                  select baton_event_seq(instance_id), instance_id, generation, 'task:lock_expired', step_id, id, attempt,
                         jsonb_build_object('workerId', previous_worker, 'leaseExpiries', lease_expiries) from u order by instance_id)
           select u.id, u.topic from u`,
    values: [limit, allowance],
  });
  notifyAfterCommit(db, readyTaskNotices(rows.map((r) => r.topic)));
  return rows.length;
}

/** Expired leases whose next expiry would pass `retries + allowance`: candidates for exhaustExpiredLease. */
export async function findExhaustedLeases(db: Queryable, limit: number, allowance: number): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>({
    name: 'find_exhausted_leases',
    text: `select id from external_tasks
            where state = 'locked' and lock_expires_at <= now() and lease_expiries + 1 > retries + $2
            order by lock_expires_at limit $1`,
    values: [limit, allowance],
  });
  return rows.map((r) => r.id);
}

/**
 * Ends a task whose lease expired once too often, like a failure with no retries left
 * (the caller holds the instance lock and raises the incident or starts the saga).
 * Guarded: still locked, still expired, still over the budget, same generation.
 */
export async function failExpiredLease(
  db: Queryable,
  p: { taskId: string; generation: number; allowance: number },
): Promise<(ExternalTaskRow & { lease_expiries: number; previous_worker: string | null }) | undefined> {
  const { rows } = await db.query<ExternalTaskRow & { lease_expiries: number; previous_worker: string | null }>({
    name: 'fail_expired_lease',
    text: `with old as (select id, worker_id from external_tasks where id = $1),
           u as (
             update external_tasks t
                set state = 'failed', lease_expiries = t.lease_expiries + 1, ended_at = now(), lock_expires_at = null,
                    retries_left = 0, error_message = 'The lease expired ' || (t.lease_expiries + 1) || ' times without a result'
               from old
              where t.id = old.id and t.${HELD_TASK_SQL} and t.lock_expires_at <= now() and t.lease_expiries + 1 > t.retries + $3 and t.generation = $2
          returning t.*, old.worker_id as previous_worker),
           ev as (insert into events (seq, instance_id, generation, kind, step_id, task_id, attempt, data)
                  select baton_event_seq(instance_id), instance_id, generation, 'task:lock_expired', step_id, id, attempt,
                         jsonb_build_object('workerId', previous_worker, 'leaseExpiries', lease_expiries, 'exhausted', true) from u)
           select * from u`,
    values: [p.taskId, p.generation, p.allowance],
  });
  return rows[0];
}

export interface LateResult extends LockHolder {
  kind: 'complete' | 'failure' | 'bpmn-error' | 'extend-lock' | 'unlock';
  payloadBytes: number;
}

/** Keeps a result from a worker that no longer holds the lock, for reconciliation. */
export async function recordLateResult(db: Queryable, r: LateResult): Promise<void> {
  await db.query({
    name: 'record_late_result',
    // KEY SHARE on the instance: retention may be deleting it (an ended instance), and events
    // have no foreign key (migration 0014); a row deleted meanwhile records nothing.
    text: `insert into events (seq, instance_id, generation, kind, step_id, task_id, attempt, data)
           select baton_event_seq(t.instance_id), t.instance_id, t.generation, 'task:late_result', t.step_id, t.id, t.attempt,
                  jsonb_build_object('workerId', $2::text, 'call', $3::text, 'payloadBytes', $4::int, 'taskState', t.state)
             from external_tasks t join instances i on i.id = t.instance_id
            where t.id = $1
              for key share of i`,
    values: [r.taskId, r.workerId, r.kind, r.payloadBytes],
  });
}

/**
 * Why a guarded task statement matched nothing. A call that repeats the one the
 * same holder already applied (same worker, token and kind of result) is a no-op;
 * anything else lost the lock.
 */
async function explainMiss(db: Queryable, p: LockHolder, call?: TaskResultCall): Promise<TaskMiss> {
  const { rows } = await db.query<Pick<ExternalTaskRow, 'worker_id' | 'lock_token' | 'last_result'>>({
    name: 'explain_task_miss',
    text: 'select worker_id, lock_token, last_result from external_tasks where id = $1',
    values: [p.taskId],
  });
  const row = rows[0];
  if (!row) return 'not_found';
  const repeat = call !== undefined && row.last_result === call && row.worker_id === p.workerId && row.lock_token === p.lockToken;
  return repeat ? 'already_applied' : 'lock_lost';
}

export async function findTask(db: Queryable, taskId: string): Promise<ExternalTaskRow | undefined> {
  const { rows } = await db.query<ExternalTaskRow>('select * from external_tasks where id = $1', [taskId]);
  return rows[0];
}
