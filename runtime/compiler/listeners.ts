// Execution listeners. A Camunda 8 job listener (<zeebe:executionListener eventType="start|end"
// type="…" retries="…"/>) is a job a worker completes before its element starts or after it ends,
// and the token waits for it: exactly an external task on the element's path. The compiler draws
// each one as a service task step of its own (`listener:<element id>:<start|end>:<n>`) between the
// element and its flows, so every rule that reads the graph (joins, loops, soundness, retries,
// incidents) applies to it unchanged. A Camunda 7 listener whose work is an inline JavaScript
// <camunda:script> becomes a script task step the same way, run by the engine in the sandbox
// (its execution.setVariable writes reach the process, as in Camunda 7). Camunda 7 listeners that
// run Java code, an expression, or a script in another language or a resource are refused.
import { errorAt } from './diagnostics.ts';
import type { GraphFlow, GraphNode, ProcessGraph } from './graph.ts';
import { describeElement, type BpmnElement, type BpmnFlowNode, type BpmnSequenceFlow } from './model.ts';
import type { Diagnostic, StepKind, TaskSpec } from './plan.ts';
import { isJavaScript } from './scripts.ts';
import { TASK_DEFAULTS } from './task-spec.ts';

export interface ListenerSteps {
  /** the listener steps' tasks, by step id */
  tasks: Map<string, TaskSpec>;
  diagnostics: Diagnostic[];
}

type EventType = 'start' | 'end' | 'take';

/** A job listener's topic and retries, or a Camunda 7 JavaScript listener's script. */
type Listener = { eventType: EventType } & ({ type: string; retries: number } | { script: string });

interface GenericElement {
  $type: string;
  $children?: GenericElement[];
  [attribute: string]: unknown;
}

/** Kinds whose element has a before and an after on its path; `start`/`end` say which listeners fit. */
const HOSTS: Partial<Record<StepKind, EventType[]>> = {
  serviceTask: ['start', 'end'],
  scriptTask: ['start', 'end'],
  passThrough: ['start', 'end'],
  callActivity: ['start', 'end'],
  subProcess: ['start', 'end'],
  catchEvent: ['start', 'end'],
  signalThrow: ['start', 'end'],
  escalationThrow: ['start', 'end'],
  // The token is born at a start event and a boundary event, and dies at an end event.
  startEvent: ['end'],
  boundaryEvent: ['end'],
  endEvent: ['start'],
};

/** Inserts a service task step per job listener, refusing the listeners Baton cannot run. */
export function insertListeners(graph: ProcessGraph, process: BpmnElement): ListenerSteps {
  const result: ListenerSteps = { tasks: new Map(), diagnostics: [] };
  refuseOn(process, 'the process', result.diagnostics);
  if (extensionValues(process).some((v) => v.$type === 'zeebe:executionListeners'))
    result.diagnostics.push(
      errorAt(
        process.id ?? 'definitions',
        'Execution listeners on the process are not run: draw a service task after its start event or before its end events instead',
      ),
    );
  for (const flow of [...graph.flows]) insertTakeListeners(graph, flow, result.diagnostics);
  for (const node of [...graph.nodes.values()]) {
    const scripts = readScriptListeners(node.element, describeElement(node.element), result.diagnostics);
    // An element Baton does not run is refused already; its listeners add nothing to say.
    if (node.kind === undefined) continue;
    const listeners = [...scripts, ...(readListeners(node, result.diagnostics) ?? [])];
    if (listeners.length === 0) continue;
    const problem = hostProblem(graph, node, listeners);
    if (problem) {
      result.diagnostics.push(errorAt(node.id, `Execution listeners of ${describeElement(node.element)}: ${problem}`));
      continue;
    }
    for (const eventType of ['start', 'end'] as const) {
      const own = listeners.filter((l) => l.eventType === eventType);
      const steps = own.map((l, i) => addStep(graph, node, l, i + 1, result.tasks));
      if (steps.length > 0) chain(graph, node, steps, eventType);
    }
  }
  return result;
}

/** Camunda 7's listeners on the process run in its engine: refused, saying what to draw instead. */
function refuseOn(element: BpmnElement, label: string, diagnostics: Diagnostic[]): void {
  const camunda = extensionValues(element).filter((v) => v.$type === 'camunda:ExecutionListener');
  if (camunda.length === 0) return;
  const runs = camunda.some((l) => l.script !== undefined) ? 'a script' : 'Java code or an expression';
  diagnostics.push(
    errorAt(
      element.id ?? 'definitions',
      `Execution listener on ${label} runs ${runs} inside Camunda 7's engine, which Baton does not run: draw the work as an external service task (or a script task) before or after it, and remove the listener`,
    ),
  );
}

/**
 * A Camunda 7 listener on a sequence flow runs when the token takes it: an inline JavaScript one
 * is a script task step drawn on the flow (`listener:<flow id>:take:<n>`); the flow keeps its id,
 * source and condition and leads to the first of them, the last leads on to the flow's target.
 */
function insertTakeListeners(graph: ProcessGraph, flow: GraphFlow, diagnostics: Diagnostic[]): void {
  const scripts = readScriptListeners(flow.element, `sequence flow ${flow.id}`, diagnostics, ['take']);
  if (scripts.length === 0) return;
  const source = graph.nodes.get(flow.source);
  const target = graph.nodes.get(flow.target);
  if (!source || !target) return;
  if (source.kind === 'eventBasedGateway') {
    diagnostics.push(
      errorAt(
        flow.id,
        `Execution listener on sequence flow ${flow.id}: a flow out of an event-based gateway must lead straight to the event it waits for; put the script after the event`,
      ),
    );
    return;
  }
  // A flow stays inside one scope: its steps go where its source is.
  const steps = scripts.map((l, i) => addStep(graph, source, { ...l, eventType: 'take' }, i + 1, new Map(), flow.id));
  const first = steps[0]!;
  const last = steps[steps.length - 1]!;
  target.incoming = target.incoming.filter((id) => id !== flow.id);
  flow.target = first.id;
  first.incoming.push(flow.id);
  for (let i = 0; i + 1 < steps.length; i++) connect(graph, steps[i]!, steps[i + 1]!);
  connect(graph, last, target);
}

/**
 * The Camunda 7 listeners of an element that are an inline JavaScript script on one of `events`;
 * any other (Java code, an expression, another language, a resource, another event) is refused.
 */
function readScriptListeners(
  element: BpmnElement,
  label: string,
  diagnostics: Diagnostic[],
  events: string[] = ['start', 'end'],
): Listener[] {
  const listeners: Listener[] = [];
  for (const raw of extensionValues(element).filter((v) => v.$type === 'camunda:ExecutionListener')) {
    const script = raw.script as { scriptFormat?: string; resource?: string; value?: string } | undefined;
    // Camunda 7 listens to "take" on a flow when no event is named.
    const event =
      typeof raw.event === 'string' && raw.event.trim() !== '' ? raw.event.trim() : events.length === 1 ? events[0]! : '';
    const problem = !script
      ? "runs Java code or an expression inside Camunda 7's engine, which Baton does not run: write it as an inline JavaScript camunda:script, or draw the work as an external service task before or after it"
      : !isJavaScript(script.scriptFormat ?? '')
        ? `runs a ${script.scriptFormat ?? ''} script, which Baton does not run: write it in JavaScript, or draw the work as a script or service task`
        : script.resource
          ? `runs the script in the resource "${script.resource}", which Baton does not load: write the script inline`
          : !(script.value ?? '').trim()
            ? 'has an empty script: write one, or remove the listener'
            : !events.includes(event)
              ? `listens to "${event}": Baton runs ${events.join(' and ')} listeners here`
              : undefined;
    if (problem) {
      diagnostics.push(errorAt(element.id ?? 'definitions', `Execution listener on ${label} ${problem}`));
      continue;
    }
    listeners.push({ eventType: event as EventType, script: script!.value ?? '' });
  }
  return listeners;
}

function extensionValues(element: BpmnElement): GenericElement[] {
  return (element as BpmnElement & { extensionElements?: { values?: GenericElement[] } }).extensionElements?.values ?? [];
}

function readListeners(node: GraphNode, diagnostics: Diagnostic[]): Listener[] | undefined {
  const group = extensionValues(node.element).filter((v) => v.$type === 'zeebe:executionListeners');
  if (group.length === 0) return undefined;
  const label = describeElement(node.element);
  const listeners: Listener[] = [];
  for (const raw of group.flatMap((g) => g.$children ?? []).filter((c) => c.$type === 'zeebe:executionListener')) {
    const eventType = typeof raw.eventType === 'string' ? raw.eventType.trim() : '';
    const type = typeof raw.type === 'string' ? raw.type.trim() : '';
    const retriesText = typeof raw.retries === 'string' ? raw.retries.trim() : '';
    const retries = retriesText === '' ? TASK_DEFAULTS.retries : Number(retriesText);
    const problem =
      eventType !== 'start' && eventType !== 'end'
        ? `has eventType "${eventType}": use "start" or "end"`
        : type === ''
          ? 'has no job type: set the type its worker subscribes to'
          : type.startsWith('=')
            ? `computes its job type ("${type}"): Baton needs a fixed topic`
            : !Number.isInteger(retries) || retries < 0
              ? `has retries "${retriesText}": use a whole number of 0 or more`
              : undefined;
    if (problem) {
      diagnostics.push(errorAt(node.id, `An execution listener of ${label} ${problem}`));
      continue;
    }
    listeners.push({ eventType: eventType as EventType, type, retries });
  }
  return listeners;
}

function hostProblem(graph: ProcessGraph, node: GraphNode, listeners: Listener[]): string | undefined {
  const fits = node.kind ? HOSTS[node.kind] : undefined;
  if (!fits)
    return 'Baton runs them on tasks, subprocesses, call activities and intermediate events (end listeners also on start and boundary events, start listeners on end events); draw a service task before or after this element instead';
  const misfit = listeners.find((l) => !fits.includes(l.eventType));
  if (misfit)
    return `${misfit.eventType} listeners do not fit here (a ${node.kind === 'endEvent' ? 'path ends at an end event' : 'path begins at this event'}); use ${fits[0]} listeners, or a service task`;
  if (node.element.loopCharacteristics)
    return 'the element is multi-instance or loops, and it is not clear whether a listener runs per element or once; draw a service task before or after it instead';
  if (node.element.isForCompensation) return 'a compensation handler runs only through compensation, with no path to put them on';
  if (node.kind === 'startEvent' && node.scope !== undefined && graph.nodes.get(node.scope)?.kind === 'eventSubProcess')
    return 'the start event of an event subprocess waits for its trigger; put a service task after it instead';
  const fromRace = node.incoming.some((f) => {
    const source = graph.nodes.get(graph.flows.find((x) => x.id === f)?.source ?? '');
    return source?.kind === 'eventBasedGateway';
  });
  if (fromRace && listeners.some((l) => l.eventType === 'start'))
    return 'a catch event after an event-based gateway must follow the gateway directly; use an end listener, or a service task after the event';
  return undefined;
}

function addStep(
  graph: ProcessGraph,
  host: GraphNode,
  listener: Listener,
  n: number,
  tasks: Map<string, TaskSpec>,
  on = host.id,
): GraphNode {
  const id = `listener:${on}:${listener.eventType}:${n}`;
  const hostName = on === host.id ? host.element.name?.trim() || host.id : on;
  // A script listener is a script task: scripts.ts reads its spec like any other's.
  const element = ('script' in listener
    ? {
        $type: 'bpmn:ScriptTask',
        id,
        name: `${hostName}: ${listener.eventType} listener script`,
        scriptFormat: 'javascript',
        script: listener.script,
        $attrs: {},
        $instanceOf: (type: string) => type === 'bpmn:ScriptTask' || type === 'bpmn:Task' || type === 'bpmn:FlowNode',
      }
    : {
        $type: 'bpmn:ServiceTask',
        id,
        name: `${hostName}: ${listener.eventType} listener ${listener.type}`,
        $attrs: {},
        $instanceOf: (type: string) => type === 'bpmn:ServiceTask' || type === 'bpmn:Task' || type === 'bpmn:FlowNode',
      }) as unknown as BpmnFlowNode;
  const node: GraphNode = {
    id,
    element,
    kind: 'script' in listener ? 'scriptTask' : 'serviceTask',
    ...(host.scope !== undefined ? { scope: host.scope } : {}),
    incoming: [],
    outgoing: [],
  };
  graph.nodes.set(id, node);
  if (!('script' in listener))
    tasks.set(id, { topic: listener.type, retries: listener.retries, priority: TASK_DEFAULTS.priority });
  return node;
}

/**
 * Start listeners take the element's incoming flows and lead to it; end listeners follow it and
 * take its outgoing flows. Each listener leads to the next with a flow of its own.
 */
function chain(graph: ProcessGraph, host: GraphNode, steps: GraphNode[], eventType: EventType): void {
  const byId = new Map(graph.flows.map((f) => [f.id, f]));
  const [first, last] = [steps[0]!, steps[steps.length - 1]!];
  if (eventType === 'start') {
    for (const id of host.incoming) byId.get(id)!.target = first.id;
    first.incoming = host.incoming;
    host.incoming = [];
  } else {
    for (const id of host.outgoing) byId.get(id)!.source = last.id;
    last.outgoing = host.outgoing;
    host.outgoing = [];
  }
  const sequence = eventType === 'start' ? [...steps, host] : [host, ...steps];
  for (let i = 0; i + 1 < sequence.length; i++) connect(graph, sequence[i]!, sequence[i + 1]!);
}

function connect(graph: ProcessGraph, from: GraphNode, to: GraphNode): void {
  const id = `${from.id}->${to.id}`;
  const element = {
    $type: 'bpmn:SequenceFlow',
    id,
    sourceRef: from.element,
    targetRef: to.element,
  } as unknown as BpmnSequenceFlow;
  const flow: GraphFlow = { id, element, source: from.id, target: to.id };
  graph.flows.push(flow);
  from.outgoing.push(id);
  to.incoming.push(id);
}
