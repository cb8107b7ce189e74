// Query parameters of /engine-rest/process-definition, /process-instance, /incident and
// /history/process-instance lists and counts.
import {
  DEFINITION_SORT_SQL,
  HISTORIC_INSTANCE_SORT_SQL,
  INCIDENT_SORT_SQL,
  INSTANCE_SORT_SQL,
  type CamundaDefinitionQuery,
  type CamundaHistoricInstanceQuery,
  type CamundaIncidentQuery,
  type CamundaInstanceQuery,
} from '../store/process-queries.ts';
import {
  readDate,
  readFlag,
  readInt,
  readNames,
  readPaging,
  readSorting,
  readText,
  refuseUnsupported,
  type Source,
} from './query-params.ts';
import { invalidRequest } from './errors.ts';

const DEFINITION_UNSUPPORTED = [
  'deployedAfter',
  'deployedAt',
  'category',
  'categoryLike',
  'startableBy',
  'incidentId',
  'incidentType',
  'incidentMessage',
  'incidentMessageLike',
  'tenantIdIn',
  'versionTagLike',
  'withoutVersionTag',
  'startableInTasklist',
  'notStartableInTasklist',
  'startablePermissionCheck',
  'keyLike',
] as const;

const INSTANCE_UNSUPPORTED = [
  'caseInstanceId',
  'superProcessInstance',
  'subProcessInstance',
  'superCaseInstance',
  'subCaseInstance',
  'processDefinitionKeyNotIn',
  'deploymentId',
  'incidentId',
  'incidentType',
  'incidentMessage',
  'incidentMessageLike',
  'tenantIdIn',
  'activityIdIn',
  'rootProcessInstances',
  'leafProcessInstances',
  'variables',
  'orQueries',
] as const;

export function readDefinitionQuery(query: Source): CamundaDefinitionQuery {
  refuseUnsupported(query, DEFINITION_UNSUPPORTED, 'process definition');
  const q: CamundaDefinitionQuery = {
    sorting: readSorting(query, 'query', DEFINITION_SORT_SQL, 'process definitions'),
    ...readPaging(query),
  };
  for (const name of [
    'processDefinitionId',
    'key',
    'name',
    'nameLike',
    'versionTag',
    'deploymentId',
    'resourceName',
    'resourceNameLike',
  ] as const) {
    const v = query[name];
    if (typeof v === 'string') q[name] = v;
  }
  const keys = readNames(query, 'keysIn', 'query');
  if (keys.length > 0) q.keysIn = keys;
  const version = readInt(query, 'version', 'query');
  if (version !== undefined) q.version = version;
  if (readFlag(query, 'latestVersion', 'query')) q.latestVersion = true;
  if (readFlag(query, 'suspended', 'query')) q.suspended = true;
  return q;
}

export function readInstanceQuery(input: Source, from: 'query' | 'body', paging: Source): CamundaInstanceQuery {
  refuseUnsupported(input, INSTANCE_UNSUPPORTED, 'process instance');
  const q: CamundaInstanceQuery = {
    sorting: readSorting(input, from, INSTANCE_SORT_SQL, 'process instances'),
    ...readPaging(paging),
  };
  for (const name of ['businessKey', 'businessKeyLike', 'processDefinitionId', 'processDefinitionKey'] as const) {
    const text = readText(input, name);
    if (text !== undefined) q[name] = text;
  }
  if (input.processInstanceIds !== undefined && input.processInstanceIds !== null)
    q.processInstanceIds = readNames(input, 'processInstanceIds', from);
  const keysIn = readNames(input, 'processDefinitionKeyIn', from);
  if (keysIn.length > 0) q.processDefinitionKeyIn = keysIn;
  if (readFlag(input, 'withIncident', from)) q.withIncident = true;
  const suspended = readFlag(input, 'suspended', from);
  const active = readFlag(input, 'active', from);
  if (suspended && active) throw invalidRequest('suspended and active exclude each other: give one');
  if (suspended) q.suspended = true;
  if (active) q.suspended = false;
  return q;
}

/** Camunda's incident type of a Baton incident kind: a failed task is Camunda's failedExternalTask; the other kinds keep their names. */
export function camundaIncidentType(kind: string): string {
  return kind === 'task_failed' ? 'failedExternalTask' : kind;
}

export function readIncidentQuery(query: Source): CamundaIncidentQuery {
  refuseUnsupported(
    query,
    [
      'tenantIdIn',
      'jobDefinitionIdIn',
      'causeIncidentId',
      'rootCauseIncidentId',
      'executionId',
      'failedActivityId',
      'incidentTimestampBefore',
      'incidentTimestampAfter',
      'annotation',
    ],
    'incident',
  );
  const q: CamundaIncidentQuery = { sorting: readSorting(query, 'query', INCIDENT_SORT_SQL, 'incidents'), ...readPaging(query) };
  for (const name of [
    'incidentId',
    'incidentMessage',
    'incidentMessageLike',
    'processInstanceId',
    'processDefinitionId',
    'activityId',
    'configuration',
  ] as const) {
    const v = query[name];
    if (typeof v === 'string') q[name] = v;
  }
  if (typeof query.incidentType === 'string')
    q.kinds = [query.incidentType === 'failedExternalTask' ? 'task_failed' : query.incidentType];
  const keys = readNames(query, 'processDefinitionKeyIn', 'query');
  if (keys.length > 0) q.processDefinitionKeyIn = keys;
  return q;
}

/** /history/incident: the runtime query's filters over resolved incidents too, and `open` / `resolved`. */
export function readHistoricIncidentQuery(query: Source): CamundaIncidentQuery {
  // Baton resolves an incident whose instance is canceled as any other: it cannot tell Camunda's deleted ones.
  refuseUnsupported(
    query,
    ['deleted', 'createTimeBefore', 'createTimeAfter', 'endTimeBefore', 'endTimeAfter'],
    'historic incident',
  );
  const open = readFlag(query, 'open', 'query');
  const resolved = readFlag(query, 'resolved', 'query');
  if (open && resolved) throw invalidRequest('open and resolved exclude each other: give one');
  return { ...readIncidentQuery(query), history: { open, resolved } };
}

export function readHistoricInstanceQuery(input: Source, from: 'query' | 'body', paging: Source): CamundaHistoricInstanceQuery {
  refuseUnsupported(
    input,
    [
      'variables',
      'tenantIdIn',
      'caseInstanceId',
      'subProcessInstanceId',
      'startedBy',
      'incidentType',
      'incidentStatus',
      'incidentMessage',
      'incidentMessageLike',
      'executedActivityIdIn',
      'activeActivityIdIn',
      'activityIdIn',
      'orQueries',
      'processDefinitionName',
      'processDefinitionNameLike',
      'processDefinitionKeyNotIn',
      'internallyTerminated',
      'suspended',
      'active',
      'executedActivityAfter',
      'executedActivityBefore',
      'executedJobAfter',
      'executedJobBefore',
      'rootProcessInstances',
      'superCaseInstanceId',
      'subCaseInstanceId',
    ],
    'historic process instance',
  );
  const q: CamundaHistoricInstanceQuery = {
    sorting: readSorting(input, from, HISTORIC_INSTANCE_SORT_SQL, 'historic process instances'),
    ...readPaging(paging),
  };
  for (const name of [
    'processInstanceId',
    'businessKey',
    'businessKeyLike',
    'processDefinitionId',
    'processDefinitionKey',
    'superProcessInstanceId',
  ] as const) {
    const text = readText(input, name);
    if (text !== undefined) q[name] = text;
  }
  if (input.processInstanceIds !== undefined && input.processInstanceIds !== null)
    q.processInstanceIds = readNames(input, 'processInstanceIds', from);
  const keysIn = readNames(input, 'processDefinitionKeyIn', from);
  if (keysIn.length > 0) q.processDefinitionKeyIn = keysIn;
  for (const name of ['finished', 'unfinished', 'withIncidents', 'completed', 'externallyTerminated'] as const)
    if (readFlag(input, name, from)) q[name] = true;
  for (const name of ['startedBefore', 'startedAfter', 'finishedBefore', 'finishedAfter'] as const) {
    const date = readDate(input, name);
    if (date) q[name] = date;
  }
  return q;
}
