// User tasks as Camunda 7's task resource queries them: open tasks only (Camunda keeps ended
// ones in its history service, not here), filtered, sorted and paged by offset.
import { isUuid } from '../../shared/uuid.ts';
import type { Queryable } from '../../store/db.ts';
import type { UserTaskRow } from '../../store/user-tasks.ts';

export interface CamundaUserTaskQuery {
  taskId?: string;
  processInstanceId?: string;
  processInstanceBusinessKey?: string;
  processDefinitionId?: string;
  processDefinitionKey?: string;
  taskDefinitionKey?: string;
  name?: string;
  /** SQL like pattern: % any run, _ one character */
  nameLike?: string;
  assignee?: string;
  assigneeLike?: string;
  assigned?: boolean;
  unassigned?: boolean;
  /** a candidate user, or a member of one of `candidateUserGroups` */
  candidateUser?: string;
  candidateUserGroups?: string[];
  candidateGroups?: string[];
  /** candidate queries leave out tasks someone holds unless this is set */
  includeAssignedTasks?: boolean;
  priority?: number;
  minPriority?: number;
  maxPriority?: number;
  dueBefore?: Date;
  dueAfter?: Date;
  followUpBefore?: Date;
  followUpAfter?: Date;
  createdBefore?: Date;
  createdAfter?: Date;
  /** true: the tasks of suspended instances; false (Camunda's `active`): the others */
  suspended?: boolean;
  sorting: { sortBy: CamundaTaskSort; sortOrder: 'asc' | 'desc' }[];
  firstResult: number;
  maxResults: number;
}

/** The sort keys Baton answers; the columns are fixed here, never taken from a request. */
export const TASK_SORT_SQL = {
  id: 's.id',
  name: "coalesce(s.user_task->>'name', s.step_id)",
  nameCaseInsensitive: "lower(coalesce(s.user_task->>'name', s.step_id))",
  assignee: 's.assignee',
  created: 's.created_at',
  dueDate: "(s.user_task->>'dueAt')::timestamptz",
  followUpDate: "(s.user_task->>'followUpAt')::timestamptz",
  priority: "(s.user_task->>'priority')::int",
  instanceId: 's.instance_id',
  executionId: 's.instance_id',
  processInstanceId: 's.instance_id',
} as const;
export type CamundaTaskSort = keyof typeof TASK_SORT_SQL;

function where(q: CamundaUserTaskQuery): { sql: string; values: unknown[] } {
  const values: unknown[] = [];
  const clauses = [`s.kind = 'user'`];
  // `?` marks a value; jsonb's ? operators are written as the functions they stand for.
  const add = (sql: string, ...vs: unknown[]) => {
    let text = sql;
    for (const v of vs) {
      values.push(v);
      text = text.replace('?', `$${values.length}`);
    }
    clauses.push(text);
  };
  // Ids compare as uuids so that an index serves them; other text names no task.
  const addId = (column: string, id: string) => (isUuid(id) ? add(`${column} = ?::uuid`, id) : clauses.push('false'));
  if (q.suspended === true) clauses.push('i.suspended_at is not null');
  if (q.suspended === false) clauses.push('i.suspended_at is null');
  if (q.taskId !== undefined) addId('s.id', q.taskId);
  if (q.processInstanceId !== undefined) addId('s.instance_id', q.processInstanceId);
  if (q.processDefinitionId !== undefined) addId('i.definition_id', q.processDefinitionId);
  if (q.processInstanceBusinessKey !== undefined) add('i.business_key = ?', q.processInstanceBusinessKey);
  if (q.processDefinitionKey !== undefined) add('i.definition_key = ?', q.processDefinitionKey);
  if (q.taskDefinitionKey !== undefined) add('s.step_id = ?', q.taskDefinitionKey);
  if (q.name !== undefined) add(`coalesce(s.user_task->>'name', s.step_id) = ?`, q.name);
  if (q.nameLike !== undefined) add(`coalesce(s.user_task->>'name', s.step_id) like ?`, q.nameLike);
  if (q.assignee !== undefined) add('s.assignee = ?', q.assignee);
  if (q.assigneeLike !== undefined) add('s.assignee like ?', q.assigneeLike);
  if (q.assigned) clauses.push('s.assignee is not null');
  if (q.unassigned) clauses.push('s.assignee is null');
  const candidate = q.candidateUser !== undefined || q.candidateGroups !== undefined;
  if (q.candidateUser !== undefined)
    add(
      `(jsonb_exists(s.user_task->'candidateUsers', ?) or jsonb_exists_any(s.user_task->'candidateGroups', ?::text[]))`,
      q.candidateUser,
      q.candidateUserGroups ?? [],
    );
  if (q.candidateGroups !== undefined) add(`jsonb_exists_any(s.user_task->'candidateGroups', ?::text[])`, q.candidateGroups);
  if (candidate && !q.includeAssignedTasks) clauses.push('s.assignee is null');
  if (q.priority !== undefined) add(`(s.user_task->>'priority')::int = ?`, q.priority);
  if (q.minPriority !== undefined) add(`(s.user_task->>'priority')::int >= ?`, q.minPriority);
  if (q.maxPriority !== undefined) add(`(s.user_task->>'priority')::int <= ?`, q.maxPriority);
  if (q.dueBefore !== undefined) add(`(s.user_task->>'dueAt')::timestamptz < ?`, q.dueBefore);
  if (q.dueAfter !== undefined) add(`(s.user_task->>'dueAt')::timestamptz > ?`, q.dueAfter);
  if (q.followUpBefore !== undefined) add(`(s.user_task->>'followUpAt')::timestamptz < ?`, q.followUpBefore);
  if (q.followUpAfter !== undefined) add(`(s.user_task->>'followUpAt')::timestamptz > ?`, q.followUpAfter);
  if (q.createdBefore !== undefined) add('s.created_at < ?', q.createdBefore);
  if (q.createdAfter !== undefined) add('s.created_at > ?', q.createdAfter);
  return { sql: clauses.join(' and '), values };
}

const COLUMNS_SQL = `s.id, s.instance_id, s.step_id, s.generation, s.scope_path, s.assignee, s.user_task, s.created_at, s.loop_index, s.local_variables,
       (extract(epoch from s.created_at) * 1000000)::bigint::text as created_us,
       i.definition_id, i.definition_key, i.business_key, i.suspended_at is not null as suspended`;
const FROM_SQL = 'from subscriptions s join instances i on i.id = s.instance_id';

function orderBy(q: CamundaUserTaskQuery): string {
  // Ties (and an unsorted query) fall back to creation order, so that pages do not overlap.
  const keys = q.sorting.map((s) => `${TASK_SORT_SQL[s.sortBy]} ${s.sortOrder === 'desc' ? 'desc' : 'asc'} nulls last`);
  return [...keys, 's.created_at asc', 's.id asc'].join(', ');
}

export async function listCamundaUserTasks(db: Queryable, q: CamundaUserTaskQuery): Promise<UserTaskRow[]> {
  const w = where(q);
  const orderSql = orderBy(q);
  const { rows } = await db.query<UserTaskRow>(
    `select ${COLUMNS_SQL} ${FROM_SQL} where ${w.sql}
      order by ${orderSql} offset $${w.values.length + 1} limit $${w.values.length + 2}`,
    [...w.values, q.firstResult, q.maxResults],
  );
  return rows;
}

export async function countCamundaUserTasks(db: Queryable, q: CamundaUserTaskQuery): Promise<number> {
  const w = where(q);
  const { rows } = await db.query<{ count: number }>(`select count(*)::int as count ${FROM_SQL} where ${w.sql}`, w.values);
  return rows[0]?.count ?? 0;
}
