// Camunda 7's history of activity instances and variables, read from Baton's own rows: a step
// row is an activity instance (its last pass, for a step inside a loop), an instance's current
// variables are its variable instances. Filtered, sorted by a fixed set of keys, paged by offset.
import { isUuid } from '../../shared/uuid.ts';
import type { Queryable } from '../../store/db.ts';
import { clauses } from './process-queries.ts';
import { BPMN_STEP_SQL } from './statistics.ts';
import type { CamundaType } from './variables.ts';

export interface CamundaActivityInstanceRow {
  id: string;
  instance_id: string;
  step_id: string;
  status: string;
  activated_at: Date;
  ended_at: Date | null;
  definition_id: string;
  definition_key: string;
  activity_name: string | null;
  activity_type: string;
  /** the enclosing subprocess step, null at process level */
  scope: string | null;
  /** an open user task (its subscription), while it waits */
  user_task_id: string | null;
  assignee: string | null;
  called_instance_id: string | null;
  complete_scope: boolean;
}

export interface CamundaActivityInstanceQuery {
  activityInstanceId?: string;
  processInstanceId?: string;
  processDefinitionId?: string;
  executionId?: string;
  activityId?: string;
  activityName?: string;
  activityType?: string;
  taskAssignee?: string;
  finished?: boolean;
  unfinished?: boolean;
  canceled?: boolean;
  completeScope?: boolean;
  startedBefore?: Date;
  startedAfter?: Date;
  finishedBefore?: Date;
  finishedAfter?: Date;
  sorting: { sortBy: ActivityInstanceSort; sortOrder: 'asc' | 'desc' }[];
  firstResult: number;
  maxResults: number;
}

/**
 * Camunda's activity instance id: `<activityId>:<taskId>` for a service task (as the external task
 * API names it), `<activityId>:<processInstanceId>` for any other step (a step row is unique per
 * instance).
 */
const ACTIVITY_INSTANCE_ID_SQL = `(s.step_id || ':' || coalesce(t.id, s.instance_id)::text)`;

/** The instance an activity instance id's uuid names: the instance of that task, or the instance itself. */
const BY_TAIL_INSTANCE_SQL = `s.instance_id = (select coalesce((select x.instance_id from external_tasks x where x.id = g.u), g.u)
                                from (select ?::uuid as u) g)`;

export const ACTIVITY_INSTANCE_SORT_SQL = {
  activityInstanceId: ACTIVITY_INSTANCE_ID_SQL,
  instanceId: 's.instance_id',
  executionId: 's.instance_id',
  activityId: 's.step_id',
  activityName: "p.step->>'name'",
  activityType: 'k.activity_type',
  startTime: 's.activated_at',
  endTime: 's.ended_at',
  duration: '(s.ended_at - s.activated_at)',
  definitionId: 'i.definition_id',
} as const;
export type ActivityInstanceSort = keyof typeof ACTIVITY_INSTANCE_SORT_SQL;

/**
 * Camunda's activity type of a plan step (ActivityTypes). The plan keeps Baton's kinds, so some
 * answers are coarser than Camunda's: send, business rule and message throw events run by a worker
 * are `serviceTask`; manual tasks, none and link throw events are `task`.
 */
const ACTIVITY_TYPE_SQL = `case p.step->>'kind'
    when 'startEvent' then case p.step#>>'{wait,trigger}'
      when 'timer' then 'startTimerEvent' when 'message' then 'messageStartEvent' when 'signal' then 'signalStartEvent'
      else 'startEvent' end
    when 'eventSubProcessStart' then case p.step#>>'{wait,trigger}'
      when 'timer' then 'startTimerEvent' when 'message' then 'messageStartEvent' when 'signal' then 'signalStartEvent'
      when 'conditional' then 'conditionalStartEvent' when 'error' then 'errorStartEvent'
      when 'escalation' then 'escalationStartEvent' else 'startEvent' end
    when 'endEvent' then 'noneEndEvent'
    when 'passThrough' then 'task'
    when 'catchEvent' then case
      when p.step->>'elementType' = 'bpmn:UserTask' then 'userTask'
      when p.step->>'elementType' = 'bpmn:ReceiveTask' then 'receiveTask'
      else case p.step#>>'{wait,trigger}'
        when 'timer' then 'intermediateTimer' when 'message' then 'intermediateMessageCatch'
        when 'signal' then 'intermediateSignalCatch' when 'conditional' then 'intermediateConditional'
        else 'intermediateCatchEvent' end end
    when 'boundaryEvent' then case p.step#>>'{wait,trigger}'
      when 'timer' then 'boundaryTimer' when 'message' then 'boundaryMessage' when 'signal' then 'boundarySignal'
      when 'error' then 'boundaryError' when 'escalation' then 'boundaryEscalation'
      when 'compensation' then 'compensationBoundaryCatch' when 'conditional' then 'boundaryConditional'
      else 'boundaryEvent' end
    when 'signalThrow' then case when jsonb_array_length(p.step->'outgoing') = 0
      then 'signalEndEvent' else 'intermediateSignalThrow' end
    when 'escalationThrow' then case when jsonb_array_length(p.step->'outgoing') = 0
      then 'escalationEndEvent' else 'intermediateEscalationThrowEvent' end
    when 'compensationThrow' then case when jsonb_array_length(p.step->'outgoing') = 0
      then 'compensationEndEvent' else 'intermediateCompensationThrowEvent' end
    when 'eventSubProcess' then 'subProcess'
    else p.step->>'kind' end`;

// A step that ended its path (no outgoing flow) completed its scope, as Camunda's end events do.
const COMPLETE_SCOPE_SQL = `(s.status = 'completed' and jsonb_array_length(coalesce(p.step->'outgoing', '[]'::jsonb)) = 0
      and p.step->>'kind' not in ('boundaryEvent', 'eventSubProcessStart') and p.step->'compensationHandler' is null)`;

// Each row finds its plan step by reading its definition's steps (tens in a plan, read from the
// row's jsonb); a list or count without an instance filter reads every step row.
// Skipped steps (dead paths) never ran: Camunda has no activity instance for them. A step id with
// a colon (`loop:<head>`, `listener:<element>:…`) is Baton's own: BPMN ids are NCNames, colon-free.
const ACTIVITY_FROM_SQL = `from steps s
  join instances i on i.id = s.instance_id
  join definitions d on d.id = i.definition_id
  cross join lateral (select e as step from jsonb_array_elements(d.plan->'steps') e where e->>'id' = s.step_id limit 1) p
  cross join lateral (select ${ACTIVITY_TYPE_SQL} as activity_type) k
  left join lateral (select t.id from external_tasks t
                      where t.instance_id = s.instance_id and t.step_id = s.step_id and t.generation = s.generation
                      order by t.created_at desc, t.id limit 1) t on true
  left join lateral (select u.id, u.assignee from subscriptions u
                      where u.instance_id = s.instance_id and u.step_id = s.step_id and u.kind = 'user'
                      order by u.created_at desc limit 1) u on true`;

// A boundary event or an event subprocess's start is an activity instance once it fired (its step
// completed); while it waits on its host or scope it is a subscription, as in Camunda.
const ACTIVITY_BASE_SQL = `s.status <> 'skipped' and ${BPMN_STEP_SQL}
  and (p.step->>'kind' not in ('boundaryEvent', 'eventSubProcessStart') or s.status = 'completed')`;

function activityWhere(q: CamundaActivityInstanceQuery) {
  const w = clauses(ACTIVITY_BASE_SQL);
  const addId = (column: string, id: string) => (isUuid(id) ? w.add(`${column} = ?::uuid`, id) : w.raw('false'));
  if (q.activityInstanceId !== undefined) {
    // The id ends in a task id or an instance id: narrowing to that instance first finds the row by key.
    const tail = q.activityInstanceId.slice(-36);
    if (!isUuid(tail)) w.raw('false');
    else {
      w.add(BY_TAIL_INSTANCE_SQL, tail);
      w.add(`${ACTIVITY_INSTANCE_ID_SQL} = ?`, q.activityInstanceId);
    }
  }
  if (q.processInstanceId !== undefined) addId('s.instance_id', q.processInstanceId);
  if (q.executionId !== undefined) addId('s.instance_id', q.executionId);
  if (q.processDefinitionId !== undefined) addId('i.definition_id', q.processDefinitionId);
  if (q.activityId !== undefined) w.add('s.step_id = ?', q.activityId);
  if (q.activityName !== undefined) w.add("p.step->>'name' = ?", q.activityName);
  if (q.activityType !== undefined) w.add('k.activity_type = ?', q.activityType);
  if (q.taskAssignee !== undefined) w.add('u.assignee = ?', q.taskAssignee);
  if (q.finished) w.raw(`s.status not in ('active', 'incident')`);
  if (q.unfinished) w.raw(`s.status in ('active', 'incident')`);
  if (q.canceled) w.raw(`s.status = 'canceled'`);
  if (q.completeScope) w.raw(COMPLETE_SCOPE_SQL);
  if (q.startedBefore !== undefined) w.add('s.activated_at < ?', q.startedBefore);
  if (q.startedAfter !== undefined) w.add('s.activated_at > ?', q.startedAfter);
  if (q.finishedBefore !== undefined) w.add(`s.status not in ('active', 'incident') and s.ended_at < ?`, q.finishedBefore);
  if (q.finishedAfter !== undefined) w.add(`s.status not in ('active', 'incident') and s.ended_at > ?`, q.finishedAfter);
  return w;
}

const ACTIVITY_COLUMNS_SQL = `${ACTIVITY_INSTANCE_ID_SQL} as id, s.instance_id, s.step_id, s.status, s.activated_at,
       case when s.status in ('active', 'incident') then null else s.ended_at end as ended_at,
       i.definition_id, i.definition_key, p.step->>'name' as activity_name, k.activity_type, p.step->>'scope' as scope,
       u.id as user_task_id, u.assignee,
       (select c.id from instances c where c.parent_instance_id = s.instance_id and c.parent_step_id = s.step_id
         order by c.created_at desc limit 1) as called_instance_id,
       ${COMPLETE_SCOPE_SQL} as complete_scope`;

export async function listCamundaActivityInstances(
  db: Queryable,
  q: CamundaActivityInstanceQuery,
): Promise<CamundaActivityInstanceRow[]> {
  const w = activityWhere(q);
  const orderSql = [
    ...q.sorting.map((s) => `${ACTIVITY_INSTANCE_SORT_SQL[s.sortBy]} ${s.sortOrder} nulls last`),
    's.activated_at',
    's.instance_id',
    's.step_id',
  ].join(', ');
  const { rows } = await db.query<CamundaActivityInstanceRow>(
    `select ${ACTIVITY_COLUMNS_SQL} ${ACTIVITY_FROM_SQL} where ${w.sql}
      order by ${orderSql} offset $${w.values.length + 1} limit $${w.values.length + 2}`,
    [...w.values, q.firstResult, q.maxResults],
  );
  return rows;
}

export async function countCamundaActivityInstances(db: Queryable, q: CamundaActivityInstanceQuery): Promise<number> {
  const w = activityWhere(q);
  const { rows } = await db.query<{ count: number }>(
    `select count(*)::int as count ${ACTIVITY_FROM_SQL} where ${w.sql}`,
    w.values,
  );
  return rows[0]?.count ?? 0;
}

export interface CamundaVariableInstanceRow {
  instance_id: string;
  name: string;
  value: unknown;
  definition_id: string;
  definition_key: string;
  /** the Camunda type row still matching the value, if a Camunda client wrote it */
  type: CamundaType | null;
  value_info: Record<string, unknown> | null;
  /** Bytes contents (File contents are served by the /data routes) */
  content: Buffer | null;
  written_at: Date | null;
  created_at: Date;
}

export interface CamundaVariableInstanceQuery {
  variableName?: string;
  variableNameLike?: string;
  variableNameIn?: string[];
  processInstanceId?: string;
  processInstanceIdIn?: string[];
  executionIdIn?: string[];
  processDefinitionId?: string;
  processDefinitionKey?: string;
  sorting: { sortBy: VariableInstanceSort; sortOrder: 'asc' | 'desc' }[];
  firstResult: number;
  maxResults: number;
}

export const VARIABLE_INSTANCE_SORT_SQL = {
  instanceId: 'i.id',
  variableName: 'v.key',
} as const;
export type VariableInstanceSort = keyof typeof VARIABLE_INSTANCE_SORT_SQL;

// Each current variable of every instance, ended ones included until retention deletes them,
// with the type row that matches its value (as loadInstanceVariables reads them).
const VARIABLE_FROM_SQL = `from instances i
  cross join lateral jsonb_each(i.variables) v
  left join camunda_variables cv
    on cv.instance_id = i.id and cv.name = v.key and cv.value_md5 = md5(v.value::text)`;

function variableWhere(q: CamundaVariableInstanceQuery) {
  const w = clauses('true');
  const addId = (column: string, id: string) => (isUuid(id) ? w.add(`${column} = ?::uuid`, id) : w.raw('false'));
  if (q.variableName !== undefined) w.add('v.key = ?', q.variableName);
  if (q.variableNameLike !== undefined) w.add('v.key like ?', q.variableNameLike);
  if (q.variableNameIn !== undefined) w.add('v.key = any(?::text[])', q.variableNameIn);
  if (q.processInstanceId !== undefined) addId('i.id', q.processInstanceId);
  if (q.processInstanceIdIn !== undefined) w.add('i.id = any(?::uuid[])', q.processInstanceIdIn.filter(isUuid));
  if (q.executionIdIn !== undefined) w.add('i.id = any(?::uuid[])', q.executionIdIn.filter(isUuid));
  if (q.processDefinitionId !== undefined) addId('i.definition_id', q.processDefinitionId);
  if (q.processDefinitionKey !== undefined) w.add('i.definition_key = ?', q.processDefinitionKey);
  return w;
}

export async function listCamundaVariableInstances(
  db: Queryable,
  q: CamundaVariableInstanceQuery,
): Promise<CamundaVariableInstanceRow[]> {
  const w = variableWhere(q);
  const orderSql = [
    ...q.sorting.map((s) => `${VARIABLE_INSTANCE_SORT_SQL[s.sortBy]} ${s.sortOrder}`),
    'i.created_at',
    'i.id',
    'v.key',
  ].join(', ');
  const { rows } = await db.query<CamundaVariableInstanceRow>(
    `select i.id as instance_id, v.key as name, v.value, i.definition_id, i.definition_key,
            cv.type, cv.value_info, case when cv.type = 'Bytes' then cv.content end as content, cv.written_at, i.created_at
       ${VARIABLE_FROM_SQL} where ${w.sql}
      order by ${orderSql} offset $${w.values.length + 1} limit $${w.values.length + 2}`,
    [...w.values, q.firstResult, q.maxResults],
  );
  return rows;
}

export async function countCamundaVariableInstances(db: Queryable, q: CamundaVariableInstanceQuery): Promise<number> {
  const w = variableWhere(q);
  const { rows } = await db.query<{ count: number }>(
    `select count(*)::int as count ${VARIABLE_FROM_SQL} where ${w.sql}`,
    w.values,
  );
  return rows[0]?.count ?? 0;
}
