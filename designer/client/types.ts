// Shapes of the native REST API as the designer reads them (docs/api.md).

export interface Diagnostic {
  elementId: string;
  message: string;
  severity: 'error' | 'warning';
}

export interface DiagramSummary {
  id: string;
  name: string;
  createdAt: string;
  updatedAt: string;
}

export interface Diagram extends DiagramSummary {
  xml: string;
}

export interface LintResult {
  ok: boolean;
  processKey?: string;
  fingerprint?: string;
  diagnostics: Diagnostic[];
  warnings: Diagnostic[];
}

export interface DefinitionSummary {
  id: string;
  key: string;
  version: number;
  fingerprint: string;
  deployedAt: string;
}

export interface Definition extends DefinitionSummary {
  xml: string;
}

export interface DeployResult extends DefinitionSummary {
  created: boolean;
  warnings: Diagnostic[];
}

export type InstanceStatus = 'running' | 'incident' | 'completed' | 'canceled';

export interface InstanceSummary {
  id: string;
  status: InstanceStatus;
  /** an operator suspended it: nothing moves it on until it is resumed */
  suspended: boolean;
  businessKey: string | null;
  definitionKey: string;
  version: number;
  createdAt: string;
  endedAt: string | null;
}

export interface StepState {
  stepId: string;
  status: 'active' | 'completed' | 'skipped' | 'incident' | 'canceled';
  attempts: number;
  activatedAt: string;
  endedAt: string | null;
  /** loop steps (`loop:<head>`): the pass running, or the last one */
  pass?: number;
}

/** A resolved sequence flow of an instance; flows still pending are not listed. */
export interface FlowState {
  flowId: string;
  state: 'taken' | 'skipped';
}

export interface OpenTask {
  id: string;
  stepId: string;
  topic: string;
  state: 'ready' | 'locked' | 'failed';
  priority: number;
  attempt: number;
  retriesLeft: number;
  retryAt: string | null;
  workerId: string | null;
  lockExpiresAt: string | null;
  errorMessage: string | null;
}

export interface Incident {
  id: string;
  instanceId: string;
  stepId: string;
  taskId: string | null;
  kind: string;
  message: string;
  status: 'open' | 'resolved';
  createdAt: string;
}

/** An incident as GET /api/incidents lists it: with its process and, from a task, the worker's error. */
export interface IncidentItem extends Incident {
  details: Record<string, unknown> | null;
  definitionId: string;
  definitionKey: string;
  version: number;
  businessKey: string | null;
  errorMessage?: string | null;
  /** the worker's stack trace */
  errorDetails?: string | null;
}

export interface IncidentFilter {
  definitionKey?: string;
  kind?: string;
  limit?: number;
  cursor?: string;
}

export interface RetryResult {
  id: string;
  ok: boolean;
  reason?: 'not_found' | 'not_open' | 'variables_too_large';
  instanceStatus?: string;
}

export interface VariablesEdit {
  /** the revision the edit was made on */
  revision: number;
  set?: Record<string, unknown>;
  delete?: string[];
}

export interface InstanceDetail extends InstanceSummary {
  definitionId: string;
  revision: number;
  updatedAt: string;
  suspendedAt: string | null;
  variables: Record<string, unknown>;
  steps: StepState[];
  flows: FlowState[];
  tasks: OpenTask[];
  incidents: Incident[];
  /** the instances its call activities started */
  calledInstances: CalledInstance[];
  /** set on an instance a call activity started */
  parent?: { instanceId: string; stepId: string; scopePath?: string };
}

export interface CalledInstance {
  instanceId: string;
  stepId: string;
  scopePath?: string;
  generation: number;
  definitionKey: string;
  definitionVersion: number;
  status: InstanceStatus;
  openIncidents: number;
}

export interface HistoryEvent {
  seq: number;
  kind: string;
  stepId?: string | null;
  taskId?: string | null;
  attempt?: number | null;
  at: string;
  data: Record<string, unknown>;
}

export interface InstanceFilter {
  definitionKey?: string;
  status?: InstanceStatus | '';
  businessKey?: string;
  limit?: number;
  cursor?: string;
}

export interface Heatmap {
  key: string;
  version: number | null;
  instances: Partial<Record<InstanceStatus, number>>;
  elements: Record<string, Partial<Record<StepState['status'], number>>>;
  /** the newest `limit` instances are counted; `size` of them were (all, when below the limit) */
  sample: { limit: number; size: number; since: string | null };
}

/** A worker's element template: Camunda's element-template JSON, for Camunda 7 or Zeebe ($schema tells). */
export interface ElementTemplateJson {
  $schema?: string;
  id: string;
  name: string;
  version?: number;
  appliesTo: string[];
  [key: string]: unknown;
}

/** When a worker last fetched a topic (GET /api/topics/activity). */
export interface TopicActivity {
  topic: string;
  lastFetchedAt: string;
  workers: { workerId: string; lastFetchedAt: string }[];
}

/** Who the token in use belongs to (GET /api/me); name and role are null on a server without tokens. */
export interface Me {
  name: string | null;
  role: 'admin' | 'worker' | 'viewer' | 'person' | null;
  groups: string[];
  tokensRequired: boolean;
}

/** An open user task as GET /api/user-tasks lists it. */
export interface UserTask {
  id: string;
  instanceId: string;
  definitionKey: string;
  businessKey: string | null;
  stepId: string;
  /** the step's name, when it has one */
  name?: string;
  /** who holds it (claimed or assigned); null: nobody */
  assignee: string | null;
  candidateUsers: string[];
  candidateGroups: string[];
  dueAt: string | null;
  followUpAt: string | null;
  /** 0 to 100, 50 by default */
  priority: number;
  createdAt: string;
}

/** One camunda:formField: the variable it sets, its type and constraints (config is text, as in the XML). */
export interface UserTaskFormField {
  id: string;
  label?: string;
  type: 'string' | 'long' | 'boolean' | 'date' | 'enum';
  defaultValue?: string;
  values?: { id: string; name: string }[];
  constraints: { name: 'required' | 'minlength' | 'maxlength' | 'min' | 'max' | 'readonly'; config?: string }[];
}

export interface UserTaskForm {
  /** a form Baton does not render, named for another tasklist */
  formKey?: string;
  /** camunda:formData */
  fields?: UserTaskFormField[];
  /** an embedded Camunda Form (form-js JSON, zeebe:userTaskForm) */
  schema?: unknown;
}

/** GET /api/user-tasks/:id: the task with its form. */
export interface UserTaskDetail extends UserTask {
  form: UserTaskForm;
  /** the variables the task sees, which its form starts from */
  variables?: Record<string, unknown>;
  /** the error and escalation boundaries on the task: what its holder can raise instead of completing it */
  raises?: UserTaskRaise[];
}

export interface UserTaskRaise {
  kind: 'error' | 'escalation';
  boundaryId: string;
  name?: string;
  /** null: the boundary catches every code */
  code: string | null;
  interrupting: boolean;
}

export interface UserTaskFilter {
  assignee?: string;
  candidateUser?: string;
  /** comma-separated; a person token's own groups when omitted */
  candidateGroups?: string;
  unassigned?: boolean;
  instanceId?: string;
  definitionKey?: string;
  limit?: number;
  cursor?: string;
}

/** Who acts on a user task; a person token acts for itself and may omit both. */
export interface UserTaskActor {
  userId?: string;
  groups?: string[];
}

/** A field the server refused on completion (400 details.fields). */
export interface FormProblem {
  field: string;
  message: string;
}

/** The `/tasks` namespace's event: a user task was created, changed hands, or ended. */
export interface UserTaskEvent {
  id: string;
  instanceId: string;
  change: 'created' | 'updated' | 'ended';
}
