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
  /** progress of multi-instance steps and the pass of each loop, by step id */
  loops?: Record<string, LoopState | PassState>;
}

/** The pass a loop runs (1 for the first), stored on the loop step's row. */
export interface PassState {
  pass: number;
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

export interface NewSubscription {
  stepId: string;
  kind: 'message' | 'signal';
  name: string;
  /** message correlation key; null: the instance's business key */
  correlationKey: string | null;
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
  /** a terminate end event was reached: open work of the instance is cancelled */
  terminated: boolean;
  /** multi-instance progress and loop passes that changed, by step id (written with the step's row) */
  loops: Record<string, LoopState | PassState>;
  /** a loop's next pass began: the rows of these steps and flows from earlier passes are removed */
  resetSteps: string[];
  resetFlows: string[];
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
    terminated: false,
    loops: {},
    resetSteps: [],
    resetFlows: [],
  };
}
