// /engine-rest/history/external-task-log: each external task's creation, failures, success and
// deletion as Camunda's history logs them, from the task rows and their history events.
import { Router, type Response } from 'express';
import type { Engine } from '../../engine/context.ts';
import {
  countCamundaExternalTaskLog,
  EXTERNAL_TASK_LOG_SORT_SQL,
  ExternalTaskLogKind,
  listCamundaExternalTaskLog,
  type CamundaExternalTaskLogQuery,
  type CamundaExternalTaskLogRow,
} from '../store/external-task-log.ts';
import { formatCamundaDate } from './dates.ts';
import { invalidRequest, notFound, sendJson } from './errors.ts';
import {
  bodyObject,
  readFlag,
  readInt,
  readNames,
  readPaging,
  readSorting,
  readText,
  refuseUnsupported,
  type Source,
} from './query-params.ts';

export function externalTaskLogRouter(engine: Engine): Router {
  const router = Router();
  const list = async (res: Response, input: Source, from: 'query' | 'body', paging: Source) => {
    const rows = await listCamundaExternalTaskLog(engine.pool, readExternalTaskLogQuery(input, from, paging));
    sendJson(res, 200, rows.map(externalTaskLogView));
  };
  const count = async (res: Response, input: Source, from: 'query' | 'body') => {
    sendJson(res, 200, { count: await countCamundaExternalTaskLog(engine.pool, readExternalTaskLogQuery(input, from, {})) });
  };
  router.get('/', (req, res) => list(res, req.query, 'query', req.query));
  router.post('/', (req, res) => list(res, bodyObject(req.body), 'body', req.query));
  router.get('/count', (req, res) => count(res, req.query, 'query'));
  router.post('/count', (req, res) => count(res, bodyObject(req.body), 'body'));
  router.get('/:id', async (req, res) => {
    const id = String(req.params.id);
    const [row] = await listCamundaExternalTaskLog(engine.pool, { logId: id, sorting: [], firstResult: 0, maxResults: 1 });
    if (!row) throw notFound(`Historic external task log with id ${id} does not exist`);
    sendJson(res, 200, externalTaskLogView(row));
  });
  return router;
}

const KIND_FLAGS = {
  creationLog: ExternalTaskLogKind.creation,
  failureLog: ExternalTaskLogKind.failure,
  successLog: ExternalTaskLogKind.success,
  deletionLog: ExternalTaskLogKind.deletion,
} as const;

export function readExternalTaskLogQuery(input: Source, from: 'query' | 'body', paging: Source): CamundaExternalTaskLogQuery {
  // withoutTenantId filters nothing: no task belongs to a tenant.
  refuseUnsupported(input, ['tenantIdIn'], 'historic external task log');
  readFlag(input, 'withoutTenantId', from);
  const q: CamundaExternalTaskLogQuery = {
    sorting: readSorting(input, from, EXTERNAL_TASK_LOG_SORT_SQL, 'historic external task logs'),
    ...readPaging(paging),
  };
  for (const name of [
    'logId',
    'externalTaskId',
    'topicName',
    'workerId',
    'errorMessage',
    'processInstanceId',
    'processDefinitionId',
    'processDefinitionKey',
  ] as const) {
    const text = readText(input, name);
    if (text !== undefined) q[name] = text;
  }
  for (const name of ['activityIdIn', 'activityInstanceIdIn', 'executionIdIn'] as const)
    if (input[name] !== undefined && input[name] !== null) q[name] = readNames(input, name, from);
  for (const name of ['priorityLowerThanOrEquals', 'priorityHigherThanOrEquals'] as const) {
    const n = readInt(input, name, from);
    if (n !== undefined) q[name] = n;
  }
  // Camunda keeps one of these (the last it applies); Baton refuses the mix rather than pick one.
  const kinds = Object.entries(KIND_FLAGS).filter(([name]) => readFlag(input, name, from));
  if (kinds.length > 1)
    throw invalidRequest(
      `Only one of ${Object.keys(KIND_FLAGS).join(', ')} can be true, got ${kinds.map(([n]) => n).join(', ')}`,
    );
  if (kinds[0]) q.kinds = [kinds[0][1]];
  return q;
}

/** Camunda's HistoricExternalTaskLogDto: the execution is the instance. */
function externalTaskLogView(l: CamundaExternalTaskLogRow) {
  return {
    id: l.id,
    externalTaskId: l.task_id,
    timestamp: formatCamundaDate(l.at),
    topicName: l.topic,
    workerId: l.worker_id,
    retries: l.retries,
    priority: l.priority,
    errorMessage: l.error_message,
    activityId: l.step_id,
    activityInstanceId: `${l.step_id}:${l.task_id}`,
    executionId: l.instance_id,
    processInstanceId: l.instance_id,
    processDefinitionId: l.definition_id,
    processDefinitionKey: l.definition_key,
    tenantId: null,
    creationLog: l.kind === ExternalTaskLogKind.creation,
    failureLog: l.kind === ExternalTaskLogKind.failure,
    successLog: l.kind === ExternalTaskLogKind.success,
    deletionLog: l.kind === ExternalTaskLogKind.deletion,
    removalTime: null,
    rootProcessInstanceId: l.instance_id,
  };
}
