// Parallel multi-instance subprocesses and non-interrupting event subprocesses (docs/scopes.md,
// "Parallel multi-instance subprocesses", "Event subprocesses"). Their elements or firings run side
// by side, each with its own step and flow states: each runs the subprocess's body as a child
// instance, as a call activity runs its called process. The body compiles as a definition of its
// own, keyed "<process>:<subprocess>" (a BPMN id is an XML NCName and holds no colon, so the key
// names no other process) and deployed with the process; the subprocess is a multi-instance call
// activity bound to that deployment, or an event subprocess that calls it once per firing.
import { errorAt } from './diagnostics.ts';
import type { ProcessGraph } from './graph.ts';
import { describeElement, type BpmnElement, type BpmnMultiInstance, type BpmnProcess, type BpmnSubProcess } from './model.ts';
import type { CallSpec, Diagnostic } from './plan.ts';

/** The definition key of the body of subprocess `elementId` of process `processKey`. */
export function bodyKey(processKey: string, elementId: string): string {
  return `${processKey}:${elementId}`;
}

/** A subprocess whose elements run in parallel: its body runs in child instances. */
export function runsInBodies(element: BpmnElement): boolean {
  const loop = (element as BpmnElement & { loopCharacteristics?: BpmnMultiInstance }).loopCharacteristics;
  return (
    element.$type === 'bpmn:SubProcess' &&
    (element as BpmnSubProcess).triggeredByEvent !== true &&
    loop?.$type === 'bpmn:MultiInstanceLoopCharacteristics' &&
    loop.isSequential !== true
  );
}

/**
 * A non-interrupting event subprocess: its firings run side by side, each in a child instance of
 * its body. The start event waits in the process; the body starts at a none start event in its place.
 */
export function firesInBodies(element: BpmnElement): boolean {
  if (element.$type !== 'bpmn:SubProcess' || (element as BpmnSubProcess).triggeredByEvent !== true) return false;
  const start = ((element as BpmnSubProcess).flowElements ?? []).find((e) => e.$type === 'bpmn:StartEvent');
  return (start as (BpmnElement & { isInterrupting?: boolean }) | undefined)?.isInterrupting === false;
}

/**
 * The call a body stands for: an element of a parallel multi-instance subprocess, or a firing of
 * a non-interrupting event subprocess. Every variable the subprocess sees goes in, with its input
 * mappings (io-mappings.ts) as the element's or firing's locals; what its body changed comes back
 * (the child's return row holds only those, migration 0037), as an embedded subprocess's writes
 * reach the process. The element variable, loopCounter and inputs stay its own; the business key
 * is the process's, as for the tasks inside it. The output
 * mappings are evaluated in the process as each body ends (engine/advance.ts,
 * engine/event-subprocess-bodies.ts).
 */
export function readBodyCall(processKey: string, elementId: string): CallSpec {
  return {
    process: { key: bodyKey(processKey, elementId) },
    binding: 'deployment',
    inAll: true,
    inputs: [],
    outAll: true,
    outputs: [],
    businessKey: true,
    body: { fingerprint: '' },
  };
}

/**
 * The subprocess as a process of its own: its flow elements and artifacts, under the body's key.
 * An event subprocess's start event has fired in the process before its body starts: in the body
 * it is a none start (its trigger and its mappings stay with the process).
 */
export function bodyProcess(sub: BpmnSubProcess, key: string): BpmnProcess {
  const fired = firesInBodies(sub);
  const elements = (sub.flowElements ?? []).map((e) => (fired && e.$type === 'bpmn:StartEvent' ? noneStart(e) : e));
  return {
    $type: 'bpmn:Process',
    id: key,
    ...(sub.name !== undefined ? { name: sub.name } : {}),
    isExecutable: true,
    flowElements: elements,
    artifacts: sub.artifacts ?? [],
    $attrs: {},
    $instanceOf: (type: string) => type === 'bpmn:Process' || type === 'bpmn:FlowElementsContainer',
  };
}

/** The start event as the body's none start: the same element (its id, name, flows) without its trigger and settings. */
function noneStart(start: BpmnElement): BpmnElement {
  // The copy reads everything else (its moddle attributes too) from the element itself.
  return Object.assign(Object.create(start) as BpmnElement, {
    eventDefinitions: [],
    extensionElements: undefined,
    isInterrupting: true,
  });
}

/** The subprocess elements of `process` (at any depth, outside other bodies) that run in bodies. */
export function bodySubprocesses(graph: ProcessGraph): BpmnSubProcess[] {
  return [...graph.nodes.values()]
    .filter((n) => runsInBodies(n.element) || firesInBodies(n.element))
    .map((n) => n.element as BpmnSubProcess);
}

/** A body starts at exactly one none start event, as an embedded subprocess does. */
export function checkBodyStarts(graph: ProcessGraph, sub: BpmnSubProcess): Diagnostic[] {
  const id = sub.id ?? graph.processId;
  const starts = [...graph.nodes.values()].filter((n) => n.scope === undefined && n.kind === 'startEvent');
  const diagnostics = starts
    .filter((n) => (n.element as BpmnElement & { eventDefinitions?: unknown[] }).eventDefinitions?.length)
    .map((n) =>
      errorAt(
        n.id,
        `Start event ${describeElement(n.element)} of subprocess ${id} has a trigger: an embedded subprocess starts at a none start event`,
      ),
    );
  if (starts.length === 0)
    diagnostics.push(errorAt(id, `Subprocess ${describeElement(sub)} has no start event: add one none start event inside it`));
  for (const extra of starts.slice(1))
    diagnostics.push(
      errorAt(
        extra.id,
        `Subprocess ${id} has more than one start event: keep one none start event inside an embedded subprocess`,
      ),
    );
  return diagnostics;
}

/** The messages that catching elements inside the bodies of `graph` wait for, by element id: their keys are read there. */
export function messagesInBodies(graph: ProcessGraph): Set<string> {
  type Holder = BpmnElement & {
    flowElements?: Holder[];
    eventDefinitions?: { $type: string; messageRef?: { id?: string } }[];
    messageRef?: { id?: string };
  };
  const found = new Set<string>();
  const walk = (element: Holder): void => {
    const catching = element.$type !== 'bpmn:IntermediateThrowEvent' && element.$type !== 'bpmn:EndEvent';
    for (const definition of catching ? (element.eventDefinitions ?? []) : [])
      if (definition.$type === 'bpmn:MessageEventDefinition' && definition.messageRef?.id) found.add(definition.messageRef.id);
    if (element.$type === 'bpmn:ReceiveTask' && element.messageRef?.id) found.add(element.messageRef.id);
    for (const child of element.flowElements ?? []) walk(child);
  };
  for (const sub of bodySubprocesses(graph)) for (const child of (sub as Holder).flowElements ?? []) walk(child);
  return found;
}
