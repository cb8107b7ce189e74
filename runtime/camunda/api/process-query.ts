// Query parameters of GET /engine-rest/process-definition[/count] and
// GET|POST /engine-rest/process-instance[/count].
import {
  DEFINITION_SORT_SQL,
  INSTANCE_SORT_SQL,
  type CamundaDefinitionQuery,
  type CamundaInstanceQuery,
} from '../store/process-queries.ts';
import { invalidRequest } from './errors.ts';
import { readFlag, readInt, readNames, readPaging, readSorting, refuseUnsupported, type Source } from './query-params.ts';

const DEFINITION_UNSUPPORTED = [
  'deploymentId',
  'deployedAfter',
  'deployedAt',
  'category',
  'categoryLike',
  'resourceName',
  'resourceNameLike',
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
  for (const name of ['processDefinitionId', 'key', 'name', 'nameLike', 'versionTag'] as const) {
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
    const v = input[name];
    if (v === undefined || v === null) continue;
    if (typeof v !== 'string') throw invalidRequest(`Parameter ${name} must be text`);
    q[name] = v;
  }
  if (input.processInstanceIds !== undefined && input.processInstanceIds !== null)
    q.processInstanceIds = readNames(input, 'processInstanceIds', from);
  const keysIn = readNames(input, 'processDefinitionKeyIn', from);
  if (keysIn.length > 0) q.processDefinitionKeyIn = keysIn;
  if (readFlag(input, 'withIncident', from)) q.withIncident = true;
  if (readFlag(input, 'suspended', from)) q.suspended = true;
  return q;
}
