// Link events: a link throw event goes on at the link catch event of the same name in the same
// scope, as if a sequence flow joined them (both Camunda 7 and Zeebe resolve them at deploy).
// Baton adds that flow (id `link:<throw id>`) to the graph, so every check that reads flows —
// cycles, soundness, dead-path elimination — sees the jump.
import { errorAt } from './diagnostics.ts';
import type { GraphFlow, GraphNode } from './graph.ts';
import { describeElement, type BpmnElement, type BpmnSequenceFlow } from './model.ts';
import type { Diagnostic } from './plan.ts';

const LINK = 'bpmn:LinkEventDefinition';

/** The link's name when the node is a link throw or catch event, else undefined. */
export function linkOf(node: GraphNode, type: 'bpmn:IntermediateThrowEvent' | 'bpmn:IntermediateCatchEvent'): string | undefined {
  if (node.element.$type !== type) return undefined;
  const link = (node.element.eventDefinitions ?? []).find((d) => d.$type === LINK) as
    (BpmnElement & { name?: string }) | undefined;
  return link ? (link.name?.trim() ?? '') : undefined;
}

/** Adds one flow per link throw event to its catch event; refuses links that cannot be joined. */
export function linkFlows(nodes: Map<string, GraphNode>): { flows: GraphFlow[]; diagnostics: Diagnostic[] } {
  const diagnostics: Diagnostic[] = [];
  const catches = new Map<string, GraphNode>();
  for (const node of nodes.values()) {
    const name = linkOf(node, 'bpmn:IntermediateCatchEvent');
    if (name === undefined) continue;
    const key = `${node.scope ?? ''}\n${name}`;
    if (name === '')
      diagnostics.push(errorAt(node.id, `Link catch event ${describeElement(node.element)} has no link name: name it`));
    else if (catches.has(key))
      diagnostics.push(
        errorAt(
          node.id,
          `Link catch events ${catches.get(key)!.id} and ${node.id} share the link name "${name}" in one scope: give each its own name`,
        ),
      );
    else catches.set(key, node);
  }
  const flows: GraphFlow[] = [];
  for (const node of nodes.values()) {
    const name = linkOf(node, 'bpmn:IntermediateThrowEvent');
    if (name === undefined) continue;
    const target = catches.get(`${node.scope ?? ''}\n${name}`);
    if (!target) {
      diagnostics.push(
        errorAt(
          node.id,
          `Link throw event ${describeElement(node.element)} jumps to the link "${name}", but no link catch event of that name is in its ${node.scope ? `subprocess ${node.scope}` : 'process'}: add one, or fix the name`,
        ),
      );
      continue;
    }
    if (node.outgoing.length > 0)
      diagnostics.push(
        errorAt(
          node.id,
          `Link throw event ${describeElement(node.element)} has outgoing sequence flows: it goes on at its link catch event only`,
        ),
      );
    const id = `link:${node.id}`;
    const element = {
      $type: 'bpmn:SequenceFlow',
      id,
      sourceRef: node.element,
      targetRef: target.element,
    } as unknown as BpmnSequenceFlow;
    flows.push({ id, element, source: node.id, target: target.id });
    node.outgoing.push(id);
    target.incoming.push(id);
  }
  for (const target of catches.values()) {
    const sequence = target.incoming.filter((f) => !f.startsWith('link:'));
    if (sequence.length > 0)
      diagnostics.push(
        errorAt(
          target.id,
          `Link catch event ${describeElement(target.element)} has incoming sequence flows (${sequence.join(', ')}): only link throw events lead to it`,
        ),
      );
  }
  return { flows, diagnostics };
}
