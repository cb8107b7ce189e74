// /engine-rest/incident and /engine-rest/history: the open incidents as Camunda's runtime lists
// them; every instance, ended ones included, its activity instances and its variables, as
// Camunda's history does.
import { Router, type Response } from 'express';
import type { Engine } from '../../engine/context.ts';
import {
  countCamundaHistoricInstances,
  countCamundaIncidents,
  listCamundaHistoricInstances,
  listCamundaIncidents,
  type CamundaHistoricInstanceRow,
  type CamundaIncidentRow,
} from '../store/process-queries.ts';
import {
  countCamundaActivityInstances,
  countCamundaVariableInstances,
  listCamundaActivityInstances,
  listCamundaVariableInstances,
  type CamundaActivityInstanceRow,
  type CamundaVariableInstanceRow,
} from '../store/history-queries.ts';
import { readActivityInstanceQuery, readVariableInstanceQuery } from './history-query.ts';
import { renderVariables } from './variables.ts';
import { formatCamundaDate } from './dates.ts';
import { notFound, sendJson, sendNoContent } from './errors.ts';
import { validateCamundaBody } from './validate.ts';
import { annotateIncident } from '../../store/incidents.ts';
import { isUuid } from '../../shared/validate.ts';
import { camundaIncidentType, readHistoricIncidentQuery, readHistoricInstanceQuery, readIncidentQuery } from './process-query.ts';
import { bodyObject, type Source } from './query-params.ts';

export function incidentRouter(engine: Engine): Router {
  const router = Router();
  router.get('/', async (req, res) => {
    sendJson(res, 200, (await listCamundaIncidents(engine.pool, readIncidentQuery(req.query))).map(incidentView));
  });
  router.get('/count', async (req, res) => {
    sendJson(res, 200, { count: await countCamundaIncidents(engine.pool, readIncidentQuery(req.query)) });
  });
  router.get('/:id', async (req, res) => {
    const id = String(req.params.id);
    const [row] = await listCamundaIncidents(engine.pool, { incidentId: id, sorting: [], firstResult: 0, maxResults: 1 });
    if (!row) throw notFound(`Incident with id ${id} does not exist`);
    sendJson(res, 200, incidentView(row));
  });
  const annotate = async (id: string, annotation: string | null) => {
    const found = isUuid(id) ? await annotateIncident(engine.pool, { incidentId: id, annotation }) : undefined;
    if (!found) throw notFound(`Incident with id ${id} does not exist`);
  };
  router.put('/:id/annotation', async (req, res) => {
    const body = validateCamundaBody<{ annotation?: string | null }>('annotation-request', req.body ?? {});
    await annotate(String(req.params.id), body.annotation ?? null);
    sendNoContent(res);
  });
  router.delete('/:id/annotation', async (req, res) => {
    await annotate(String(req.params.id), null);
    sendNoContent(res);
  });
  return router;
}

export function historyRouter(engine: Engine): Router {
  const router = Router();
  router.get('/incident', async (req, res) => {
    sendJson(res, 200, (await listCamundaIncidents(engine.pool, readHistoricIncidentQuery(req.query))).map(historicIncidentView));
  });
  router.get('/incident/count', async (req, res) => {
    sendJson(res, 200, { count: await countCamundaIncidents(engine.pool, readHistoricIncidentQuery(req.query)) });
  });
  const list = async (res: Response, input: Source, from: 'query' | 'body', paging: Source) => {
    const rows = await listCamundaHistoricInstances(engine.pool, readHistoricInstanceQuery(input, from, paging));
    sendJson(res, 200, rows.map(historicInstanceView));
  };
  const count = async (res: Response, input: Source, from: 'query' | 'body') => {
    sendJson(res, 200, { count: await countCamundaHistoricInstances(engine.pool, readHistoricInstanceQuery(input, from, {})) });
  };
  router.get('/process-instance', (req, res) => list(res, req.query, 'query', req.query));
  router.post('/process-instance', (req, res) => list(res, bodyObject(req.body), 'body', req.query));
  router.get('/process-instance/count', (req, res) => count(res, req.query, 'query'));
  router.post('/process-instance/count', (req, res) => count(res, bodyObject(req.body), 'body'));
  router.get('/process-instance/:id', async (req, res) => {
    const id = String(req.params.id);
    const [row] = await listCamundaHistoricInstances(engine.pool, {
      processInstanceId: id,
      sorting: [],
      firstResult: 0,
      maxResults: 1,
    });
    if (!row) throw notFound(`Historic process instance with id ${id} does not exist`);
    sendJson(res, 200, historicInstanceView(row));
  });

  const activities = async (res: Response, input: Source, from: 'query' | 'body', paging: Source) => {
    const rows = await listCamundaActivityInstances(engine.pool, readActivityInstanceQuery(input, from, paging));
    sendJson(res, 200, rows.map(activityInstanceView));
  };
  const countActivities = async (res: Response, input: Source, from: 'query' | 'body') => {
    sendJson(res, 200, { count: await countCamundaActivityInstances(engine.pool, readActivityInstanceQuery(input, from, {})) });
  };
  router.get('/activity-instance', (req, res) => activities(res, req.query, 'query', req.query));
  router.post('/activity-instance', (req, res) => activities(res, bodyObject(req.body), 'body', req.query));
  router.get('/activity-instance/count', (req, res) => countActivities(res, req.query, 'query'));
  router.post('/activity-instance/count', (req, res) => countActivities(res, bodyObject(req.body), 'body'));
  router.get('/activity-instance/:id', async (req, res) => {
    const id = String(req.params.id);
    const [row] = await listCamundaActivityInstances(engine.pool, {
      activityInstanceId: id,
      sorting: [],
      firstResult: 0,
      maxResults: 1,
    });
    if (!row) throw notFound(`Historic activity instance with id ${id} does not exist`);
    sendJson(res, 200, activityInstanceView(row));
  });

  const variables = async (res: Response, input: Source, from: 'query' | 'body', paging: Source) => {
    const rows = await listCamundaVariableInstances(engine.pool, readVariableInstanceQuery(input, from, paging));
    sendJson(res, 200, rows.map(variableInstanceView));
  };
  const countVariables = async (res: Response, input: Source, from: 'query' | 'body') => {
    sendJson(res, 200, { count: await countCamundaVariableInstances(engine.pool, readVariableInstanceQuery(input, from, {})) });
  };
  router.get('/variable-instance', (req, res) => variables(res, req.query, 'query', req.query));
  router.post('/variable-instance', (req, res) => variables(res, bodyObject(req.body), 'body', req.query));
  router.get('/variable-instance/count', (req, res) => countVariables(res, req.query, 'query'));
  router.post('/variable-instance/count', (req, res) => countVariables(res, bodyObject(req.body), 'body'));
  return router;
}

/** Camunda's IncidentDto: the configuration of a failed external task is the task's id. */
function incidentView(x: CamundaIncidentRow) {
  return {
    id: x.id,
    processDefinitionId: x.definition_id,
    processInstanceId: x.instance_id,
    executionId: x.instance_id,
    incidentTimestamp: formatCamundaDate(x.created_at),
    incidentType: camundaIncidentType(x.kind),
    activityId: x.step_id,
    failedActivityId: x.step_id,
    causeIncidentId: x.id,
    rootCauseIncidentId: x.id,
    configuration: x.task_id,
    tenantId: null,
    incidentMessage: x.message,
    jobDefinitionId: null,
    annotation: x.annotation,
  };
}

/** Camunda's HistoricIncidentDto: an incident Baton resolved (retried, or ended with its instance) is resolved. */
function historicIncidentView(x: CamundaIncidentRow) {
  const open = x.status === 'open';
  return {
    id: x.id,
    processDefinitionKey: x.definition_key,
    processDefinitionId: x.definition_id,
    processInstanceId: x.instance_id,
    executionId: x.instance_id,
    rootProcessInstanceId: x.instance_id,
    createTime: formatCamundaDate(x.created_at),
    endTime: open ? null : formatCamundaDate(x.resolved_at),
    removalTime: null,
    incidentType: camundaIncidentType(x.kind),
    activityId: x.step_id,
    failedActivityId: x.step_id,
    causeIncidentId: x.id,
    rootCauseIncidentId: x.id,
    configuration: x.task_id,
    historyConfiguration: x.task_id,
    incidentMessage: x.message,
    tenantId: null,
    jobDefinitionId: null,
    open,
    deleted: false,
    resolved: !open,
    annotation: x.annotation,
  };
}

const HISTORIC_STATE: Record<string, string> = {
  completed: 'COMPLETED',
  canceled: 'EXTERNALLY_TERMINATED',
  compensated: 'INTERNALLY_TERMINATED',
};

/** Camunda's HistoricProcessInstanceDto: running, in an incident or compensating is ACTIVE. */
function historicInstanceView(i: CamundaHistoricInstanceRow) {
  return {
    id: i.id,
    businessKey: i.business_key,
    processDefinitionId: i.definition_id,
    processDefinitionKey: i.definition_key,
    processDefinitionName: i.definition_name,
    processDefinitionVersion: i.definition_version,
    startTime: formatCamundaDate(i.created_at),
    endTime: formatCamundaDate(i.ended_at),
    removalTime: null,
    durationInMillis: i.ended_at ? i.ended_at.getTime() - i.created_at.getTime() : null,
    startUserId: null,
    startActivityId: null,
    deleteReason: i.status === 'canceled' ? 'canceled' : null,
    rootProcessInstanceId: i.id,
    superProcessInstanceId: i.parent_instance_id,
    superCaseInstanceId: null,
    caseInstanceId: null,
    tenantId: null,
    state: HISTORIC_STATE[i.status] ?? 'ACTIVE',
  };
}

/**
 * Camunda's HistoricActivityInstanceDto. The execution is the instance; the parent is the
 * enclosing subprocess's activity instance, or the instance itself (Camunda's root activity
 * instance has the process instance's id).
 */
function activityInstanceView(a: CamundaActivityInstanceRow) {
  return {
    id: a.id,
    parentActivityInstanceId: a.scope ? `${a.scope}:${a.instance_id}` : a.instance_id,
    activityId: a.step_id,
    activityName: a.activity_name,
    activityType: a.activity_type,
    processDefinitionKey: a.definition_key,
    processDefinitionId: a.definition_id,
    processInstanceId: a.instance_id,
    executionId: a.instance_id,
    taskId: a.user_task_id,
    assignee: a.assignee,
    calledProcessInstanceId: a.called_instance_id,
    calledCaseInstanceId: null,
    startTime: formatCamundaDate(a.activated_at),
    endTime: formatCamundaDate(a.ended_at),
    durationInMillis: a.ended_at ? a.ended_at.getTime() - a.activated_at.getTime() : null,
    canceled: a.status === 'canceled',
    completeScope: a.complete_scope,
    tenantId: null,
    removalTime: null,
    rootProcessInstanceId: a.instance_id,
  };
}

/** Camunda's HistoricVariableInstanceDto: typed as /process-instance/{id}/variables types it. */
function variableInstanceView(v: CamundaVariableInstanceRow) {
  const stored = v.type ? [{ name: v.name, type: v.type, value_info: v.value_info ?? {}, content: v.content }] : [];
  const typed = renderVariables({ [v.name]: v.value }, stored)[v.name] ?? { type: 'Null', value: null, valueInfo: {} };
  return {
    id: `${v.instance_id}:${v.name}`,
    name: v.name,
    type: typed.type,
    value: typed.value,
    valueInfo: typed.valueInfo,
    processDefinitionKey: v.definition_key,
    processDefinitionId: v.definition_id,
    processInstanceId: v.instance_id,
    executionId: v.instance_id,
    activityInstanceId: v.instance_id,
    caseDefinitionKey: null,
    caseDefinitionId: null,
    caseInstanceId: null,
    caseExecutionId: null,
    taskId: null,
    errorMessage: null,
    tenantId: null,
    state: 'CREATED',
    createTime: formatCamundaDate(v.written_at ?? v.created_at),
    removalTime: null,
    rootProcessInstanceId: v.instance_id,
  };
}
