// Row -> JSON shapes of the native API (camelCase, ISO dates).
import type { BatchResultRow, BatchRow } from '../store/batches.ts';
import type { DefinitionRow, DefinitionSummary } from '../store/definitions.ts';
import type { IncidentListRow, IncidentRow } from '../store/incidents.ts';
import type { InstanceRow } from '../store/instances.ts';
import type { EventRow, InstanceDetail } from '../store/queries.ts';
import type { ExternalTaskRow, LockedTaskRow } from '../store/tasks.ts';
import type { UserTaskRow } from '../store/user-tasks.ts';
import type { UserTaskSpec } from '../compiler/plan.ts';
import type { UserTaskRaise } from '../engine/user-tasks.ts';
import { keptStep } from '../engine/loop-passes.ts';

export function definitionSummaryView(d: DefinitionSummary) {
  return { id: d.id, key: d.key, version: d.version, fingerprint: d.fingerprint, deployedAt: d.deployed_at };
}

export function definitionView(d: DefinitionRow) {
  return { ...definitionSummaryView(d), xml: d.xml, plan: d.plan };
}

export function instanceSummaryView(i: InstanceRow) {
  return {
    id: i.id,
    status: i.status,
    suspended: i.suspended_at !== null,
    businessKey: i.business_key,
    definitionKey: i.definition_key,
    version: i.definition_version,
    createdAt: i.created_at,
    endedAt: i.ended_at,
  };
}

export function instanceDetailView(d: InstanceDetail) {
  const i = d.instance;
  return {
    ...instanceSummaryView(i),
    definitionId: i.definition_id,
    generation: i.generation,
    revision: i.revision,
    updatedAt: i.updated_at,
    suspendedAt: i.suspended_at,
    variables: i.variables,
    steps: d.steps.map((s) => ({
      // A completion kept from an earlier loop pass names its step and that pass.
      ...keptStep(s.step_id),
      status: s.status,
      attempts: s.attempts,
      activatedAt: s.activated_at,
      endedAt: s.ended_at,
      ...(s.pass !== null ? { pass: s.pass } : {}),
      ...(s.locals !== null && (s.status === 'active' || s.status === 'incident') ? { variables: s.locals } : {}),
    })),
    flows: d.flows.map((f) => ({ flowId: f.flow_id, state: f.state })),
    tasks: d.openTasks.map(taskView),
    incidents: d.openIncidents.map(incidentView),
    ...(i.parent_instance_id
      ? {
          parent: {
            instanceId: i.parent_instance_id,
            stepId: i.parent_step_id,
            ...(i.parent_scope_path && i.parent_scope_path !== '/' ? { scopePath: i.parent_scope_path } : {}),
          },
        }
      : {}),
    // A child's open incidents show on the parent here, next to the call activity that waits for it.
    calledInstances: d.calledInstances.map((c) => ({
      instanceId: c.id,
      stepId: c.step_id,
      ...(c.scope_path !== '/' ? { scopePath: c.scope_path } : {}),
      generation: c.generation,
      ...(c.loop_index !== null ? { loopCounter: c.loop_index } : {}),
      definitionKey: c.definition_key,
      definitionVersion: c.definition_version,
      status: c.status,
      openIncidents: c.open_incidents,
    })),
  };
}

export function taskView(t: ExternalTaskRow) {
  return {
    id: t.id,
    stepId: t.step_id,
    topic: t.topic,
    state: t.state,
    priority: t.priority,
    attempt: t.attempt,
    retriesLeft: t.retries_left,
    retryAt: t.retry_at,
    // The token of the last holder stays on the row (to recognise repeats); show the worker only while it holds the lock.
    workerId: t.state === 'locked' ? t.worker_id : null,
    lockExpiresAt: t.lock_expires_at,
    errorMessage: t.error_message,
    ...scopePathOf(t),
  };
}

/** Inside a loop, the pass the task belongs to (`/loop:Review#2`); nothing at the top. */
function scopePathOf(t: { scope_path: string }): { scopePath?: string } {
  return t.scope_path !== undefined && t.scope_path !== '/' ? { scopePath: t.scope_path } : {};
}

/**
 * A fetched task. `leaseExpiriesLeft`: how many more times its lease may expire and the task
 * still come back; the expiry after those ends it like a failure with no retries left
 * (store/tasks.ts expireLocks: `retries + leaseExpiryAllowance` expiries in all).
 */
export function lockedTaskView(t: LockedTaskRow, leaseExpiryAllowance: number) {
  return {
    id: t.id,
    topic: t.topic,
    instanceId: t.instance_id,
    stepId: t.step_id,
    businessKey: t.business_key,
    attempt: t.attempt,
    retriesLeft: t.retries_left,
    leaseExpiriesLeft: Math.max(t.retries + leaseExpiryAllowance - t.lease_expiries, 0),
    lockToken: t.lock_token,
    lockExpiresAt: t.lock_expires_at,
    idempotencyKey: t.idempotency_key,
    variables: t.variables,
    ...scopePathOf(t),
    ...(t.headers ? { headers: t.headers } : {}),
  };
}

export function incidentView(x: IncidentRow) {
  return {
    id: x.id,
    instanceId: x.instance_id,
    stepId: x.step_id,
    taskId: x.task_id,
    kind: x.kind,
    message: x.message,
    details: x.details,
    status: x.status,
    createdAt: x.created_at,
    resolvedAt: x.resolved_at,
    annotation: x.annotation ?? null,
  };
}

/** An incident as the operator's list shows it: its process, and its failed task's error and stack trace. */
export function incidentListView(x: IncidentListRow) {
  return {
    ...incidentView(x),
    definitionId: x.definition_id,
    definitionKey: x.definition_key,
    version: x.definition_version,
    businessKey: x.business_key,
    ...(x.task_id ? { errorMessage: x.error_message, errorDetails: x.error_details } : {}),
  };
}

export function eventView(e: EventRow) {
  return {
    seq: e.seq,
    kind: e.kind,
    ...(e.step_id ? { stepId: e.step_id } : {}),
    ...(e.task_id ? { taskId: e.task_id } : {}),
    ...(e.attempt !== null ? { attempt: e.attempt } : {}),
    generation: e.generation,
    at: e.at,
    data: e.data,
  };
}

/** A user task as the tasklist shows it; with its step, its name and form too. */
export function userTaskView(t: UserTaskRow, name?: string, spec?: UserTaskSpec, raises?: UserTaskRaise[]) {
  return {
    id: t.id,
    instanceId: t.instance_id,
    definitionKey: t.definition_key,
    businessKey: t.business_key,
    stepId: t.step_id,
    ...(name ? { name } : {}),
    ...(t.loop_index !== null ? { loopCounter: (t.local_variables?.loopCounter as number | undefined) ?? t.loop_index } : {}),
    // An element's own variables, or the task's input mappings (and the locals of the subprocesses around it).
    ...(t.loop_index !== null || t.local_variables ? { localVariables: t.local_variables ?? {} } : {}),
    assignee: t.assignee,
    candidateUsers: t.user_task.candidateUsers,
    candidateGroups: t.user_task.candidateGroups,
    dueAt: t.user_task.dueAt,
    followUpAt: t.user_task.followUpAt,
    priority: t.user_task.priority,
    createdAt: t.created_at,
    ...(t.suspended ? { suspended: true } : {}),
    ...(spec
      ? {
          form: {
            ...(spec.formKey ? { formKey: spec.formKey } : {}),
            ...(spec.formFields ? { fields: spec.formFields } : {}),
            ...(spec.formSchema !== undefined ? { schema: spec.formSchema } : {}),
          },
        }
      : {}),
    ...(raises ? { raises } : {}),
    // What the task sees, which its form starts from: the instance's variables under its own.
    ...(spec && t.variables ? { variables: { ...t.variables, ...t.local_variables } } : {}),
  };
}

export function batchView(b: BatchRow) {
  return {
    id: b.id,
    operation: b.operation,
    filter: b.filter,
    options: b.options,
    state: b.state,
    total: b.total,
    done: b.done,
    failed: b.failed,
    skipped: b.skipped,
    createdBy: b.created_by,
    createdAt: b.created_at,
    endedAt: b.ended_at,
  };
}

export function batchResultView(r: BatchResultRow) {
  return { instanceId: r.instance_id, outcome: r.outcome, message: r.message, at: r.at };
}
