// Baton rows -> Camunda 7 DTOs. One identity across both APIs: a Camunda external
// task id is the native task id, processInstanceId (and executionId) the native
// instance id, processDefinitionId the native definition id, processDefinitionKey
// the BPMN process id.
import type { CamundaLockedTask } from '../store/fetch.ts';
import type { CamundaDefinitionRow } from '../store/process-queries.ts';
import type { CamundaTaskRow } from '../store/queries.ts';
import type { InstanceRow } from '../../store/instances.ts';
import type { ExternalTaskRow } from '../../store/tasks.ts';
import type { UserTaskRow } from '../../store/user-tasks.ts';
import { formatCamundaDate } from './dates.ts';
import { renderVariables } from './variables.ts';

/**
 * Camunda's `retries`: attempts still allowed, null until the task first failed.
 * Baton's retries_left counts failures still tolerated after the next attempt.
 */
export function camundaRetries(t: Pick<ExternalTaskRow, 'state' | 'retries_left' | 'error_message'>): number | null {
  if (t.state === 'failed') return 0;
  return t.error_message === null ? null : t.retries_left + 1;
}

export function lockedTaskView(
  t: CamundaLockedTask,
  topic: { variables?: string[] | null; includeExtensionProperties?: boolean | null },
) {
  return {
    activityId: t.step_id,
    activityInstanceId: `${t.step_id}:${t.id}`,
    errorMessage: t.error_message,
    errorDetails: t.error_details,
    executionId: t.instance_id,
    id: t.id,
    lockExpirationTime: formatCamundaDate(t.lock_expires_at),
    createTime: formatCamundaDate(t.created_at),
    processDefinitionId: t.definition_id,
    processDefinitionKey: t.definition_key,
    processDefinitionVersionTag: null,
    processInstanceId: t.instance_id,
    retries: camundaRetries(t),
    workerId: t.worker_id,
    topicName: t.topic,
    tenantId: null,
    priority: t.priority,
    businessKey: t.business_key,
    extensionProperties: topic.includeExtensionProperties ? (t.headers ?? {}) : null,
    variables: renderVariables(t.variables, t.types, topic.variables),
  };
}

export function externalTaskView(t: CamundaTaskRow) {
  return {
    activityId: t.step_id,
    activityInstanceId: `${t.step_id}:${t.id}`,
    errorMessage: t.error_message,
    executionId: t.instance_id,
    id: t.id,
    lockExpirationTime: t.state === 'locked' ? formatCamundaDate(t.lock_expires_at) : null,
    createTime: formatCamundaDate(t.created_at),
    processDefinitionId: t.definition_id,
    processDefinitionKey: t.definition_key,
    processDefinitionVersionTag: null,
    processInstanceId: t.instance_id,
    tenantId: null,
    retries: camundaRetries(t),
    suspended: t.state === 'suspended',
    workerId: t.state === 'locked' ? t.worker_id : null,
    topicName: t.topic,
    priority: t.priority,
    businessKey: t.business_key,
  };
}

export function processInstanceView(
  i: Pick<InstanceRow, 'id' | 'definition_id' | 'business_key' | 'status'> & { suspended_at?: Date | null },
) {
  return {
    links: [],
    id: i.id,
    definitionId: i.definition_id,
    businessKey: i.business_key,
    caseInstanceId: null,
    ended: i.status === 'completed' || i.status === 'canceled',
    suspended: (i.suspended_at ?? null) !== null,
    tenantId: null,
  };
}

/** Camunda's TaskDto for a user task: its execution is its instance, its definition key its element id. */
export function camundaUserTaskView(t: UserTaskRow, formKey: string | null) {
  return {
    id: t.id,
    name: t.user_task.name ?? null,
    assignee: t.assignee,
    owner: null,
    created: formatCamundaDate(t.created_at),
    lastUpdated: null,
    due: formatCamundaDate(t.user_task.dueAt),
    followUp: formatCamundaDate(t.user_task.followUpAt),
    delegationState: null,
    description: null,
    executionId: t.instance_id,
    parentTaskId: null,
    priority: t.user_task.priority,
    processDefinitionId: t.definition_id,
    processInstanceId: t.instance_id,
    taskDefinitionKey: t.step_id,
    caseExecutionId: null,
    caseInstanceId: null,
    caseDefinitionId: null,
    suspended: t.suspended,
    formKey,
    camundaFormRef: null,
    tenantId: null,
  };
}

/** Camunda's ProcessDefinitionDto: Baton keeps no categories or tenants. */
export function processDefinitionView(d: CamundaDefinitionRow) {
  return {
    id: d.id,
    key: d.key,
    category: null,
    description: null,
    name: d.name,
    version: d.version,
    resource: d.resource_name,
    deploymentId: d.deployment_id,
    diagram: null,
    suspended: false,
    tenantId: null,
    versionTag: d.version_tag,
    historyTimeToLive: null,
    startableInTasklist: true,
  };
}
