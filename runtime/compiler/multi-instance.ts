// multiInstanceLoopCharacteristics on a service task, user task, call activity or (sequential) subprocess ->
// MultiInstanceSpec. A subprocess's spec drives the passes of its loop scope (standard-loops.ts).
// Camunda 7 attributes: camunda:collection (a variable name or ${...}),
// camunda:elementVariable, isSequential, completionCondition; results are
// collected by baton:outputCollection / baton:outputElement (FEEL).
import { checkFeel, toFeel } from '../shared/feel.ts';
import { needsThread } from '../shared/feel-budget.ts';
import { scriptCondition } from './conditions.ts';
import { errorAt, warningAt } from './diagnostics.ts';
import type { ProcessGraph } from './graph.ts';
import { describeElement, type BpmnElement, type BpmnExpression, type BpmnMultiInstance } from './model.ts';
import type { Diagnostic, FlowCondition, MultiInstanceSpec, ScriptCondition } from './plan.ts';
import { readBatonAttribute } from './task-spec.ts';

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const KINDS: Record<string, string> = { serviceTask: 'service task', callActivity: 'call activity', subProcess: 'subprocess' };

export function readMultiInstances(
  graph: ProcessGraph,
  scopes: BpmnElement[],
): { loops: Map<string, MultiInstanceSpec>; subprocesses: Map<string, MultiInstanceSpec>; diagnostics: Diagnostic[] } {
  const loops = new Map<string, MultiInstanceSpec>();
  const subprocesses = new Map<string, MultiInstanceSpec>();
  const diagnostics: Diagnostic[] = [];
  for (const node of graph.nodes.values()) {
    const loop = node.element.loopCharacteristics as BpmnMultiInstance | undefined;
    // A user task is a catch event in the plan (it waits for a person); its elements are user tasks.
    const kind =
      node.element.$type === 'bpmn:UserTask'
        ? 'user task'
        : node.element.$type === 'bpmn:SubProcess'
          ? 'subprocess'
          : KINDS[node.kind ?? ''];
    if (!kind || loop?.$type !== 'bpmn:MultiInstanceLoopCharacteristics') continue;
    const label = describeElement(node.element);
    const problems: string[] = [];
    // Camunda 8 files say <zeebe:loopCharacteristics inputCollection inputElement outputCollection outputElement>.
    const zeebe = (loop.extensionElements?.values ?? []).find((v) => v.$type === 'zeebe:loopCharacteristics') as
      ZeebeLoop | undefined;
    if (zeebe && loop.collection)
      problems.push('it has both camunda:collection and zeebe:loopCharacteristics: keep the one of the dialect the file is in');
    const collection = zeebe
      ? readExpression(zeebe.inputCollection, 'zeebe:loopCharacteristics inputCollection', problems, true)?.feel
      : readCollection(loop.collection, problems);
    // loopCardinality runs a number of elements when there is no collection; with one, the collection decides.
    // A count in a script language would be read as FEEL text: refused, naming the language.
    const cardinalityLanguage = loop.loopCardinality?.language?.trim() ?? '';
    if (cardinalityLanguage !== '' && cardinalityLanguage.toLowerCase() !== 'feel')
      problems.push(
        `loopCardinality is written in ${cardinalityLanguage}, which Baton does not evaluate there: write it in FEEL or JUEL`,
      );
    const cardinality =
      cardinalityLanguage === '' || cardinalityLanguage.toLowerCase() === 'feel'
        ? readExpression(loop.loopCardinality?.body, 'loopCardinality', problems, true)
        : undefined;
    if (cardinality && collection !== undefined)
      diagnostics.push(
        warningAt(
          node.id,
          `Multi-instance ${kind} ${label}: it has both a collection and loopCardinality; the collection decides how many elements run and loopCardinality "${cardinality.source}" is not used: remove one of them`,
        ),
      );
    const elementVariable = (zeebe ? zeebe.inputElement : loop.elementVariable)?.trim();
    const elementWhat = zeebe ? 'zeebe:loopCharacteristics inputElement' : 'camunda:elementVariable';
    if (elementVariable !== undefined && elementVariable !== '' && !NAME.test(elementVariable))
      problems.push(`${elementWhat} "${elementVariable}" is not a variable name`);
    const completion = readCompletion(loop.completionCondition, problems);
    const batonOf = (name: string) =>
      readBatonAttribute(loop as never, [...scopes, node.element], name) ?? readBatonAttribute(node.element, scopes, name);
    const outputCollection = (zeebe ? zeebe.outputCollection : batonOf('outputCollection'))?.trim();
    const outputWhat = zeebe ? 'zeebe:loopCharacteristics outputCollection' : 'baton:outputCollection';
    if (outputCollection !== undefined && outputCollection !== '' && !NAME.test(outputCollection))
      problems.push(`${outputWhat} "${outputCollection}" is not a variable name`);
    const outputElementSource = zeebe ? zeebe.outputElement : batonOf('outputElement');
    const outputElement = readExpression(
      outputElementSource,
      zeebe ? 'zeebe:loopCharacteristics outputElement' : 'baton:outputElement',
      problems,
      true,
    );
    if (node.element.isForCompensation) problems.push('a compensation handler cannot be multi-instance');
    // A task's element result defaults to its completion variables; a subprocess has none of its own.
    if (node.element.$type === 'bpmn:SubProcess' && outputCollection && !outputElement)
      problems.push(`${outputWhat} needs an outputElement: the expression each element's result is read from`);
    if (collection === undefined && cardinality && elementVariable)
      problems.push(
        `${elementWhat} "${elementVariable}" needs a collection to take its elements from; loopCardinality only counts`,
      );
    if (problems.length > 0 || (collection === undefined && !cardinality)) {
      diagnostics.push(
        errorAt(
          node.id,
          `Multi-instance ${kind} ${label}: ${problems.join('; ') || 'set camunda:collection (or zeebe:loopCharacteristics inputCollection) to the list, or loopCardinality to the number of elements'}`,
        ),
      );
      continue;
    }
    (node.kind === 'subProcess' ? subprocesses : loops).set(node.id, {
      ...(collection !== undefined ? { collection } : { cardinality: cardinality?.feel }),
      ...(elementVariable ? { elementVariable } : {}),
      sequential: loop.isSequential === true,
      ...(completion ? { completionCondition: completion } : {}),
      ...(outputCollection ? { outputCollection } : {}),
      ...(outputElement ? { outputElement: outputElement.feel } : {}),
      // Camunda 8 counts its elements from 1, Camunda 7 from 0: each file sees the count its engine gives.
      ...(zeebe ? { counterFrom: 1 as const } : {}),
    });
  }
  return { loops, subprocesses, diagnostics };
}

/** zeebe:loopCharacteristics as the camunda moddle reads it (a generic element: attributes as properties). */
interface ZeebeLoop extends BpmnElement {
  readonly inputCollection?: string;
  readonly inputElement?: string;
  readonly outputCollection?: string;
  readonly outputElement?: string;
}

/** A bare name is the variable; `${...}` or `= ...` is an expression. */
function readCollection(source: string | undefined, problems: string[]): string | undefined {
  const text = source?.trim();
  if (!text) return undefined;
  if (NAME.test(text)) return text;
  const feel = readExpression(text, 'camunda:collection', problems, true);
  return feel?.feel;
}

/** A completion condition in JavaScript (language="javascript") runs in the sandbox; otherwise FEEL or JUEL. */
function readCompletion(expression: BpmnExpression | undefined, problems: string[]): FlowCondition | ScriptCondition | undefined {
  if (!expression?.body?.trim()) return undefined;
  const script = scriptCondition(expression);
  if (typeof script === 'string') {
    problems.push(`completionCondition ${script}`);
    return undefined;
  }
  return script ?? readExpression(expression.body, 'completionCondition', problems);
}

function readExpression(
  source: string | undefined,
  what: string,
  problems: string[],
  noLoops = false,
): { feel: string; source: string } | undefined {
  const text = source?.trim();
  if (!text) return undefined;
  const feel = toFeel(text.startsWith('=') || text.startsWith('${') || text.startsWith('#{') ? text : `=${text}`);
  const problem = feel.ok ? checkFeel(feel.feel) : feel.message;
  if (!feel.ok || problem !== undefined) {
    problems.push(`${what} "${text}" is not a valid expression: ${problem ?? ''}`);
    return undefined;
  }
  if (noLoops && needsThread(feel.feel)) {
    problems.push(`${what} "${text}" iterates (for, some, every): give the list or the result directly`);
    return undefined;
  }
  return { feel: feel.feel, source: text };
}
