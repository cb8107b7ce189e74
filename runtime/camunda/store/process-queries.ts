// Process definitions and running process instances as Camunda 7's REST API queries them:
// filtered, sorted by a fixed set of keys, paged by offset.
import { isUuid } from '../../shared/uuid.ts';
import type { Queryable } from '../../store/db.ts';

export interface CamundaDefinitionRow {
  id: string;
  key: string;
  version: number;
  name: string | null;
  version_tag: string | null;
  deployed_at: Date;
  deployment_id: string;
  resource_name: string;
}

export interface CamundaDefinitionQuery {
  processDefinitionId?: string;
  key?: string;
  keysIn?: string[];
  name?: string;
  nameLike?: string;
  version?: number;
  versionTag?: string;
  deploymentId?: string;
  resourceName?: string;
  resourceNameLike?: string;
  latestVersion?: boolean;
  /** Baton suspends no definition: `suspended` asks for none (and `active` for all) */
  suspended?: boolean;
  sorting: { sortBy: DefinitionSort; sortOrder: 'asc' | 'desc' }[];
  firstResult: number;
  maxResults: number;
}

/** Sort keys Baton answers; the columns are fixed here, never taken from a request. */
export const DEFINITION_SORT_SQL = {
  id: 'd.id',
  key: 'd.key',
  name: "d.plan->>'name'",
  version: 'd.version',
  versionTag: "d.plan->>'versionTag'",
  deployTime: 'd.deployed_at',
  deploymentId: 'd.deployment_id',
} as const;
export type DefinitionSort = keyof typeof DEFINITION_SORT_SQL;

export interface CamundaInstanceRow {
  id: string;
  definition_id: string;
  definition_key: string;
  business_key: string | null;
  status: 'running' | 'incident' | 'completed' | 'canceled';
  suspended_at: Date | null;
}

export interface CamundaInstanceQuery {
  processInstanceIds?: string[];
  businessKey?: string;
  businessKeyLike?: string;
  processDefinitionId?: string;
  processDefinitionKey?: string;
  processDefinitionKeyIn?: string[];
  withIncident?: boolean;
  /** true: the suspended instances; false (Camunda's `active`): the others */
  suspended?: boolean;
  sorting: { sortBy: InstanceSort; sortOrder: 'asc' | 'desc' }[];
  firstResult: number;
  maxResults: number;
}

export const INSTANCE_SORT_SQL = {
  instanceId: 'i.id',
  definitionKey: 'i.definition_key',
  definitionId: 'i.definition_id',
  businessKey: 'i.business_key',
} as const;
export type InstanceSort = keyof typeof INSTANCE_SORT_SQL;

/** A where clause of `?`-marked values, numbered as they are added. */
export function clauses(first: string) {
  const values: unknown[] = [];
  const parts = [first];
  return {
    values,
    add(sql: string, value: unknown) {
      values.push(value);
      parts.push(sql.replace('?', `$${values.length}`));
    },
    raw(sql: string) {
      parts.push(sql);
    },
    get sql() {
      return parts.join(' and ');
    },
  };
}

function definitionWhere(q: CamundaDefinitionQuery) {
  // The bodies of parallel multi-instance subprocesses are no processes of the file: Camunda lists none.
  const w = clauses("d.plan->'bodyOf' is null");
  if (q.suspended) w.raw('false');
  if (q.processDefinitionId !== undefined)
    if (isUuid(q.processDefinitionId)) w.add('d.id = ?::uuid', q.processDefinitionId);
    else w.raw('false');
  if (q.key !== undefined) w.add('d.key = ?', q.key);
  if (q.keysIn !== undefined) w.add('d.key = any(?::text[])', q.keysIn);
  if (q.name !== undefined) w.add("d.plan->>'name' = ?", q.name);
  if (q.nameLike !== undefined) w.add("d.plan->>'name' like ?", q.nameLike);
  if (q.version !== undefined) w.add('d.version = ?', q.version);
  if (q.versionTag !== undefined) w.add("d.plan->>'versionTag' = ?", q.versionTag);
  if (q.deploymentId !== undefined)
    if (isUuid(q.deploymentId)) w.add('d.deployment_id = ?::uuid', q.deploymentId);
    else w.raw('false');
  if (q.resourceName !== undefined) w.add('d.resource_name = ?', q.resourceName);
  if (q.resourceNameLike !== undefined) w.add('d.resource_name like ?', q.resourceNameLike);
  if (q.latestVersion) w.raw('d.version = (select max(l.version) from definitions l where l.key = d.key)');
  return w;
}

const DEFINITION_COLUMNS_SQL = `d.id, d.key, d.version, d.plan->>'name' as name, d.plan->>'versionTag' as version_tag, d.deployed_at,
  d.deployment_id, d.resource_name`;

export async function listCamundaDefinitions(db: Queryable, q: CamundaDefinitionQuery): Promise<CamundaDefinitionRow[]> {
  const w = definitionWhere(q);
  const orderSql = [...q.sorting.map((s) => `${DEFINITION_SORT_SQL[s.sortBy]} ${s.sortOrder}`), 'd.key', 'd.version'].join(', ');
  const { rows } = await db.query<CamundaDefinitionRow>(
    `select ${DEFINITION_COLUMNS_SQL} from definitions d where ${w.sql}
      order by ${orderSql} offset $${w.values.length + 1} limit $${w.values.length + 2}`,
    [...w.values, q.firstResult, q.maxResults],
  );
  return rows;
}

export async function countCamundaDefinitions(db: Queryable, q: CamundaDefinitionQuery): Promise<number> {
  const w = definitionWhere(q);
  const { rows } = await db.query<{ count: number }>(`select count(*)::int as count from definitions d where ${w.sql}`, w.values);
  return rows[0]?.count ?? 0;
}

// Camunda's runtime holds running instances only; an instance in an incident is still running.
function instanceWhere(q: CamundaInstanceQuery) {
  const w = clauses(`i.status in ('running', 'incident', 'compensating')`);
  if (q.suspended === true) w.raw('i.suspended_at is not null');
  if (q.suspended === false) w.raw('i.suspended_at is null');
  if (q.processInstanceIds !== undefined) w.add('i.id = any(?::uuid[])', q.processInstanceIds.filter(isUuid));
  if (q.businessKey !== undefined) w.add('i.business_key = ?', q.businessKey);
  if (q.businessKeyLike !== undefined) w.add('i.business_key like ?', q.businessKeyLike);
  if (q.processDefinitionId !== undefined)
    if (isUuid(q.processDefinitionId)) w.add('i.definition_id = ?::uuid', q.processDefinitionId);
    else w.raw('false');
  if (q.processDefinitionKey !== undefined) w.add('i.definition_key = ?', q.processDefinitionKey);
  if (q.processDefinitionKeyIn !== undefined) w.add('i.definition_key = any(?::text[])', q.processDefinitionKeyIn);
  if (q.withIncident) w.raw(`i.status = 'incident'`);
  return w;
}

export async function listCamundaInstances(db: Queryable, q: CamundaInstanceQuery): Promise<CamundaInstanceRow[]> {
  const w = instanceWhere(q);
  const orderSql = [...q.sorting.map((s) => `${INSTANCE_SORT_SQL[s.sortBy]} ${s.sortOrder}`), 'i.created_at', 'i.id'].join(', ');
  const { rows } = await db.query<CamundaInstanceRow>(
    `select i.id, i.definition_id, i.definition_key, i.business_key, i.status, i.suspended_at from instances i where ${w.sql}
      order by ${orderSql} offset $${w.values.length + 1} limit $${w.values.length + 2}`,
    [...w.values, q.firstResult, q.maxResults],
  );
  return rows;
}

export async function countCamundaInstances(db: Queryable, q: CamundaInstanceQuery): Promise<number> {
  const w = instanceWhere(q);
  const { rows } = await db.query<{ count: number }>(`select count(*)::int as count from instances i where ${w.sql}`, w.values);
  return rows[0]?.count ?? 0;
}

export interface CamundaIncidentRow {
  id: string;
  instance_id: string;
  step_id: string;
  task_id: string | null;
  kind: string;
  message: string;
  created_at: Date;
  definition_id: string;
  annotation: string | null;
  definition_key: string;
  status: 'open' | 'resolved';
  resolved_at: Date | null;
}

export interface CamundaIncidentQuery {
  incidentId?: string;
  /** Baton's kinds, as the caller's Camunda types were read */
  kinds?: string[];
  incidentMessage?: string;
  incidentMessageLike?: string;
  processInstanceId?: string;
  processDefinitionId?: string;
  processDefinitionKeyIn?: string[];
  activityId?: string;
  configuration?: string;
  /** the history's query: resolved incidents too, `open` or `resolved` only when set */
  history?: { open?: boolean; resolved?: boolean };
  sorting: { sortBy: IncidentSort; sortOrder: 'asc' | 'desc' }[];
  firstResult: number;
  maxResults: number;
}

export const INCIDENT_SORT_SQL = {
  incidentId: 'x.id',
  incidentMessage: 'x.message',
  incidentTimestamp: 'x.created_at',
  incidentType: 'x.kind',
  activityId: 'x.step_id',
  processInstanceId: 'x.instance_id',
  processDefinitionId: 'i.definition_id',
  configuration: 'x.task_id',
} as const;
export type IncidentSort = keyof typeof INCIDENT_SORT_SQL;

// Camunda's runtime lists open incidents; resolved ones belong to its history.
function incidentWhere(q: CamundaIncidentQuery) {
  const w = clauses(q.history ? 'true' : `x.status = 'open'`);
  if (q.history?.open) w.raw(`x.status = 'open'`);
  if (q.history?.resolved) w.raw(`x.status = 'resolved'`);
  const addId = (column: string, id: string) => (isUuid(id) ? w.add(`${column} = ?::uuid`, id) : w.raw('false'));
  if (q.incidentId !== undefined) addId('x.id', q.incidentId);
  if (q.kinds !== undefined) w.add('x.kind = any(?::text[])', q.kinds);
  if (q.incidentMessage !== undefined) w.add('x.message = ?', q.incidentMessage);
  if (q.incidentMessageLike !== undefined) w.add('x.message like ?', q.incidentMessageLike);
  if (q.processInstanceId !== undefined) addId('x.instance_id', q.processInstanceId);
  if (q.processDefinitionId !== undefined) addId('i.definition_id', q.processDefinitionId);
  if (q.processDefinitionKeyIn !== undefined) w.add('i.definition_key = any(?::text[])', q.processDefinitionKeyIn);
  if (q.activityId !== undefined) w.add('x.step_id = ?', q.activityId);
  if (q.configuration !== undefined) addId('x.task_id', q.configuration);
  return w;
}

const INCIDENTS_FROM_SQL = 'from incidents x join instances i on i.id = x.instance_id';

export async function listCamundaIncidents(db: Queryable, q: CamundaIncidentQuery): Promise<CamundaIncidentRow[]> {
  const w = incidentWhere(q);
  const orderSql = [...q.sorting.map((s) => `${INCIDENT_SORT_SQL[s.sortBy]} ${s.sortOrder}`), 'x.created_at', 'x.id'].join(', ');
  const { rows } = await db.query<CamundaIncidentRow>(
    `select x.id, x.instance_id, x.step_id, x.task_id, x.kind, x.message, x.created_at, i.definition_id, x.annotation,
            i.definition_key, x.status, x.resolved_at ${INCIDENTS_FROM_SQL}
      where ${w.sql} order by ${orderSql} offset $${w.values.length + 1} limit $${w.values.length + 2}`,
    [...w.values, q.firstResult, q.maxResults],
  );
  return rows;
}

export async function countCamundaIncidents(db: Queryable, q: CamundaIncidentQuery): Promise<number> {
  const w = incidentWhere(q);
  const { rows } = await db.query<{ count: number }>(
    `select count(*)::int as count ${INCIDENTS_FROM_SQL} where ${w.sql}`,
    w.values,
  );
  return rows[0]?.count ?? 0;
}

export interface CamundaHistoricInstanceRow {
  id: string;
  definition_id: string;
  definition_key: string;
  definition_version: number;
  definition_name: string | null;
  business_key: string | null;
  status: 'running' | 'incident' | 'completed' | 'canceled' | string;
  created_at: Date;
  ended_at: Date | null;
  parent_instance_id: string | null;
}

export interface CamundaHistoricInstanceQuery {
  processInstanceId?: string;
  processInstanceIds?: string[];
  businessKey?: string;
  businessKeyLike?: string;
  processDefinitionId?: string;
  processDefinitionKey?: string;
  processDefinitionKeyIn?: string[];
  finished?: boolean;
  unfinished?: boolean;
  withIncidents?: boolean;
  completed?: boolean;
  externallyTerminated?: boolean;
  startedBefore?: Date;
  startedAfter?: Date;
  finishedBefore?: Date;
  finishedAfter?: Date;
  superProcessInstanceId?: string;
  sorting: { sortBy: HistoricInstanceSort; sortOrder: 'asc' | 'desc' }[];
  firstResult: number;
  maxResults: number;
}

export const HISTORIC_INSTANCE_SORT_SQL = {
  instanceId: 'i.id',
  definitionId: 'i.definition_id',
  definitionKey: 'i.definition_key',
  definitionVersion: 'i.definition_version',
  businessKey: 'i.business_key',
  startTime: 'i.created_at',
  endTime: 'i.ended_at',
  duration: '(i.ended_at - i.created_at)',
} as const;
export type HistoricInstanceSort = keyof typeof HISTORIC_INSTANCE_SORT_SQL;

function historicInstanceWhere(q: CamundaHistoricInstanceQuery) {
  const w = clauses('true');
  const addId = (column: string, id: string) => (isUuid(id) ? w.add(`${column} = ?::uuid`, id) : w.raw('false'));
  if (q.processInstanceId !== undefined) addId('i.id', q.processInstanceId);
  if (q.processInstanceIds !== undefined) w.add('i.id = any(?::uuid[])', q.processInstanceIds.filter(isUuid));
  if (q.businessKey !== undefined) w.add('i.business_key = ?', q.businessKey);
  if (q.businessKeyLike !== undefined) w.add('i.business_key like ?', q.businessKeyLike);
  if (q.processDefinitionId !== undefined) addId('i.definition_id', q.processDefinitionId);
  if (q.processDefinitionKey !== undefined) w.add('i.definition_key = ?', q.processDefinitionKey);
  if (q.processDefinitionKeyIn !== undefined) w.add('i.definition_key = any(?::text[])', q.processDefinitionKeyIn);
  if (q.finished) w.raw('i.ended_at is not null');
  if (q.unfinished) w.raw('i.ended_at is null');
  if (q.withIncidents) w.raw('exists (select 1 from incidents x where x.instance_id = i.id)');
  if (q.completed) w.raw(`i.status = 'completed'`);
  if (q.externallyTerminated) w.raw(`i.status = 'canceled'`);
  if (q.startedBefore !== undefined) w.add('i.created_at < ?', q.startedBefore);
  if (q.startedAfter !== undefined) w.add('i.created_at > ?', q.startedAfter);
  if (q.finishedBefore !== undefined) w.add('i.ended_at < ?', q.finishedBefore);
  if (q.finishedAfter !== undefined) w.add('i.ended_at > ?', q.finishedAfter);
  if (q.superProcessInstanceId !== undefined) addId('i.parent_instance_id', q.superProcessInstanceId);
  return w;
}

const HISTORIC_COLUMNS_SQL = `i.id, i.definition_id, i.definition_key, i.definition_version, d.plan->>'name' as definition_name,
       i.business_key, i.status, i.created_at, i.ended_at, i.parent_instance_id`;
const HISTORIC_FROM_SQL = 'from instances i join definitions d on d.id = i.definition_id';

export async function listCamundaHistoricInstances(
  db: Queryable,
  q: CamundaHistoricInstanceQuery,
): Promise<CamundaHistoricInstanceRow[]> {
  const w = historicInstanceWhere(q);
  const orderSql = [
    ...q.sorting.map((s) => `${HISTORIC_INSTANCE_SORT_SQL[s.sortBy]} ${s.sortOrder} nulls last`),
    'i.created_at',
    'i.id',
  ].join(', ');
  const { rows } = await db.query<CamundaHistoricInstanceRow>(
    `select ${HISTORIC_COLUMNS_SQL} ${HISTORIC_FROM_SQL} where ${w.sql}
      order by ${orderSql} offset $${w.values.length + 1} limit $${w.values.length + 2}`,
    [...w.values, q.firstResult, q.maxResults],
  );
  return rows;
}

export async function countCamundaHistoricInstances(db: Queryable, q: CamundaHistoricInstanceQuery): Promise<number> {
  const w = historicInstanceWhere(q);
  const { rows } = await db.query<{ count: number }>(`select count(*)::int as count from instances i where ${w.sql}`, w.values);
  return rows[0]?.count ?? 0;
}
