// Structural checks on the graph of supported steps. Unsupported elements are
// already reported by extract.ts, so they are skipped here to keep one message each.
import { linkOf } from './links.ts';
import { errorAt, warningAt } from './diagnostics.ts';
import { isGateway, type GraphNode, type ProcessGraph } from './graph.ts';
import { describeElement } from './model.ts';
import type { UnresolvedReference } from './parse.ts';
import type { Diagnostic } from './plan.ts';

/** `body`: the graph is a parallel subprocess's body, whose start events checkBodyStarts checks. */
export function checkGraph(graph: ProcessGraph, unresolved: UnresolvedReference[], body = false): Diagnostic[] {
  return [
    ...(body ? [] : checkStartEvents(graph)),
    ...checkSubProcessStarts(graph),
    ...checkEventSubProcesses(graph),
    ...checkEventGateways(graph),
    ...[...graph.nodes.values()].flatMap((node) => [...checkConnections(node), ...checkDefaultFlow(node, unresolved)]),
  ];
}

function checkStartEvents(graph: ProcessGraph): Diagnostic[] {
  const all = [...graph.nodes.values()].filter((node) => node.kind === 'startEvent' && node.scope === undefined);
  const starts = all.filter((node) => (node.element.eventDefinitions ?? []).length === 0);
  if (all.length === 0) {
    return [
      errorAt(
        graph.processId,
        `Process ${graph.processId} has no start event: add one start event without a trigger (or a timer start event) where instances begin`,
      ),
    ];
  }
  const [first, ...extra] = starts;
  return extra.map((node) =>
    errorAt(
      node.id,
      `Start event ${describeElement(node.element)} is a second none start event (the first is ${first?.id ?? '?'}): keep exactly one`,
    ),
  );
}

function checkConnections(node: GraphNode): Diagnostic[] {
  const { id, kind } = node;
  const label = describeElement(node.element);
  const diagnostics: Diagnostic[] = [];
  if (kind === undefined) return diagnostics;
  if ((kind === 'startEvent' || kind === 'eventSubProcessStart') && node.incoming.length > 0) {
    diagnostics.push(
      errorAt(
        id,
        `Start event ${label} has incoming sequence flows (${node.incoming.join(', ')}): a start event only begins the flow`,
      ),
    );
  }
  const startsItself =
    kind === 'startEvent' || kind === 'boundaryEvent' || kind === 'eventSubProcess' || kind === 'eventSubProcessStart';
  if (!startsItself && !node.element.isForCompensation && node.incoming.length === 0) {
    const link = linkOf(node, 'bpmn:IntermediateCatchEvent');
    diagnostics.push(
      errorAt(
        id,
        link !== undefined
          ? `Link catch event ${label} is the target of no link throw event: add a link throw event named "${link}" in its scope, or delete it`
          : `${describeNodeKind(node)} ${label} has no incoming sequence flow, so it can never run: connect it or delete it`,
      ),
    );
  }
  const endEvent = node.element.$type === 'bpmn:EndEvent';
  if (endEvent && node.outgoing.length > 0) {
    diagnostics.push(
      errorAt(id, `End event ${label} has outgoing sequence flows (${node.outgoing.join(', ')}): an end event ends the flow`),
    );
  }
  // A manual task says "done outside the system"; a plain one is often a placeholder for work a worker should do.
  if (kind === 'passThrough' && node.element.$type === 'bpmn:Task') {
    diagnostics.push(
      warningAt(
        id,
        `Task ${label} is a plain task: nothing runs there and the token passes it at once; make it a service task if a worker should do the work`,
      ),
    );
  }
  if (isGateway(kind) && node.outgoing.length === 0) {
    diagnostics.push(errorAt(id, `Gateway ${id} has no outgoing sequence flow: connect it to the next step or an end event`));
  }
  return diagnostics;
}

function checkDefaultFlow(node: GraphNode, unresolved: UnresolvedReference[]): Diagnostic[] {
  if (node.kind !== 'exclusiveGateway' && node.kind !== 'inclusiveGateway') return [];
  const missing = unresolved.find((u) => u.elementId === node.id && u.property === 'bpmn:default');
  if (missing) {
    return [
      errorAt(
        node.id,
        `Gateway ${node.id} names default flow ${missing.reference}, which does not exist: pick one of its outgoing flows (${node.outgoing.join(', ') || 'none'})`,
      ),
    ];
  }
  const defaultId = node.element.default?.id;
  if (defaultId === undefined || node.outgoing.includes(defaultId)) return [];
  return [
    errorAt(
      node.id,
      `Default flow ${defaultId} of gateway ${node.id} is not one of its outgoing flows (${node.outgoing.join(', ') || 'none'}): pick one of them`,
    ),
  ];
}

const KIND_LABELS: Record<string, string> = {
  startEvent: 'Start event',
  endEvent: 'End event',
  terminateEndEvent: 'Terminate end event',
  serviceTask: 'Service task',
  passThrough: 'Task',
  scriptTask: 'Script task',
  signalThrow: 'Signal throw event',
  escalationThrow: 'Escalation event',
  parallelGateway: 'Parallel gateway',
  exclusiveGateway: 'Exclusive gateway',
  inclusiveGateway: 'Inclusive gateway',
  eventBasedGateway: 'Event-based gateway',
  catchEvent: 'Intermediate catch event',
  boundaryEvent: 'Boundary event',
  compensationThrow: 'Compensation event',
  subProcess: 'Subprocess',
  errorEndEvent: 'Error end event',
  callActivity: 'Call activity',
  eventSubProcess: 'Event subprocess',
  eventSubProcessStart: 'Start event',
};

export function describeKind(kind: string): string {
  return KIND_LABELS[kind] ?? kind;
}

/** A node's kind in words; a receive task waits as a catch event does, but is named as the task it is. */
export function describeNodeKind(node: GraphNode): string {
  if (node.element.$type === 'bpmn:UserTask') return 'User task';
  return node.element.$type === 'bpmn:ReceiveTask' ? 'Receive task' : describeKind(node.kind ?? '');
}

/**
 * An event-based gateway races the events its flows lead to: each target is an intermediate
 * catch event (timer, message or signal) reached from the gateway alone, so that the event
 * that fires first decides the path, and there are at least two of them.
 */
function checkEventGateways(graph: ProcessGraph): Diagnostic[] {
  const diagnostics: Diagnostic[] = [];
  const flows = new Map(graph.flows.map((flow) => [flow.id, flow]));
  for (const gateway of graph.nodes.values()) {
    if (gateway.kind !== 'eventBasedGateway') continue;
    const label = describeElement(gateway.element);
    if (gateway.outgoing.length === 1)
      diagnostics.push(
        errorAt(
          gateway.id,
          `Event-based gateway ${label} has one outgoing flow: it chooses between events, so give it two or more, each to an intermediate catch event, or remove the gateway`,
        ),
      );
    for (const flowId of gateway.outgoing) {
      const target = graph.nodes.get(flows.get(flowId)?.target ?? '');
      if (!target || target.kind === undefined) continue; // an unsupported target is reported on its own
      if (target.element.$type === 'bpmn:UserTask') {
        diagnostics.push(
          errorAt(
            target.id,
            `User task ${describeElement(target.element)} follows event-based gateway ${gateway.id}, which races events only: put the user task after the event that should lead to it`,
          ),
        );
      } else if (target.element.$type === 'bpmn:ReceiveTask') {
        // BPMN allows it; Zeebe refuses it, and Baton races intermediate catch events only.
        diagnostics.push(
          errorAt(
            target.id,
            `Receive task ${describeElement(target.element)} follows event-based gateway ${gateway.id}, which races events only: replace the receive task with a message intermediate catch event of the same message`,
          ),
        );
      } else if (target.kind !== 'catchEvent') {
        diagnostics.push(
          errorAt(
            target.id,
            `${describeKind(target.kind)} ${describeElement(target.element)} follows event-based gateway ${gateway.id}, which waits for events: put a timer, message or signal intermediate catch event between them`,
          ),
        );
      } else if (target.incoming.length > 1) {
        diagnostics.push(
          errorAt(
            target.id,
            `Intermediate catch event ${describeElement(target.element)} after event-based gateway ${gateway.id} has other incoming flows (${target.incoming.filter((id) => id !== flowId).join(', ')}): an event of the race is reached from the gateway only; merge the other paths after the event`,
          ),
        );
      }
    }
  }
  return diagnostics;
}

/** An embedded subprocess begins at exactly one inner none start event. */
function checkSubProcessStarts(graph: ProcessGraph): Diagnostic[] {
  const diagnostics: Diagnostic[] = [];
  for (const sub of graph.nodes.values()) {
    if (sub.kind !== 'subProcess') continue;
    const starts = [...graph.nodes.values()].filter((n) => n.scope === sub.id && n.kind === 'startEvent');
    for (const start of starts.filter((n) => (n.element.eventDefinitions ?? []).length > 0)) {
      diagnostics.push(
        errorAt(
          start.id,
          `Start event ${describeElement(start.element)} of subprocess ${sub.id} has a trigger: an embedded subprocess starts at a none start event`,
        ),
      );
    }
    if (starts.length === 0)
      diagnostics.push(
        errorAt(sub.id, `Subprocess ${describeElement(sub.element)} has no start event: add one none start event inside it`),
      );
    for (const extra of starts.slice(1))
      diagnostics.push(
        errorAt(
          extra.id,
          `Start event ${describeElement(extra.element)} is a second start event of subprocess ${sub.id} (the first is ${starts[0]?.id ?? '?'}): keep exactly one`,
        ),
      );
  }
  return diagnostics;
}

/**
 * An event subprocess has no sequence flows of its own and starts at exactly one start event with
 * a timer, message, signal, condition, error or escalation trigger; an error start interrupts.
 */
function checkEventSubProcesses(graph: ProcessGraph): Diagnostic[] {
  const diagnostics: Diagnostic[] = [];
  for (const sub of graph.nodes.values()) {
    if (sub.kind !== 'eventSubProcess') continue;
    const label = describeElement(sub.element);
    if (sub.incoming.length > 0 || sub.outgoing.length > 0)
      diagnostics.push(
        errorAt(sub.id, `Event subprocess ${label} has sequence flows: its start event's trigger starts it, so remove them`),
      );
    const starts = [...graph.nodes.values()].filter((n) => n.scope === sub.id && n.element.$type === 'bpmn:StartEvent');
    if (starts.length !== 1) {
      diagnostics.push(
        errorAt(
          sub.id,
          `Event subprocess ${label} has ${starts.length} start events: give it exactly one, with a timer, message, signal or error trigger`,
        ),
      );
      continue;
    }
    const start = starts[0] as GraphNode;
    const trigger = (start.element.eventDefinitions ?? [])[0]?.$type;
    if ((start.element as { isInterrupting?: boolean }).isInterrupting === false && trigger === 'bpmn:ErrorEventDefinition')
      diagnostics.push(
        errorAt(
          start.id,
          `Error start event ${describeElement(start.element)} of event subprocess ${sub.id} is non-interrupting: an error always ends the scope it is thrown in, so make it interrupting`,
        ),
      );
  }
  return diagnostics;
}

/** The inner start event of each subprocess (checkSubProcessStarts reports the rest). */
export function subProcessStarts(graph: ProcessGraph): Map<string, string> {
  const starts = new Map<string, string>();
  for (const node of graph.nodes.values()) {
    if (node.kind === 'startEvent' && node.scope !== undefined && !starts.has(node.scope)) starts.set(node.scope, node.id);
  }
  return starts;
}
