// The task query of GET /engine-rest/task (query string) and POST /engine-rest/task (JSON body,
// Camunda Tasklist's form): parameters Baton answers are read and checked; ones it cannot
// answer are refused when they would filter (an empty list is what clients send by default);
// anything else is ignored, as Camunda does.
import { invalidRequest } from './errors.ts';
import { TASK_SORT_SQL, type CamundaUserTaskQuery } from '../store/user-task-queries.ts';
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

const TEXT = [
  'taskId',
  'processInstanceId',
  'processInstanceBusinessKey',
  'processDefinitionId',
  'processDefinitionKey',
  'taskDefinitionKey',
  'name',
  'nameLike',
  'assignee',
  'assigneeLike',
  'candidateUser',
] as const;
const FLAGS = ['assigned', 'unassigned', 'includeAssignedTasks'] as const;
const INTS = ['priority', 'minPriority', 'maxPriority'] as const;
const DATES = ['dueBefore', 'dueAfter', 'followUpBefore', 'followUpAfter', 'createdBefore', 'createdAfter'] as const;
/** Camunda filters Baton keeps no data for (tenants, delegation, owners, variables, descriptions, or-queries). */
const UNSUPPORTED = [
  'processVariables',
  'taskVariables',
  'caseInstanceVariables',
  'tenantIdIn',
  'delegationState',
  'owner',
  'involvedUser',
  'description',
  'descriptionLike',
  'orQueries',
  'withCandidateGroups',
  'withoutCandidateGroups',
  'withCandidateUsers',
  'withoutCandidateUsers',
  'candidateGroupLike',
  'assigneeIn',
  'assigneeNotIn',
  'processInstanceIdIn',
  'processDefinitionKeyIn',
  'taskDefinitionKeyIn',
  'activityInstanceIdIn',
  'caseInstanceId',
  'caseDefinitionKey',
  'parentTaskId',
] as const;

/** A query from the query string (every value text) or a JSON body (typed values); `groupsOf` gives a candidate user's groups. */
export function readUserTaskQuery(
  input: Source,
  from: 'query' | 'body',
  groupsOf: (user: string) => readonly string[],
  paging: Source,
): CamundaUserTaskQuery {
  const q: CamundaUserTaskQuery = { sorting: readSorting(input, from, TASK_SORT_SQL, 'tasks'), ...readPaging(paging) };
  refuseUnsupported(input, UNSUPPORTED, 'task');
  for (const name of TEXT) {
    const text = readText(input, name);
    if (text !== undefined) q[name] = text;
  }
  for (const name of FLAGS) if (readFlag(input, name, from)) q[name] = true;
  for (const name of INTS) {
    const v = readInt(input, name, from);
    if (v !== undefined) q[name] = v;
  }
  for (const name of DATES) {
    const date = readDate(input, name);
    if (date) q[name] = date;
  }
  const groups = [...readNames(input, 'candidateGroups', from), ...readNames(input, 'candidateGroup', from)];
  if (groups.length > 0) q.candidateGroups = groups;
  if (q.candidateUser !== undefined) q.candidateUserGroups = [...groupsOf(q.candidateUser)];
  const suspended = readFlag(input, 'suspended', from);
  const active = readFlag(input, 'active', from);
  if (suspended && active) throw invalidRequest('suspended and active exclude each other: give one');
  if (suspended) q.suspended = true;
  if (active) q.suspended = false;
  return q;
}
