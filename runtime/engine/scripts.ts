// What a script task computes: the variables it writes, or why it could not run. FEEL is
// evaluated like every other expression (shared/feel.ts); JavaScript runs in the sandbox.
import type { ScriptSpec } from '../compiler/plan.ts';
import type { Variables } from '../model/effects.ts';
import { evaluateJson } from '../shared/feel.ts';
import { runJavaScript, scriptBudget } from './script-sandbox.ts';

export type ScriptOutcome = { ok: true; writes: Variables } | { ok: false; message: string; details: Record<string, unknown> };

/** The result goes to the result variable, after what the script set itself (execution.setVariable). */
export function runScript(spec: ScriptSpec, variables: Variables): ScriptOutcome {
  let writes: Variables;
  if (spec.language === 'feel') {
    const result = evaluateJson(spec.source, variables);
    if (!result.ok) return { ok: false, message: result.message, details: { language: 'feel', expression: spec.source } };
    writes = spec.resultVariable ? { [spec.resultVariable]: result.value } : {};
  } else {
    const result = runJavaScript(spec.source, variables);
    if (!result.ok) return result;
    writes = spec.resultVariable ? { ...result.writes, [spec.resultVariable]: result.value } : result.writes;
  }
  // Worker results are held to the variables limit at the door; a script's are held here.
  const bytes = Buffer.byteLength(JSON.stringify(writes));
  const max = scriptBudget().maxWriteBytes;
  if (bytes > max)
    return {
      ok: false,
      message: `the script wrote ${bytes} bytes of variables, above the limit of ${max} bytes (BATON_MAX_VARIABLES_BYTES)`,
      details: { language: spec.language, limit: 'maxVariablesBytes', max, actual: bytes },
    };
  return { ok: true, writes };
}
