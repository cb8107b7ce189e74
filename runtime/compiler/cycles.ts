// The engine runs a DAG (docs/ARCHITECTURE.md, "Execution rule"): loops are refused at deploy. A
// depth-first search from the start events (document order), then from any
// node not yet visited, finds the back edges: the flows that close a loop.
// Iterative, so a long chain of steps cannot overflow the call stack.
import { errorAt } from './diagnostics.ts';
import type { ProcessGraph } from './graph.ts';
import type { Diagnostic } from './plan.ts';

const Visit = {
  /** on the current DFS path */
  open: 'open',
  /** every successor explored */
  done: 'done',
} as const;
type Visit = (typeof Visit)[keyof typeof Visit];

export function findClosingFlows(graph: ProcessGraph): string[] {
  const state = new Map<string, Visit>();
  const targets = new Map(graph.flows.map((flow) => [flow.id, flow.target]));
  const nodes = [...graph.nodes.values()];
  // A path from a boundary event back to its host is a loop too: the host would run twice.
  const boundaries = new Map<string, string[]>();
  for (const n of nodes) {
    const host = n.element.$type === 'bpmn:BoundaryEvent' ? n.element.attachedToRef?.id : undefined;
    if (host) boundaries.set(host, [...(boundaries.get(host) ?? []), n.id]);
  }
  const successors = (id: string): string[] => [
    ...(graph.nodes.get(id)?.outgoing ?? []),
    ...(boundaries.get(id) ?? []).map((b) => `attach:${b}`),
  ];
  for (const ids of boundaries.values()) for (const b of ids) targets.set(`attach:${b}`, b);
  const roots = [...nodes.filter((n) => n.element.$type === 'bpmn:StartEvent'), ...nodes];
  const closing: string[] = [];
  for (const root of roots) {
    if (state.has(root.id)) continue;
    state.set(root.id, Visit.open);
    const stack: { id: string; next: number }[] = [{ id: root.id, next: 0 }];
    while (stack.length > 0) {
      const top = stack[stack.length - 1]!;
      const flowId = successors(top.id)[top.next++];
      if (flowId === undefined) {
        state.set(top.id, Visit.done);
        stack.pop();
        continue;
      }
      const target = targets.get(flowId) ?? '';
      const seen = state.get(target);
      if (seen === Visit.open && !flowId.startsWith('attach:')) closing.push(flowId);
      if (seen !== undefined) continue;
      state.set(target, Visit.open);
      stack.push({ id: target, next: 0 });
    }
  }
  return closing;
}

export function checkCycles(graph: ProcessGraph): Diagnostic[] {
  const closing = findClosingFlows(graph);
  const [first] = closing;
  if (first === undefined) return [];
  const list = closing.join(', ');
  return [
    errorAt(
      first,
      `Process ${graph.processId} loops: sequence flow${closing.length > 1 ? 's' : ''} ${list} lead${closing.length > 1 ? '' : 's'} back to an earlier step. Baton runs acyclic processes: remove the loop (repeat inside a worker, or start a new instance)`,
    ),
  ];
}
