// What a transition computes and the store writes: the engine fills an Effects, the
// transition writer turns it into one statement. Shared by engine/ and store/, so it
// sits below both.
import type { DueRule } from '../shared/timers.ts';
import type { FlowState, IncidentKind, StepStatus } from './vocabulary.ts';

export type Variables = Record<string, unknown>;

/** What is known of one instance before the transition; mutated as effects are computed. */
export interface InstanceState {
  flows: Record<string, FlowState>;
  steps: Record<string, StepStatus>;
  /** completed step ids, oldest first: compensation undoes them newest first */
  completedOrder?: string[];
  /** active: handlers are queued or running; saga: an onExhausted saga ran in this generation */
  compensation?: { active: boolean; saga: boolean };
  /** progress of multi-instance steps, the pass of each loop and the locals of subprocesses with mappings, by step id */
  loops?: Record<string, LoopState | PassState | ScopeLocals | HeldPayload>;
  /** the parent instance, when a call activity started this one: an uncaught BPMN error goes there */
  calledBy?: string;
}

/** The pass a loop runs (1 for the first), stored on the loop step's row; a repeating boundary's firing, on its row. */
export interface PassState {
  pass: number;
  /** a repeating boundary: firings that wait for the path of the one before to end */
  pending?: number;
  /** a repeating conditional boundary: its condition held when last evaluated (it fires when it turns true) */
  held?: boolean;
  /** a sequential multi-instance subprocess: the collection read when it started (pass n runs element n-1) */
  elements?: unknown[];
  /** and each element's result (outputElement), null until its pass ends */
  outputs?: unknown[];
  /** a non-interrupting event subprocess with mappings: the locals of the firing that runs (its inputs) */
  locals?: Variables;
  /** a non-interrupting event subprocess whose firings run in child instances: how many of them run */
  running?: number;
  /** and the firings the retry of its incident starts again (inputs that failed, a child that did not complete) */
  recall?: number[];
  /** and the returns whose output mappings failed, in the order they came, for that retry */
  heldReturns?: ElementReturn[];
}

/** An embedded subprocess's local variables (its inputs, and what its steps wrote to them), stored on its steps row. */
export interface ScopeLocals {
  locals: Variables;
}

/**
 * A catch event's payload its output mappings could not map, with what its event records: kept on
 * its steps row while it waits in the incident, whose retry maps it again; null once mapped.
 */
export interface HeldPayload {
  heldPayload: Variables | null;
  heldData?: Record<string, unknown>;
}

/** A multi-instance step's progress, stored on its steps row. */
export interface LoopState {
  /** the collection's elements, read when the step started */
  items: unknown[];
  /** how many element tasks were created (elements 0..created-1) */
  created: number;
  /** indexes of the completed elements, in completion order */
  completed: number[];
  /** one result per element, null until it completes */
  results: unknown[];
  /**
   * a multi-instance call activity: element returns kept while it waits in an incident (one's
   * output mappings failed), in the order they came; its retry applies them
   */
  heldReturns?: ElementReturn[];
  /**
   * a multi-instance call activity: elements whose child ended without completing (compensated,
   * or a BPMN error nothing caught); the retry of the step's incident calls them again
   */
  recall?: number[];
}

/** What an element's called instance ended with. */
export interface ElementReturn {
  index: number;
  variables: Variables;
  childInstanceId: string;
}

export interface CompensationTarget {
  host: string;
  handler: string;
}

export interface NewTask {
  stepId: string;
  topic: string;
  priority: number;
  retries: number;
  /** multi-instance: the element's index and its own variables (element variable, loopCounter) */
  loopIndex?: number;
  /** inside a loop: the passes of its enclosing loops, e.g. `/loop:Review#2`; absent at `/` */
  scopePath?: string;
  localVariables?: Variables;
  /** the step's task headers (zeebe:taskHeaders, camunda:properties), handed to its worker */
  headers?: Record<string, string>;
}

export interface NewEvent {
  kind: string;
  stepId?: string;
  taskId?: string;
  data?: Record<string, unknown>;
}

export interface NewIncident {
  stepId: string;
  kind: IncidentKind;
  message: string;
  details?: Record<string, unknown>;
}

export interface NewTimer {
  stepId: string;
  due: DueRule;
}

/** A call activity starts its child instance (after the parent's write, in its transaction). */
export interface NewCall {
  stepId: string;
  /** the called definition key, and the version or version tag a pinned call names */
  key: string;
  version?: number;
  versionTag?: string;
  /** the version deployed in the same deployment as the caller's definition */
  sameDeployment?: boolean;
  /** the child's variables: what the call passes in */
  variables: Variables;
  /** the child gets the parent's business key */
  businessKey: boolean;
  /** inside a loop: the pass the call activity runs in (as NewTask's) */
  scopePath?: string;
  /** multi-instance: the element this child runs */
  loopIndex?: number;
  /** the child runs a parallel subprocess's body: its return holds only what it changed */
  body?: boolean;
  /** a body's child: what it changed is measured against these (its input mappings' locals are not in them, so they always come back) */
  inherited?: Variables;
}

/** A BPMN error nothing in this instance catches, thrown on to the call activity that started it. */
export interface ThrownError {
  stepId: string;
  errorCode: string | null;
  errorMessage: string | null;
}

/** A user task as created: evaluated once, when its step starts waiting. */
export interface UserTaskDetails {
  /** the element's name when it has one, kept so that task queries filter and sort by it */
  name?: string;
  assignee: string | null;
  candidateUsers: string[];
  candidateGroups: string[];
  /** ISO 8601 date-times */
  dueAt: string | null;
  followUpAt: string | null;
  /** 0 to 100 */
  priority: number;
}

export interface NewSubscription {
  stepId: string;
  /** user: a user task waiting for a person (name is its step id) */
  kind: 'message' | 'signal' | 'user';
  /** set for kind user */
  userTask?: UserTaskDetails;
  name: string;
  /** message correlation key; null: the instance's business key */
  correlationKey: string | null;
  /** inside a loop: the pass it waits in (as NewTask's) */
  scopePath?: string;
  /** a multi-instance user task's element: its index and its own variables (element variable, loopCounter) */
  loopIndex?: number;
  localVariables?: Variables;
}

export interface Effects {
  steps: { stepId: string; status: StepStatus }[];
  flows: { flowId: string; state: FlowState }[];
  tasks: NewTask[];
  events: NewEvent[];
  incidents: NewIncident[];
  /** waits that start: timer rows and message/signal subscriptions */
  timers: NewTimer[];
  subscriptions: NewSubscription[];
  /** steps whose waits end (their timer rows are canceled, subscriptions deleted) */
  endedWaits: string[];
  /** steps whose open external task (ready, locked or failed) is canceled and open incident resolved (an interrupting boundary fired) */
  canceledTasks: string[];
  /** compensation runs to queue (hosts newest first); null throwStepId: an onExhausted saga */
  compensationRuns: { throwStepId: string | null; hosts: CompensationTarget[] }[];
  /** queue rows that move on: a handler starts running, or is done */
  compensationMoves: { host: string; to: 'running' | 'done' }[];
  /**
   * Completed steps with a compensation handler whose loop pass ends: each is kept as a row of
   * its own, `<step>@<scope path of the pass>`, so a compensation after the loop undoes every pass
   */
  keptCompletions: { stepId: string; as: string }[];
  /** a terminate end event was reached: open work of the instance is cancelled */
  terminated: boolean;
  /** multi-instance progress and loop passes that changed, by step id (written with the step's row) */
  loops: Record<string, LoopState | PassState | ScopeLocals | HeldPayload>;
  /** a loop's next pass began: the rows of these steps and flows from earlier passes are removed, their waits ended */
  resetSteps: string[];
  resetFlows: string[];
  /** child instances to start */
  calls: NewCall[];
  /** signals thrown: each is broadcast after the transition commits (store/signals.ts), none lost */
  /** `variables`: what the signal carries to its receivers (camunda:in, or a Zeebe throw's input mappings) */
  signals: { stepId: string; name: string; variables?: Variables }[];
  /** call activities interrupted or canceled: their running child instances are canceled */
  canceledCalls: string[];
  /** set when this (child) instance ends by throwing a BPMN error to its parent */
  thrownError?: ThrownError;
  /** escalations nothing in this (child) instance catches: each goes on to the call activity that started it */
  escalatedToParent?: { escalationCode: string; stepId: string }[];
}

export function emptyEffects(): Effects {
  return {
    steps: [],
    flows: [],
    tasks: [],
    events: [],
    incidents: [],
    timers: [],
    subscriptions: [],
    endedWaits: [],
    canceledTasks: [],
    compensationRuns: [],
    compensationMoves: [],
    keptCompletions: [],
    terminated: false,
    loops: {},
    resetSteps: [],
    resetFlows: [],
    calls: [],
    canceledCalls: [],
    signals: [],
  };
}
