// Camunda's bulk operations on process instances, mapped onto Baton's durable batches:
// POST /process-instance/delete and /suspended-async make a cancel, suspend or resume batch over
// the instances named (ids, or a query read once, when the batch is made, as Camunda does);
// PUT /process-instance/suspended and PUT /process-definition/.../suspended apply at once, each
// instance in its own transaction (camunda/engine/suspensions.ts).
import { Router, type Response } from 'express';
import type { Engine } from '../../engine/context.ts';
import { createBatch } from '../../engine/batches.ts';
import type { BatchOperation } from '../../model/vocabulary.ts';
import type { Caller } from '../../security/auth.ts';
import { MAX_INSTANCE_IDS } from '../../store/queries.ts';
import { isUuid } from '../../shared/validate.ts';
import { setSuspensionOfEach } from '../engine/suspensions.ts';
import { listCamundaDefinitions, listCamundaInstances, type CamundaInstanceQuery } from '../store/process-queries.ts';
import { batchDtoView } from './batch-views.ts';
import { CamundaError, invalidRequest, sendJson, sendNoContent } from './errors.ts';
import { readInstanceQuery } from './process-query.ts';
import { bodyObject } from './query-params.ts';
import { validateCamundaBody } from './validate.ts';

/**
 * Most instances a synchronous suspend or activate reaches: each is a transaction of its own
 * (a few milliseconds), so 1,000 keep the request within seconds; more go to suspended-async.
 */
export const MAX_SYNC_SUSPENSIONS = 1000;

interface InstancesBody {
  processInstanceIds?: string[] | null;
  processInstanceQuery?: Record<string, unknown> | null;
  historicProcessInstanceQuery?: Record<string, unknown> | null;
}

interface DeleteBody extends InstancesBody {
  deleteReason?: string | null;
  skipCustomListeners?: boolean | null;
  skipSubprocesses?: boolean | null;
  skipIoMappings?: boolean | null;
  failIfNotExists?: boolean | null;
}

interface SuspensionBody extends InstancesBody {
  suspended: boolean;
  processDefinitionId?: string | null;
  processDefinitionKey?: string | null;
  processDefinitionTenantId?: string | null;
  processDefinitionWithoutTenantId?: boolean | null;
}

/** `onBatchCreated` pokes this node's batch runner, so the batch starts without waiting for its next look. */
export function processInstanceBatchRouter(engine: Engine, onBatchCreated: () => void): Router {
  const router = Router();

  const startBatch = async (res: Response, operation: BatchOperation, instanceIds: string[]) => {
    if (instanceIds.length === 0) throw invalidRequest('processInstanceIds is empty: no process instance matches');
    const batch = await createBatch(engine, { operation, filter: { instanceIds }, createdBy: creatorOf(res) });
    if (batch.state === 'running') onBatchCreated();
    sendJson(res, 200, batchDtoView(batch));
  };

  router.post('/delete', async (req, res) => {
    const body = validateCamundaBody<DeleteBody>('process-instance-delete-request', req.body ?? {});
    refuseDeleteOptions(body);
    const ids = await instancesNamed(engine, body, MAX_INSTANCE_IDS, 'POST /process-instance/delete');
    if (body.failIfNotExists !== false) {
      const missing = ids.named.filter((id) => !ids.running.has(id));
      if (missing.length > 0)
        throw invalidRequest(
          `Process instances do not exist or have ended: ${missing.slice(0, 10).join(', ')}${missing.length > 10 ? ', …' : ''} (send failIfNotExists: false to delete the others)`,
        );
    }
    await startBatch(
      res,
      'cancel',
      ids.all.filter((id) => ids.running.has(id)),
    );
  });

  router.post('/suspended-async', async (req, res) => {
    const body = validateCamundaBody<SuspensionBody>('suspended-async-request', req.body ?? {});
    const ids = await instancesNamed(engine, body, MAX_INSTANCE_IDS, 'POST /process-instance/suspended-async');
    await startBatch(res, body.suspended ? 'suspend' : 'resume', ids.all);
  });

  router.put('/suspended', async (req, res) => {
    const body = validateCamundaBody<SuspensionBody>('process-instance-suspension-request', req.body ?? {});
    if (body.processDefinitionTenantId != null)
      throw invalidRequest('Baton has no tenants: processDefinitionTenantId matches no process definition');
    const given = [
      body.processDefinitionId != null,
      body.processDefinitionKey != null,
      body.processInstanceIds != null || body.processInstanceQuery != null || body.historicProcessInstanceQuery != null,
    ].filter(Boolean).length;
    if (given !== 1)
      throw invalidRequest(
        'Give exactly one of processDefinitionId, processDefinitionKey, or processInstanceIds and processInstanceQuery',
      );
    const what = 'PUT /process-instance/suspended';
    const ids =
      body.processDefinitionId != null || body.processDefinitionKey != null
        ? await runningIds(engine, {
            ...(body.processDefinitionId != null ? { processDefinitionId: body.processDefinitionId } : {}),
            ...(body.processDefinitionKey != null ? { processDefinitionKey: body.processDefinitionKey } : {}),
          })
        : (await instancesNamed(engine, body, MAX_SYNC_SUSPENSIONS, what)).all;
    await suspendNow(engine, res, ids, body.suspended, what);
  });

  return router;
}

/** Baton does not suspend a definition itself (new instances of it still start): only its instances, when asked to. */
export function processDefinitionSuspensionRouter(engine: Engine): Router {
  const router = Router();

  const suspendInstancesOf = async (res: Response, definitionId: string, rawBody: unknown) => {
    const body = validateCamundaBody<{
      suspended: boolean;
      includeProcessInstances?: boolean | null;
      executionDate?: string | null;
    }>('definition-suspended-request', rawBody ?? {});
    if (body.includeProcessInstances !== true)
      throw invalidRequest(
        'Baton does not suspend or activate process definitions, only their instances: send includeProcessInstances: true to suspend or activate the running instances of this definition',
      );
    if (body.executionDate != null)
      throw invalidRequest('Baton does not schedule a suspension: executionDate must be null (it applies now)');
    const ids = await runningIds(engine, { processDefinitionId: definitionId });
    await suspendNow(engine, res, ids, body.suspended, 'PUT /process-definition/{id}/suspended');
  };

  // Camunda's key route acts on the key's latest version.
  router.put('/key/:key/suspended', async (req, res) => {
    const key = String(req.params.key);
    const [latest] = await listCamundaDefinitions(engine.pool, {
      key,
      latestVersion: true,
      sorting: [],
      firstResult: 0,
      maxResults: 1,
    });
    if (!latest)
      throw new CamundaError(404, 'InvalidRequestException', `No matching process definition with key: ${key} and no tenant-id`);
    await suspendInstancesOf(res, latest.id, req.body);
  });

  router.put('/:id/suspended', async (req, res) => {
    const id = String(req.params.id);
    const [found] = isUuid(id)
      ? await listCamundaDefinitions(engine.pool, { processDefinitionId: id, sorting: [], firstResult: 0, maxResults: 1 })
      : [];
    if (!found) throw new CamundaError(404, 'InvalidRequestException', `No matching definition with id ${id}`);
    await suspendInstancesOf(res, found.id, req.body);
  });

  return router;
}

async function suspendNow(engine: Engine, res: Response, ids: string[], suspended: boolean, what: string): Promise<void> {
  if (ids.length > MAX_SYNC_SUSPENSIONS)
    throw invalidRequest(
      `${what} reaches at most ${MAX_SYNC_SUSPENSIONS} instances at once and more match: use POST /process-instance/suspended-async, which makes a batch`,
    );
  const by = (res.locals.caller as Caller | undefined)?.name;
  await setSuspensionOfEach(engine, { instanceIds: ids, suspended, ...(by ? { by } : {}) });
  sendNoContent(res);
}

function refuseDeleteOptions(body: DeleteBody): void {
  if (body.historicProcessInstanceQuery != null)
    throw invalidRequest('Baton does not select instances by historicProcessInstanceQuery: send processInstanceQuery');
  if (body.deleteReason != null && body.deleteReason !== '')
    throw invalidRequest('Baton keeps no deleteReason for a canceled instance: leave deleteReason out');
  if (body.skipCustomListeners === false)
    throw invalidRequest(
      'A Baton cancel runs no listeners: skipCustomListeners false cannot be honoured (leave it out or send true)',
    );
  if (body.skipIoMappings === false)
    throw invalidRequest(
      'A Baton cancel runs no output mappings: skipIoMappings false cannot be honoured (leave it out or send true)',
    );
  if (body.skipSubprocesses === true)
    throw invalidRequest(
      'A Baton cancel ends the instances its call activities started: skipSubprocesses true cannot be honoured (leave it out or send false)',
    );
}

interface NamedInstances {
  /** the ids given and the query's, once each */
  all: string[];
  /** the ids given in processInstanceIds */
  named: string[];
  /** which of `all` are running */
  running: Set<string>;
}

/** processInstanceIds and the running instances processInstanceQuery matches now, at most `max`. */
async function instancesNamed(engine: Engine, body: InstancesBody, max: number, what: string): Promise<NamedInstances> {
  if (body.historicProcessInstanceQuery != null)
    throw invalidRequest('Baton does not select instances by historicProcessInstanceQuery: send processInstanceQuery');
  if (body.processInstanceIds == null && body.processInstanceQuery == null)
    throw invalidRequest('Give processInstanceIds or processInstanceQuery');
  const named = [...new Set(body.processInstanceIds ?? [])];
  const notIds = named.filter((id) => !isUuid(id));
  if (notIds.length > 0)
    throw invalidRequest(`Not process instance ids: ${notIds.slice(0, 10).join(', ')}${notIds.length > 10 ? ', …' : ''}`);
  const queried =
    body.processInstanceQuery != null
      ? await runningIds(engine, readInstanceQuery(bodyObject(body.processInstanceQuery), 'body', {}), max + 1)
      : [];
  const all = [...new Set([...named, ...queried])];
  if (all.length > max)
    throw invalidRequest(
      `${what} reaches at most ${max} instances at once and more are named or match: ${max === MAX_SYNC_SUSPENSIONS ? 'use POST /process-instance/suspended-async, which makes a batch' : 'narrow processInstanceQuery'}`,
    );
  const running = new Set(named.length > 0 ? await runningIds(engine, { processInstanceIds: named }, named.length) : []);
  for (const id of queried) running.add(id);
  return { all, named, running };
}

/** The running instances a Camunda instance query matches, in id order, at most `limit` (one more than allowed tells too many). */
async function runningIds(engine: Engine, q: Partial<CamundaInstanceQuery>, limit = MAX_SYNC_SUSPENSIONS + 1): Promise<string[]> {
  const rows = await listCamundaInstances(engine.pool, {
    ...q,
    sorting: [{ sortBy: 'instanceId', sortOrder: 'asc' }],
    firstResult: 0,
    maxResults: limit,
  });
  return rows.map((r) => r.id);
}

function creatorOf(res: Response): string | null {
  const caller = res.locals.caller as Caller | undefined;
  return caller ? `${caller.name} (${caller.role})` : null;
}
