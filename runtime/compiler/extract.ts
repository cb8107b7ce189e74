// moddle process -> ProcessGraph. Only sequence flows make edges; data,
// artifacts, lanes, documentation and diagram interchange never reach here.
import { classifyNode, isFlowNode } from './classify.ts';
import { errorAt } from './diagnostics.ts';
import { linkFlows } from './links.ts';
import { firesInBodies } from './subprocess-bodies.ts';
import type { GraphFlow, GraphNode, ProcessGraph } from './graph.ts';
import {
  describeElement,
  type BpmnElement,
  type BpmnFlowNode,
  type BpmnProcess,
  type BpmnSequenceFlow,
  type BpmnSubProcess,
} from './model.ts';
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
  // Embedded subprocesses are flattened: their elements join the graph with the subprocess as scope.
  const collect = (elements: BpmnElement[], scope: string | undefined): void => {
    for (const element of elements) {
      if (element.$type === 'bpmn:SequenceFlow') sequenceFlows.push(element as BpmnSequenceFlow);
      else if (isFlowNode(element)) {
        // The start event of an event subprocess waits for its trigger: a kind of its own, never a process start.
        const inEventSub = scope !== undefined && nodes.get(scope)?.kind === 'eventSubProcess';
        const node = addNode(nodes, element as BpmnFlowNode, processId, diagnostics, scope, inEventSub);
        // A non-interrupting event subprocess's body runs in child instances (subprocess-bodies.ts): only its start event waits here.
        if (node?.kind === 'eventSubProcess' && firesInBodies(element))
          collect(
            ((element as BpmnSubProcess).flowElements ?? []).filter((e) => e.$type === 'bpmn:StartEvent'),
            node.id,
          );
        else if (node?.kind === 'subProcess' || node?.kind === 'eventSubProcess')
          collect((element as BpmnSubProcess).flowElements ?? [], node.id);
      }
    }
  };
  collect(process.flowElements ?? [], undefined);
  const flows: GraphFlow[] = [];
  for (const element of sequenceFlows) {
    const flow = connectFlow(element, nodes, processId, unresolved, diagnostics);
    if (!flow) continue;
    const [source, target] = [nodes.get(flow.source), nodes.get(flow.target)];
    if (source && target && source.scope !== target.scope) {
      diagnostics.push(
        errorAt(
          flow.id,
          `Sequence flow ${flow.id} crosses the border of subprocess ${source.scope ?? target.scope ?? '?'} (from ${describeElement(source.element)} to ${describeElement(target.element)}): connect the subprocess itself, or its inner start and end events`,
        ),
      );
      continue;
    }
    flows.push(flow);
    nodes.get(flow.source)?.outgoing.push(flow.id);
    nodes.get(flow.target)?.incoming.push(flow.id);
  }
  const links = linkFlows(nodes);
  flows.push(...links.flows);
  diagnostics.push(...links.diagnostics);
  return { graph: { processId, nodes, flows }, diagnostics };
}

function addNode(
  nodes: Map<string, GraphNode>,
  element: BpmnFlowNode,
  processId: string,
  diagnostics: Diagnostic[],
  scope: string | undefined,
  inEventSubProcess = false,
): GraphNode | undefined {
  if (!element.id) {
    diagnostics.push(errorAt(processId, `A ${element.$type} in process ${processId} has no id: give every element an id`));
    return undefined;
  }
  const classification = classifyNode(element, inEventSubProcess);
  if (!classification.supported) diagnostics.push(errorAt(element.id, classification.message));
  const kind = classification.supported ? classification.kind : undefined;
  const node: GraphNode = {
    id: element.id,
    element,
    ...(kind ? { kind } : {}),
    ...(scope ? { scope } : {}),
    incoming: [],
    outgoing: [],
  };
  nodes.set(element.id, node);
  return node;
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
    diagnostics.push(
      errorAt(id, `Sequence flow ${id} ${problems.join(' and ')}: connect both ends to elements of process ${processId}`),
    );
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

/** Artifacts (associations) of the process and of every embedded subprocess in it. */
export function allArtifacts(container: { flowElements?: BpmnElement[]; artifacts?: BpmnElement[] }): BpmnElement[] {
  return [
    ...(container.artifacts ?? []),
    ...(container.flowElements ?? [])
      .filter((e) => e.$type === 'bpmn:SubProcess')
      .flatMap((e) => allArtifacts(e as BpmnSubProcess)),
  ];
}
