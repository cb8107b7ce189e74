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
}

export interface CamundaDefinitionQuery {
  processDefinitionId?: string;
  key?: string;
  keysIn?: string[];
  name?: string;
  nameLike?: string;
  version?: number;
  versionTag?: string;
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
} as const;
export type DefinitionSort = keyof typeof DEFINITION_SORT_SQL;

export interface CamundaInstanceRow {
  id: string;
  definition_id: string;
  definition_key: string;
  business_key: string | null;
  status: 'running' | 'incident' | 'completed' | 'canceled';
}

export interface CamundaInstanceQuery {
  processInstanceIds?: string[];
  businessKey?: string;
  businessKeyLike?: string;
  processDefinitionId?: string;
  processDefinitionKey?: string;
  processDefinitionKeyIn?: string[];
  withIncident?: boolean;
  /** Baton suspends no instance: `suspended` asks for none */
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
function clauses(first: string) {
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
  const w = clauses('true');
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
  if (q.latestVersion) w.raw('d.version = (select max(l.version) from definitions l where l.key = d.key)');
  return w;
}

const DEFINITION_COLUMNS_SQL = `d.id, d.key, d.version, d.plan->>'name' as name, d.plan->>'versionTag' as version_tag, d.deployed_at`;

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
  const w = clauses(`i.status in ('running', 'incident')`);
  if (q.suspended) w.raw('false');
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
    `select i.id, i.definition_id, i.definition_key, i.business_key, i.status from instances i where ${w.sql}
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
