// /engine-rest/incident and /engine-rest/history/process-instance: the open incidents as
// Camunda's runtime lists them, and every instance, ended ones included, as its history does.
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
import { formatCamundaDate } from './dates.ts';
import { notFound, sendJson } from './errors.ts';
import { camundaIncidentType, readHistoricInstanceQuery, readIncidentQuery } from './process-query.ts';
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
  return router;
}

export function historyRouter(engine: Engine): Router {
  const router = Router();
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
    annotation: null,
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
