// Which BPMN flow nodes Baton runs, and a clear refusal for every other one.
import { labelOf, type BpmnElement, type BpmnFlowNode, type BpmnMultiInstance } from './model.ts';
import { StepKind } from './plan.ts';
import { isExternalScriptTask } from './scripts.ts';
import { messageThrowDefinition } from './task-spec.ts';

export type Classification = { supported: true; kind: StepKind } | { supported: false; message: string };

const GATEWAY_KINDS: Record<string, StepKind> = {
  'bpmn:ParallelGateway': StepKind.parallelGateway,
  'bpmn:ExclusiveGateway': StepKind.exclusiveGateway,
  'bpmn:InclusiveGateway': StepKind.inclusiveGateway,
};

/** bpmn:EventBasedGateway with the attributes moddle reads. */
interface BpmnEventBasedGateway extends BpmnFlowNode {
  readonly instantiate?: boolean;
  readonly eventGatewayType?: string;
}

const SUPPORTED = 'Baton does not run this element (docs/events.md lists what it runs)';

const START_TRIGGERS = ['bpmn:TimerEventDefinition', 'bpmn:MessageEventDefinition', 'bpmn:SignalEventDefinition'];
const CATCH_TRIGGERS = [...START_TRIGGERS, 'bpmn:ConditionalEventDefinition'];
const EVENT_SUB_TRIGGERS = [...CATCH_TRIGGERS, 'bpmn:ErrorEventDefinition', 'bpmn:EscalationEventDefinition'];
const BOUNDARY_TRIGGERS = [
  ...CATCH_TRIGGERS,
  'bpmn:ErrorEventDefinition',
  'bpmn:EscalationEventDefinition',
  'bpmn:CompensateEventDefinition',
];

/** Elements of process.flowElements that are data, not flow nodes: they never take part in the flow. */
const DATA_ELEMENTS = ['bpmn:DataObject', 'bpmn:DataObjectReference', 'bpmn:DataStoreReference'] as const;

export function isFlowNode(element: BpmnElement): boolean {
  return !(DATA_ELEMENTS as readonly string[]).includes(element.$type) && element.$instanceOf('bpmn:FlowNode');
}

/** `inEventSubProcess`: the node is directly inside an event subprocess, whose start event waits for a trigger. */
export function classifyNode(node: BpmnFlowNode, inEventSubProcess = false): Classification {
  const definitions = (node.eventDefinitions ?? []).map((d) => d.$type);
  if (node.$type === 'bpmn:StartEvent' && inEventSubProcess) {
    return definitions.length === 1 && EVENT_SUB_TRIGGERS.includes(definitions[0] as string)
      ? { supported: true, kind: StepKind.eventSubProcessStart }
      : refuse(
          node,
          'the start event of an event subprocess has exactly one timer, message, signal, condition, error or escalation trigger',
        );
  }
  const gateway = GATEWAY_KINDS[node.$type];
  if (gateway) return { supported: true, kind: gateway };
  switch (node.$type) {
    case 'bpmn:EventBasedGateway':
      return classifyEventGateway(node as BpmnEventBasedGateway);
    case 'bpmn:StartEvent':
      // A conditional start event starts an instance when conditions are evaluated over given variables (POST /api/conditions).
      if (definitions.length === 0 || (definitions.length === 1 && CATCH_TRIGGERS.includes(definitions[0] as string)))
        return { supported: true, kind: StepKind.startEvent };
      return refuse(node, 'start events are none, timer, message, signal or conditional start events with at most one trigger');
    case 'bpmn:EndEvent':
      if (definitions.length === 0) return { supported: true, kind: StepKind.endEvent };
      if (definitions.length === 1 && definitions[0] === 'bpmn:TerminateEventDefinition')
        return { supported: true, kind: StepKind.terminateEndEvent };
      if (definitions.length === 1 && definitions[0] === 'bpmn:CompensateEventDefinition')
        return { supported: true, kind: StepKind.compensationThrow };
      if (definitions.length === 1 && definitions[0] === 'bpmn:ErrorEventDefinition')
        return { supported: true, kind: StepKind.errorEndEvent };
      if (definitions.length === 1 && definitions[0] === 'bpmn:SignalEventDefinition')
        return { supported: true, kind: StepKind.signalThrow };
      if (isEscalation(definitions)) return { supported: true, kind: StepKind.escalationThrow };
      if (isMessage(definitions)) return classifyMessageThrow(node);
      return refuse(node, 'only none, terminate, error, escalation, signal, message and compensation end events are supported');
    case 'bpmn:IntermediateThrowEvent':
      if (isMessage(definitions)) return classifyMessageThrow(node);
      // A link throw goes on at its link catch event (compiler/links.ts joins them with a flow).
      if (definitions.length === 0 || isLink(definitions)) return { supported: true, kind: StepKind.passThrough };
      if (definitions.length === 1 && definitions[0] === 'bpmn:SignalEventDefinition')
        return { supported: true, kind: StepKind.signalThrow };
      if (isEscalation(definitions)) return { supported: true, kind: StepKind.escalationThrow };
      return definitions.length === 1 && definitions[0] === 'bpmn:CompensateEventDefinition'
        ? { supported: true, kind: StepKind.compensationThrow }
        : refuse(
            node,
            'of intermediate throw events, Baton runs none, link, signal, escalation, message and compensation ones: remove the trigger or the event',
          );
    case 'bpmn:ServiceTask':
    case 'bpmn:SendTask':
      return { supported: true, kind: StepKind.serviceTask };
    case 'bpmn:BusinessRuleTask':
      return classifyBusinessRuleTask(node);
    case 'bpmn:ScriptTask':
      if (isExternalScriptTask(node)) return { supported: true, kind: StepKind.serviceTask };
      return node.loopCharacteristics
        ? refuse(
            node,
            'a script task cannot loop or be multi-instance: put it in a subprocess that carries the marker, or compute the list in one script',
          )
        : { supported: true, kind: StepKind.scriptTask };
    case 'bpmn:Task':
    case 'bpmn:ManualTask':
      // Nothing runs a manual task: in Camunda 7 and Zeebe alike the token passes it at once.
      return node.loopCharacteristics
        ? refuse(node, 'a task that does nothing cannot loop or be multi-instance: remove the marker, or make it a service task')
        : { supported: true, kind: StepKind.passThrough };
    case 'bpmn:CallActivity':
      return { supported: true, kind: StepKind.callActivity };
    case 'bpmn:SubProcess':
      if (node.triggeredByEvent)
        return node.loopCharacteristics
          ? refuse(node, 'an event subprocess cannot loop or be multi-instance')
          : { supported: true, kind: StepKind.eventSubProcess };
      // A sequential one runs its elements as passes of a loop scope. The elements of a parallel one
      // run side by side, each in a child instance of its body (compiler/subprocess-bodies.ts):
      // in the plan it is a call activity.
      if (
        node.loopCharacteristics?.$type === 'bpmn:MultiInstanceLoopCharacteristics' &&
        (node.loopCharacteristics as BpmnMultiInstance).isSequential !== true
      )
        return { supported: true, kind: StepKind.callActivity };
      return { supported: true, kind: StepKind.subProcess };
    case 'bpmn:Transaction':
      return refuse(
        node,
        'transaction subprocesses (cancel semantics) are not supported; use an embedded subprocess with compensation',
      );
    case 'bpmn:ReceiveTask':
      return classifyReceiveTask(node);
    case 'bpmn:UserTask':
      // A person completes it: it waits as a catch event does (user-tasks.ts reads who and how).
      return { supported: true, kind: StepKind.catchEvent };
    case 'bpmn:IntermediateCatchEvent':
      if (isLink(definitions)) return { supported: true, kind: StepKind.passThrough };
      return definitions.length === 1 && CATCH_TRIGGERS.includes(definitions[0] as string)
        ? { supported: true, kind: StepKind.catchEvent }
        : refuse(node, 'intermediate catch events wait for exactly one timer, message, signal or condition');
    case 'bpmn:BoundaryEvent':
      return definitions.length === 1 && BOUNDARY_TRIGGERS.includes(definitions[0] as string)
        ? { supported: true, kind: StepKind.boundaryEvent }
        : refuse(node, 'boundary events catch exactly one timer, message, signal, condition, error, escalation or compensation');
    default:
      return refuse(node, `${SUPPORTED}; replace or remove this element`);
  }
}

function isEscalation(definitions: string[]): boolean {
  return definitions.length === 1 && definitions[0] === 'bpmn:EscalationEventDefinition';
}

function isMessage(definitions: string[]): boolean {
  return definitions.length === 1 && definitions[0] === 'bpmn:MessageEventDefinition';
}

/**
 * A message throw or end event is a job, as in both engines: with an implementation
 * (camunda:type="external" on its message event definition, or a zeebe:taskDefinition) it is an
 * external task a worker completes after sending the message; Java code is refused by the task
 * reader, naming it. Without one it would do nothing, which Camunda 7 does in silence.
 */
function classifyMessageThrow(node: BpmnFlowNode): Classification {
  const definition = messageThrowDefinition(node) ?? {};
  const values = (node as BpmnFlowNode & { extensionElements?: { values?: BpmnElement[] } }).extensionElements?.values ?? [];
  const implemented =
    definition.type !== undefined ||
    definition.class !== undefined ||
    definition.expression !== undefined ||
    definition.delegateExpression !== undefined ||
    values.some((v) => v.$type === 'zeebe:taskDefinition');
  return implemented
    ? { supported: true, kind: StepKind.serviceTask }
    : refuse(
        node,
        'a message throw or end event is sent by a worker: set camunda:type="external" and a camunda:topic on its message event definition (or a zeebe:taskDefinition), and send the message from the worker (POST /api/messages); or make it a none event',
      );
}

function isLink(definitions: string[]): boolean {
  return definitions.length === 1 && definitions[0] === 'bpmn:LinkEventDefinition';
}

/** A business rule task runs as an external task (camunda:type="external" or zeebe:taskDefinition); DMN is not evaluated. */
function classifyBusinessRuleTask(node: BpmnFlowNode): Classification {
  const { decisionRef, extensionElements } = node as BpmnFlowNode & {
    decisionRef?: string;
    extensionElements?: { values?: BpmnElement[] };
  };
  if (decisionRef || (extensionElements?.values ?? []).some((v) => v.$type === 'zeebe:calledDecision'))
    return refuse(
      node,
      'Baton does not evaluate DMN decisions: give it an external implementation (camunda:type="external" with camunda:topic, or a zeebe:taskDefinition) and decide in a worker',
    );
  return { supported: true, kind: StepKind.serviceTask };
}

function classifyEventGateway(node: BpmnEventBasedGateway): Classification {
  if (node.instantiate || node.eventGatewayType === 'Parallel')
    return refuse(
      node,
      'an event-based gateway that starts instances (instantiate or eventGatewayType="Parallel") is not supported; start with message or signal start events instead',
    );
  return { supported: true, kind: StepKind.eventBasedGateway };
}

/**
 * A receive task waits for its message exactly as a message catch event does (kind catchEvent,
 * its `wait` read in events.ts); what it cannot say unambiguously is refused.
 */
function classifyReceiveTask(node: BpmnFlowNode): Classification {
  const { messageRef, instantiate } = node as BpmnFlowNode & { messageRef?: BpmnElement; instantiate?: boolean };
  if (instantiate)
    return refuse(node, 'a receive task that starts instances (instantiate="true") is not supported: use a message start event');
  if (!messageRef)
    return refuse(
      node,
      'a receive task without a message would wait for a signal to its execution (Camunda 7), which Baton does not offer: give it a message (messageRef) to wait for',
    );
  if (node.loopCharacteristics?.$type === 'bpmn:MultiInstanceLoopCharacteristics')
    return refuse(
      node,
      'a multi-instance receive task cannot be correlated unambiguously (every element waits for the same message): remove the marker, or wait in a sequential multi-instance subprocess with a correlation key per element',
    );
  if (node.loopCharacteristics)
    return refuse(node, 'a receive task cannot have a loop marker: draw a sequence flow back to it instead');
  return { supported: true, kind: StepKind.catchEvent };
}

/** The BPMN type as a modeler shows it: event definitions and loop markers included. */
export function describeType(node: BpmnFlowNode): string {
  const markers = [...(node.eventDefinitions ?? []), ...(node.loopCharacteristics ? [node.loopCharacteristics] : [])];
  return markers.length === 0 ? node.$type : `${node.$type} with ${markers.map((m) => m.$type).join(', ')}`;
}

function refuse(node: BpmnFlowNode, why: string): Classification {
  return {
    supported: false,
    message: `Unsupported element ${describeType(node)} ${labelOf(node)} (id ${node.id ?? '?'}): ${why}`,
  };
}
