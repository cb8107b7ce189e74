// A loop marker (standardLoopCharacteristics) on a service task, call activity or subprocess
// becomes a loop scope whose body is that activity (DESIGN: "Loops"): each pass runs it with
// fresh states, and after a pass in which it completed, another runs while `loopCondition`
// holds (FEEL or the JUEL subset, reading `loopCounter`) and fewer than `loopMaximum` passes
// ran; `testBefore` asks before the first pass too. Neither Camunda 7 nor Zeebe runs the
// marker (both run the activity once); Baton runs it as the BPMN specification says or refuses it.
// A sequential multi-instance subprocess is the same loop scope with one pass per element.
import { checkFeel, toFeel } from '../shared/feel.ts';
import { scriptCondition } from './conditions.ts';
import { errorAt } from './diagnostics.ts';
import type { ProcessGraph } from './graph.ts';
import type { LoopScope } from './loop-scopes.ts';
import { describeElement, type BpmnElement, type BpmnExpression } from './model.ts';
import type { Diagnostic, MultiInstanceSpec, RepeatSpec } from './plan.ts';

interface BpmnStandardLoop extends BpmnElement {
  readonly testBefore?: boolean;
  readonly loopMaximum?: number | string;
  readonly loopCondition?: BpmnExpression;
}

const LOOPABLE = new Set(['serviceTask', 'callActivity', 'subProcess']);
const WAITS = new Set(['serviceTask', 'callActivity', 'catchEvent']);

/** Loop scopes for the activities with a loop marker, each with its RepeatSpec; `cycles` are the loops of sequence flows. */
export function readStandardLoops(
  graph: ProcessGraph,
  cycles: readonly LoopScope[],
): { loops: (LoopScope & { repeat: RepeatSpec })[]; diagnostics: Diagnostic[] } {
  const loops: (LoopScope & { repeat: RepeatSpec })[] = [];
  const diagnostics: Diagnostic[] = [];
  for (const node of graph.nodes.values()) {
    const marker = node.element.loopCharacteristics as BpmnStandardLoop | undefined;
    if (marker?.$type !== 'bpmn:StandardLoopCharacteristics' || !LOOPABLE.has(node.kind ?? '')) continue;
    const label = describeElement(node.element);
    const problems: string[] = [];
    const condition = readCondition(marker.loopCondition, problems);
    const maximum = marker.loopMaximum === undefined ? undefined : Number(marker.loopMaximum);
    if (maximum !== undefined && (!Number.isInteger(maximum) || maximum < 1))
      problems.push(`loopMaximum "${marker.loopMaximum}" is not a whole number of passes of at least 1`);
    if (!condition && maximum === undefined)
      problems.push('it has neither a loopCondition nor a loopMaximum, so it would repeat forever: set one of them');
    if (node.element.isForCompensation) problems.push('a compensation handler cannot loop');
    const scope = activityScope(graph, node.id, cycles, problems);
    if (node.kind === 'subProcess' && ![...scope.steps].some((id) => WAITS.has(graph.nodes.get(id)?.kind ?? '')))
      problems.push(
        'nothing in the subprocess waits (a task, a call activity, a receive task or a catch event), so its passes would spin',
      );
    if (problems.length > 0) {
      diagnostics.push(errorAt(node.id, `Loop marker on ${label}: ${problems.join('; ')}`));
      continue;
    }
    loops.push({
      ...scope,
      repeat: {
        ...(condition ? { condition } : {}),
        testBefore: marker.testBefore === true,
        ...(maximum !== undefined ? { maximum } : {}),
      },
    });
  }
  return { loops, diagnostics };
}

/**
 * Loop scopes for sequential multi-instance subprocesses: one pass per element of the collection
 * (`elements`), the element variable and loopCounter local to the pass; the collection is read
 * when the subprocess starts and an empty one skips it.
 */
export function readElementLoops(
  graph: ProcessGraph,
  cycles: readonly LoopScope[],
  specs: ReadonlyMap<string, MultiInstanceSpec>,
): { loops: (LoopScope & { repeat: RepeatSpec })[]; diagnostics: Diagnostic[] } {
  const loops: (LoopScope & { repeat: RepeatSpec })[] = [];
  const diagnostics: Diagnostic[] = [];
  for (const [id, elements] of specs) {
    const problems: string[] = [];
    const scope = activityScope(graph, id, cycles, problems);
    if (problems.length > 0) {
      const node = graph.nodes.get(id);
      diagnostics.push(
        errorAt(id, `Multi-instance subprocess ${node ? describeElement(node.element) : id}: ${problems.join('; ')}`),
      );
      continue;
    }
    loops.push({ ...scope, repeat: { testBefore: true, elements: structuredClone(elements) } });
  }
  return { loops, diagnostics };
}

/** The loop scope around one activity: the activity, what is inside it and its boundary events. */
function activityScope(graph: ProcessGraph, id: string, cycles: readonly LoopScope[], problems: string[]): LoopScope {
  if (cycles.some((c) => c.head === id))
    problems.push('it also starts a loop of sequence flows: draw one loop, with the marker or with the flows back');
  const steps = new Set<string>([id]);
  for (const inner of graph.nodes.values()) if (insideOf(graph, inner.id, id)) steps.add(inner.id);
  for (const b of graph.nodes.values()) {
    if (b.kind !== 'boundaryEvent' || b.element.attachedToRef?.id !== id) continue;
    if (b.element.cancelActivity === false)
      problems.push(
        `its non-interrupting boundary event ${b.id} would leave the loop while passes go on: make it interrupting, or move it onto a subprocess around the activity`,
      );
    steps.add(b.id);
  }
  // As in loops of sequence flows: a compensation throw would undo its own pass or every pass.
  for (const inner of steps) {
    if (graph.nodes.get(inner)?.kind === 'compensationThrow')
      problems.push(
        `${inner} repeats with it: compensation events do not run inside a loop (BPMN leaves open which passes they undo); throw compensation after the loop`,
      );
  }
  const exitFlows = graph.flows.filter((f) => steps.has(f.source) && !steps.has(f.target)).map((f) => f.id);
  const holders = cycles.filter((c) => c.steps.includes(id)).sort((a, b) => a.steps.length - b.steps.length);
  return {
    id: `loop:${id}`,
    head: id,
    steps: [...steps],
    backFlows: [],
    exitFlows,
    ...(holders[0] ? { parent: holders[0].id } : {}),
  };
}

function insideOf(graph: ProcessGraph, id: string, scope: string): boolean {
  for (let at = graph.nodes.get(id)?.scope; at !== undefined; at = graph.nodes.get(at)?.scope) if (at === scope) return true;
  return false;
}

function readCondition(expression: BpmnExpression | undefined, problems: string[]): RepeatSpec['condition'] {
  const body = expression?.body;
  if (body === undefined || body.trim() === '') return undefined;
  const script = scriptCondition(expression);
  if (typeof script === 'string') {
    problems.push(`loopCondition ${script}`);
    return undefined;
  }
  if (script) return script;
  const feel = toFeel(body);
  if (!feel.ok) {
    problems.push(`loopCondition "${body.trim()}" cannot be used: ${feel.message}`);
    return undefined;
  }
  const error = checkFeel(feel.feel);
  if (error !== undefined) {
    problems.push(`loopCondition "${body.trim()}": ${error}`);
    return undefined;
  }
  return { feel: feel.feel, source: body.trim() };
}
