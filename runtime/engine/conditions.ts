// Whether a condition holds over some variables: FEEL (and JUEL, translated to FEEL at deploy)
// through feelin, a JavaScript one (Camunda 7's language="javascript") in the script sandbox as
// Camunda 7 runs it. Unlike FEEL, a name the variables lack is an error in JavaScript, and so are
// a value other than true or false and a write: a condition reads variables, it sets none.
import type { FlowCondition, ScriptCondition } from '../compiler/plan.ts';
import type { Variables } from '../model/effects.ts';
import { evaluateCondition, type ConditionResult } from '../shared/feel.ts';
import { runJavaScript } from './script-sandbox.ts';

export function testCondition(condition: FlowCondition | ScriptCondition, vars: Variables): ConditionResult {
  if ('feel' in condition) return evaluateCondition(condition.feel, vars);
  const run = runJavaScript(condition.javascript, vars);
  if (!run.ok) return { ok: false, message: run.message };
  const set = Object.keys(run.writes);
  if (set.length > 0)
    return { ok: false, message: `the script set ${set.join(', ')}: a condition reads variables, it does not set them` };
  if (typeof run.value !== 'boolean')
    return { ok: false, message: `the script's value is ${JSON.stringify(run.value) ?? 'undefined'}, not true or false` };
  return { ok: true, value: run.value, missingVariables: [] };
}
