// Small builders for inline BPMN in compiler tests, and fixture access.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import { compileBpmn } from '../../../runtime/compiler/index.ts';
import type { CompileOptions, Diagnostic, Plan } from '../../../runtime/compiler/plan.ts';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
export const fixturesDir = path.join(repoRoot, 'test/fixtures/bpmn');

export function readFixture(name: string): string {
  return readFileSync(path.join(fixturesDir, name), 'utf8');
}

const NAMESPACES = [
  'xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"',
  'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"',
  'xmlns:camunda="http://camunda.org/schema/1.0/bpmn"',
  'xmlns:baton="https://baton.dev/schema/bpmn/1.0"',
].join(' ');

/** A definitions document with one executable process `p` holding `body`. */
export function processXml(body: string, extraNamespaces = ''): string {
  return `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions ${NAMESPACES} ${extraNamespaces} id="Defs" targetNamespace="https://baton.dev/test">
  <bpmn:process id="p" isExecutable="true">
${body}
  </bpmn:process>
</bpmn:definitions>`;
}

export function task(id: string, topic = id, attributes = ''): string {
  return `<bpmn:serviceTask id="${id}" camunda:type="external" camunda:topic="${topic}" ${attributes} />`;
}

export function flow(id: string, source: string, target: string, condition?: string): string {
  if (condition === undefined) return `<bpmn:sequenceFlow id="${id}" sourceRef="${source}" targetRef="${target}" />`;
  return `<bpmn:sequenceFlow id="${id}" sourceRef="${source}" targetRef="${target}">
  <bpmn:conditionExpression xsi:type="bpmn:tFormalExpression"><![CDATA[${condition}]]></bpmn:conditionExpression>
</bpmn:sequenceFlow>`;
}

/** start S -> `middle` (wired by the caller) ... ; convenience for "start -> X -> end E". */
export function straight(middle: string, middleId: string): string {
  return [
    '<bpmn:startEvent id="S" />',
    middle,
    '<bpmn:endEvent id="E" />',
    flow('F_in', 'S', middleId),
    flow('F_out', middleId, 'E'),
  ].join('\n');
}

export async function compilePlan(
  xml: string,
  options?: CompileOptions,
): Promise<{ plan: Plan; fingerprint: string; warnings: Diagnostic[] }> {
  const result = await compileBpmn(xml, options);
  if (!result.ok)
    expect.fail(
      `expected the BPMN to compile, got:\n${result.diagnostics.map((d) => `${d.elementId}: ${d.message}`).join('\n')}`,
    );
  return result;
}

export async function compileDiagnostics(xml: string, options?: CompileOptions): Promise<Diagnostic[]> {
  const result = await compileBpmn(xml, options);
  if (result.ok) expect.fail(`expected diagnostics, the BPMN compiled to ${result.plan.steps.length} steps`);
  return result.diagnostics;
}

export function errorsOf(diagnostics: Diagnostic[]): Diagnostic[] {
  return diagnostics.filter((d) => d.severity === 'error');
}
