// The parts of bpmn-moddle elements the compiler reads. moddle builds these
// objects from its descriptors; parse.ts casts its result to them once, and
// every other module reads only these fields.

export interface BpmnElement {
  readonly $type: string;
  readonly id?: string;
  readonly name?: string;
  /** attributes of namespaces moddle has no descriptor for, e.g. "baton:retries", and xmlns declarations */
  readonly $attrs?: Record<string, string>;
  $instanceOf(type: string): boolean;
}

export interface BpmnDefinitions extends BpmnElement {
  readonly rootElements?: BpmnElement[];
}

export interface BpmnAssociation extends BpmnElement {
  readonly sourceRef?: BpmnElement;
  readonly targetRef?: BpmnElement;
}

/** An embedded subprocess holds flow elements like a process. */
export interface BpmnSubProcess extends BpmnElement {
  readonly flowElements?: BpmnElement[];
  readonly artifacts?: BpmnElement[];
  readonly triggeredByEvent?: boolean;
}

export interface BpmnProcess extends BpmnElement {
  readonly flowElements?: BpmnElement[];
  /** associations (compensation links), text annotations, groups */
  readonly artifacts?: BpmnElement[];
  readonly isExecutable?: boolean;
}

export interface BpmnFlowNode extends BpmnElement {
  readonly eventDefinitions?: BpmnElement[];
  readonly loopCharacteristics?: BpmnElement;
  readonly isForCompensation?: boolean;
  /** default outgoing flow of a gateway (resolved reference) */
  readonly default?: BpmnElement;
  /** camunda:type, "external" for external tasks */
  readonly type?: string;
  /** camunda:topic */
  readonly topic?: string;
  /** camunda:taskPriority, kept as written (it may be an expression) */
  readonly taskPriority?: string;
  /** boundary events: the activity they sit on */
  readonly attachedToRef?: BpmnElement;
  /** boundary events: false for non-interrupting (BPMN default true) */
  readonly cancelActivity?: boolean;
  /** subprocesses: true for an event subprocess */
  readonly triggeredByEvent?: boolean;
}

/** bpmn:multiInstanceLoopCharacteristics with the camunda attributes. */
export interface BpmnMultiInstance extends BpmnElement {
  readonly isSequential?: boolean;
  readonly completionCondition?: BpmnExpression;
  readonly loopCardinality?: BpmnExpression;
  /** camunda:collection */
  readonly collection?: string;
  /** camunda:elementVariable */
  readonly elementVariable?: string;
  /** zeebe:loopCharacteristics among them */
  readonly extensionElements?: { values?: BpmnElement[] };
}

/** Timer, message, signal and error event definitions, as far as the compiler reads them. */
export interface BpmnEventDefinition extends BpmnElement {
  readonly timeDuration?: BpmnExpression;
  readonly timeDate?: BpmnExpression;
  readonly timeCycle?: BpmnExpression;
  readonly messageRef?: BpmnElement;
  readonly signalRef?: BpmnElement;
  readonly errorRef?: BpmnElement & { readonly errorCode?: string };
  readonly escalationRef?: BpmnElement & { readonly escalationCode?: string };
  /** compensate event definitions */
  readonly activityRef?: BpmnElement;
  readonly waitForCompletion?: boolean;
  /** camunda:errorCodeVariable / camunda:errorMessageVariable */
  readonly errorCodeVariable?: string;
  readonly errorMessageVariable?: string;
  /** camunda:escalationCodeVariable */
  readonly escalationCodeVariable?: string;
}

export interface BpmnExpression extends BpmnElement {
  readonly body?: string;
  readonly language?: string;
}

export interface BpmnSequenceFlow extends BpmnElement {
  readonly sourceRef?: BpmnElement;
  readonly targetRef?: BpmnElement;
  readonly conditionExpression?: BpmnExpression;
}

/** `<zeebe:taskDefinition type="..." retries="..."/>` read by the zeebe moddle. */
export interface ZeebeTaskDefinition {
  readonly type?: string;
  readonly retries?: string;
}

export const BPMN_NAMESPACE = {
  baton: 'https://baton.dev/schema/bpmn/1.0',
  zeebe: 'http://camunda.org/schema/zeebe/1.0',
} as const;

/** The name on one line, or undefined when the element has none. */
function nameOf(element: BpmnElement): string | undefined {
  const name = element.name?.replace(/\s+/g, ' ').trim();
  return name ? name : undefined;
}

/** Quoted label as a modeler shows it: the name, else the id. */
export function labelOf(element: BpmnElement): string {
  return `"${nameOf(element) ?? element.id ?? '?'}"`;
}

/** For messages: `Task_1 "Charge card"`, or just `Task_1` when the element has no name. */
export function describeElement(element: BpmnElement): string {
  const name = nameOf(element);
  return name ? `${element.id ?? '?'} "${name}"` : (element.id ?? '?');
}
