// Sequence-flow conditions -> FEEL. Only exclusive and inclusive gateways
// choose among their outgoing flows (docs/ARCHITECTURE.md, "Execution rule"); a condition anywhere else
// would either be ignored (parallel gateway, default flow) or change meaning.
import { toFeel } from '../shared/feel.ts';
import { errorAt, warningAt } from './diagnostics.ts';
import type { GraphFlow, GraphNode, ProcessGraph } from './graph.ts';
import { describeElement, type BpmnExpression } from './model.ts';
import type { Diagnostic, FlowCondition, ScriptCondition } from './plan.ts';
import { isJavaScript, javaScriptSyntax } from './scripts.ts';

export interface ConditionsResult {
  /** condition by sequence flow id: FEEL, or a JavaScript one the sandbox runs */
  conditions: Map<string, FlowCondition | ScriptCondition>;
  diagnostics: Diagnostic[];
}

/** Script languages Camunda 7 evaluates in conditions; Baton runs JavaScript (in its sandbox) of these. */
const SCRIPT_LANGUAGES = /^(javascript|ecmascript|js|groovy|python|jython|ruby|jruby|nashorn|graal\.js)$/i;

export function compileConditions(graph: ProcessGraph): ConditionsResult {
  const conditions = new Map<string, FlowCondition | ScriptCondition>();
  const diagnostics: Diagnostic[] = [];
  for (const flow of graph.flows) {
    const source = graph.nodes.get(flow.source);
    if (!source) continue;
    const expression = flow.element.conditionExpression;
    if (expression) {
      const result = compileCondition(flow, source, expression);
      if ('condition' in result) conditions.set(flow.id, result.condition);
      else diagnostics.push(result.diagnostic);
    } else {
      const warning = warnUnconditional(flow, source);
      if (warning) diagnostics.push(warning);
    }
  }
  return { conditions, diagnostics };
}

function compileCondition(
  flow: GraphFlow,
  source: GraphNode,
  expression: BpmnExpression,
): { condition: FlowCondition | ScriptCondition } | { diagnostic: Diagnostic } {
  const text = (expression.body ?? '').trim();
  const from = describeElement(source.element);
  if (source.kind === 'parallelGateway') {
    return {
      diagnostic: warningAt(
        flow.id,
        `Sequence flow ${flow.id} leaves parallel gateway ${from}, which takes every outgoing flow: its condition "${text}" is ignored; remove it or use an inclusive gateway`,
      ),
    };
  }
  if (source.kind === 'eventBasedGateway') {
    return {
      diagnostic: warningAt(
        flow.id,
        `Sequence flow ${flow.id} leaves event-based gateway ${from}, which takes the path of the event that fires first: its condition "${text}" is ignored; remove it`,
      ),
    };
  }
  const gateway = source.kind === 'exclusiveGateway' || source.kind === 'inclusiveGateway';
  if (gateway && source.element.default?.id === flow.id) {
    return {
      diagnostic: warningAt(
        flow.id,
        `Default flow ${flow.id} of gateway ${from} has a condition "${text}", which is ignored: the default flow is taken when no other condition holds`,
      ),
    };
  }
  if (source.kind !== undefined && !gateway) {
    return {
      diagnostic: errorAt(
        flow.id,
        `Sequence flow ${flow.id} leaving ${from} has a condition, but only exclusive and inclusive gateways choose flows: put a gateway after ${source.id} and move the condition to its outgoing flow`,
      ),
    };
  }
  const language = expression.language?.trim() ?? '';
  // Camunda 7 runs a script condition and takes the flow when its value is true; Baton's sandbox runs JavaScript the same way.
  if (isJavaScript(language) || /^(nashorn|graal\.js)$/i.test(language)) {
    if (text === '')
      return { diagnostic: errorAt(flow.id, `Condition of sequence flow ${flow.id} is an empty JavaScript script: write one`) };
    const problem = javaScriptSyntax(expression.body ?? '');
    if (problem !== undefined) return { diagnostic: errorAt(flow.id, `Condition of sequence flow ${flow.id}: ${problem}`) };
    return { condition: { javascript: expression.body ?? '', source: text } };
  }
  if (SCRIPT_LANGUAGES.test(language)) {
    return {
      diagnostic: errorAt(
        flow.id,
        `Condition of sequence flow ${flow.id} is a ${language} script, which Baton does not run: write it in JavaScript (language="javascript"), FEEL ("= total > 100") or JUEL ("\${total > 100}")`,
      ),
    };
  }
  const translated = toFeel(text);
  if (!translated.ok)
    return { diagnostic: errorAt(flow.id, `Condition of sequence flow ${flow.id} cannot be used: ${translated.message}`) };
  return { condition: { feel: translated.feel, source: text } };
}

/** A non-default flow without condition always holds, so an exclusive gateway may never look past it. */
function warnUnconditional(flow: GraphFlow, source: GraphNode): Diagnostic | undefined {
  const choosing = source.kind === 'exclusiveGateway' || source.kind === 'inclusiveGateway';
  if (!choosing || source.outgoing.length < 2 || source.element.default?.id === flow.id) return undefined;
  return warningAt(
    flow.id,
    `Sequence flow ${flow.id} leaves gateway ${describeElement(source.element)} without a condition, so it is always taken: add a condition or make it the default flow`,
  );
}
