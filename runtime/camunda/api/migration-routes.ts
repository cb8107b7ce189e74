// /engine-rest/migration: Camunda 7's generate, validate, execute and executeAsync on Baton's
// migration. Baton migrates an instance between versions of its own process, so a plan's two
// definitions must share a key (400 otherwise). execute dry runs every instance first and moves
// none when one is refused (Camunda's execute is all or nothing); executeAsync is a Baton
// `migrate` batch over every instance of the source version.
import { Router } from 'express';
import type { Engine } from '../../engine/context.ts';
import { createBatch } from '../../engine/batches.ts';
import {
  generateInstructions,
  loadVersionPair,
  mappingOf,
  migrateInstances,
  validateInstructions,
  type CamundaMigrationPlan,
  type InstructionReport,
} from '../engine/migration.ts';
import { listCamundaInstances } from '../store/process-queries.ts';
import type { Caller } from '../../security/auth.ts';
import type { DefinitionRow } from '../../store/definitions.ts';
import { batchDtoView } from './batch-views.ts';
import { CamundaError, invalidRequest, sendJson, sendNoContent } from './errors.ts';
import { readInstanceQuery } from './process-query.ts';
import { validateCamundaBody } from './validate.ts';

interface GenerateBody {
  sourceProcessDefinitionId: string;
  targetProcessDefinitionId: string;
  updateEventTriggers?: boolean | null;
  variables?: Record<string, unknown> | null;
}

interface ExecuteBody {
  migrationPlan: CamundaMigrationPlan;
  processInstanceIds?: string[] | null;
  processInstanceQuery?: Record<string, unknown> | null;
  /** either way: a Baton migration enters and leaves no scope, so there is no listener or io mapping to run */
  skipCustomListeners?: boolean | null;
  skipIoMappings?: boolean | null;
}

/** Most instances one synchronous execute selects; more belong in executeAsync. */
const MAX_SYNC_INSTANCES = 1000;

/** `onBatchCreated` pokes this node's batch runner, so an executeAsync batch starts at once. */
export function migrationRouter(engine: Engine, onBatchCreated: () => void = () => {}): Router {
  const router = Router();

  router.post('/generate', async (req, res) => {
    const body = validateCamundaBody<GenerateBody>('migration-generate-request', req.body ?? {});
    refuseVariables(body.variables);
    if (body.updateEventTriggers) throw invalidRequest(UPDATE_EVENT_TRIGGER);
    const { source, target } = await versions(engine, body.sourceProcessDefinitionId, body.targetProcessDefinitionId);
    sendJson(res, 200, {
      sourceProcessDefinitionId: source.id,
      targetProcessDefinitionId: target.id,
      instructions: generateInstructions(source, target),
      variables: null,
    });
  });

  router.post('/validate', async (req, res) => {
    const plan = validateCamundaBody<CamundaMigrationPlan>('migration-plan', req.body ?? {});
    refuseVariables(plan.variables);
    const { source, target } = await versions(engine, plan.sourceProcessDefinitionId, plan.targetProcessDefinitionId);
    sendJson(res, 200, { instructionReports: validateInstructions(source, target, plan.instructions), variableReports: {} });
  });

  router.post('/execute', async (req, res) => {
    const body = validateCamundaBody<ExecuteBody>('migration-execution-request', req.body ?? {});
    const { target, mapping, instanceIds } = await checkedExecution(engine, body);
    const done = await migrateInstances(engine, { instanceIds, version: target.version, mapping, by: callerName(res.locals) });
    if (done.ok) return sendNoContent(res);
    const [first] = done.refusals;
    throw new CamundaError(
      400,
      'MigratingProcessInstanceValidationException',
      `Cannot migrate process instance '${first?.instanceId}':\n\t${first?.failures.join('\n\t')}` +
        (done.migrated > 0 ? `\n(${done.migrated} instances before it were migrated)` : ''),
      {
        validationReport: {
          processInstanceId: first?.instanceId,
          failures: first?.failures ?? [],
          activityInstanceValidationReports: [],
          transitionInstanceValidationReports: [],
        },
        refusals: done.refusals,
      },
    );
  });

  router.post('/executeAsync', async (req, res) => {
    const body = validateCamundaBody<ExecuteBody>('migration-execution-request', req.body ?? {});
    const { source, target, reports } = await checkedPlan(engine, body.migrationPlan);
    refuseFailures(reports);
    // A Baton batch runs over an instance search, not a list of ids: every instance of the source version.
    const query = body.processInstanceQuery ?? {};
    const narrowing = Object.entries(query).filter(
      ([name, v]) => v !== null && v !== undefined && !(name === 'processDefinitionId' && v === source.id),
    );
    if ((body.processInstanceIds ?? []).length > 0 || narrowing.length > 0)
      throw invalidRequest(
        `executeAsync migrates every instance of the source definition (a Baton batch runs over a search): give processInstanceQuery {processDefinitionId: "${source.id}"} only, or use /migration/execute for chosen instances (${narrowing.map(([n]) => n).join(', ') || 'processInstanceIds'} given)`,
      );
    const batch = await createBatch(engine, {
      operation: 'migrate',
      filter: { definitionKey: source.key, version: source.version },
      options: { version: target.version, mapping: mappingOf(body.migrationPlan.instructions) },
      createdBy: callerName(res.locals) ?? null,
    });
    if (batch.state === 'running') onBatchCreated();
    sendJson(res, 200, batchDtoView(batch));
  });

  return router;
}

const UPDATE_EVENT_TRIGGER = 'updateEventTrigger is not supported: a migrated wait keeps the trigger it subscribed with';

async function versions(engine: Engine, sourceId: string, targetId: string) {
  const pair = await loadVersionPair(engine, sourceId, targetId);
  if (pair.ok) return pair;
  if (pair.reason === 'not_found') throw invalidRequest(`Process definition with id ${pair.id} does not exist`);
  throw invalidRequest(
    `Baton migrates an instance between versions of its own process: the source is ${pair.sourceKey} and the target ${pair.targetKey}`,
  );
}

async function checkedPlan(engine: Engine, plan: CamundaMigrationPlan) {
  refuseVariables(plan.variables);
  const pair = await versions(engine, plan.sourceProcessDefinitionId, plan.targetProcessDefinitionId);
  if (pair.source.id === pair.target.id)
    throw invalidRequest(`The source and target process definitions are both ${pair.source.id}: nothing to migrate`);
  return { ...pair, reports: validateInstructions(pair.source, pair.target, plan.instructions) };
}

/** The plan, options and instances of an execute, every one checked before anything moves. */
async function checkedExecution(
  engine: Engine,
  body: ExecuteBody,
): Promise<{ target: DefinitionRow; mapping: Record<string, string>; instanceIds: string[] }> {
  const { source, target, reports } = await checkedPlan(engine, body.migrationPlan);
  refuseFailures(reports);
  const ids = new Set(body.processInstanceIds ?? []);
  if (body.processInstanceQuery) {
    const q = readInstanceQuery(body.processInstanceQuery, 'body', { maxResults: String(MAX_SYNC_INSTANCES + 1) });
    for (const row of await listCamundaInstances(engine.pool, q)) ids.add(row.id);
  }
  if (ids.size === 0)
    throw invalidRequest('Process instance ids cannot be empty: give processInstanceIds or processInstanceQuery');
  if (ids.size > MAX_SYNC_INSTANCES)
    throw invalidRequest(`More than ${MAX_SYNC_INSTANCES} instances selected: use /migration/executeAsync`);
  const found = await listCamundaInstances(engine.pool, {
    processInstanceIds: [...ids],
    sorting: [],
    firstResult: 0,
    maxResults: ids.size,
  });
  const byId = new Map(found.map((r) => [r.id, r]));
  const problems = [...ids].flatMap((id) => {
    const row = byId.get(id);
    if (!row) return [`Process instance ${id} does not exist or has ended`];
    if (row.definition_id !== source.id)
      return [`Process instance ${id} runs definition ${row.definition_id}, not the plan's source ${source.id}`];
    return [];
  });
  if (problems.length > 0) throw invalidRequest(problems.join('; '));
  return { target, mapping: mappingOf(body.migrationPlan.instructions), instanceIds: [...ids] };
}

function refuseFailures(reports: InstructionReport[]): void {
  const failed = reports.filter((r) => r.failures.length > 0);
  if (failed.length === 0) return;
  const lines = failed.map(
    (r) =>
      `ActivityMigrationInstruction[sourceActivityId='${r.instruction.sourceActivityIds.join(',')}', targetActivityId='${r.instruction.targetActivityIds.join(',')}']: ${r.failures.join(', ')}`,
  );
  throw new CamundaError(400, 'MigrationPlanValidationException', `Migration plan is not valid:\n\t${lines.join('\n\t')}`, {
    validationReport: { instructionReports: reports, variableReports: {} },
  });
}

function refuseVariables(variables: Record<string, unknown> | null | undefined): void {
  if (variables && Object.keys(variables).length > 0)
    throw invalidRequest('Migration plan variables are not supported: set them with POST /process-instance/{id}/variables');
}

function callerName(locals: Record<string, unknown>): string | undefined {
  return (locals.caller as Caller | undefined)?.name;
}
