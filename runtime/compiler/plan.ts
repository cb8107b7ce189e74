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
  /** service task executed by an external worker through a topic (send and business rule tasks with a topic too) */
  serviceTask: 'serviceTask',
  /** a plain or manual task, or a none intermediate throw event: the token passes straight through */
  passThrough: 'passThrough',
  /** signal intermediate throw or end event: broadcasts its signal after the transition commits, then moves on (see `throwSignal`) */
  signalThrow: 'signalThrow',
  /** escalation intermediate throw or end event: the innermost enclosing catcher fires; uncaught, the token goes on (see `throwEscalation`) */
  escalationThrow: 'escalationThrow',
  /** script task: the engine evaluates its FEEL expression or sandboxed JavaScript and moves on (see `script`) */
  scriptTask: 'scriptTask',
  /** forks into every outgoing flow; joins when every incoming flow is taken */
  parallelGateway: 'parallelGateway',
  /** takes the first outgoing flow whose condition holds, else the default */
  exclusiveGateway: 'exclusiveGateway',
  /** takes every outgoing flow whose condition holds, else the default */
  inclusiveGateway: 'inclusiveGateway',
  /** takes every outgoing flow to its catch events; the first event that fires wins and the others are skipped */
  eventBasedGateway: 'eventBasedGateway',
  /** intermediate catch event, a receive task or a user task (see `elementType`): waits for a timer, a message, a signal or a person (see `wait`) */
  catchEvent: 'catchEvent',
  /** boundary event on a service task: waits while its host is active (see `boundary`) */
  boundaryEvent: 'boundaryEvent',
  /** compensation intermediate throw or end event: runs compensation handlers, then moves on */
  compensationThrow: 'compensationThrow',
  /** embedded subprocess: a scope whose inner steps (scope = its id) run from its start to its ends */
  subProcess: 'subProcess',
  /** error end event: throws a BPMN error to the error boundaries of its enclosing subprocesses */
  errorEndEvent: 'errorEndEvent',
  /** a cycle of sequence flows (id `loop:<head>`): its body runs once per pass, from its head (see `cycle`) */
  loop: 'loop',
  /** call activity: starts an instance of another process and waits until it ends (see `call`) */
  callActivity: 'callActivity',
  /** event subprocess: armed while its scope (the process or a subprocess) runs; its start's trigger interrupts that scope and runs its body */
  eventSubProcess: 'eventSubProcess',
  /** the start event of an event subprocess: waits for its trigger (see `wait`) while the event subprocess is armed */
  eventSubProcessStart: 'eventSubProcessStart',
} as const;
export type StepKind = (typeof StepKind)[keyof typeof StepKind];

export interface TaskSpec {
  /** topic workers subscribe to */
  topic: string;
  /** attempts allowed after the first failure; default 3 */
  retries: number;
  /** higher is fetched first; default 0 */
  priority: number;
  /** 'compensate': when retries run out, compensate the instance instead of raising an incident */
  onExhausted?: 'compensate';
  /** zeebe:taskHeaders and camunda:properties: fixed key/value pairs each task hands its worker */
  headers?: Record<string, string>;
}

/** A script the engine runs when the token reaches a script task. */
export interface ScriptSpec {
  /** feel: a FEEL expression (zeebe:script, scriptFormat="feel"); javascript: run in the script sandbox */
  language: 'feel' | 'javascript';
  /** the FEEL expression without its leading "=", or the JavaScript source */
  source: string;
  /** the process variable the result is written to; absent: the result is not kept */
  resultVariable?: string;
}

/** When a timer is due: ISO-8601 as written in the BPMN. */
export interface TimerSpec {
  kind: 'duration' | 'date' | 'cycle';
  /** e.g. PT10S, 2026-12-01T09:00:00Z, R3/PT1H; an expression as written when `feel` is set */
  expression: string;
  /** `${...}` or `=...`: FEEL evaluated over the variables when the timer starts; its text is read as `kind` says */
  feel?: string;
  /**
   * a cycle in a Camunda 7 file: a cron expression there is Quartz's (weekdays 1-7 from Sunday);
   * absent, Zeebe's Spring cron (weekdays 0-7, Sunday 0 or 7)
   */
  quartz?: true;
}

/** What a catch or boundary event waits for. */
export type WaitSpec =
  | { trigger: 'timer'; timer: TimerSpec }
  /** correlationKey: FEEL evaluated when the token arrives; absent means the instance's business key */
  | { trigger: 'message'; name: string; correlationKey?: string }
  | { trigger: 'signal'; name: string }
  /** errorCode absent: catches every BPMN error of the host */
  | { trigger: 'error'; errorCode?: string; errorCodeVariable?: string; errorMessageVariable?: string }
  /** links the host to its compensation handler; it never waits at run time */
  | { trigger: 'compensation' }
  /** escalationCode absent: catches every escalation thrown inside its host; escalationCodeVariable receives the code */
  | { trigger: 'escalation'; escalationCode?: string; escalationCodeVariable?: string }
  /** fires once its condition holds: evaluated when it starts waiting and after every transition of its instance */
  | { trigger: 'conditional'; condition: FlowCondition | ScriptCondition }
  /** a user task: waits until a person completes it */
  | { trigger: 'user'; userTask: UserTaskSpec };

/** A user task attribute: fixed text, or FEEL (from `= ...` or JUEL `${...}`) evaluated when the task is created. */
export type UserTaskValue = { text: string } | { feel: string; source: string };

/** Who may act on a user task, when it is due, and its form. */
export interface UserTaskSpec {
  /** a user name */
  assignee?: UserTaskValue;
  /** a list, or text of comma-separated names */
  candidateUsers?: UserTaskValue;
  candidateGroups?: UserTaskValue;
  /** an ISO 8601 date-time, or a duration from the task's creation (`P2D`) */
  dueDate?: UserTaskValue;
  followUpDate?: UserTaskValue;
  /** 0 to 100; absent: 50 */
  priority?: UserTaskValue;
  /** a form Baton does not render (camunda:formKey, zeebe formKey or externalReference), handed to the tasklist */
  formKey?: string;
  /** camunda:formData: the fields a completion is checked against */
  formFields?: FormFieldSpec[];
  /** a Camunda Form (form-js JSON) embedded in the process with zeebe:userTaskForm */
  formSchema?: unknown;
}

/** One camunda:formField: the variable it sets, its type and its constraints. */
export interface FormFieldSpec {
  id: string;
  label?: string;
  type: 'string' | 'long' | 'boolean' | 'date' | 'enum';
  defaultValue?: string;
  /** enum: the allowed ids and their labels */
  values?: { id: string; name: string }[];
  constraints: { name: 'required' | 'minlength' | 'maxlength' | 'min' | 'max' | 'readonly'; config?: string }[];
}

/** A service task, user task, call activity or subprocess run once per element of a collection (multiInstanceLoopCharacteristics). */
export interface MultiInstanceSpec {
  /** FEEL that yields the list (camunda:collection: a variable name or an expression) */
  collection?: string;
  /** without a collection: FEEL that yields how many elements run (loopCardinality); each element is null */
  cardinality?: string;
  /** variable each element's task gets its element in (camunda:elementVariable) */
  elementVariable?: string;
  /** one element at a time (isSequential) instead of all at once */
  sequential: boolean;
  /** FEEL over the instance variables and the loop counters (nrOf… and Zeebe's numberOf…: engine/element-passes.ts instanceCounts) */
  completionCondition?: FlowCondition | ScriptCondition;
  /** baton:outputCollection: variable that receives the results, one per element in collection order */
  outputCollection?: string;
  /** baton:outputElement: FEEL over an element's completion variables; absent: all of them */
  outputElement?: string;
  /** what loopCounter is for the first element: 1 in Camunda 8 files (zeebe:loopCharacteristics), else 0 as in Camunda 7 */
  counterFrom?: 1;
}

/** One input or output mapping of a service task: `feel` is evaluated and its value written to `target`. */
export interface IoMapping {
  /** variable name, or a dotted path (zeebe `order.total`) into an object variable */
  target: string;
  /** FEEL; literal text, lists and maps of camunda:inputOutput are compiled to FEEL literals */
  feel: string;
  /** the mapping as written in the BPMN file, for messages */
  source: string;
}

/**
 * A Camunda 7 parameter whose value is a JavaScript `camunda:script`: the sandbox runs it over
 * the variables, its value is the parameter's, and what it sets with execution.setVariable goes
 * to the process variables, as in Camunda 7.
 */
export interface ScriptMapping {
  target: string;
  /** the script as written */
  javascript: string;
  /** the script, trimmed, for messages */
  source: string;
}

/** Input and output mappings of a service or script task (camunda:inputOutput, zeebe:ioMapping), in document order. */
export interface IoSpec {
  inputs: (IoMapping | ScriptMapping)[];
  outputs: (IoMapping | ScriptMapping)[];
}

/**
 * The variables a thrown signal carries to its receivers. Camunda 7 says them with camunda:in on
 * the signal's event definition; Zeebe broadcasts the throw event's locals (its input mappings).
 */
export interface SignalPayload {
  /** every variable the event sees (camunda:in variables="all"), or only its locals (Zeebe; variables="all" local="true") */
  all?: 'visible' | 'locals';
  /** each evaluated over the variables the event sees with its locals over them, in order */
  mappings: IoMapping[];
}

/**
 * What a call activity calls and which variables cross. Both dialects compile to this: Camunda 7's
 * calledElement with camunda:in/out, Zeebe's zeebe:calledElement with its propagate flags and
 * zeebe:ioMapping.
 */
export interface CallSpec {
  /** the called process id (definition key), or FEEL that yields it when the step starts */
  process: { key: string } | { feel: string; source: string };
  /**
   * latest: the newest version when the step starts; version: exactly `version`; versionTag: the
   * newest version whose process carries `versionTag`; deployment: the version deployed in the
   * same deployment as the calling definition
   */
  binding: 'latest' | 'version' | 'versionTag' | 'deployment';
  version?: number;
  versionTag?: string;
  /** the child starts with every variable the parent sees */
  inAll: boolean;
  /** child variables: FEEL over the parent's variables, applied over inAll's */
  inputs: IoMapping[];
  /** every variable of the ended child comes back (absent outputs) */
  outAll: boolean;
  /** parent variables: FEEL over the ended child's variables */
  outputs: IoMapping[];
  /** the child gets the parent's business key */
  businessKey: boolean;
  /**
   * the call runs the body of a parallel multi-instance subprocess, deployed with the caller
   * (compiler/subprocess-bodies.ts): only the variables its child changed come back, and the
   * body's fingerprint is the caller's too
   */
  body?: { fingerprint: string };
}

export interface BoundarySpec {
  /** the task, receive task, subprocess or call activity the event is attached to */
  attachedTo: string;
  /** an interrupting event cancels its host when it fires */
  interrupting: boolean;
  /**
   * A non-interrupting message, signal, timer-cycle, escalation or conditional boundary whose path is its own
   * (reached from it alone, ending in end events): it keeps waiting after it fires and every
   * firing runs the path afresh, as a pass of its own (its steps' `inLoop` is the boundary).
   */
  repeats?: { steps: string[]; flows: string[] };
}

export interface PlanStep {
  /** BPMN element id */
  id: string;
  kind: StepKind;
  /** the BPMN element when `kind` does not name it: bpmn:ReceiveTask on a catchEvent that waits for its message */
  elementType?: 'bpmn:ReceiveTask' | 'bpmn:UserTask';
  name?: string;
  /** ids of incoming sequence flows, document order */
  incoming: string[];
  /** ids of outgoing sequence flows, document order (exclusive gateways test them in this order) */
  outgoing: string[];
  /** set for serviceTask only */
  task?: TaskSpec;
  /** input/output mappings of a service or script task or an embedded subprocess (its locals) */
  io?: IoSpec;
  /** id of the default outgoing flow, for exclusive and inclusive gateways */
  defaultFlow?: string;
  /** set for catchEvent and boundaryEvent */
  wait?: WaitSpec;
  /** set for boundaryEvent */
  boundary?: BoundarySpec;
  /** ids of the boundary events attached to this step */
  boundaries?: string[];
  /** a completed step with a handler can be compensated: the handler step id */
  compensation?: { handler: string };
  /** set on compensation handler tasks (no sequence flows; run only by compensation) */
  compensationHandler?: boolean;
  /** compensationThrow: absent activityRef compensates every completed step (of its subprocess, inside one) */
  throwCompensation?: { activityRef?: string };
  /** id of the embedded subprocess the step is inside; absent at process level */
  scope?: string;
  /** set for subProcess: its inner none start event */
  subProcess?: { start: string };
  /**
   * set for eventSubProcess: its start event (the trigger); a non-interrupting one (`interrupting:
   * false`) runs its body once per firing, as a pass of the event subprocess (its inner steps'
   * `inLoop` is it), with `repeats` naming what a firing resets: the event subprocess and its inner
   * steps (not its start event, which keeps waiting) and their flows
   */
  eventSubProcess?: { start: string; interrupting?: false; repeats?: { steps: string[]; flows: string[] } };
  /** set for signalThrow: the signal every waiting catch, boundary, event subprocess and signal start receives */
  throwSignal?: { name: string; payload?: SignalPayload };
  /** set for escalationThrow: the code its catchers match */
  throwEscalation?: { escalationCode: string };
  /** set for errorEndEvent; errorCode absent: caught only by catch-all error boundaries */
  throwError?: { errorCode?: string };
  /** set for multi-instance service tasks */
  multiInstance?: MultiInstanceSpec;
  /** id of the innermost loop whose body holds the step; absent outside loops */
  inLoop?: string;
  /** set for loop steps */
  cycle?: CycleSpec;
  /** set for call activities */
  call?: CallSpec;
  /** set for script tasks */
  script?: ScriptSpec;
  /**
   * set on the inclusive split drawn after an element with conditional outgoing flows: the
   * element's id; when no condition holds and there is no default flow, the path ends (Camunda 7)
   */
  conditionalFlowsOf?: string;
}

/** A loop's body: a pass starts at the head with fresh step and flow states. */
export interface CycleSpec {
  head: string;
  /** the steps of the body, nested loops' included */
  steps: string[];
  /** flows back to the head: a pass that takes one is followed by another */
  backFlows: string[];
  /** flows out of the body: held while passes run, then resolved as the last pass resolved them */
  exitFlows: string[];
  /** a loop marker (standardLoopCharacteristics) on the head: passes repeat by its condition, not by back flows */
  repeat?: RepeatSpec;
}

/**
 * standardLoopCharacteristics: after each pass in which the activity completed, another runs while
 * `condition` holds and fewer than `maximum` passes ran; `testBefore` asks before the first too.
 * The condition sees `loopCounter`, the passes run so far.
 */
export interface RepeatSpec {
  condition?: FlowCondition | ScriptCondition;
  testBefore: boolean;
  maximum?: number;
  /**
   * a sequential multi-instance subprocess: one pass per element of the collection, read when the
   * loop starts; the element variable and loopCounter (0-based) are locals of the pass
   */
  elements?: MultiInstanceSpec;
}

export interface FlowCondition {
  /** FEEL expression, evaluated by feelin against the instance variables */
  feel: string;
  /** the expression as written in the BPMN file, for messages */
  source: string;
}

/** A Camunda 7 condition written in JavaScript: the sandbox runs it, and its value must be true or false. */
export interface ScriptCondition {
  /** the script as written, run over the instance variables (by name, and through `execution`) */
  javascript: string;
  /** the script, trimmed, for messages */
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
  condition?: FlowCondition | ScriptCondition;
}

export interface Plan {
  /** BPMN process id; the definition key */
  processKey: string;
  name?: string;
  /** the body of a parallel multi-instance subprocess: it runs only as that subprocess's elements */
  bodyOf?: { processKey: string; elementId: string };
  /** camunda:versionTag or zeebe:versionTag of the process: call activities can bind to it */
  versionTag?: string;
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
  | {
      ok: true;
      plan: Plan;
      fingerprint: string;
      warnings: Diagnostic[];
      javaTasks?: JavaTaskTopic[];
      /** the bodies of its parallel multi-instance subprocesses, at any depth: deployed with it */
      bodies?: { plan: Plan; fingerprint: string }[];
    }
  | { ok: false; diagnostics: Diagnostic[] };

export interface CompileOptions {
  /** which process to compile when the file holds several executable processes */
  processId?: string;
  /**
   * Camunda 7 migration: a task implemented by Java code (camunda:class, expression,
   * delegateExpression) becomes an external task whose topic is that class or expression
   * instead of being refused; the result lists each one.
   */
  javaTasksAsTopics?: boolean;
}

/** A task implemented by Java code that javaTasksAsTopics made an external task. */
export interface JavaTaskTopic {
  elementId: string;
  /** e.g. `camunda:class` */
  implementation: string;
  topic: string;
}
