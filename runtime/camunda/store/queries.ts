// Read models of the Camunda API: external tasks as Camunda lists them (open ones only:
// Camunda deletes a task when it completes).
import { isUuid } from '../../shared/uuid.ts';
import type { Queryable } from '../../store/db.ts';
import { OPEN_TASK_SQL } from '../../store/open-states.ts';
import type { ExternalTaskRow } from '../../store/tasks.ts';

export interface CamundaTaskRow extends ExternalTaskRow {
  business_key: string | null;
  definition_id: string;
  definition_key: string;
}

export interface CamundaTaskQuery {
  externalTaskId?: string;
  topicName?: string;
  workerId?: string;
  locked?: boolean;
  notLocked?: boolean;
  withRetriesLeft?: boolean;
  noRetriesLeft?: boolean;
  processInstanceId?: string;
  processDefinitionId?: string;
  processDefinitionKey?: string;
  activityId?: string;
  priorityHigherThanOrEquals?: number;
  priorityLowerThanOrEquals?: number;
  firstResult: number;
  maxResults: number;
}

function where(q: CamundaTaskQuery): { sql: string; values: unknown[] } {
  const values: unknown[] = [];
  const clauses = ['true'];
  const add = (sql: string, value: unknown) => {
    values.push(value);
    clauses.push(sql.replace('?', `$${values.length}`));
  };
  // Ids compare as uuids, so that the primary key and the instance's task index serve them
  // (compared as text, a look-up by id read every task ever created); other text names no row.
  const addId = (column: string, id: string) => (isUuid(id) ? add(`${column} = ?::uuid`, id) : clauses.push('false'));
  if (q.externalTaskId !== undefined) addId('t.id', q.externalTaskId);
  if (q.topicName !== undefined) add('t.topic = ?', q.topicName);
  if (q.workerId !== undefined) add(`t.state = 'locked' and t.worker_id = ?`, q.workerId);
  if (q.locked) clauses.push(`t.state = 'locked'`);
  if (q.notLocked) clauses.push(`t.state <> 'locked'`);
  if (q.withRetriesLeft) clauses.push(`t.state <> 'failed'`);
  if (q.noRetriesLeft) clauses.push(`t.state = 'failed'`);
  if (q.processInstanceId !== undefined) addId('t.instance_id', q.processInstanceId);
  if (q.processDefinitionId !== undefined) addId('i.definition_id', q.processDefinitionId);
  if (q.processDefinitionKey !== undefined) add('i.definition_key = ?', q.processDefinitionKey);
  if (q.activityId !== undefined) add('t.step_id = ?', q.activityId);
  if (q.priorityHigherThanOrEquals !== undefined) add('t.priority >= ?', q.priorityHigherThanOrEquals);
  if (q.priorityLowerThanOrEquals !== undefined) add('t.priority <= ?', q.priorityLowerThanOrEquals);
  return { sql: clauses.join(' and '), values };
}

// The open tasks. Without a task or instance id: one branch per open state, each matching
// the predicate of a partial index (external_tasks_ready_age_idx, _lock_expiry_idx,
// _failed_idx, _suspended_idx), so that a list or a count reads the open tasks, not the history; `state in
// ('ready', 'locked', 'failed', 'suspended')` implies none of them and read every task ever created (a
// count took 115 ms with a million done tasks). With an id: one look-up by the primary key or
// the instance's index, its open states named as open-states.ts does, so that no partial index
// can draw it. A suspended instance's tasks are listed too (`suspended: true`), through
// external_tasks_suspended_idx.
const OPEN_STATES = ['ready', 'locked', 'failed', 'suspended'];
function openTasksSql(q: CamundaTaskQuery, columns: string, whereSql: string): string {
  const from = 'from external_tasks t join instances i on i.id = t.instance_id';
  if (q.externalTaskId !== undefined || q.processInstanceId !== undefined)
    return `select ${columns} ${from} where t.${OPEN_TASK_SQL} and ${whereSql}`;
  return OPEN_STATES.map((state) => `select ${columns} ${from} where t.state = '${state}' and ${whereSql}`).join(
    '\n      union all ',
  );
}

export async function listCamundaTasks(db: Queryable, q: CamundaTaskQuery): Promise<CamundaTaskRow[]> {
  const w = where(q);
  const { rows } = await db.query<CamundaTaskRow>(
    `select * from (${openTasksSql(q, 't.*, i.business_key, i.definition_id, i.definition_key', w.sql)}) x
      order by x.created_at, x.id offset $${w.values.length + 1} limit $${w.values.length + 2}`,
    [...w.values, q.firstResult, q.maxResults],
  );
  return rows;
}

export async function countCamundaTasks(db: Queryable, q: CamundaTaskQuery): Promise<number> {
  const w = where(q);
  const { rows } = await db.query<{ count: number }>(
    `select count(*)::int as count from (${openTasksSql(q, 't.id', w.sql)}) x`,
    w.values,
  );
  return rows[0]?.count ?? 0;
}

/** An open task by id (done and canceled ones are gone for Camunda). */
export async function findCamundaTask(db: Queryable, taskId: string): Promise<CamundaTaskRow | undefined> {
  const rows = await listCamundaTasks(db, { externalTaskId: taskId, firstResult: 0, maxResults: 1 });
  return rows[0];
}
