// moddle process -> ProcessGraph. Only sequence flows make edges; data,
// artifacts, lanes, documentation and diagram interchange never reach here.
import { classifyNode, isFlowNode } from './classify.ts';
import { errorAt } from './diagnostics.ts';
import type { GraphFlow, GraphNode, ProcessGraph } from './graph.ts';
import type { BpmnFlowNode, BpmnProcess, BpmnSequenceFlow } from './model.ts';
import type { UnresolvedReference } from './parse.ts';
import type { Diagnostic } from './plan.ts';

export interface ExtractResult {
  graph: ProcessGraph;
  diagnostics: Diagnostic[];
}

export function extractGraph(process: BpmnProcess, processId: string, unresolved: UnresolvedReference[]): ExtractResult {
  const diagnostics: Diagnostic[] = [];
  const nodes = new Map<string, GraphNode>();
  const sequenceFlows: BpmnSequenceFlow[] = [];
  for (const element of process.flowElements ?? []) {
    if (element.$type === 'bpmn:SequenceFlow') sequenceFlows.push(element as BpmnSequenceFlow);
    else if (isFlowNode(element)) addNode(nodes, element as BpmnFlowNode, processId, diagnostics);
  }
  const flows: GraphFlow[] = [];
  for (const element of sequenceFlows) {
    const flow = connectFlow(element, nodes, processId, unresolved, diagnostics);
    if (!flow) continue;
    flows.push(flow);
    nodes.get(flow.source)?.outgoing.push(flow.id);
    nodes.get(flow.target)?.incoming.push(flow.id);
  }
  return { graph: { processId, nodes, flows }, diagnostics };
}

function addNode(nodes: Map<string, GraphNode>, element: BpmnFlowNode, processId: string, diagnostics: Diagnostic[]): void {
  if (!element.id) {
    diagnostics.push(errorAt(processId, `A ${element.$type} in process ${processId} has no id: give every element an id`));
    return;
  }
  const classification = classifyNode(element);
  if (!classification.supported) diagnostics.push(errorAt(element.id, classification.message));
  const kind = classification.supported ? classification.kind : undefined;
  nodes.set(element.id, { id: element.id, element, ...(kind ? { kind } : {}), incoming: [], outgoing: [] });
}

function connectFlow(
  element: BpmnSequenceFlow,
  nodes: Map<string, GraphNode>,
  processId: string,
  unresolved: UnresolvedReference[],
  diagnostics: Diagnostic[],
): GraphFlow | undefined {
  const id = element.id;
  if (!id) {
    diagnostics.push(errorAt(processId, `A sequence flow in process ${processId} has no id: give every element an id`));
    return undefined;
  }
  const source = describeEnd(element.sourceRef?.id, 'sourceRef', id, nodes, unresolved);
  const target = describeEnd(element.targetRef?.id, 'targetRef', id, nodes, unresolved);
  if ('problem' in source || 'problem' in target) {
    const problems = [source, target].flatMap((end) => ('problem' in end ? [end.problem] : []));
    diagnostics.push(errorAt(id, `Sequence flow ${id} ${problems.join(' and ')}: connect both ends to elements of process ${processId}`));
    return undefined;
  }
  return { id, element, source: source.id, target: target.id };
}

function describeEnd(
  nodeId: string | undefined,
  property: 'sourceRef' | 'targetRef',
  flowId: string,
  nodes: Map<string, GraphNode>,
  unresolved: UnresolvedReference[],
): { id: string } | { problem: string } {
  if (nodeId !== undefined && nodes.has(nodeId)) return { id: nodeId };
  if (nodeId !== undefined) return { problem: `has ${property} ${nodeId}, which is not a flow node of this process` };
  const missing = unresolved.find((u) => u.elementId === flowId && u.property === `bpmn:${property}`);
  return { problem: missing ? `has ${property} ${missing.reference}, which does not exist` : `has no ${property}` };
}
