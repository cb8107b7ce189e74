// Sequence-flow conditions -> FEEL. Only exclusive and inclusive gateways choose among their
// outgoing flows (docs/ARCHITECTURE.md, "Execution rule"): an activity's conditional flows leave
// from the split drawn after it (conditional-flows.ts); a condition out of a parallel or
// event-based gateway, or on a default flow, would be ignored and is warned about.
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
  const script = scriptCondition(expression);
  if (typeof script === 'string') return { diagnostic: errorAt(flow.id, `Condition of sequence flow ${flow.id} ${script}`) };
  if (script) return { condition: script };
  const translated = toFeel(text);
  if (!translated.ok)
    return { diagnostic: errorAt(flow.id, `Condition of sequence flow ${flow.id} cannot be used: ${translated.message}`) };
  return { condition: { feel: translated.feel, source: text } };
}

/**
 * A condition whose language names a script: JavaScript for the sandbox (Camunda 7 runs a script
 * condition and goes on when its value is true), or why it is refused (the text completes
 * "Condition of X ..."); undefined when it is FEEL or JUEL.
 */
export function scriptCondition(expression: BpmnExpression | undefined): ScriptCondition | string | undefined {
  const language = expression?.language?.trim() ?? '';
  const text = (expression?.body ?? '').trim();
  if (isJavaScript(language) || /^(nashorn|graal\.js)$/i.test(language)) {
    if (text === '') return 'is an empty JavaScript script: write one';
    const problem = javaScriptSyntax(expression?.body ?? '');
    if (problem !== undefined) return `is JavaScript that does not parse${problem.replace(/^its JavaScript does not parse/, '')}`;
    return { javascript: expression?.body ?? '', source: text };
  }
  if (SCRIPT_LANGUAGES.test(language))
    return `is a ${language} script, which Baton does not run: write it in JavaScript (language="javascript"), FEEL ("= total > 100") or JUEL ("\${total > 100}")`;
  return undefined;
}

/** A non-default flow without condition always holds, so an exclusive gateway may never look past it. */
function warnUnconditional(flow: GraphFlow, source: GraphNode): Diagnostic | undefined {
  const choosing = source.kind === 'exclusiveGateway' || source.kind === 'inclusiveGateway';
  // After a task an unconditional flow beside conditional ones is how Camunda 7 draws "always also".
  if (!choosing || source.splitOf !== undefined || source.outgoing.length < 2 || source.element.default?.id === flow.id)
    return undefined;
  return warningAt(
    flow.id,
    `Sequence flow ${flow.id} leaves gateway ${describeElement(source.element)} without a condition, so it is always taken: add a condition or make it the default flow`,
  );
}
