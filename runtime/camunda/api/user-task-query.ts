// The task query of GET /engine-rest/task (query string) and POST /engine-rest/task (JSON body,
// Camunda Tasklist's form): parameters Baton answers are read and checked; ones it cannot
// answer are refused when they would filter (an empty list is what clients send by default);
// anything else is ignored, as Camunda does.
import { TASK_SORT_SQL, type CamundaTaskSort, type CamundaUserTaskQuery } from '../store/user-task-queries.ts';
import { parseCamundaDate } from './dates.ts';
import { invalidRequest } from './errors.ts';

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

type Source = Record<string, unknown>;

/** A query from the query string (every value text) or a JSON body (typed values); `groupsOf` gives a candidate user's groups. */
export function readUserTaskQuery(
  input: Source,
  from: 'query' | 'body',
  groupsOf: (user: string) => readonly string[],
  paging: Source,
): CamundaUserTaskQuery {
  const q: CamundaUserTaskQuery = {
    sorting: readSorting(input, from),
    firstResult: readInt(paging, 'firstResult', 'query') ?? 0,
    maxResults: Math.min(readInt(paging, 'maxResults', 'query') ?? 1000, 10_000),
  };
  for (const name of UNSUPPORTED) {
    const v = input[name];
    if (v !== undefined && v !== null && v !== '' && !(Array.isArray(v) && v.length === 0))
      throw invalidRequest(`Baton does not support the task query parameter '${name}' (see docs/camunda-compatibility.md)`);
  }
  for (const name of TEXT) {
    const v = input[name];
    if (v === undefined || v === null) continue;
    if (typeof v !== 'string' || v.length > 1000)
      throw invalidRequest(`Parameter ${name} must be text of at most 1000 characters`);
    q[name] = v;
  }
  for (const name of FLAGS) if (readFlag(input, name, from)) q[name] = true;
  for (const name of INTS) {
    const v = readInt(input, name, from);
    if (v !== undefined) q[name] = v;
  }
  for (const name of DATES) {
    const v = input[name];
    if (v === undefined || v === null) continue;
    const date = typeof v === 'string' ? parseCamundaDate(v) : undefined;
    if (!date)
      throw invalidRequest(
        `Cannot set query parameter '${name}' to value '${String(v)}': not a date (yyyy-MM-dd'T'HH:mm:ss.SSSZ)`,
      );
    q[name] = date;
  }
  const groups = [...readNames(input, 'candidateGroups', from), ...readNames(input, 'candidateGroup', from)];
  if (groups.length > 0) q.candidateGroups = groups;
  if (q.candidateUser !== undefined) q.candidateUserGroups = [...groupsOf(q.candidateUser)];
  if (readFlag(input, 'suspended', from)) q.suspended = true;
  if (q.firstResult < 0 || q.maxResults < 0) throw invalidRequest('firstResult and maxResults must not be negative');
  return q;
}

function readSorting(input: Source, from: 'query' | 'body'): CamundaUserTaskQuery['sorting'] {
  const raw =
    from === 'query'
      ? input.sortBy === undefined
        ? []
        : [{ sortBy: input.sortBy, sortOrder: input.sortOrder }]
      : Array.isArray(input.sorting)
        ? (input.sorting as unknown[])
        : input.sorting === undefined || input.sorting === null
          ? []
          : undefined;
  if (raw === undefined) throw invalidRequest('sorting must be a list of {sortBy, sortOrder}');
  if (from === 'query' && input.sortBy === undefined && input.sortOrder !== undefined)
    throw invalidRequest('Only a single sorting parameter specified. sortBy and sortOrder required');
  return raw.slice(0, 10).map((s) => {
    const { sortBy, sortOrder } = (s ?? {}) as { sortBy?: unknown; sortOrder?: unknown };
    if (typeof sortBy !== 'string' || !Object.hasOwn(TASK_SORT_SQL, sortBy))
      throw invalidRequest(
        `Cannot sort by '${String(sortBy)}': Baton sorts tasks by ${Object.keys(TASK_SORT_SQL).join(', ')} (see docs/camunda-compatibility.md)`,
      );
    if (sortOrder !== 'asc' && sortOrder !== 'desc')
      throw invalidRequest(`sortOrder must be asc or desc, got '${String(sortOrder)}'`);
    return { sortBy: sortBy as CamundaTaskSort, sortOrder };
  });
}

function readFlag(input: Source, name: string, from: 'query' | 'body'): boolean {
  const v = input[name];
  if (v === undefined || v === null) return false;
  if (from === 'body' ? typeof v === 'boolean' : v === 'true' || v === 'false') return v === true || v === 'true';
  throw invalidRequest(`Parameter ${name} must be true or false`);
}

function readInt(input: Source, name: string, from: 'query' | 'body'): number | undefined {
  const v = input[name];
  if (v === undefined || v === null) return undefined;
  if (from === 'body' && typeof v === 'number' && Number.isInteger(v) && Math.abs(v) < 1e9) return v;
  if (typeof v === 'string' && /^-?\d{1,9}$/.test(v)) return Number(v);
  throw invalidRequest(`Parameter ${name} must be an integer`);
}

function readNames(input: Source, name: string, from: 'query' | 'body'): string[] {
  const v = input[name];
  if (v === undefined || v === null) return [];
  const list = typeof v === 'string' ? v.split(',') : from === 'body' && Array.isArray(v) ? v : undefined;
  if (!list || list.some((n) => typeof n !== 'string' || n.length > 200))
    throw invalidRequest(`Parameter ${name} must be a list of names`);
  return (list as string[]).map((n) => n.trim()).filter((n) => n !== '');
}
