// Script tasks -> ScriptSpec. Camunda 8 files say <zeebe:script expression="=..." resultVariable>
// (FEEL); Camunda 7 files say scriptFormat with an inline <script> body and camunda:resultVariable.
// The engine evaluates FEEL itself and runs JavaScript in its WebAssembly sandbox; a script in
// another language, or one kept in a resource file, is refused here, naming what to change.
import { parse } from 'acorn';
import { checkFeel } from '../shared/feel.ts';
import { errorAt } from './diagnostics.ts';
import type { ProcessGraph } from './graph.ts';
import { describeElement, type BpmnElement } from './model.ts';
import type { Diagnostic, ScriptSpec } from './plan.ts';

interface BpmnScriptTask extends BpmnElement {
  readonly scriptFormat?: string;
  readonly script?: string;
  readonly resultVariable?: string;
  readonly resource?: string;
  readonly extensionElements?: { values?: (BpmnElement & { expression?: string; resultVariable?: string })[] };
}

const JAVASCRIPT = new Set(['javascript', 'js', 'ecmascript', 'application/javascript', 'text/javascript']);

/** True for the names Camunda 7 files give JavaScript in scriptFormat and language attributes. */
export function isJavaScript(language: string): boolean {
  return JAVASCRIPT.has(language.trim().toLowerCase());
}

/** A zeebe:taskDefinition makes a Camunda 8 script task a job for a worker: it runs as an external task. */
export function isExternalScriptTask(element: BpmnElement): boolean {
  const values = (element as BpmnScriptTask).extensionElements?.values ?? [];
  return values.some((v) => v.$type === 'zeebe:taskDefinition');
}

export function readScripts(graph: ProcessGraph): { scripts: Map<string, ScriptSpec>; diagnostics: Diagnostic[] } {
  const scripts = new Map<string, ScriptSpec>();
  const diagnostics: Diagnostic[] = [];
  for (const node of graph.nodes.values()) {
    if (node.kind !== 'scriptTask') continue;
    const read = readScript(node.element as BpmnScriptTask);
    if (typeof read === 'string') diagnostics.push(errorAt(node.id, `Script task ${describeElement(node.element)}: ${read}`));
    else scripts.set(node.id, read);
  }
  return { scripts, diagnostics };
}

/** The spec, or what is wrong with the element. */
function readScript(task: BpmnScriptTask): ScriptSpec | string {
  const zeebe = (task.extensionElements?.values ?? []).find((v) => v.$type === 'zeebe:script');
  if (zeebe) return feelScript(zeebe.expression ?? '', zeebe.resultVariable, true);
  if (task.resource)
    return `its script is kept in the resource "${task.resource}", which Baton does not load: write the script inline`;
  const format = task.scriptFormat?.trim().toLowerCase() ?? '';
  if (format === '')
    return 'it has no script format: set scriptFormat to "javascript" or "feel", or give it a zeebe:script expression';
  const source = task.script?.trim() ?? '';
  if (source === '') return 'its script is empty: write the script, or delete the task';
  if (format === 'feel') return feelScript(source, task.resultVariable, false);
  // Kept as written, so the line an error names is the line the author sees.
  if (isJavaScript(format)) {
    const problem = javaScriptSyntax(task.script ?? '');
    if (problem !== undefined) return problem;
    return withResult({ language: 'javascript', source: task.script ?? '' }, task.resultVariable);
  }
  return `Baton does not run ${task.scriptFormat} scripts (only FEEL and JavaScript): rewrite it in JavaScript or FEEL, or make it a service task a worker runs`;
}

/**
 * A script that cannot be parsed would fail on every run: said at deploy, with where. Parsing
 * only (acorn, as the sandbox reads a script: not a module, no top-level return) runs nothing.
 */
export function javaScriptSyntax(source: string): string | undefined {
  try {
    parse(source, { ecmaVersion: 2023, sourceType: 'script' });
    return undefined;
  } catch (cause) {
    const at = (cause as { loc?: { line: number; column: number } }).loc;
    const message = (cause instanceof Error ? cause.message : String(cause)).replace(/ \(\d+:\d+\)$/, '');
    return `its JavaScript does not parse${at ? ` at line ${at.line}, column ${at.column + 1}` : ''}: ${message}`;
  }
}

function feelScript(expression: string, resultVariable: string | undefined, zeebe: boolean): ScriptSpec | string {
  const text = expression.trim();
  const feel = text.startsWith('=') ? text.slice(1).trim() : text;
  if (feel === '') return 'its FEEL expression is empty: write one such as "= a + b"';
  const problem = checkFeel(feel);
  if (problem !== undefined) return problem;
  // Zeebe keeps an expression's value only through its result variable, and requires one.
  if (zeebe && !resultVariable?.trim()) return 'its zeebe:script has no result variable: name the variable the value goes to';
  return withResult({ language: 'feel', source: feel }, resultVariable);
}

function withResult(spec: ScriptSpec, resultVariable: string | undefined): ScriptSpec {
  const name = resultVariable?.trim();
  return name ? { ...spec, resultVariable: name } : spec;
}
