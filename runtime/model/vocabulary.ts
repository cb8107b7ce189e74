// Status vocabularies shared by the engine, the store and the API.

export const InstanceStatus = {
  /** has active steps and no open incident */
  running: 'running',
  /** at least one step waits for an operator */
  incident: 'incident',
  /** every path ended, or a terminate end event was reached */
  completed: 'completed',
  /** stopped by an operator; open tasks are unfetchable */
  canceled: 'canceled',
  /** compensation handlers are running (a compensation event, or an onExhausted saga) */
  compensating: 'compensating',
  /** an onExhausted saga undid every completed step; the instance is over */
  compensated: 'compensated',
} as const;
export type InstanceStatus = (typeof InstanceStatus)[keyof typeof InstanceStatus];

export const StepStatus = {
  /** waiting for its work (an external task) */
  active: 'active',
  completed: 'completed',
  /** every incoming flow was skipped (dead path) */
  skipped: 'skipped',
  /** stopped with an open incident */
  incident: 'incident',
  /** the instance was canceled or terminated while the step was open */
  canceled: 'canceled',
  /** retries ran out and an onExhausted saga took over */
  failed: 'failed',
  /** completed, then undone by its compensation handler */
  compensated: 'compensated',
} as const;
export type StepStatus = (typeof StepStatus)[keyof typeof StepStatus];

export type FlowState = 'taken' | 'skipped';

export const TaskState = {
  /** fetchable once retry_at has passed */
  ready: 'ready',
  /** leased to worker_id with lock_token until lock_expires_at */
  locked: 'locked',
  /** completed by its holder */
  done: 'done',
  /** retries exhausted, or a BPMN error nothing caught: an incident holds it */
  failed: 'failed',
  /** its instance was canceled or terminated */
  canceled: 'canceled',
  /** its instance is suspended: not handed out until the resume makes it ready again */
  suspended: 'suspended',
} as const;
export type TaskState = (typeof TaskState)[keyof typeof TaskState];

export const IncidentKind = {
  /** a task failed with no retries left */
  task_failed: 'task_failed',
  /** a worker reported a BPMN error nothing catches */
  bpmn_error: 'bpmn_error',
  /** a gateway found no flow to take */
  no_matching_flow: 'no_matching_flow',
  /** a flow condition could not be evaluated */
  condition_error: 'condition_error',
  /** a parallel join saw a skipped input */
  join_skipped: 'join_skipped',
  /** an input mapping of a service task could not be evaluated */
  io_mapping: 'io_mapping',
  /** a script task's script threw, ran out of its budget or could not be evaluated */
  script_error: 'script_error',
  /** a call activity could not start its child: no such process or version, a taken business key, a failed expression */
  call_activity: 'call_activity',
} as const;
export type IncidentKind = (typeof IncidentKind)[keyof typeof IncidentKind];

export const BatchOperation = {
  /** cancels each instance (engine/instances.ts cancelInTransaction) */
  cancel: 'cancel',
  /** retries each instance's open incidents (engine/incidents.ts retryIncidentInTransaction) */
  retry: 'retry',
  /** suspends each instance (engine/suspension.ts suspendInTransaction) */
  suspend: 'suspend',
  /** resumes each suspended instance (engine/suspension.ts resumeInTransaction) */
  resume: 'resume',
  /** moves each instance to another version (engine/migration.ts migrateInTransaction) */
  migrate: 'migrate',
} as const;
export type BatchOperation = (typeof BatchOperation)[keyof typeof BatchOperation];

export const BatchState = {
  /** chunks are still taken by whichever node holds its lease */
  running: 'running',
  /** every matching instance has a result */
  completed: 'completed',
  /** an operator stopped it; no further instance is touched */
  canceled: 'canceled',
} as const;
export type BatchState = (typeof BatchState)[keyof typeof BatchState];

export const BatchOutcome = {
  /** the operation was applied */
  done: 'done',
  /** the operation was refused for a reason to look at (a called instance, variables too large, an error) */
  failed: 'failed',
  /** nothing to do: the instance had ended, or had no open incident */
  skipped: 'skipped',
} as const;
export type BatchOutcome = (typeof BatchOutcome)[keyof typeof BatchOutcome];
