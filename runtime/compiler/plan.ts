// The Plan: the step DAG the engine runs, compiled from BPMN.
// It is stored as JSON (definitions.plan) and validated by schemas/plan.schema.json.

/** Kinds of step the runtime can execute. */
export const StepKind = {
  /** none start event: where a new instance begins */
  startEvent: 'startEvent',
  /** none end event: the token ends here */
  endEvent: 'endEvent',
  /** terminate end event: ends the whole instance, cancelling open work */
  terminateEndEvent: 'terminateEndEvent',
  /** service task executed by an external worker through a topic */
  serviceTask: 'serviceTask',
  /** forks into every outgoing flow; joins when every incoming flow is taken */
  parallelGateway: 'parallelGateway',
  /** takes the first outgoing flow whose condition holds, else the default */
  exclusiveGateway: 'exclusiveGateway',
  /** takes every outgoing flow whose condition holds, else the default */
  inclusiveGateway: 'inclusiveGateway',
} as const;
export type StepKind = (typeof StepKind)[keyof typeof StepKind];

export interface TaskSpec {
  /** topic workers subscribe to */
  topic: string;
  /** attempts allowed after the first failure; default 3 */
  retries: number;
  /** higher is fetched first; default 0 */
  priority: number;
}

export interface PlanStep {
  /** BPMN element id */
  id: string;
  kind: StepKind;
  name?: string;
  /** ids of incoming sequence flows, document order */
  incoming: string[];
  /** ids of outgoing sequence flows, document order (exclusive gateways test them in this order) */
  outgoing: string[];
  /** set for serviceTask only */
  task?: TaskSpec;
  /** id of the default outgoing flow, for exclusive and inclusive gateways */
  defaultFlow?: string;
}

export interface FlowCondition {
  /** FEEL expression, evaluated by feelin against the instance variables */
  feel: string;
  /** the expression as written in the BPMN file, for messages */
  source: string;
}

export interface PlanFlow {
  /** BPMN sequence flow id */
  id: string;
  name?: string;
  /** step id */
  source: string;
  /** step id */
  target: string;
  condition?: FlowCondition;
}

export interface Plan {
  /** BPMN process id; the definition key */
  processKey: string;
  name?: string;
  /** steps in document order */
  steps: PlanStep[];
  /** flows in document order */
  flows: PlanFlow[];
}

export interface Diagnostic {
  /** BPMN element id the problem is about; the process or definitions id when no element fits */
  elementId: string;
  message: string;
  severity: 'error' | 'warning';
}

export type CompileResult =
  | { ok: true; plan: Plan; fingerprint: string; warnings: Diagnostic[] }
  | { ok: false; diagnostics: Diagnostic[] };

export interface CompileOptions {
  /** which process to compile when the file holds several executable processes */
  processId?: string;
}
