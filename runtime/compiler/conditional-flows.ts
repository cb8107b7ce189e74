// Conditional sequence flows out of an activity or an event (Camunda 7's mini-diamond flows, and
// a `default` flow on the element): the element takes every unconditional flow, every
// conditional one whose condition holds, and its default flow when none of those holds. That is
// an inclusive gateway right after the element, so the compiler draws one there: a step
// `split:<element id>` that the element leads to, which the element's flows leave from (they keep
// their ids and conditions). One difference from a drawn gateway: when nothing holds and there
// is no default, the path ends there, as in Camunda 7, instead of an incident.
import { warningAt } from './diagnostics.ts';
import { isGateway, type GraphNode, type ProcessGraph } from './graph.ts';
import { describeElement, type BpmnFlowNode, type BpmnSequenceFlow } from './model.ts';
import type { Diagnostic } from './plan.ts';

/** Draws the split after every non-gateway element with a conditional or default outgoing flow. */
export function insertConditionalSplits(graph: ProcessGraph): Diagnostic[] {
  const diagnostics: Diagnostic[] = [];
  const flows = new Map(graph.flows.map((f) => [f.id, f]));
  for (const node of [...graph.nodes.values()]) {
    if (node.kind === undefined || isGateway(node.kind)) continue;
    const outgoing = node.outgoing.map((id) => flows.get(id)!);
    const defaultId = node.element.default?.id;
    const conditional = outgoing.filter((f) => f.element.conditionExpression !== undefined && f.id !== defaultId);
    if (conditional.length === 0 && !(defaultId !== undefined && node.outgoing.includes(defaultId) && outgoing.length > 1))
      continue;
    const split = addSplit(graph, node);
    for (const flow of outgoing) flow.source = split.id;
    split.outgoing = node.outgoing;
    node.outgoing = [];
    const id = `${node.id}->${split.id}`;
    const element = {
      $type: 'bpmn:SequenceFlow',
      id,
      sourceRef: node.element,
      targetRef: split.element,
    } as unknown as BpmnSequenceFlow;
    graph.flows.push({ id, element, source: node.id, target: split.id });
    node.outgoing.push(id);
    split.incoming.push(id);
    const unconditional = outgoing.some((f) => f.element.conditionExpression === undefined && f.id !== defaultId);
    if (!unconditional && defaultId === undefined)
      diagnostics.push(
        warningAt(
          node.id,
          `${describeElement(node.element)} leaves only through conditional flows (${conditional.map((f) => f.id).join(', ')}): when none holds, its path ends there, as in Camunda 7. Mark one flow as the default if a path must always go on`,
        ),
      );
  }
  return diagnostics;
}

function addSplit(graph: ProcessGraph, node: GraphNode): GraphNode {
  const id = `split:${node.id}`;
  const element = {
    $type: 'bpmn:InclusiveGateway',
    id,
    name: `${node.element.name?.trim() || node.id}: conditional flows`,
    ...(node.element.default ? { default: node.element.default } : {}),
    $attrs: {},
    $instanceOf: (type: string) => type === 'bpmn:InclusiveGateway' || type === 'bpmn:Gateway' || type === 'bpmn:FlowNode',
  } as unknown as BpmnFlowNode;
  const split: GraphNode = {
    id,
    element,
    kind: 'inclusiveGateway',
    splitOf: node.id,
    ...(node.scope !== undefined ? { scope: node.scope } : {}),
    incoming: [],
    outgoing: [],
  };
  graph.nodes.set(id, split);
  return split;
}
