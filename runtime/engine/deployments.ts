// Deployments (docs/ARCHITECTURE.md, "Deployments"): an upload of resources deployed together
// in one transaction, every executable process of every BPMN resource a new version in it; and
// the deletion of one, with its definitions and, when asked, their instances.
import type { PoolClient } from 'pg';
import type { Engine } from './context.ts';
import { cancelInTransaction } from './instances.ts';
import { noteDeployed, storeDefinition, type Compiled } from './definitions.ts';
import { startTimersOf } from './start-timers.ts';
import { withTransaction } from '../store/db.ts';
import { findDefinition, findDefinitionById, type DefinitionRow } from '../store/definitions.ts';
import {
  definitionsOfDeployment,
  deleteDeploymentRows,
  findSameDeployment,
  insertDeployment,
  lockDeploymentForDelete,
  runningInstancesOfDeployment,
  type DeploymentRow,
  type ResourceUpload,
} from '../store/deployments.ts';
import { replaceStartTimers } from '../store/start-timers.ts';

export interface Upload {
  name: string | null;
  source: string | null;
  resources: ResourceUpload[];
  /** the compiled processes of each BPMN resource, by resource name */
  processes: Map<string, { xml: string; compiled: Compiled[] }>;
  /** answer the newest deployment of this name when its resources are exactly these */
  duplicateFiltering: boolean;
  /** a process whose XML is already deployed keeps that version instead of getting a new one */
  changedOnly: boolean;
}

export interface DeployedUpload {
  deployment: DeploymentRow;
  /** the definitions the upload's BPMN resources stand for, with the resource each came from */
  definitions: DefinitionRow[];
  created: boolean;
}

/** Deploys the upload in one transaction: all of it, or nothing. */
export async function deployUpload(engine: Engine, upload: Upload): Promise<DeployedUpload> {
  let stored: { definition: DefinitionRow; created: boolean }[] = [];
  const result = await withTransaction(engine.pool, async (tx): Promise<DeployedUpload> => {
    stored = [];
    if (upload.duplicateFiltering && upload.name !== null) {
      const same = await findSameDeployment(tx, upload.name, upload.resources);
      if (same) return { deployment: same, definitions: await definitionsOf(tx, same.id), created: false };
    }
    const deployment = await insertDeployment(tx, upload, upload.resources);
    for (const [resourceName, { xml, compiled }] of upload.processes)
      for (const process of compiled)
        stored.push(
          await storeDefinition(tx, process, xml, { deploymentId: deployment.id, resourceName, always: !upload.changedOnly }),
        );
    return { deployment, definitions: stored.map((d) => d.definition), created: true };
  });
  for (const { definition, created } of stored) noteDeployed(engine, definition, created);
  return result;
}

async function definitionsOf(tx: PoolClient, deploymentId: string): Promise<DefinitionRow[]> {
  const rows = await definitionsOfDeployment(tx, deploymentId);
  return (await Promise.all(rows.map((r) => findDefinitionById(tx, r.id)))).filter((d): d is DefinitionRow => !!d);
}

export type DeleteDeploymentResult =
  | { ok: true; definitions: number; instances: number }
  | { ok: false; reason: 'not_found' }
  | { ok: false; reason: 'has_instances'; running: number; total: number }
  | { ok: false; reason: 'called'; instanceId: string; parentInstanceId: string; parentStepId: string };

/**
 * Deletes a deployment with its resources and definitions. Instances of its definitions stop
 * it unless `cascade`: then the running ones are canceled (their called instances with them)
 * and every one is deleted with its history. A running instance that a call activity of another
 * deployment's instance waits for stops it either way: canceling that parent comes first.
 * Where a deleted definition was its key's newest version, the version before it schedules its
 * timer start events again. One transaction: all of it, or nothing.
 */
export async function deleteDeployment(
  engine: Engine,
  deploymentId: string,
  opts: { cascade: boolean; by?: string },
): Promise<DeleteDeploymentResult> {
  const deleted: string[] = [];
  const result = await withTransaction(engine.pool, async (tx): Promise<DeleteDeploymentResult> => {
    const locked = await lockDeploymentForDelete(tx, deploymentId);
    if (!locked) return { ok: false, reason: 'not_found' };
    const { instances } = locked;
    if (instances.calledFrom) return { ok: false, reason: 'called', ...instances.calledFrom };
    if (instances.total > 0 && !opts.cascade)
      return { ok: false, reason: 'has_instances', running: instances.running, total: instances.total };
    // Parents first: a parent's cancel cancels its children, which the loop then finds ended.
    for (const id of await runningInstancesOfDeployment(tx, deploymentId)) await cancelInTransaction(tx, id, opts.by);
    const definitions = await definitionsOfDeployment(tx, deploymentId);
    const newest: string[] = [];
    for (const key of new Set(definitions.map((d) => d.key)))
      if ((await findDefinition(tx, key))?.deployment_id === deploymentId) newest.push(key);
    await deleteDeploymentRows(tx, deploymentId);
    for (const key of newest) {
      const latest = await findDefinition(tx, key);
      if (latest) await replaceStartTimers(tx, latest.id, latest.key, startTimersOf(latest.plan));
    }
    for (const d of definitions) deleted.push(d.id);
    return { ok: true, definitions: definitions.length, instances: instances.total };
  });
  for (const id of deleted) engine.plans.delete(id);
  if (result.ok) engine.log.info({ deploymentId, ...result, by: opts.by ?? null }, 'deployment:deleted');
  return result;
}
