// Cycles of sequence flows become loop scopes (DESIGN: "Loops"). Each strongly connected
// part of the flow graph is a loop entered at one step, its head; the flows from inside back
// to the head are its back flows. Cut those, and the body is acyclic again: the engine runs
// it with dead-path elimination once per pass. Cycles left inside a body after its back flows
// are cut are loops nested in it. Refused, naming elements: a cycle entered at several steps
// (or never), a cycle without a step that waits (it would spin), and compensation inside a loop.
import { errorAt } from './diagnostics.ts';
import type { GraphNode, ProcessGraph } from './graph.ts';
import { describeElement } from './model.ts';
import type { Diagnostic } from './plan.ts';

export interface LoopScope {
  /** `loop:<head id>`: a BPMN id never holds a colon, so it names no element */
  id: string;
  head: string;
  /** every step a pass runs: the cycle, the steps inside its subprocesses, and nested loops' steps */
  steps: string[];
  /** flows from the body back to the head: taking one starts the next pass */
  backFlows: string[];
  /** flows from the body to a step outside it: resolved when the last pass ends */
  exitFlows: string[];
  /** the loop whose body holds this one */
  parent?: string;
}

export interface LoopScopesResult {
  loops: LoopScope[];
  diagnostics: Diagnostic[];
}

/**
 * A compensation throw inside a loop would undo the steps of its own pass, or of every pass so
 * far: BPMN leaves that open, so it is refused. Compensation boundaries inside a loop run: a
 * compensation after the loop undoes each pass's steps (engine/loop-passes.ts keepCompletions).
 */
const NOT_IN_LOOPS: Record<string, string> = {
  compensationThrow: 'compensation events',
};

export function findLoopScopes(graph: ProcessGraph): LoopScopesResult {
  const diagnostics: Diagnostic[] = [];
  const loops: LoopScope[] = [];
  const boundaries = boundariesByHost(graph);
  const visit = (nodes: Set<string>, cut: Set<string>): void => {
    for (const component of stronglyConnected(graph, nodes, cut, boundaries)) {
      const loop = loopOf(graph, component, cut, boundaries, diagnostics);
      if (!loop) continue;
      loops.push(loop);
      visit(component, new Set([...cut, ...loop.backFlows]));
    }
  };
  visit(new Set(graph.nodes.keys()), new Set());
  nestLoops(loops);
  return { loops, diagnostics };
}

/** Sets each loop's parent: the smallest other loop whose body holds its head (a loop in a subprocess in a loop too). */
export function nestLoops(loops: LoopScope[]): void {
  for (const loop of loops) {
    const holders = loops.filter((l) => l !== loop && l.steps.includes(loop.head));
    holders.sort((a, b) => a.steps.length - b.steps.length);
    if (holders[0]) loop.parent = holders[0].id;
    else delete loop.parent;
  }
}

function loopOf(
  graph: ProcessGraph,
  component: Set<string>,
  cut: Set<string>,
  boundaries: Map<string, string[]>,
  diagnostics: Diagnostic[],
): LoopScope | undefined {
  const flows = new Map(graph.flows.map((f) => [f.id, f]));
  const members = [...graph.nodes.values()].filter((n) => component.has(n.id)); // document order
  const names = members.map((n) => n.id).join(', ');
  const entries = members.filter(
    (n) =>
      n.incoming.some((id) => !cut.has(id) && !component.has(flows.get(id)?.source ?? '')) ||
      (n.kind === 'boundaryEvent' && !component.has(n.element.attachedToRef?.id ?? '')),
  );
  const [head, ...others] = entries;
  if (!head) {
    diagnostics.push(
      errorAt(
        members[0]?.id ?? graph.processId,
        `The cycle through ${names} is never entered from outside it: connect it or delete it`,
      ),
    );
    return undefined;
  }
  if (others.length > 0) {
    diagnostics.push(
      errorAt(
        head.id,
        `The cycle through ${names} is entered at ${entries.length} steps (${entries.map((n) => n.id).join(', ')}): a loop starts each pass at one step. Route every flow that enters it to one of them, e.g. through an exclusive gateway in front of it`,
      ),
    );
    return undefined;
  }
  const steps = new Set<string>();
  const add = (id: string): void => {
    if (steps.has(id)) return;
    steps.add(id);
    for (const b of boundaries.get(id) ?? []) add(b);
    for (const inner of graph.nodes.values()) if (inner.scope === id) add(inner.id);
  };
  for (const id of component) add(id);
  // The events an event-based gateway of the body races belong to the pass, the ones leading out
  // too: the pass waits for all of them, and the first to fire decides whether it goes back.
  for (const id of [...steps]) {
    const node = graph.nodes.get(id);
    if (node?.kind !== 'eventBasedGateway') continue;
    for (const target of node.outgoing.map((f) => flows.get(f)?.target)) if (target && graph.nodes.has(target)) add(target);
  }
  // A non-interrupting boundary's own path (reached from it alone, ending in end events) runs
  // beside the pass and belongs to it: the pass waits for it, and each pass has its own firings.
  for (const id of [...steps]) {
    const node = graph.nodes.get(id);
    if (node?.kind !== 'boundaryEvent' || node.element.cancelActivity !== false) continue;
    for (const tailId of ownTail(graph, node, steps)) add(tailId);
  }
  const backFlows = head.incoming.filter((id) => !cut.has(id) && component.has(flows.get(id)?.source ?? ''));
  const exitFlows = graph.flows.filter((f) => steps.has(f.source) && !steps.has(f.target)).map((f) => f.id);
  const body = [...steps].map((id) => graph.nodes.get(id) as GraphNode);
  for (const node of body) {
    const what = NOT_IN_LOOPS[node.kind ?? ''];
    if (what)
      diagnostics.push(
        errorAt(
          node.id,
          `${describeElement(node.element)} is inside the loop that starts at ${head.id}: ${what} do not run inside a loop yet. Move it before or after the loop, or repeat inside a worker`,
        ),
      );
  }
  // An element Baton does not run is refused on its own; it may well be one that waits.
  if (
    !body.some((n) => n.kind === 'serviceTask' || n.kind === 'catchEvent' || n.kind === 'callActivity' || n.kind === undefined)
  ) {
    diagnostics.push(
      errorAt(
        head.id,
        `The loop through ${names} has no step that waits (a service task, a call activity, a receive task or a catch event): each pass would end at once and the loop would spin. Add the task or the event the loop repeats`,
      ),
    );
  }
  return { id: `loop:${head.id}`, head: head.id, steps: [...steps], backFlows, exitFlows };
}

/** The steps only `boundary` leads to, when they end in end events without joining other flow; else none. */
function ownTail(graph: ProcessGraph, boundary: GraphNode, body: Set<string>): string[] {
  const flows = new Map(graph.flows.map((f) => [f.id, f]));
  const tail = new Set<string>();
  const queue = boundary.outgoing.map((f) => flows.get(f)?.target ?? '');
  while (queue.length > 0) {
    const id = queue.shift() as string;
    if (tail.has(id)) continue;
    const node = graph.nodes.get(id);
    if (!node || body.has(id)) return [];
    tail.add(id);
    for (const f of node.outgoing) queue.push(flows.get(f)?.target ?? '');
  }
  for (const id of tail) {
    const node = graph.nodes.get(id) as GraphNode;
    if (node.incoming.some((f) => ![boundary.id, ...tail].includes(flows.get(f)?.source ?? ''))) return [];
  }
  return [...tail];
}

function boundariesByHost(graph: ProcessGraph): Map<string, string[]> {
  const byHost = new Map<string, string[]>();
  for (const n of graph.nodes.values()) {
    const host = n.kind === 'boundaryEvent' || n.element.$type === 'bpmn:BoundaryEvent' ? n.element.attachedToRef?.id : undefined;
    if (host) byHost.set(host, [...(byHost.get(host) ?? []), n.id]);
  }
  return byHost;
}

/**
 * Tarjan's strongly connected components over `nodes`, following flows not in `cut` and
 * the edge from a host to its boundary events; only components that hold a cycle.
 * Iterative, so a long chain of steps cannot overflow the call stack.
 */
function stronglyConnected(
  graph: ProcessGraph,
  nodes: Set<string>,
  cut: Set<string>,
  boundaries: Map<string, string[]>,
): Set<string>[] {
  const targets = new Map(graph.flows.map((f) => [f.id, f.target]));
  const successors = (id: string): string[] => [
    ...(graph.nodes.get(id)?.outgoing ?? []).filter((f) => !cut.has(f)).map((f) => targets.get(f) ?? ''),
    ...(boundaries.get(id) ?? []),
  ];
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const components: Set<string>[] = [];
  let counter = 0;
  for (const root of nodes) {
    if (index.has(root)) continue;
    const work: { id: string; next: string[] }[] = [];
    const open = (id: string): void => {
      index.set(id, counter);
      low.set(id, counter++);
      stack.push(id);
      onStack.add(id);
      work.push({ id, next: successors(id).filter((s) => nodes.has(s)) });
    };
    open(root);
    while (work.length > 0) {
      const top = work[work.length - 1] as { id: string; next: string[] };
      const next = top.next.shift();
      if (next !== undefined) {
        if (!index.has(next)) open(next);
        else if (onStack.has(next)) low.set(top.id, Math.min(low.get(top.id) ?? 0, index.get(next) ?? 0));
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low.set(parent.id, Math.min(low.get(parent.id) ?? 0, low.get(top.id) ?? 0));
      if (low.get(top.id) !== index.get(top.id)) continue;
      const component = new Set<string>();
      for (let id = stack.pop(); id !== undefined; id = id === top.id ? undefined : stack.pop()) {
        onStack.delete(id);
        component.add(id);
      }
      const selfLoop = (graph.nodes.get(top.id)?.outgoing ?? []).some((f) => !cut.has(f) && targets.get(f) === top.id);
      if (component.size > 1 || selfLoop) components.push(component);
    }
  }
  return components;
}
