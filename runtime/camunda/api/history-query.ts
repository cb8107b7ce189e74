// Query parameters of /engine-rest/history/activity-instance and /history/variable-instance lists
// and counts, from a query string or a JSON body alike.
import {
  ACTIVITY_INSTANCE_SORT_SQL,
  VARIABLE_INSTANCE_SORT_SQL,
  type CamundaActivityInstanceQuery,
  type CamundaVariableInstanceQuery,
} from '../store/history-queries.ts';
import { invalidRequest } from './errors.ts';
import {
  readDate,
  readFlag,
  readNames,
  readPaging,
  readSorting,
  readText,
  refuseUnsupported,
  type Source,
} from './query-params.ts';

/** Flags Baton answers only as false: true would ask for data it does not keep. */
function refuseTrue(input: Source, names: readonly string[], from: 'query' | 'body', what: string): void {
  for (const name of names)
    if (readFlag(input, name, from))
      throw invalidRequest(`Baton does not support the ${what} query parameter '${name}' (see docs/camunda-compatibility.md)`);
}

export function readActivityInstanceQuery(input: Source, from: 'query' | 'body', paging: Source): CamundaActivityInstanceQuery {
  // withoutTenantId filters nothing: no activity belongs to a tenant.
  refuseUnsupported(input, ['tenantIdIn'], 'historic activity instance');
  readFlag(input, 'withoutTenantId', from);
  const q: CamundaActivityInstanceQuery = {
    sorting: readSorting(input, from, ACTIVITY_INSTANCE_SORT_SQL, 'historic activity instances'),
    ...readPaging(paging),
  };
  for (const name of [
    'activityInstanceId',
    'processInstanceId',
    'processDefinitionId',
    'executionId',
    'activityId',
    'activityName',
    'activityType',
    'taskAssignee',
  ] as const) {
    const text = readText(input, name);
    if (text !== undefined) q[name] = text;
  }
  for (const name of ['finished', 'unfinished', 'canceled', 'completeScope'] as const)
    if (readFlag(input, name, from)) q[name] = true;
  for (const name of ['startedBefore', 'startedAfter', 'finishedBefore', 'finishedAfter'] as const) {
    const date = readDate(input, name);
    if (date) q[name] = date;
  }
  return q;
}

export function readVariableInstanceQuery(input: Source, from: 'query' | 'body', paging: Source): CamundaVariableInstanceQuery {
  const what = 'historic variable instance';
  refuseUnsupported(
    input,
    [
      'variableValue',
      'variableTypeIn',
      'caseInstanceId',
      'caseExecutionIdIn',
      'caseActivityIdIn',
      'taskIdIn',
      'activityInstanceIdIn',
      'tenantIdIn',
    ],
    what,
  );
  // Deleted variables are not kept; names and values compare exactly.
  refuseTrue(input, ['includeDeleted', 'variableNamesIgnoreCase', 'variableValuesIgnoreCase'], from, what);
  // withoutTenantId filters nothing (no tenants); deserializeValues changes nothing (values are answered as stored).
  readFlag(input, 'withoutTenantId', from);
  readFlag(input, 'deserializeValues', from);
  const q: CamundaVariableInstanceQuery = {
    sorting: readSorting(input, from, VARIABLE_INSTANCE_SORT_SQL, 'historic variable instances'),
    ...readPaging(paging),
  };
  for (const name of [
    'variableName',
    'variableNameLike',
    'processInstanceId',
    'processDefinitionId',
    'processDefinitionKey',
  ] as const) {
    const text = readText(input, name);
    if (text !== undefined) q[name] = text;
  }
  for (const name of ['processInstanceIdIn', 'executionIdIn', 'variableNameIn'] as const)
    if (input[name] !== undefined && input[name] !== null) q[name] = readNames(input, name, from);
  return q;
}
