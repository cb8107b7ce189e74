// POST /engine-rest/deployment/create: every part other than the named fields is a
// resource; .bpmn resources are compiled and deployed, others are ignored. Nothing is
// deployed unless every BPMN resource compiles (400 ParseException naming element ids).
// GET /deployment[...]: a Baton deploy makes one definition, so a listed deployment is a
// definition (store/deployments.ts) with its XML as its one resource.
import { randomUUID } from 'node:crypto';
import { Router } from 'express';
import { compileBpmn } from '../../compiler/index.ts';
import type { Diagnostic } from '../../compiler/plan.ts';
import type { Engine } from '../../engine/context.ts';
import { deployDefinition } from '../../engine/definitions.ts';
import type { DefinitionRow } from '../../store/definitions.ts';
import { formatCamundaDate } from './dates.ts';
import { CamundaError, invalidRequest, notFound, sendJson } from './errors.ts';
import { findDefinitionById } from '../../store/definitions.ts';
import {
  countCamundaDeployments,
  DEPLOYMENT_SORT_SQL,
  listCamundaDeployments,
  type CamundaDeploymentQuery,
  type CamundaDeploymentRow,
} from '../store/deployments.ts';
import { readDate, readPaging, readSorting, readText, refuseUnsupported, type Source } from './query-params.ts';
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
    const bpmn = resources.filter((r) => isBpmn(r.name));
    // The same limit as the native deploy (set by the security layer), before anything is compiled.
    const maxElements = (res.locals[BPMN_ELEMENT_LIMIT] as number | undefined) ?? DEFAULT_LIMITS.maxBpmnElements;
    for (const resource of bpmn) {
      const tooMany = bpmnElementsRefusal(resource.content.toString('utf8'), maxElements, resource.name);
      if (tooMany) return sendJson(res, 413, tooMany);
    }
    await checkAllCompile(bpmn);
    const deploymentId = randomUUID();
    const deployed: Record<string, ReturnType<typeof definitionView>> = {};
    for (const resource of bpmn) {
      const { definition } = await deployDefinition(engine, resource.content.toString('utf8'));
      deployed[definition.id] = definitionView(definition, resource.name, deploymentId);
    }
    sendJson(res, 200, {
      links: [],
      id: deploymentId,
      name: fields.get('deployment-name') ?? null,
      source: fields.get('deployment-source') ?? null,
      deploymentTime: formatCamundaDate(new Date()),
      tenantId: null,
      deployedProcessDefinitions: deployed,
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
  router.get('/:id/resources', async (req, res) => {
    sendJson(res, 200, [resourceView(await deploymentOf(engine, String(req.params.id)))]);
  });
  router.get('/:id/resources/:resourceId', async (req, res) => {
    sendJson(res, 200, resourceView(await resourceOf(engine, String(req.params.id), String(req.params.resourceId))));
  });
  router.get('/:id/resources/:resourceId/data', async (req, res) => {
    const d = await resourceOf(engine, String(req.params.id), String(req.params.resourceId));
    const xml = (await findDefinitionById(engine.pool, d.id))?.xml ?? '';
    res.status(200);
    res.setHeader('Content-Type', 'application/octet-stream');
    res.setHeader('Content-Disposition', `attachment; filename="${d.key.replace(/["\\\r\n]/g, '_')}.bpmn"`);
    res.end(Buffer.from(xml, 'utf8'));
  });

  return router;
}

const DEPLOYMENT_UNSUPPORTED = [
  'source',
  'withoutSource',
  'withSource',
  'tenantIdIn',
  'withoutTenantId',
  'includeDeploymentsWithoutTenantId',
];

function readDeploymentQuery(query: Source, paged = true): CamundaDeploymentQuery {
  refuseUnsupported(query, DEPLOYMENT_UNSUPPORTED, 'deployment');
  const q: CamundaDeploymentQuery = {
    sorting: paged ? readSorting(query, 'query', DEPLOYMENT_SORT_SQL, 'deployments') : [],
    ...(paged ? readPaging(query) : { firstResult: 0, maxResults: 0 }),
  };
  for (const name of ['id', 'name', 'nameLike'] as const) {
    const v = readText(query, name);
    if (v !== undefined) q[name] = v;
  }
  const before = readDate(query, 'before');
  const after = readDate(query, 'after');
  if (before) q.before = before;
  if (after) q.after = after;
  return q;
}

async function deploymentOf(engine: Engine, id: string): Promise<CamundaDeploymentRow> {
  const [d] = await listCamundaDeployments(engine.pool, { id, sorting: [], firstResult: 0, maxResults: 1 });
  if (!d) throw notFound(`Deployment with id '${id}' does not exist`);
  return d;
}

/** The one resource of a deployment has the definition's id too. */
async function resourceOf(engine: Engine, id: string, resourceId: string): Promise<CamundaDeploymentRow> {
  const d = await deploymentOf(engine, id);
  if (resourceId !== d.id)
    throw notFound(`Deployment resource with resource id '${resourceId}' for deployment id '${id}' does not exist`);
  return d;
}

/** Camunda's DeploymentDto: named after the process key, with no source or tenant. */
function deploymentView(d: CamundaDeploymentRow) {
  return {
    links: [],
    id: d.id,
    name: d.key,
    source: null,
    deploymentTime: formatCamundaDate(d.deployed_at),
    tenantId: null,
  };
}

/** The resource name processDefinitionView answers: `<key>.bpmn`. */
function resourceView(d: CamundaDeploymentRow) {
  return { id: d.id, name: `${d.key}.bpmn`, deploymentId: d.id };
}

async function checkAllCompile(resources: FormPart[]): Promise<void> {
  const details: Record<string, { errors: unknown[]; warnings: unknown[] }> = {};
  for (const r of resources) {
    const compiled = await compileBpmn(r.content.toString('utf8'));
    if (!compiled.ok)
      details[r.name] = {
        errors: compiled.diagnostics.filter((d) => d.severity === 'error').map(problemView),
        warnings: compiled.diagnostics.filter((d) => d.severity !== 'error').map(problemView),
      };
  }
  const names = Object.keys(details);
  if (names.length === 0) return;
  const summary = names
    .map((n) => `${n}: ${details[n]?.errors.map((e) => (e as { message: string }).message).join('; ')}`)
    .join(' | ');
  throw new CamundaError(400, 'ParseException', `Could not parse BPMN process. Errors in ${summary}`, { details });
}

function problemView(d: Diagnostic) {
  return { message: `${d.message} | ${d.elementId}`, line: 0, column: 0, mainElementId: d.elementId, elementIds: [d.elementId] };
}

function definitionView(d: DefinitionRow, resource: string, deploymentId: string) {
  return {
    id: d.id,
    key: d.key,
    category: 'http://bpmn.io/schema/bpmn',
    description: null,
    name: d.plan.name ?? null,
    version: d.version,
    resource,
    deploymentId,
    diagram: null,
    suspended: false,
    tenantId: null,
    versionTag: null,
    historyTimeToLive: null,
    startableInTasklist: true,
  };
}
