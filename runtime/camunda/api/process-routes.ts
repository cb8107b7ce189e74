// /engine-rest/process-definition/.../start, /process-instance/{id}[/variables],
// /execution/{id}/localVariables: starts, instance views and typed variables.
// Baton has no executions below the instance: an execution id is the instance id.
import { Router, type Response } from 'express';
import type { Engine } from '../../engine/context.ts';
import { startCamundaInstance } from '../engine/instances.ts';
import { loadInstanceVariables, loadVariableContent, writeVariableTypes, type InstanceVariables } from '../store/variables.ts';
import { editVariables } from '../../engine/instance-variables.ts';
import { callerName } from './caller.ts';
import type { CamundaVariables } from '../engine/tasks.ts';
import { findDefinition, findDefinitionById } from '../../store/definitions.ts';
import { isUuid } from '../../shared/validate.ts';
import { cancelInstance } from '../../engine/instances.ts';
import { resumeInstance, suspendInstance } from '../../engine/suspension.ts';
import {
  countCamundaDefinitions,
  countCamundaInstances,
  listCamundaDefinitions,
  listCamundaInstances,
  type CamundaDefinitionRow,
} from '../store/process-queries.ts';
import { CamundaError, invalidRequest, notFound, sendJson, sendNoContent } from './errors.ts';
import { readDefinitionQuery, readInstanceQuery } from './process-query.ts';
import { bodyObject } from './query-params.ts';
import { validateCamundaBody } from './validate.ts';
import { readVariables, renderVariables, type WireVariable } from './variables.ts';
import { processDefinitionView, processInstanceView } from './views.ts';

interface StartBody {
  variables?: Record<string, WireVariable> | null;
  businessKey?: string | null;
  withVariablesInReturn?: boolean | null;
}

export function processDefinitionRouter(engine: Engine): Router {
  const router = Router();

  router.get('/', async (req, res) => {
    const q = readDefinitionQuery(req.query);
    sendJson(res, 200, (await listCamundaDefinitions(engine.pool, q)).map(processDefinitionView));
  });
  router.get('/count', async (req, res) => {
    sendJson(res, 200, { count: await countCamundaDefinitions(engine.pool, readDefinitionQuery(req.query)) });
  });
  router.get('/key/:key', async (req, res) => {
    sendJson(res, 200, processDefinitionView(await latestOf(engine, String(req.params.key))));
  });
  router.get('/key/:key/xml', async (req, res) => {
    const d = await latestOf(engine, String(req.params.key));
    sendJson(res, 200, { id: d.id, bpmn20Xml: (await findDefinitionById(engine.pool, d.id))?.xml ?? '' });
  });
  router.get('/:id', async (req, res) => {
    sendJson(res, 200, processDefinitionView(await byId(engine, String(req.params.id))));
  });
  router.get('/:id/xml', async (req, res) => {
    const d = await byId(engine, String(req.params.id));
    sendJson(res, 200, { id: d.id, bpmn20Xml: (await findDefinitionById(engine.pool, d.id))?.xml ?? '' });
  });

  router.post('/key/:key/start', async (req, res) => {
    const key = String(req.params.key);
    if (!(await findDefinition(engine.pool, key)))
      throw new CamundaError(404, 'RestException', `No matching process definition with key: ${key} and no tenant-id`);
    await start(engine, res, validateCamundaBody<StartBody>('start-request', req.body ?? {}), key);
  });

  router.post('/:id/start', async (req, res) => {
    const id = String(req.params.id);
    const definition = isUuid(id) ? await findDefinitionById(engine.pool, id) : undefined;
    if (!definition) throw new CamundaError(404, 'RestException', `No matching definition with id ${id}`);
    await start(engine, res, validateCamundaBody<StartBody>('start-request', req.body ?? {}), definition.key, definition.version);
  });

  return router;
}

async function start(engine: Engine, res: Response, body: StartBody, key: string, version?: number): Promise<void> {
  const variables = readVariables(body.variables);
  const result = await startCamundaInstance(engine, {
    definitionKey: key,
    businessKey: body.businessKey ?? null,
    variables,
    ...(version !== undefined ? { version } : {}),
  });
  if (!result.ok) throw new CamundaError(404, 'RestException', `No matching process definition with key: ${key}`);
  const view = processInstanceView(result.instance);
  if (!body.withVariablesInReturn) return sendJson(res, 200, view);
  const loaded = await loadInstanceVariables(engine.pool, result.instance.id);
  sendJson(res, 200, { ...view, variables: loaded ? renderVariables(loaded.variables, loaded.types) : {} });
}

export function processInstanceRouter(engine: Engine): Router {
  const router = Router();

  const list = async (res: Response, input: Record<string, unknown>, from: 'query' | 'body', paging: Record<string, unknown>) => {
    const rows = await listCamundaInstances(engine.pool, readInstanceQuery(input, from, paging));
    sendJson(res, 200, rows.map(processInstanceView));
  };
  const count = async (res: Response, input: Record<string, unknown>, from: 'query' | 'body') => {
    sendJson(res, 200, { count: await countCamundaInstances(engine.pool, readInstanceQuery(input, from, {})) });
  };
  router.get('/', (req, res) => list(res, req.query, 'query', req.query));
  router.post('/', (req, res) => list(res, bodyObject(req.body), 'body', req.query));
  router.get('/count', (req, res) => count(res, req.query, 'query'));
  router.post('/count', (req, res) => count(res, bodyObject(req.body), 'body'));

  // Camunda's delete cancels a running instance; an ended or unknown one is 404.
  router.delete('/:id', async (req, res) => {
    const id = String(req.params.id);
    const result = isUuid(id) ? await cancelInstance(engine, id) : { ok: false as const, reason: 'not_found' as const };
    if (!result.ok && result.reason === 'called')
      throw new CamundaError(
        400,
        'InvalidRequestException',
        `Process instance ${id} was started by call activity ${result.parentStepId} of ${result.parentInstanceId}: delete that instance`,
      );
    if (!result.ok) throw notFound(`Process instance with id ${id} does not exist`);
    sendNoContent(res);
  });

  // Suspends or activates one running instance (204); as Camunda, an unknown or ended one is 404.
  router.put('/:id/suspended', async (req, res) => {
    const id = String(req.params.id);
    const body = validateCamundaBody<{ suspended: boolean }>('suspended-request', req.body ?? {});
    const by = callerName(res);
    const request = { instanceId: id, ...(by ? { by } : {}) };
    const run = body.suspended ? suspendInstance : resumeInstance;
    const result = isUuid(id) ? await run(engine, request) : ({ ok: false, reason: 'not_found' } as const);
    if (!result.ok) throw notFound(`Process instance with id ${id} does not exist`);
    sendNoContent(res);
  });

  // Camunda's runtime forgets ended instances: they answer 404 here too.
  router.get('/:id', async (req, res) => {
    const loaded = await loadRunning(engine, String(req.params.id));
    sendJson(res, 200, processInstanceView(loaded));
  });

  router.get('/:id/variables', async (req, res) => {
    const loaded = await loadRunning(engine, String(req.params.id));
    sendJson(res, 200, renderVariables(loaded.variables, loaded.types));
  });

  router.get('/:id/variables/:name', async (req, res) => {
    const loaded = await loadRunning(engine, String(req.params.id));
    const name = String(req.params.name);
    const one = renderVariables(loaded.variables, loaded.types, [name])[name];
    if (!one) throw notFound(`process instance variable with name ${name} does not exist`);
    sendJson(res, 200, one);
  });

  router.get('/:id/variables/:name/data', async (req, res) => {
    await sendContent(engine, res, String(req.params.id), String(req.params.name));
  });

  // Variable writes apply to the instance as it is now (Camunda names no revision), as one transition each.
  router.post('/:id/variables', async (req, res) => {
    const body = validateCamundaBody<{ modifications?: Record<string, WireVariable> | null; deletions?: string[] | null }>(
      'variables-modification-request',
      req.body ?? {},
    );
    await writeVariables(engine, res, String(req.params.id), readVariables(body.modifications), body.deletions ?? []);
  });
  router.put('/:id/variables/:name', async (req, res) => {
    const name = String(req.params.name);
    const body = validateCamundaBody<WireVariable>('variable-value-request', req.body ?? {});
    await writeVariables(engine, res, String(req.params.id), readVariables({ [name]: body }), []);
  });
  router.delete('/:id/variables/:name', async (req, res) => {
    await writeVariables(engine, res, String(req.params.id), readVariables({}), [String(req.params.name)]);
  });

  return router;
}

async function writeVariables(
  engine: Engine,
  res: Response,
  id: string,
  set: CamundaVariables,
  deletions: string[],
): Promise<void> {
  const transient = Object.keys(set.transient);
  if (transient.length > 0) throw invalidRequest(`Baton keeps no transient variables on an instance: ${transient.join(', ')}`);
  if (Object.keys(set.values).length === 0 && deletions.length === 0) return sendNoContent(res);
  // Camunda applies the deletions after the modifications: a name in both ends deleted.
  const values = Object.fromEntries(Object.entries(set.values).filter(([name]) => !deletions.includes(name)));
  const types = set.types.filter((t) => !deletions.includes(t.name));
  const result = isUuid(id)
    ? await editVariables(engine, {
        instanceId: id,
        set: values,
        delete: deletions,
        ...(callerName(res) ? { by: callerName(res)! } : {}),
        alongside: (tx, instanceId) => writeVariableTypes(tx, instanceId, types),
      })
    : ({ ok: false, reason: 'not_found' } as const);
  if (!result.ok) throw notFound(`Cannot modify variables for process instance ${id}: it does not exist or has ended`);
  sendNoContent(res);
}

export function executionRouter(engine: Engine): Router {
  const router = Router();
  router.get('/:id/localVariables', async (req, res) => {
    const loaded = await loadRunning(engine, String(req.params.id));
    sendJson(res, 200, renderVariables(loaded.variables, loaded.types));
  });
  router.get('/:id/localVariables/:name/data', async (req, res) => {
    await sendContent(engine, res, String(req.params.id), String(req.params.name));
  });
  return router;
}

async function latestOf(engine: Engine, key: string): Promise<CamundaDefinitionRow> {
  const [d] = await listCamundaDefinitions(engine.pool, { key, latestVersion: true, sorting: [], firstResult: 0, maxResults: 1 });
  if (!d)
    throw new CamundaError(404, 'InvalidRequestException', `No matching process definition with key: ${key} and no tenant-id`);
  return d;
}

async function byId(engine: Engine, id: string): Promise<CamundaDefinitionRow> {
  const [d] = isUuid(id)
    ? await listCamundaDefinitions(engine.pool, { processDefinitionId: id, sorting: [], firstResult: 0, maxResults: 1 })
    : [];
  if (!d) throw new CamundaError(404, 'InvalidRequestException', `No matching definition with id ${id}`);
  return d;
}

async function loadRunning(engine: Engine, id: string): Promise<InstanceVariables> {
  const found = isUuid(id) ? await loadInstanceVariables(engine.pool, id) : undefined;
  if (!found || found.status === 'completed' || found.status === 'canceled') {
    throw notFound(`Process instance with id ${id} does not exist`);
  }
  return found;
}

// File and Bytes contents; files keep their MIME type, encoding and name (Content-Disposition).
// Ended instances keep their files here (reading them after the end is kinder than Camunda's 404).
async function sendContent(engine: Engine, res: Response, instanceId: string, name: string): Promise<void> {
  const content = isUuid(instanceId) ? await loadVariableContent(engine.pool, instanceId, name) : undefined;
  if (!content) throw notFound(`Variable ${name} of ${instanceId} does not exist or holds no binary data`);
  if (content.type !== 'File' && content.type !== 'Bytes') {
    throw new CamundaError(400, 'InvalidRequestException', `Value of variable ${name} of ${instanceId} is not a binary value`);
  }
  const bytes = content.content ?? Buffer.alloc(0);
  const info = content.value_info as { filename?: string; mimeType?: string | null; encoding?: string | null };
  const mime = content.type === 'File' && info.mimeType ? info.mimeType : 'application/octet-stream';
  res.status(200);
  res.setHeader('Content-Type', info.encoding ? `${mime}; charset=${info.encoding}` : mime);
  res.setHeader('Content-Length', bytes.length);
  if (content.type === 'File')
    res.setHeader('Content-Disposition', `attachment; filename="${(info.filename ?? name).replace(/["\\\r\n]/g, '_')}"`);
  res.end(bytes);
}
