// The native API's operations, for the OpenAPI document. Request bodies and query
// parameters name files of schemas/api (without .schema.json): the same schemas the
// server validates with, so the document cannot drift from the checks.

export interface Operation {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  path: string;
  summary: string;
  /** required roles when tokens are configured; 'open' when none is needed */
  roles: string;
  body?: string;
  /** JSON or the BPMN file itself */
  xmlBody?: boolean;
  query?: string;
  /** success status and what it carries */
  success: [status: number, description: string];
}

export const OPERATIONS: Operation[] = [
  { method: 'get', path: '/healthz', summary: 'Process up', roles: 'open', success: [200, '{"status":"ok"}'] },
  { method: 'get', path: '/readyz', summary: 'Database reachable and migrations applied', roles: 'open', success: [200, '{"status":"ready"}'] },
  { method: 'get', path: '/metrics', summary: 'Prometheus metrics', roles: 'admin, viewer', success: [200, 'Prometheus text format'] },
  { method: 'get', path: '/api/openapi.json', summary: 'This document', roles: 'admin, viewer', success: [200, 'OpenAPI 3.1'] },
  { method: 'post', path: '/api/definitions', summary: 'Deploy a BPMN process', roles: 'admin', body: 'deploy-request', xmlBody: true, success: [201, 'new version (200: same XML already deployed)'] },
  { method: 'get', path: '/api/definitions', summary: 'Latest version of every key', roles: 'admin, viewer', success: [200, '{items}'] },
  { method: 'get', path: '/api/definitions/{key}', summary: 'Latest version with xml and plan', roles: 'admin, viewer', success: [200, 'definition'] },
  { method: 'get', path: '/api/definitions/{key}/versions/{version}', summary: 'One version', roles: 'admin, viewer', success: [200, 'definition'] },
  { method: 'post', path: '/api/definitions/lint', summary: 'Compile without deploying', roles: 'admin, viewer', body: 'diagram-lint-request', success: [200, '{ok, diagnostics, warnings}'] },
  { method: 'get', path: '/api/definitions/{key}/heatmap', summary: 'Step counts per element', roles: 'admin, viewer', query: 'diagram-heatmap-query', success: [200, '{key, version, instances, elements, sample}'] },
  { method: 'post', path: '/api/instances', summary: 'Start an instance', roles: 'admin', body: 'start-instance-request', success: [201, 'started (200: business key already used)'] },
  { method: 'get', path: '/api/instances', summary: 'List instances, newest first', roles: 'admin, viewer', query: 'list-instances-query', success: [200, '{items, nextCursor}'] },
  { method: 'get', path: '/api/instances/{id}', summary: 'Instance detail', roles: 'admin, viewer', success: [200, 'detail'] },
  { method: 'get', path: '/api/instances/{id}/history', summary: 'History events', roles: 'admin, viewer', query: 'history-query', success: [200, '{items}'] },
  { method: 'post', path: '/api/instances/{id}/cancel', summary: 'Cancel an instance', roles: 'admin', success: [200, '{id, status}'] },
  { method: 'post', path: '/api/instances/{id}/replay', summary: 'Run a failed, compensated or canceled instance again as a new generation', roles: 'admin', success: [200, '{instanceId, generation, status}'] },
  { method: 'post', path: '/api/external-tasks/fetch-and-lock', summary: 'Fetch and lock tasks (long polling)', roles: 'admin, worker', body: 'fetch-and-lock-request', success: [200, 'locked tasks'] },
  { method: 'post', path: '/api/external-tasks/{id}/complete', summary: 'Complete a task', roles: 'admin, worker', body: 'complete-request', success: [204, 'applied'] },
  { method: 'post', path: '/api/external-tasks/complete-batch', summary: 'Complete many tasks of one worker with one commit', roles: 'admin, worker', body: 'complete-batch-request', success: [200, '{results: [{id, result}]}'] },
  { method: 'post', path: '/api/external-tasks/{id}/failure', summary: 'Report a failure', roles: 'admin, worker', body: 'failure-request', success: [204, 'applied'] },
  { method: 'post', path: '/api/external-tasks/{id}/bpmn-error', summary: 'Report a BPMN error', roles: 'admin, worker', body: 'bpmn-error-request', success: [204, 'applied'] },
  { method: 'post', path: '/api/external-tasks/{id}/extend-lock', summary: 'Extend the lease', roles: 'admin, worker', body: 'extend-lock-request', success: [204, 'applied'] },
  { method: 'post', path: '/api/external-tasks/{id}/unlock', summary: 'Give the task back', roles: 'admin, worker', body: 'unlock-request', success: [204, 'applied'] },
  { method: 'post', path: '/api/external-tasks/{id}/progress', summary: 'Report progress (coalesced into task:progress frames)', roles: 'admin, worker', body: 'progress-request', success: [202, '{accepted: true}'] },
  { method: 'get', path: '/api/incidents', summary: 'List incidents', roles: 'admin, viewer', query: 'list-incidents-query', success: [200, '{items}'] },
  { method: 'post', path: '/api/incidents/{id}/retry', summary: 'Retry an incident', roles: 'admin', body: 'retry-incident-request', success: [200, '{id, status, instanceStatus}'] },
  { method: 'post', path: '/api/messages', summary: 'Publish a message', roles: 'admin', body: 'message-request', success: [200, 'matched or duplicate (201: started, 202: buffered)'] },
  { method: 'post', path: '/api/signals', summary: 'Broadcast a signal', roles: 'admin', body: 'signal-request', success: [200, '{name, delivered, started}'] },
  { method: 'get', path: '/api/flow-limits', summary: 'List flow limits', roles: 'admin, viewer', success: [200, '{items}'] },
  { method: 'get', path: '/api/flow-limits/{resource}', summary: 'One flow limit with its held locks', roles: 'admin, viewer', success: [200, 'flow limit'] },
  { method: 'put', path: '/api/flow-limits/{resource}', summary: 'Set the flow limit of a resource', roles: 'admin', body: 'flow-limit-put-request', success: [201, 'created flow limit (200: replaced)'] },
  { method: 'delete', path: '/api/flow-limits/{resource}', summary: 'Remove a flow limit', roles: 'admin', success: [204, 'deleted'] },
  { method: 'get', path: '/api/diagrams', summary: 'List designer drafts', roles: 'admin, viewer', success: [200, '{items}'] },
  { method: 'post', path: '/api/diagrams', summary: 'Create a draft', roles: 'admin', body: 'diagram-create-request', success: [201, 'diagram'] },
  { method: 'get', path: '/api/diagrams/{id}', summary: 'One draft', roles: 'admin, viewer', success: [200, 'diagram'] },
  { method: 'patch', path: '/api/diagrams/{id}', summary: 'Update a draft', roles: 'admin', body: 'diagram-update-request', success: [200, 'diagram'] },
  { method: 'delete', path: '/api/diagrams/{id}', summary: 'Delete a draft', roles: 'admin', success: [204, 'deleted'] },
];
