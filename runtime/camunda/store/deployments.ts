// Camunda 7's deployments from Baton's definitions: a Baton deploy makes one definition (one
// version of one process), so a deployment is a definition, its id the definition's id and its
// one resource the definition's XML.
import { isUuid } from '../../shared/uuid.ts';
import type { Queryable } from '../../store/db.ts';
import { clauses } from './process-queries.ts';

export interface CamundaDeploymentRow {
  id: string;
  key: string;
  version: number;
  deployed_at: Date;
}

export interface CamundaDeploymentQuery {
  id?: string;
  /** the process key: Baton's deployment has no name of its own */
  name?: string;
  nameLike?: string;
  before?: Date;
  after?: Date;
  sorting: { sortBy: DeploymentSort; sortOrder: 'asc' | 'desc' }[];
  firstResult: number;
  maxResults: number;
}

export const DEPLOYMENT_SORT_SQL = {
  id: 'd.id',
  name: 'd.key',
  deploymentTime: 'd.deployed_at',
} as const;
export type DeploymentSort = keyof typeof DEPLOYMENT_SORT_SQL;

function deploymentWhere(q: CamundaDeploymentQuery) {
  const w = clauses('true');
  if (q.id !== undefined)
    if (isUuid(q.id)) w.add('d.id = ?::uuid', q.id);
    else w.raw('false');
  if (q.name !== undefined) w.add('d.key = ?', q.name);
  if (q.nameLike !== undefined) w.add('d.key like ?', q.nameLike);
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
    `select d.id, d.key, d.version, d.deployed_at from definitions d where ${w.sql}
      order by ${orderSql} offset $${w.values.length + 1} limit $${w.values.length + 2}`,
    [...w.values, q.firstResult, q.maxResults],
  );
  return rows;
}

export async function countCamundaDeployments(db: Queryable, q: CamundaDeploymentQuery): Promise<number> {
  const w = deploymentWhere(q);
  const { rows } = await db.query<{ count: number }>(`select count(*)::int as count from definitions d where ${w.sql}`, w.values);
  return rows[0]?.count ?? 0;
}
