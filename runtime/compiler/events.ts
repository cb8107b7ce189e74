// Catch and boundary events -> what each waits for, and how boundaries attach.
import { errorAt } from './diagnostics.ts';
import type { GraphNode, ProcessGraph } from './graph.ts';
import { BPMN_NAMESPACE, describeElement, type BpmnEventDefinition, type BpmnExpression } from './model.ts';
import type { BoundarySpec, Diagnostic, TimerSpec, WaitSpec } from './plan.ts';
import { checkFeel, toFeel } from '../shared/feel.ts';
import { firstDue } from '../shared/timers.ts';

export interface EventSpecs {
  waits: Map<string, WaitSpec>;
  boundaries: Map<string, BoundarySpec>;
  /** host id -> its boundary event ids, document order */
  attached: Map<string, string[]>;
  diagnostics: Diagnostic[];
}

export function readEventSpecs(graph: ProcessGraph): EventSpecs {
  const specs: EventSpecs = { waits: new Map(), boundaries: new Map(), attached: new Map(), diagnostics: [] };
  for (const node of graph.nodes.values()) {
    if (node.kind !== 'catchEvent' && node.kind !== 'boundaryEvent') continue;
    const definition = node.element.eventDefinitions?.[0] as BpmnEventDefinition | undefined;
    if (!definition) continue;
    const wait = readWait(node, definition, specs.diagnostics);
    if (wait) specs.waits.set(node.id, wait);
    if (node.kind === 'boundaryEvent') attachBoundary(graph, node, wait, specs);
  }
  return specs;
}

function readWait(node: GraphNode, definition: BpmnEventDefinition, diagnostics: Diagnostic[]): WaitSpec | undefined {
  const label = describeElement(node.element);
  switch (definition.$type) {
    case 'bpmn:TimerEventDefinition': {
      const timer = readTimer(definition);
      if (!timer) {
        diagnostics.push(errorAt(node.id, `Timer event ${label} has no timeDuration, timeDate or timeCycle: set one`));
        return undefined;
      }
      const check = firstDue(timer);
      if (!check.ok) {
        diagnostics.push(errorAt(node.id, `Timer event ${label}: ${check.message}`));
        return undefined;
      }
      return { trigger: 'timer', timer };
    }
    case 'bpmn:MessageEventDefinition': {
      const name = definition.messageRef?.name?.trim();
      if (!name) {
        diagnostics.push(errorAt(node.id, `Message event ${label} has no message with a name: reference a bpmn:message and name it`));
        return undefined;
      }
      const correlationKey = readCorrelationKey(node, diagnostics);
      return { trigger: 'message', name, ...(correlationKey ? { correlationKey } : {}) };
    }
    case 'bpmn:SignalEventDefinition': {
      const name = definition.signalRef?.name?.trim();
      if (!name) {
        diagnostics.push(errorAt(node.id, `Signal event ${label} has no signal with a name: reference a bpmn:signal and name it`));
        return undefined;
      }
      return { trigger: 'signal', name };
    }
    case 'bpmn:ErrorEventDefinition': {
      const code = definition.errorRef?.errorCode?.trim();
      return {
        trigger: 'error',
        ...(code ? { errorCode: code } : {}),
        ...(definition.errorCodeVariable ? { errorCodeVariable: definition.errorCodeVariable } : {}),
        ...(definition.errorMessageVariable ? { errorMessageVariable: definition.errorMessageVariable } : {}),
      };
    }
    default:
      return undefined;
  }
}

function readTimer(definition: BpmnEventDefinition): TimerSpec | undefined {
  const pick = (kind: TimerSpec['kind'], e: BpmnExpression | undefined) => (e?.body?.trim() ? { kind, expression: e.body.trim() } : undefined);
  return pick('duration', definition.timeDuration) ?? pick('date', definition.timeDate) ?? pick('cycle', definition.timeCycle);
}

// `baton:correlationKey="= orderId"` (FEEL, or ${...}); without it the business key correlates.
function readCorrelationKey(node: GraphNode, diagnostics: Diagnostic[]): string | undefined {
  const attrs = node.element.$attrs ?? {};
  const prefix = Object.entries(attrs).find(([k, v]) => k.startsWith('xmlns:') && v === BPMN_NAMESPACE.baton)?.[0].slice(6) ?? 'baton';
  const source = attrs[`${prefix}:correlationKey`]?.trim();
  if (!source) return undefined;
  const feel = toFeel(source.startsWith('=') || source.startsWith('${') || source.startsWith('#{') ? source : `=${source}`);
  const problem = feel.ok ? checkFeel(feel.feel) : feel.message;
  if (problem !== undefined || !feel.ok) {
    diagnostics.push(errorAt(node.id, `Correlation key "${source}" of ${describeElement(node.element)} is not a valid expression: ${problem ?? ''}`));
    return undefined;
  }
  return feel.feel;
}

function attachBoundary(graph: ProcessGraph, node: GraphNode, wait: WaitSpec | undefined, specs: EventSpecs): void {
  const label = describeElement(node.element);
  const hostId = node.element.attachedToRef?.id;
  const host = hostId ? graph.nodes.get(hostId) : undefined;
  const interrupting = node.element.cancelActivity !== false;
  if (!host || host.kind !== 'serviceTask') {
    specs.diagnostics.push(errorAt(node.id, `Boundary event ${label} must be attached to a service task${hostId ? ` (it sits on ${hostId})` : ''}`));
    return;
  }
  if (node.incoming.length > 0) {
    specs.diagnostics.push(errorAt(node.id, `Boundary event ${label} has incoming sequence flows (${node.incoming.join(', ')}): it starts a path, nothing flows into it`));
  }
  if (node.outgoing.length === 0) {
    specs.diagnostics.push(errorAt(node.id, `Boundary event ${label} has no outgoing sequence flow: connect the path it starts`));
  }
  if (wait?.trigger === 'error' && !interrupting) {
    specs.diagnostics.push(errorAt(node.id, `Error boundary event ${label} is non-interrupting: an error always ends its task, so make it interrupting`));
  }
  if (wait?.trigger === 'timer' && wait.timer.kind === 'cycle' && !interrupting) {
    specs.diagnostics.push(errorAt(node.id, `Non-interrupting timer ${label} has a timeCycle: repeated activations are not supported yet; use a timeDuration or timeDate`));
  }
  specs.boundaries.set(node.id, { attachedTo: host.id, interrupting });
  specs.attached.set(host.id, [...(specs.attached.get(host.id) ?? []), node.id]);
}
