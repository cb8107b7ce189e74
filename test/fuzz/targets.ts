// The JSON endpoints the fuzzer hits, each with a valid body to mutate. `ids` fills path
// parameters with real ids (a locked task, a running instance) so mutations reach past the 404s.
export interface FuzzIds {
  taskId: string;
  lockToken: string;
  instanceId: string;
}

export interface Target {
  method: 'POST' | 'PUT' | 'PATCH' | 'GET';
  path: (ids: FuzzIds) => string;
  valid: (ids: FuzzIds) => Record<string, unknown>;
}

const missing = '00000000-0000-4000-8000-000000000000';
const xml =
  '<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" id="d"><bpmn:process id="p" isExecutable="true"><bpmn:startEvent id="s"/></bpmn:process></bpmn:definitions>';

export const TARGETS: Target[] = [
  { method: 'POST', path: () => '/api/definitions', valid: () => ({ xml }) },
  { method: 'POST', path: () => '/api/definitions/lint', valid: () => ({ xml, processId: 'p' }) },
  { method: 'POST', path: () => '/api/instances', valid: () => ({ definitionKey: 'fz', businessKey: 'b', variables: { a: 1 } }) },
  { method: 'POST', path: (i) => `/api/instances/${i.instanceId}/cancel`, valid: () => ({}) },
  {
    method: 'POST',
    path: () => '/api/external-tasks/fetch-and-lock',
    valid: () => ({ workerId: 'w', maxTasks: 1, topics: [{ name: 'none', lockDurationMs: 1000 }] }),
  },
  {
    method: 'POST',
    path: (i) => `/api/external-tasks/${i.taskId}/complete`,
    valid: (i) => ({ workerId: 'other', lockToken: i.lockToken, variables: { a: 1 } }),
  },
  {
    method: 'POST',
    path: (i) => `/api/external-tasks/${i.taskId}/failure`,
    valid: (i) => ({ workerId: 'other', lockToken: i.lockToken, errorMessage: 'x' }),
  },
  {
    method: 'POST',
    path: (i) => `/api/external-tasks/${i.taskId}/bpmn-error`,
    valid: (i) => ({ workerId: 'other', lockToken: i.lockToken, errorCode: 'E' }),
  },
  {
    method: 'POST',
    path: (i) => `/api/external-tasks/${i.taskId}/extend-lock`,
    valid: (i) => ({ workerId: 'other', lockToken: i.lockToken, lockDurationMs: 1000 }),
  },
  {
    method: 'POST',
    path: (i) => `/api/external-tasks/${i.taskId}/unlock`,
    valid: (i) => ({ workerId: 'other', lockToken: i.lockToken }),
  },
  { method: 'POST', path: () => `/api/incidents/${missing}/retry`, valid: () => ({ retries: 1, variables: {} }) },
  { method: 'POST', path: () => '/api/incidents/retry', valid: () => ({ ids: [missing], retries: 1, variables: { a: 1 } }) },
  {
    method: 'PATCH',
    path: (i) => `/api/instances/${i.instanceId}/variables`,
    valid: () => ({ revision: 0, set: { a: 1 }, delete: ['b'] }),
  },
  { method: 'POST', path: () => '/api/messages', valid: () => ({ name: 'm', correlationKey: 'k', ttlMs: 0 }) },
  { method: 'POST', path: () => '/api/signals', valid: () => ({ name: 'nobody-listens' }) },
  {
    method: 'PUT',
    path: () => '/api/flow-limits/fz-limit',
    valid: () => ({ maxConcurrent: 2, maxStartsPerSecond: 1.5, topics: ['fz-a', 'fz-b'] }),
  },
  {
    method: 'PUT',
    path: () => '/api/element-templates',
    valid: () => ({
      id: 'fz.template',
      name: 'Fuzzed',
      version: 1,
      appliesTo: ['bpmn:ServiceTask'],
      properties: [
        { type: 'Hidden', value: 'external', binding: { type: 'property', name: 'camunda:type' } },
        { type: 'Hidden', value: 'fz-task', binding: { type: 'property', name: 'camunda:topic' } },
        { label: 'Amount', type: 'String', value: '${amount}', binding: { type: 'camunda:inputParameter', name: 'amount' } },
      ],
    }),
  },
  { method: 'POST', path: () => '/api/diagrams', valid: () => ({ name: 'd', xml }) },
  { method: 'PATCH', path: () => `/api/diagrams/${missing}`, valid: () => ({ name: 'd' }) },
  {
    method: 'POST',
    path: () => '/engine-rest/external-task/fetchAndLock',
    valid: () => ({ workerId: 'w', maxTasks: 1, topics: [{ topicName: 'none', lockDuration: 1000 }] }),
  },
  {
    method: 'POST',
    path: (i) => `/engine-rest/external-task/${i.taskId}/complete`,
    valid: () => ({ workerId: 'other', variables: { a: { value: 1, type: 'Integer' } } }),
  },
  {
    method: 'POST',
    path: (i) => `/engine-rest/external-task/${i.taskId}/failure`,
    valid: () => ({ workerId: 'other', errorMessage: 'x', retries: 1, retryTimeout: 10 }),
  },
  {
    method: 'POST',
    path: (i) => `/engine-rest/external-task/${i.taskId}/bpmnError`,
    valid: () => ({ workerId: 'other', errorCode: 'E' }),
  },
  {
    method: 'POST',
    path: (i) => `/engine-rest/external-task/${i.taskId}/extendLock`,
    valid: () => ({ workerId: 'other', newDuration: 1000 }),
  },
  {
    method: 'POST',
    path: (i) => `/engine-rest/external-task/${i.taskId}/lock`,
    valid: () => ({ workerId: 'other', lockDuration: 1000 }),
  },
  { method: 'PUT', path: () => `/engine-rest/external-task/${missing}/retries`, valid: () => ({ retries: 1 }) },
  {
    method: 'POST',
    path: () => '/engine-rest/process-definition/key/no-such-key/start',
    valid: () => ({ businessKey: 'b', variables: { a: { value: 1, type: 'Integer' } } }),
  },
  {
    method: 'POST',
    path: () => '/engine-rest/message',
    valid: () => ({ messageName: 'm', correlationKeys: { k: { value: 'v', type: 'String' } } }),
  },
  { method: 'POST', path: () => '/engine-rest/signal', valid: () => ({ name: 'nobody-listens' }) },
];

/** Query-string endpoints: a valid query to mutate. */
export const QUERY_TARGETS: { path: (ids: FuzzIds) => string; valid: Record<string, string> }[] = [
  { path: () => '/api/instances', valid: { status: 'running', limit: '5' } },
  { path: (i) => `/api/instances/${i.instanceId}/history`, valid: { afterSeq: '0', limit: '5' } },
  { path: () => '/api/incidents', valid: { status: 'open', limit: '5', kind: 'task_failed', olderThan: '1h' } },
  { path: () => '/api/incidents/count', valid: { definitionKey: 'fz', version: '1', newerThan: '15m' } },
  { path: () => '/api/definitions/fz/heatmap', valid: { version: '1' } },
  { path: () => '/api/element-templates', valid: { topic: 'fz-task' } },
  { path: () => '/api/topics/activity', valid: { topic: 'fz-task' } },
  { path: () => '/engine-rest/external-task', valid: { topicName: 'fz-task', maxResults: '5' } },
];
