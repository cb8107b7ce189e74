// A loop marker (standardLoopCharacteristics) on a service task, call activity or subprocess
// becomes a loop scope whose body is that activity (DESIGN: "Loops"): each pass runs it with
// fresh states, and after a pass in which it completed, another runs while `loopCondition`
// holds (FEEL or the JUEL subset, reading `loopCounter`) and fewer than `loopMaximum` passes
// ran; `testBefore` asks before the first pass too. Neither Camunda 7 nor Zeebe runs the
// marker (both run the activity once); Baton runs it as the BPMN specification says or refuses it.
import { checkFeel, toFeel } from '../shared/feel.ts';
import { errorAt } from './diagnostics.ts';
import type { ProcessGraph } from './graph.ts';
import type { LoopScope } from './loop-scopes.ts';
import { describeElement, type BpmnElement, type BpmnExpression } from './model.ts';
import type { Diagnostic, RepeatSpec } from './plan.ts';

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
    const condition = readCondition(marker.loopCondition?.body, problems);
    const maximum = marker.loopMaximum === undefined ? undefined : Number(marker.loopMaximum);
    if (maximum !== undefined && (!Number.isInteger(maximum) || maximum < 1))
      problems.push(`loopMaximum "${marker.loopMaximum}" is not a whole number of passes of at least 1`);
    if (!condition && maximum === undefined)
      problems.push('it has neither a loopCondition nor a loopMaximum, so it would repeat forever: set one of them');
    if (node.element.isForCompensation) problems.push('a compensation handler cannot loop');
    if (cycles.some((c) => c.head === node.id))
      problems.push('it also starts a loop of sequence flows: draw one loop, with the marker or with the flows back');
    const steps = new Set<string>([node.id]);
    for (const inner of graph.nodes.values()) if (insideOf(graph, inner.id, node.id)) steps.add(inner.id);
    const boundaries = [...graph.nodes.values()].filter(
      (b) => b.kind === 'boundaryEvent' && b.element.attachedToRef?.id === node.id,
    );
    for (const b of boundaries) {
      if (b.element.cancelActivity === false)
        problems.push(
          `its non-interrupting boundary event ${b.id} would leave the loop while passes go on: make it interrupting, or move it onto a subprocess around the activity`,
        );
      steps.add(b.id);
    }
    if (node.kind === 'subProcess' && ![...steps].some((id) => WAITS.has(graph.nodes.get(id)?.kind ?? '')))
      problems.push('nothing in the subprocess waits (a task, a call activity or a catch event), so its passes would spin');
    if (problems.length > 0) {
      diagnostics.push(errorAt(node.id, `Loop marker on ${label}: ${problems.join('; ')}`));
      continue;
    }
    const exitFlows = graph.flows.filter((f) => steps.has(f.source) && !steps.has(f.target)).map((f) => f.id);
    const holders = cycles.filter((c) => c.steps.includes(node.id)).sort((a, b) => a.steps.length - b.steps.length);
    loops.push({
      id: `loop:${node.id}`,
      head: node.id,
      steps: [...steps],
      backFlows: [],
      exitFlows,
      ...(holders[0] ? { parent: holders[0].id } : {}),
      repeat: {
        ...(condition ? { condition } : {}),
        testBefore: marker.testBefore === true,
        ...(maximum !== undefined ? { maximum } : {}),
      },
    });
  }
  return { loops, diagnostics };
}

function insideOf(graph: ProcessGraph, id: string, scope: string): boolean {
  for (let at = graph.nodes.get(id)?.scope; at !== undefined; at = graph.nodes.get(at)?.scope) if (at === scope) return true;
  return false;
}

function readCondition(body: string | undefined, problems: string[]): RepeatSpec['condition'] {
  if (body === undefined || body.trim() === '') return undefined;
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
