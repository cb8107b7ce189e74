// The process as a graph: every flow node (supported or not, so loops through
// unsupported elements are still found) and every sequence flow between them.
import type { BpmnFlowNode, BpmnSequenceFlow } from './model.ts';
import type { StepKind } from './plan.ts';

export interface GraphNode {
  id: string;
  element: BpmnFlowNode;
  /** undefined when Baton cannot run the element (it is reported as unsupported) */
  kind?: StepKind;
  /** id of the embedded subprocess the node is inside; undefined at process level */
  scope?: string;
  /** a split the compiler draws after an element with conditional flows (conditional-flows.ts): that element's id */
  splitOf?: string;
  /** sequence flow ids, document order */
  incoming: string[];
  outgoing: string[];
}

export interface GraphFlow {
  id: string;
  element: BpmnSequenceFlow;
  source: string;
  target: string;
}

export interface ProcessGraph {
  processId: string;
  /** insertion order is document order */
  nodes: Map<string, GraphNode>;
  /** document order */
  flows: GraphFlow[];
}

export function flowsById(graph: ProcessGraph): Map<string, GraphFlow> {
  return new Map(graph.flows.map((flow) => [flow.id, flow]));
}

export function isGateway(kind: StepKind | undefined): boolean {
  return kind === 'parallelGateway' || kind === 'exclusiveGateway' || kind === 'inclusiveGateway' || kind === 'eventBasedGateway';
}
