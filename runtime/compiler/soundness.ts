// Refuses diagrams whose BPMN meaning the dead-path-elimination rule would change
// (docs/ARCHITECTURE.md, "Execution rule"), over each loop body with its back flows cut:
// - a parallel join whose inputs are never all taken together (BPMN waits forever);
// - a step that is not a join (task, end event, exclusive merge) where several
//   incoming flows can be taken at once (BPMN runs it once per token, Baton once);
// - a loop pass that can both go back to its head and leave the loop.
// For every flow we compute the scenarios (choices of the exclusive and
// inclusive gateways upstream) in which it is taken, then compare incoming flows.
import { errorAt, warningAt } from './diagnostics.ts';
import { flowsById, type GraphNode, type ProcessGraph } from './graph.ts';
import { describeElement } from './model.ts';
import type { Diagnostic } from './plan.ts';
import { ALWAYS, ScenarioAlgebra, TooManyScenarios, conflictOf, type Scenarios } from './scenarios.ts';
import { describeNodeKind } from './checks.ts';
import type { LoopScope } from './loop-scopes.ts';

const TAKEN = 'taken';
const SKIPPED = 'skipped';

/**
 * Over the graph with the loops' back flows cut: each pass of a loop body is acyclic and is
 * checked as any other part. A pass must also end one way: never both back to its head and
 * out of its loop.
 */
export function checkSoundness(source: ProcessGraph, loops: readonly LoopScope[] = []): Diagnostic[] {
  const graph = withoutBackFlows(source, new Set(loops.flatMap((l) => l.backFlows)));
  try {
    const taken = computeTakenScenarios(graph);
    return [
      ...[...graph.nodes.values()].flatMap((node) => checkIncoming(node, taken.scenarios, taken.algebra)),
      ...loops.flatMap((loop) => checkPassEnds(loop, taken.scenarios, taken.algebra)),
    ];
  } catch (cause) {
    if (!(cause instanceof TooManyScenarios)) throw cause;
    return [
      warningAt(
        graph.processId,
        `Process ${graph.processId} branches too much to check its joins at deploy; a parallel join that sees a skipped flow at run time stops the instance with an incident`,
      ),
    ];
  }
}

/** The back flows stay outgoing flows of their sources (their scenarios are computed) but are no input of the head. */
function withoutBackFlows(graph: ProcessGraph, back: Set<string>): ProcessGraph {
  if (back.size === 0) return graph;
  const nodes = new Map(
    [...graph.nodes].map(([id, node]): [string, GraphNode] => [
      id,
      { ...node, incoming: node.incoming.filter((f) => !back.has(f)) },
    ]),
  );
  return { ...graph, nodes };
}

function checkPassEnds(loop: LoopScope, taken: Map<string, Scenarios>, algebra: ScenarioAlgebra): Diagnostic[] {
  for (const back of loop.backFlows) {
    for (const exit of loop.exitFlows) {
      if (algebra.both(taken.get(back) ?? [], taken.get(exit) ?? []).length === 0) continue;
      return [
        errorAt(
          back,
          `A pass of the loop that starts at ${loop.head} can take flow ${back} back to ${loop.head} and flow ${exit} out of the loop at once: BPMN would run both, Baton runs a pass that ends one way. Decide between going back and leaving with one exclusive gateway`,
        ),
      ];
    }
  }
  return [];
}

interface TakenScenarios {
  algebra: ScenarioAlgebra;
  /** flow id -> scenarios in which the flow is taken */
  scenarios: Map<string, Scenarios>;
}

function computeTakenScenarios(graph: ProcessGraph): TakenScenarios {
  const algebra = new ScenarioAlgebra();
  const scenarios = new Map<string, Scenarios>();
  // A boundary event runs in the scenarios its host is in, when it fires.
  const boundaryActivation = new Map<string, Scenarios>();
  const attached = boundariesByHost(graph);
  // One start event starts each instance: several start events exclude each other.
  const starts = [...graph.nodes.values()].filter((n) => n.kind === 'startEvent' && n.scope === undefined).map((n) => n.id);
  if (starts.length > 1) algebra.declare('#start', starts);
  // A subprocess's inner start runs whenever the subprocess does.
  const subActivation = new Map<string, Scenarios>();
  // An event subprocess runs in some of its scope's scenarios: when its trigger comes.
  const fires = (node: GraphNode, scope: Scenarios): Scenarios => {
    algebra.declare(`${node.id}#fired`, [TAKEN, SKIPPED]);
    return algebra.restrict(scope, `${node.id}#fired`, TAKEN);
  };
  for (const node of orderTopologically(graph, attached)) {
    let activation =
      node.kind === 'eventSubProcess'
        ? fires(node, node.scope === undefined ? ALWAYS : (subActivation.get(node.scope) ?? []))
        : (node.kind === 'startEvent' || node.kind === 'eventSubProcessStart') && node.scope !== undefined
          ? (subActivation.get(node.scope) ?? [])
          : node.kind === 'startEvent'
            ? starts.length > 1
              ? algebra.restrict(ALWAYS, '#start', node.id)
              : ALWAYS
            : node.kind === 'boundaryEvent'
              ? (boundaryActivation.get(node.id) ?? [])
              : algebra.either(node.incoming.map((id) => scenarios.get(id) ?? []));
    if (node.kind === 'subProcess' || node.kind === 'eventSubProcess') subActivation.set(node.id, activation);
    activation = splitBoundaries(node, attached.get(node.id) ?? [], activation, algebra, boundaryActivation);
    for (const [flowId, taken] of leave(node, activation, algebra)) scenarios.set(flowId, taken);
  }
  return { algebra, scenarios };
}

// Interrupting boundaries and the host's normal end exclude each other (one outcome
// variable per host); a non-interrupting boundary fires or not, independently.
// Answers the scenarios in which the host leaves through its own outgoing flows.
function splitBoundaries(
  host: GraphNode,
  boundaries: GraphNode[],
  activation: Scenarios,
  algebra: ScenarioAlgebra,
  out: Map<string, Scenarios>,
): Scenarios {
  const interrupting = boundaries.filter((b) => b.element.cancelActivity !== false);
  for (const b of boundaries.filter((x) => x.element.cancelActivity === false)) {
    algebra.declare(b.id, [TAKEN, SKIPPED]);
    out.set(b.id, algebra.restrict(activation, b.id, TAKEN));
  }
  if (interrupting.length === 0) return activation;
  const outcome = `${host.id}#outcome`;
  algebra.declare(outcome, ['normal', ...interrupting.map((b) => b.id)]);
  for (const b of interrupting) out.set(b.id, algebra.restrict(activation, outcome, b.id));
  return algebra.restrict(activation, outcome, 'normal');
}

function boundariesByHost(graph: ProcessGraph): Map<string, GraphNode[]> {
  const byHost = new Map<string, GraphNode[]>();
  for (const node of graph.nodes.values()) {
    const host = node.kind === 'boundaryEvent' ? node.element.attachedToRef?.id : undefined;
    if (host) byHost.set(host, [...(byHost.get(host) ?? []), node]);
  }
  return byHost;
}

/** Scenarios of each outgoing flow of `node`, given the scenarios in which it runs. */
function leave(node: GraphNode, activation: Scenarios, algebra: ScenarioAlgebra): [string, Scenarios][] {
  const { outgoing } = node;
  const choosing = node.kind === 'exclusiveGateway' || node.kind === 'inclusiveGateway' || node.kind === 'eventBasedGateway';
  if (outgoing.length < 2 || !choosing) return outgoing.map((id) => [id, activation]);
  // An event-based gateway takes exactly one path, as an exclusive one does: the first event decides.
  if (node.kind === 'exclusiveGateway' || node.kind === 'eventBasedGateway') {
    algebra.declare(node.id, outgoing);
    return outgoing.map((id) => [id, algebra.restrict(activation, node.id, id)]);
  }
  // Inclusive: each conditional flow is its own yes/no choice; the default is taken when all say no.
  const defaultFlow = node.element.default?.id;
  const choices = outgoing.filter((id) => id !== defaultFlow);
  for (const id of choices) algebra.declare(choiceVariable(node.id, id), [TAKEN, SKIPPED]);
  const result: [string, Scenarios][] = choices.map((id) => [
    id,
    algebra.restrict(activation, choiceVariable(node.id, id), TAKEN),
  ]);
  if (defaultFlow !== undefined) {
    const none = choices.reduce((s, id) => algebra.restrict(s, choiceVariable(node.id, id), SKIPPED), activation);
    result.push([defaultFlow, none]);
  }
  return result;
}

/** Inclusive gateway choices are named "<gateway id>#<flow id>"; the gateway id is what messages show. */
function choiceVariable(gatewayId: string, flowId: string): string {
  return `${gatewayId}#${flowId}`;
}

function gatewayOf(variable: string): string {
  return variable.split('#')[0] ?? variable;
}

function orderTopologically(graph: ProcessGraph, attached: Map<string, GraphNode[]>): GraphNode[] {
  const flows = flowsById(graph);
  const hosted = new Set([...attached.values()].flat().map((b) => b.id));
  // Inner start events wait for their subprocess as if a flow led from it to them.
  // So do event subprocesses and their start events.
  const startsWithScope = (n: GraphNode) =>
    (n.kind === 'startEvent' || n.kind === 'eventSubProcess' || n.kind === 'eventSubProcessStart') &&
    n.scope !== undefined &&
    graph.nodes.has(n.scope);
  const innerStarts = new Map<string, GraphNode[]>();
  for (const n of graph.nodes.values()) {
    if (startsWithScope(n)) innerStarts.set(n.scope as string, [...(innerStarts.get(n.scope as string) ?? []), n]);
  }
  const waitsForScope = (n: GraphNode) => (startsWithScope(n) ? 1 : 0);
  // A boundary waits for its host as if a flow led from the host to it.
  const waiting = new Map(
    [...graph.nodes.values()].map((n) => [n.id, n.incoming.length + (hosted.has(n.id) ? 1 : 0) + waitsForScope(n)]),
  );
  const ready = [...graph.nodes.values()].filter((n) => waiting.get(n.id) === 0);
  const order: GraphNode[] = [];
  const release = (target: GraphNode | undefined) => {
    if (!target) return;
    const left = (waiting.get(target.id) ?? 0) - 1;
    waiting.set(target.id, left);
    if (left === 0) ready.push(target);
  };
  for (let node = ready.shift(); node !== undefined; node = ready.shift()) {
    order.push(node);
    for (const boundary of attached.get(node.id) ?? []) release(boundary);
    for (const start of innerStarts.get(node.id) ?? []) release(start);
    for (const flowId of node.outgoing) {
      const target = graph.nodes.get(flows.get(flowId)?.target ?? '');
      if (target?.incoming.includes(flowId)) release(target); // a back flow is no input of its head
    }
  }
  return order;
}

function checkIncoming(node: GraphNode, taken: Map<string, Scenarios>, algebra: ScenarioAlgebra): Diagnostic[] {
  if (node.incoming.length < 2 || node.kind === 'inclusiveGateway') return [];
  const label = describeElement(node.element);
  const pairs = pairsOf(node.incoming);
  if (node.kind === 'parallelGateway') {
    for (const [a, b] of pairs) {
      const conflict = firstConflict(taken.get(a) ?? [], taken.get(b) ?? []);
      if (conflict === undefined) continue;
      return [
        errorAt(
          node.id,
          `Parallel gateway ${label} joins flows ${a} and ${b}, which are never taken together (gateway ${gatewayOf(conflict)} chooses between them): BPMN would wait here forever. Merge them with an exclusive or inclusive gateway instead`,
        ),
      ];
    }
    const all = node.incoming.reduce((s, id) => algebra.both(s, taken.get(id) ?? []), ALWAYS);
    if (all.length > 0) return [];
    return [
      errorAt(
        node.id,
        `Parallel gateway ${label} joins flows ${node.incoming.join(', ')}, which are never all taken together: BPMN would wait here forever. Merge them with an inclusive gateway instead`,
      ),
    ];
  }
  for (const [a, b] of pairs) {
    if (algebra.both(taken.get(a) ?? [], taken.get(b) ?? []).length === 0) continue;
    return [
      errorAt(
        node.id,
        `${describeNodeKind(node)} ${label} can receive flows ${a} and ${b} at the same time: BPMN would run it once for each, Baton once. Join them first with a parallel or inclusive gateway`,
      ),
    ];
  }
  return [];
}

function pairsOf(ids: readonly string[]): [string, string][] {
  return ids.flatMap((a, i) => ids.slice(i + 1).map((b): [string, string] => [a, b]));
}

/** A variable that separates every scenario of `a` from every scenario of `b`, if the two never hold together. */
function firstConflict(a: Scenarios, b: Scenarios): string | undefined {
  let found: string | undefined;
  for (const left of a) {
    for (const right of b) {
      const conflict = conflictOf(left, right);
      if (conflict === undefined) return undefined;
      found ??= conflict;
    }
  }
  return found;
}
