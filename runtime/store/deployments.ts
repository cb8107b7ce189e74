// Deployments (migration 0036): what one deploy call uploaded, its resources, and the
// definitions it created. Deleting one takes its definitions with it, and, when asked, every
// instance of them with their history.
import { createHash } from 'node:crypto';
import type { Queryable } from './db.ts';
import { DELETE_DOOMED_WITH_HISTORY_SQL } from './retention.ts';

export interface DeploymentRow {
  id: string;
  name: string | null;
  source: string | null;
  deployed_at: Date;
}

export interface ResourceUpload {
  name: string;
  content: Buffer;
}

export interface ResourceRow {
  id: string;
  deployment_id: string;
  name: string;
}

export async function insertDeployment(
  db: Queryable,
  d: { name: string | null; source: string | null },
  resources: ResourceUpload[],
): Promise<DeploymentRow> {
  const { rows } = await db.query<DeploymentRow>('insert into deployments (name, source) values ($1, $2) returning *', [
    d.name,
    d.source,
  ]);
  const deployment = rows[0] as DeploymentRow;
  if (resources.length > 0)
    await db.query(
      `insert into deployment_resources (deployment_id, name, content)
       select $1, r.name, r.content from unnest($2::text[], $3::bytea[]) as r (name, content)`,
      [deployment.id, resources.map((r) => r.name), resources.map((r) => r.content)],
    );
  return deployment;
}

/**
 * The newest deployment of this name whose resources are exactly these (same names, same
 * bytes): Camunda's duplicate filtering answers it instead of deploying again. Serialized per
 * name, so two equal uploads at once make one deployment.
 */
export async function findSameDeployment(
  db: Queryable,
  name: string,
  resources: ResourceUpload[],
): Promise<DeploymentRow | undefined> {
  await db.query("select pg_advisory_xact_lock(hashtext('deployment:' || $1))", [name]);
  const { rows } = await db.query<DeploymentRow & { resources: { name: string; sha: string }[] }>(
    `select d.*, coalesce((select json_agg(json_build_object('name', r.name, 'sha', encode(sha256(r.content), 'hex')))
                             from deployment_resources r where r.deployment_id = d.id), '[]') as resources
       from deployments d where d.name = $1 order by d.deployed_at desc, d.id desc limit 1`,
    [name],
  );
  const last = rows[0];
  if (!last || last.resources.length !== resources.length) return undefined;
  const held = new Map(last.resources.map((r) => [r.name, r.sha]));
  const same = resources.every((r) => held.get(r.name) === createHash('sha256').update(r.content).digest('hex'));
  if (!same) return undefined;
  const { resources: _held, ...deployment } = last;
  return deployment;
}

export async function findDeployment(db: Queryable, id: string): Promise<DeploymentRow | undefined> {
  const { rows } = await db.query<DeploymentRow>('select * from deployments where id = $1', [id]);
  return rows[0];
}

export async function listResources(db: Queryable, deploymentId: string): Promise<ResourceRow[]> {
  const { rows } = await db.query<ResourceRow>(
    'select id, deployment_id, name from deployment_resources where deployment_id = $1 order by name, id',
    [deploymentId],
  );
  return rows;
}

export async function readResource(
  db: Queryable,
  deploymentId: string,
  resourceId: string,
): Promise<(ResourceRow & { content: Buffer }) | undefined> {
  const { rows } = await db.query<ResourceRow & { content: Buffer }>(
    'select id, deployment_id, name, content from deployment_resources where deployment_id = $1 and id = $2',
    [deploymentId, resourceId],
  );
  return rows[0];
}

/** The definitions a deployment created, for its create answer and its deletion. */
export async function definitionsOfDeployment(
  db: Queryable,
  deploymentId: string,
): Promise<{ id: string; key: string; version: number; resource_name: string }[]> {
  const { rows } = await db.query<{ id: string; key: string; version: number; resource_name: string }>(
    'select id, key, version, resource_name from definitions where deployment_id = $1 order by key, version',
    [deploymentId],
  );
  return rows;
}

export interface DeploymentInstances {
  /** instances of its definitions, ended or not */
  total: number;
  running: number;
  /** a running instance of them that a call activity of another deployment's instance started */
  calledFrom?: { instanceId: string; parentInstanceId: string; parentStepId: string };
}

/** Locks the deployment row (a second delete waits, then finds nothing) and counts what its deletion would take. */
export async function lockDeploymentForDelete(
  db: Queryable,
  deploymentId: string,
): Promise<{ deployment: DeploymentRow; instances: DeploymentInstances } | undefined> {
  const { rows } = await db.query<DeploymentRow>('select * from deployments where id = $1 for update', [deploymentId]);
  const deployment = rows[0];
  if (!deployment) return undefined;
  const counts = await db.query<{ total: number; running: number }>(
    `select count(*)::int as total,
            (count(*) filter (where i.status in ('running', 'incident', 'compensating')))::int as running
       from instances i join definitions d on d.id = i.definition_id where d.deployment_id = $1`,
    [deploymentId],
  );
  const called = await db.query<{ id: string; parent_instance_id: string; parent_step_id: string }>(
    `select i.id, i.parent_instance_id, i.parent_step_id
       from instances i join definitions d on d.id = i.definition_id
       join instances p on p.id = i.parent_instance_id join definitions pd on pd.id = p.definition_id
      where d.deployment_id = $1 and pd.deployment_id <> $1
        and i.status in ('running', 'incident', 'compensating') limit 1`,
    [deploymentId],
  );
  const c = called.rows[0];
  return {
    deployment,
    instances: {
      total: counts.rows[0]?.total ?? 0,
      running: counts.rows[0]?.running ?? 0,
      ...(c ? { calledFrom: { instanceId: c.id, parentInstanceId: c.parent_instance_id, parentStepId: c.parent_step_id } } : {}),
    },
  };
}

/** The running instances of a deployment's definitions, top-level ones (no parent in it) first. */
export async function runningInstancesOfDeployment(db: Queryable, deploymentId: string): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `select i.id from instances i join definitions d on d.id = i.definition_id
      where d.deployment_id = $1 and i.status in ('running', 'incident', 'compensating')
      order by (i.parent_instance_id is not null), i.created_at, i.id`,
    [deploymentId],
  );
  return rows.map((r) => r.id);
}

/**
 * Deletes the deployment, its resources and definitions, their start timers, and every
 * instance of them with its history (the history tables have no foreign keys, migration 0014),
 * and with them the instances they called, whatever deployment those come from: as in
 * Camunda, deleting an instance deletes its called instances. The caller has ended the running ones.
 */
export async function deleteDeploymentRows(db: Queryable, deploymentId: string): Promise<void> {
  await db.query(
    `with recursive doomed as (
       select i.id from instances i join definitions d on d.id = i.definition_id where d.deployment_id = $1
       union
       select c.id from instances c join doomed p on c.parent_instance_id = p.id),
     ${DELETE_DOOMED_WITH_HISTORY_SQL}
     select count(*) from gone`,
    [deploymentId],
  );
  await db.query('delete from timers t using definitions d where t.definition_id = d.id and d.deployment_id = $1', [
    deploymentId,
  ]);
  await db.query('delete from definitions where deployment_id = $1', [deploymentId]);
  await db.query('delete from deployments where id = $1', [deploymentId]);
}
