// Camunda 7's deployment queries over Baton's deployments (migration 0036).
import { isUuid } from '../../shared/uuid.ts';
import type { Queryable } from '../../store/db.ts';
import { clauses } from './process-queries.ts';

export interface CamundaDeploymentRow {
  id: string;
  name: string | null;
  source: string | null;
  deployed_at: Date;
}

export interface CamundaDeploymentQuery {
  id?: string;
  name?: string;
  nameLike?: string;
  source?: string;
  /** true: only deployments without a source */
  withoutSource?: boolean;
  before?: Date;
  after?: Date;
  sorting: { sortBy: DeploymentSort; sortOrder: 'asc' | 'desc' }[];
  firstResult: number;
  maxResults: number;
}

export const DEPLOYMENT_SORT_SQL = {
  id: 'd.id',
  name: 'd.name',
  deploymentTime: 'd.deployed_at',
} as const;
export type DeploymentSort = keyof typeof DEPLOYMENT_SORT_SQL;

function deploymentWhere(q: CamundaDeploymentQuery) {
  const w = clauses('true');
  if (q.id !== undefined)
    if (isUuid(q.id)) w.add('d.id = ?::uuid', q.id);
    else w.raw('false');
  if (q.name !== undefined) w.add('d.name = ?', q.name);
  if (q.nameLike !== undefined) w.add('d.name like ?', q.nameLike);
  if (q.source !== undefined) w.add('d.source = ?', q.source);
  if (q.withoutSource) w.raw('d.source is null');
  if (q.before !== undefined) w.add('d.deployed_at < ?', q.before);
  if (q.after !== undefined) w.add('d.deployed_at > ?', q.after);
  return w;
}

export async function listCamundaDeployments(db: Queryable, q: CamundaDeploymentQuery): Promise<CamundaDeploymentRow[]> {
  const w = deploymentWhere(q);
  const orderSql = [...q.sorting.map((s) => `${DEPLOYMENT_SORT_SQL[s.sortBy]} ${s.sortOrder}`), 'd.deployed_at', 'd.id'].join(
    ', ',
  );
  const { rows } = await db.query<CamundaDeploymentRow>(
    `select d.id, d.name, d.source, d.deployed_at from deployments d where ${w.sql}
      order by ${orderSql} offset $${w.values.length + 1} limit $${w.values.length + 2}`,
    [...w.values, q.firstResult, q.maxResults],
  );
  return rows;
}

export async function countCamundaDeployments(db: Queryable, q: CamundaDeploymentQuery): Promise<number> {
  const w = deploymentWhere(q);
  const { rows } = await db.query<{ count: number }>(`select count(*)::int as count from deployments d where ${w.sql}`, w.values);
  return rows[0]?.count ?? 0;
}
