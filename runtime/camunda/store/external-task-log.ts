// Camunda 7's external task log, read from Baton's rows: a creation entry per task row, a failure
// or success entry per task:failed or task:completed event, and a deletion entry per BPMN error
// (the task ends with its activity, as in Camunda) and per canceled task.
import { isUuid } from '../../shared/uuid.ts';
import type { Queryable } from '../../store/db.ts';
import { clauses } from './process-queries.ts';

export const ExternalTaskLogKind = {
  /** the task was created (its row) */
  creation: 'creation',
  /** a worker reported a failure (task:failed) */
  failure: 'failure',
  /** a worker completed it (task:completed) */
  success: 'success',
  /** it ended without completing: a BPMN error, or its instance canceled or terminated */
  deletion: 'deletion',
} as const;
export type ExternalTaskLogKind = (typeof ExternalTaskLogKind)[keyof typeof ExternalTaskLogKind];

export interface CamundaExternalTaskLogRow {
  id: string;
  kind: ExternalTaskLogKind;
  at: Date;
  worker_id: string | null;
  error_message: string | null;
  /** Camunda's retries after a failure (0: an incident holds the task); null on other entries */
  retries: number | null;
  task_id: string;
  topic: string;
  priority: number;
  step_id: string;
  instance_id: string;
  definition_id: string;
  definition_key: string;
}

export interface CamundaExternalTaskLogQuery {
  logId?: string;
  externalTaskId?: string;
  topicName?: string;
  workerId?: string;
  errorMessage?: string;
  activityIdIn?: string[];
  activityInstanceIdIn?: string[];
  executionIdIn?: string[];
  processInstanceId?: string;
  processDefinitionId?: string;
  processDefinitionKey?: string;
  priorityLowerThanOrEquals?: number;
  priorityHigherThanOrEquals?: number;
  /** the kinds asked for (creationLog, failureLog, …); absent: every kind */
  kinds?: ExternalTaskLogKind[];
  sorting: { sortBy: ExternalTaskLogSort; sortOrder: 'asc' | 'desc' }[];
  firstResult: number;
  maxResults: number;
}

/** The activity instance id the external task API answers: `<activityId>:<taskId>`. */
const ACTIVITY_INSTANCE_ID_SQL = `(t.step_id || ':' || t.id::text)`;

export const EXTERNAL_TASK_LOG_SORT_SQL = {
  timestamp: 'l.at',
  externalTaskId: 't.id',
  retries: 'l.retries',
  priority: 't.priority',
  topicName: 't.topic',
  workerId: 'l.worker_id',
  activityId: 't.step_id',
  activityInstanceId: ACTIVITY_INSTANCE_ID_SQL,
  executionId: 't.instance_id',
  processInstanceId: 't.instance_id',
  processDefinitionId: 'i.definition_id',
  processDefinitionKey: 'i.definition_key',
} as const;
export type ExternalTaskLogSort = keyof typeof EXTERNAL_TASK_LOG_SORT_SQL;

// Camunda's retries of a failure entry: 0 when it raised an incident (no retry due), else the
// attempts still allowed, as camundaRetries reads a task row. The instance filters name
// l.instance_id, which PostgreSQL pushes into each branch (events and task rows by instance);
// without one, a list reads every task row and task event.
const LOG_FROM_SQL = `from (
    select c.id::text || ':created' as id, c.instance_id, c.id as task_id, 'creation' as kind, c.created_at as at,
           null::text as worker_id, null::text as error_message, null::int as retries
      from external_tasks c
    union all
    select e.task_id::text || ':' || e.seq::text, e.instance_id, e.task_id,
           case e.kind when 'task:failed' then 'failure' when 'task:completed' then 'success' else 'deletion' end,
           e.at, e.data->>'workerId',
           case when e.kind = 'task:failed' then e.data->>'errorMessage' end,
           case when e.kind = 'task:failed' then
             case when e.data->>'retryAt' is null then 0 else (e.data->>'retriesLeft')::int + 1 end end
      from events e
     where e.kind in ('task:failed', 'task:completed', 'task:bpmn_error') and e.task_id is not null
    union all
    select c.id::text || ':deleted', c.instance_id, c.id, 'deletion', c.ended_at, null, null, null
      from external_tasks c where c.state = 'canceled' and c.ended_at is not null
  ) l
  join external_tasks t on t.id = l.task_id
  join instances i on i.id = t.instance_id`;

function logWhere(q: CamundaExternalTaskLogQuery) {
  const w = clauses('true');
  const addId = (column: string, id: string) => (isUuid(id) ? w.add(`${column} = ?::uuid`, id) : w.raw('false'));
  if (q.logId !== undefined) w.add('l.id = ?', q.logId);
  if (q.externalTaskId !== undefined) addId('t.id', q.externalTaskId);
  if (q.topicName !== undefined) w.add('t.topic = ?', q.topicName);
  if (q.workerId !== undefined) w.add('l.worker_id = ?', q.workerId);
  if (q.errorMessage !== undefined) w.add('l.error_message = ?', q.errorMessage);
  if (q.activityIdIn !== undefined) w.add('t.step_id = any(?::text[])', q.activityIdIn);
  if (q.activityInstanceIdIn !== undefined) w.add(`${ACTIVITY_INSTANCE_ID_SQL} = any(?::text[])`, q.activityInstanceIdIn);
  if (q.executionIdIn !== undefined) w.add('l.instance_id = any(?::uuid[])', q.executionIdIn.filter(isUuid));
  if (q.processInstanceId !== undefined) addId('l.instance_id', q.processInstanceId);
  if (q.processDefinitionId !== undefined) addId('i.definition_id', q.processDefinitionId);
  if (q.processDefinitionKey !== undefined) w.add('i.definition_key = ?', q.processDefinitionKey);
  if (q.priorityLowerThanOrEquals !== undefined) w.add('t.priority <= ?', q.priorityLowerThanOrEquals);
  if (q.priorityHigherThanOrEquals !== undefined) w.add('t.priority >= ?', q.priorityHigherThanOrEquals);
  if (q.kinds !== undefined) w.add('l.kind = any(?::text[])', q.kinds);
  return w;
}

export async function listCamundaExternalTaskLog(
  db: Queryable,
  q: CamundaExternalTaskLogQuery,
): Promise<CamundaExternalTaskLogRow[]> {
  const w = logWhere(q);
  const orderSql = [
    ...q.sorting.map((s) => `${EXTERNAL_TASK_LOG_SORT_SQL[s.sortBy]} ${s.sortOrder} nulls last`),
    'l.at',
    'l.id',
  ].join(', ');
  const { rows } = await db.query<CamundaExternalTaskLogRow>(
    `select l.id, l.kind, l.at, l.worker_id, l.error_message, l.retries, t.id as task_id, t.topic, t.priority, t.step_id,
            t.instance_id, i.definition_id, i.definition_key
       ${LOG_FROM_SQL} where ${w.sql}
      order by ${orderSql} offset $${w.values.length + 1} limit $${w.values.length + 2}`,
    [...w.values, q.firstResult, q.maxResults],
  );
  return rows;
}

export async function countCamundaExternalTaskLog(db: Queryable, q: CamundaExternalTaskLogQuery): Promise<number> {
  const w = logWhere(q);
  const { rows } = await db.query<{ count: number }>(`select count(*)::int as count ${LOG_FROM_SQL} where ${w.sql}`, w.values);
  return rows[0]?.count ?? 0;
}
