// Query string of GET /engine-rest/external-task[/count]: unknown parameters are ignored, as Camunda does.
import type { CamundaTaskQuery } from '../store/queries.ts';
import { invalidRequest } from './errors.ts';

const TEXT = [
  'externalTaskId',
  'topicName',
  'workerId',
  'processInstanceId',
  'processDefinitionId',
  'processDefinitionKey',
  'activityId',
] as const;
const FLAGS = ['locked', 'notLocked', 'withRetriesLeft', 'noRetriesLeft'] as const;
const INTS = ['priorityHigherThanOrEquals', 'priorityLowerThanOrEquals'] as const;

export function readTaskQuery(query: Record<string, unknown>): CamundaTaskQuery {
  const q: CamundaTaskQuery = {
    firstResult: readInt(query, 'firstResult') ?? 0,
    maxResults: readInt(query, 'maxResults') ?? 1000,
  };
  for (const name of TEXT) {
    const v = query[name];
    if (typeof v === 'string') q[name] = v;
  }
  for (const name of FLAGS) {
    const v = query[name];
    if (v !== undefined && v !== 'true' && v !== 'false') throw invalidRequest(`Query parameter ${name} must be true or false`);
    if (v === 'true') q[name] = true;
  }
  for (const name of INTS) {
    const v = readInt(query, name);
    if (v !== undefined) q[name] = v;
  }
  if (q.firstResult < 0 || q.maxResults < 0) throw invalidRequest('firstResult and maxResults must not be negative');
  q.maxResults = Math.min(q.maxResults, 10_000);
  return q;
}

function readInt(query: Record<string, unknown>, name: string): number | undefined {
  const v = query[name];
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || !/^-?\d{1,9}$/.test(v)) throw invalidRequest(`Query parameter ${name} must be an integer`);
  return Number(v);
}
