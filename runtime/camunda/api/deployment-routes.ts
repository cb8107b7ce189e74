// POST /engine-rest/deployment/create: every part other than the named fields is a resource,
// kept with the deployment; every executable process of every .bpmn resource becomes a new
// version in it. Nothing is deployed unless every BPMN resource compiles (400 ParseException
// naming element ids). GET lists deployments and serves their resources; DELETE removes one
// (engine/deployments.ts).
import { Router } from 'express';
import { compileEveryProcess } from '../../compiler/index.ts';
import type { Diagnostic } from '../../compiler/plan.ts';
import type { Engine } from '../../engine/context.ts';
import { refuseUncompiled } from '../../engine/definitions.ts';
import { deleteDeployment, deployUpload, type Upload } from '../../engine/deployments.ts';
import type { DefinitionRow } from '../../store/definitions.ts';
import { findDeployment, listResources, readResource, type ResourceRow } from '../../store/deployments.ts';
import { isUuid } from '../../shared/uuid.ts';
import { callerName } from './caller.ts';
import { formatCamundaDate } from './dates.ts';
import { CamundaError, invalidRequest, notFound, sendJson, sendNoContent } from './errors.ts';
import {
  countCamundaDeployments,
  DEPLOYMENT_SORT_SQL,
  listCamundaDeployments,
  type CamundaDeploymentQuery,
  type CamundaDeploymentRow,
} from '../store/deployments.ts';
import { readDate, readFlag, readPaging, readSorting, readText, refuseUnsupported, type Source } from './query-params.ts';
import { readMultipart, type FormPart } from './multipart.ts';
import { BPMN_ELEMENT_LIMIT, bpmnElementsRefusal, DEFAULT_LIMITS } from '../../security/limits.ts';

/** Form fields of Camunda's deployment/create that are not resources. */
const NAMED_FIELDS = new Set([
  'deployment-name',
  'enable-duplicate-filtering',
  'deploy-changed-only',
  'deployment-source',
  'tenant-id',
  'deployment-activation-time',
]);

const isBpmn = (name: string) => /\.bpmn(20\.xml)?$/i.test(name);

export function deploymentRouter(engine: Engine): Router {
  const router = Router();

  router.post('/create', async (req, res) => {
    const parts = await readMultipart(req);
    const fields = new Map(
      parts.filter((p) => !p.isFile && NAMED_FIELDS.has(p.field)).map((p) => [p.field, p.content.toString('utf8')]),
    );
    const resources = parts.filter((p) => p.isFile || !NAMED_FIELDS.has(p.field));
    if (resources.length === 0) throw invalidRequest('No deployment resources contained in the form upload.');
    if (fields.get('tenant-id')) throw invalidRequest('Baton has no tenants: deploy without tenant-id');
    if (fields.get('deployment-activation-time'))
      throw invalidRequest('Baton activates a deployment when it is made: deploy without deployment-activation-time');
    const names = resources.map((r) => r.name);
    const twice = names.find((n, i) => names.indexOf(n) !== i);
    if (twice !== undefined) throw invalidRequest(`The deployment holds two resources named '${twice}': name each once`);
    const bpmn = resources.filter((r) => isBpmn(r.name));
    // The same limit as the native deploy (set by the security layer), before anything is compiled.
    const maxElements = (res.locals[BPMN_ELEMENT_LIMIT] as number | undefined) ?? DEFAULT_LIMITS.maxBpmnElements;
    for (const resource of bpmn) {
      const tooMany = bpmnElementsRefusal(resource.content.toString('utf8'), maxElements, resource.name);
      if (tooMany) return sendJson(res, 413, tooMany);
    }
    const changedOnly = readFormFlag(fields, 'deploy-changed-only');
    const result = await deployUpload(engine, {
      name: fields.get('deployment-name') ?? null,
      source: fields.get('deployment-source') ?? null,
      resources: resources.map((r) => ({ name: r.name, content: r.content })),
      processes: await compileAll(bpmn),
      // deploy-changed-only filters duplicates too, resource by resource.
      duplicateFiltering: readFormFlag(fields, 'enable-duplicate-filtering') || changedOnly,
      changedOnly,
    });
    const own = result.definitions.filter((d) => d.deployment_id === result.deployment.id);
    sendJson(res, 200, {
      ...deploymentView(result.deployment),
      deployedProcessDefinitions: own.length > 0 ? Object.fromEntries(own.map((d) => [d.id, definitionView(d)])) : null,
      deployedCaseDefinitions: null,
      deployedDecisionDefinitions: null,
      deployedDecisionRequirementsDefinitions: null,
    });
  });

  router.get('/', async (req, res) => {
    sendJson(res, 200, (await listCamundaDeployments(engine.pool, readDeploymentQuery(req.query))).map(deploymentView));
  });
  router.get('/count', async (req, res) => {
    sendJson(res, 200, { count: await countCamundaDeployments(engine.pool, readDeploymentQuery(req.query, false)) });
  });
  router.get('/:id', async (req, res) => {
    sendJson(res, 200, deploymentView(await deploymentOf(engine, String(req.params.id))));
  });
  router.delete('/:id', async (req, res) => {
    refuseUnknown(req.query, ['cascade', 'skipCustomListeners', 'skipIoMappings']);
    const id = String(req.params.id);
    const cascade = readFlag(req.query, 'cascade', 'query');
    // Baton runs no Java listeners and no mappings when it cancels: both skips hold either way.
    readFlag(req.query, 'skipCustomListeners', 'query');
    readFlag(req.query, 'skipIoMappings', 'query');
    const by = callerName(res);
    const result = isUuid(id)
      ? await deleteDeployment(engine, id, { cascade, ...(by ? { by } : {}) })
      : ({ ok: false, reason: 'not_found' } as const);
    if (result.ok) return sendNoContent(res);
    if (result.reason === 'not_found') throw notFound(`Deployment with id '${id}' does not exist`);
    if (result.reason === 'called')
      throw new CamundaError(
        409,
        'ProcessEngineException',
        `Process instance ${result.instanceId} of this deployment was started by call activity ${result.parentStepId} of ${result.parentInstanceId}, which belongs to another deployment: delete or cancel that instance first`,
      );
    throw new CamundaError(
      409,
      'ProcessEngineException',
      `Deletion of process definition without cascading failed: the deployment's definitions have ${result.total} instance(s), ${result.running} running. Delete with cascade=true to cancel and delete them with their history.`,
    );
  });
  router.get('/:id/resources', async (req, res) => {
    const d = await deploymentOf(engine, String(req.params.id));
    sendJson(res, 200, (await listResources(engine.pool, d.id)).map(resourceView));
  });
  router.get('/:id/resources/:resourceId', async (req, res) => {
    const r = await resourceOf(engine, String(req.params.id), String(req.params.resourceId));
    sendJson(res, 200, resourceView(r));
  });
  router.get('/:id/resources/:resourceId/data', async (req, res) => {
    const r = await resourceOf(engine, String(req.params.id), String(req.params.resourceId));
    res.status(200);
    res.setHeader('Content-Type', 'application/octet-stream');
    res.setHeader('Content-Disposition', `attachment; filename="${r.name.replace(/["\\\r\n]/g, '_')}"`);
    res.end(r.content);
  });

  return router;
}

function readFormFlag(fields: Map<string, string>, name: string): boolean {
  const v = fields.get(name);
  if (v === undefined || v === '' || v === 'false') return false;
  if (v === 'true') return true;
  throw invalidRequest(`Form field ${name} must be true or false`);
}

function refuseUnknown(query: Source, known: string[]): void {
  const unknown = Object.keys(query).filter((k) => !known.includes(k));
  if (unknown.length > 0)
    throw invalidRequest(`Unknown query parameter(s) ${unknown.join(', ')}: this route takes ${known.join(', ')}`);
}

const DEPLOYMENT_UNSUPPORTED = ['withSource', 'tenantIdIn', 'withoutTenantId', 'includeDeploymentsWithoutTenantId'];

function readDeploymentQuery(query: Source, paged = true): CamundaDeploymentQuery {
  refuseUnsupported(query, DEPLOYMENT_UNSUPPORTED, 'deployment');
  const q: CamundaDeploymentQuery = {
    sorting: paged ? readSorting(query, 'query', DEPLOYMENT_SORT_SQL, 'deployments') : [],
    ...(paged ? readPaging(query) : { firstResult: 0, maxResults: 0 }),
  };
  for (const name of ['id', 'name', 'nameLike', 'source'] as const) {
    const v = readText(query, name);
    if (v !== undefined) q[name] = v;
  }
  if (readFlag(query, 'withoutSource', 'query')) q.withoutSource = true;
  const before = readDate(query, 'before');
  const after = readDate(query, 'after');
  if (before) q.before = before;
  if (after) q.after = after;
  return q;
}

async function deploymentOf(engine: Engine, id: string): Promise<CamundaDeploymentRow> {
  const d = isUuid(id) ? await findDeployment(engine.pool, id) : undefined;
  if (!d) throw notFound(`Deployment with id '${id}' does not exist`);
  return d;
}

async function resourceOf(engine: Engine, id: string, resourceId: string) {
  const d = await deploymentOf(engine, id);
  const r = isUuid(resourceId) ? await readResource(engine.pool, d.id, resourceId) : undefined;
  if (!r) throw notFound(`Deployment resource with resource id '${resourceId}' for deployment id '${id}' does not exist`);
  return r;
}

/** Camunda's DeploymentDto: Baton has no tenants. */
function deploymentView(d: CamundaDeploymentRow) {
  return {
    links: [],
    id: d.id,
    name: d.name,
    source: d.source,
    deploymentTime: formatCamundaDate(d.deployed_at),
    tenantId: null,
  };
}

function resourceView(r: ResourceRow) {
  return { id: r.id, name: r.name, deploymentId: r.deployment_id };
}

/** Every executable process of every BPMN resource, compiled; or a 400 ParseException naming each resource's problems. */
async function compileAll(resources: FormPart[]): Promise<Upload['processes']> {
  const details: Record<string, { errors: unknown[]; warnings: unknown[] }> = {};
  const processes: Upload['processes'] = new Map();
  for (const r of resources) {
    const xml = r.content.toString('utf8');
    const results = await compileEveryProcess(xml);
    const failed = results.flatMap((c) => (c.ok ? [] : c.diagnostics));
    if (failed.length > 0)
      details[r.name] = {
        errors: failed.filter((d) => d.severity === 'error').map(problemView),
        warnings: failed.filter((d) => d.severity !== 'error').map(problemView),
      };
    else processes.set(r.name, { xml, compiled: results.map(refuseUncompiled) });
  }
  const names = Object.keys(details);
  if (names.length === 0) return processes;
  const summary = names
    .map((n) => `${n}: ${details[n]?.errors.map((e) => (e as { message: string }).message).join('; ')}`)
    .join(' | ');
  throw new CamundaError(400, 'ParseException', `Could not parse BPMN process. Errors in ${summary}`, { details });
}

function problemView(d: Diagnostic) {
  return { message: `${d.message} | ${d.elementId}`, line: 0, column: 0, mainElementId: d.elementId, elementIds: [d.elementId] };
}

function definitionView(d: DefinitionRow) {
  return {
    id: d.id,
    key: d.key,
    category: 'http://bpmn.io/schema/bpmn',
    description: null,
    name: d.plan.name ?? null,
    version: d.version,
    resource: d.resource_name,
    deploymentId: d.deployment_id,
    diagram: null,
    suspended: false,
    tenantId: null,
    versionTag: d.plan.versionTag ?? null,
    historyTimeToLive: null,
    startableInTasklist: true,
  };
}
