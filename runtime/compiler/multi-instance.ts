// multiInstanceLoopCharacteristics on a service task or call activity -> MultiInstanceSpec.
// Camunda 7 attributes: camunda:collection (a variable name or ${...}),
// camunda:elementVariable, isSequential, completionCondition; results are
// collected by baton:outputCollection / baton:outputElement (FEEL).
import { checkFeel, toFeel } from '../shared/feel.ts';
import { needsThread } from '../shared/feel-budget.ts';
import { errorAt } from './diagnostics.ts';
import type { ProcessGraph } from './graph.ts';
import { describeElement, type BpmnElement, type BpmnMultiInstance } from './model.ts';
import type { Diagnostic, MultiInstanceSpec } from './plan.ts';
import { readBatonAttribute } from './task-spec.ts';

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export function readMultiInstances(
  graph: ProcessGraph,
  scopes: BpmnElement[],
): { loops: Map<string, MultiInstanceSpec>; diagnostics: Diagnostic[] } {
  const loops = new Map<string, MultiInstanceSpec>();
  const diagnostics: Diagnostic[] = [];
  for (const node of graph.nodes.values()) {
    const loop = node.element.loopCharacteristics as BpmnMultiInstance | undefined;
    if ((node.kind !== 'serviceTask' && node.kind !== 'callActivity') || loop?.$type !== 'bpmn:MultiInstanceLoopCharacteristics')
      continue;
    const label = describeElement(node.element);
    const problems: string[] = [];
    const collection = readCollection(loop.collection, problems);
    const elementVariable = loop.elementVariable?.trim();
    if (elementVariable !== undefined && elementVariable !== '' && !NAME.test(elementVariable))
      problems.push(`camunda:elementVariable "${elementVariable}" is not a variable name`);
    const completion = readExpression(loop.completionCondition?.body, 'completionCondition', problems);
    const batonOf = (name: string) =>
      readBatonAttribute(loop as never, [...scopes, node.element], name) ?? readBatonAttribute(node.element, scopes, name);
    const outputCollection = batonOf('outputCollection')?.trim();
    if (outputCollection !== undefined && !NAME.test(outputCollection))
      problems.push(`baton:outputCollection "${outputCollection}" is not a variable name`);
    const outputElementSource = batonOf('outputElement');
    const outputElement = readExpression(outputElementSource, 'baton:outputElement', problems, true);
    if (node.element.isForCompensation) problems.push('a compensation handler cannot be multi-instance');
    if (problems.length > 0 || collection === undefined) {
      diagnostics.push(
        errorAt(
          node.id,
          `Multi-instance ${node.kind === 'callActivity' ? 'call activity' : 'service task'} ${label}: ${problems.join('; ') || 'set camunda:collection to the list variable (loopCardinality is not supported)'}`,
        ),
      );
      continue;
    }
    loops.set(node.id, {
      collection,
      ...(elementVariable ? { elementVariable } : {}),
      sequential: loop.isSequential === true,
      ...(completion ? { completionCondition: completion } : {}),
      ...(outputCollection ? { outputCollection } : {}),
      ...(outputElement ? { outputElement: outputElement.feel } : {}),
    });
  }
  return { loops, diagnostics };
}

/** A bare name is the variable; `${...}` or `= ...` is an expression. */
function readCollection(source: string | undefined, problems: string[]): string | undefined {
  const text = source?.trim();
  if (!text) return undefined;
  if (NAME.test(text)) return text;
  const feel = readExpression(text, 'camunda:collection', problems, true);
  return feel?.feel;
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
