// The BPMN MIWG reference models (test/fixtures/miwg, CC BY 3.0):
// real files from many tools. Most are not executable; the compiler must never
// throw on them and must point every diagnostic at an element that exists.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { compileBpmn } from '../../../runtime/compiler/index.ts';
import type { CompileResult, Diagnostic } from '../../../runtime/compiler/plan.ts';
import { repoRoot } from './bpmn-helpers.ts';

const corpusDir = path.resolve(repoRoot, 'test/fixtures/miwg');

function corpusFiles(): string[] {
  // A missing corpus must fail the suite, not skip it silently.
  if (!existsSync(corpusDir)) return [];
  return readdirSync(corpusDir)
    .filter((f) => f.endsWith('.bpmn'))
    .sort();
}

function diagnosticsOf(result: CompileResult): Diagnostic[] {
  return result.ok ? result.warnings : result.diagnostics;
}

function expectLocatable(result: CompileResult, xml: string, label: string): void {
  if (!result.ok) expect(result.diagnostics.length, label).toBeGreaterThan(0);
  for (const diagnostic of diagnosticsOf(result)) {
    expect(diagnostic.elementId, `${label}: ${diagnostic.message}`).not.toBe('');
    expect(
      xml.includes(`id="${diagnostic.elementId}"`),
      `${label}: ${diagnostic.elementId} is not an id of the file (${diagnostic.message})`,
    ).toBe(true);
    expect(diagnostic.message.length, label).toBeGreaterThan(10);
  }
}

const files = corpusFiles();

describe('MIWG reference corpus', () => {
  it('is vendored in the repository', () => {
    expect(existsSync(corpusDir), `missing corpus folder ${corpusDir}`).toBe(true);
    expect(files.length).toBeGreaterThanOrEqual(21);
  });

  it.each(files)('%s compiles or explains itself with ids of the file', async (file) => {
    const xml = readFileSync(path.join(corpusDir, file), 'utf8');
    expectLocatable(await compileBpmn(xml), xml, file);
  });

  it.each(files)('%s: each process, made executable, compiles or explains itself', async (file) => {
    // Flip isExecutable so the element, condition and graph checks run on every process.
    const xml = readFileSync(path.join(corpusDir, file), 'utf8').replace(/isExecutable="false"/g, 'isExecutable="true"');
    const processIds = [...xml.matchAll(/<(?:[\w-]+:)?process\b[^>]*?\sid="([^"]+)"/g)].map((m) => m[1] ?? '');
    expect(processIds.length).toBeGreaterThan(0);
    for (const processId of processIds) expectLocatable(await compileBpmn(xml, { processId }), xml, `${file} ${processId}`);
  });

  it.each([
    ['C.1.0.bpmn', 'bpmn-miwg-test-case-c.1.0'],
    ['C.1.1.bpmn', 'handle-invoice'],
    ['C.4.0.bpmn', '_42cba3a9-a8ab-40b5-b9a4-2e8f32be364e'],
    ['C.7.0.bpmn', '_4a690dd7-809a-4fa9-ad63-515ac6685375'],
  ])('%s: the loop in process %s is no reason to refuse it; what is refused is named on its own', async (file, processId) => {
    const xml = readFileSync(path.join(corpusDir, file), 'utf8').replace(/isExecutable="false"/g, 'isExecutable="true"');
    const result = await compileBpmn(xml, { processId });
    expect(result.ok).toBe(false);
    const diagnostics = diagnosticsOf(result);
    expect(diagnostics.some((d) => d.severity === 'error')).toBe(true);
    expect(diagnostics.filter((d) => /The loop |The cycle |the loop that starts/.test(d.message))).toEqual([]);
  });

  it('C.2.0.bpmn: its loops hold only plain tasks, which pass through at once, so each is refused as one that would spin, naming its steps', async () => {
    const xml = readFileSync(path.join(corpusDir, 'C.2.0.bpmn'), 'utf8').replace(/isExecutable="false"/g, 'isExecutable="true"');
    const diagnostics = diagnosticsOf(await compileBpmn(xml, { processId: 'WFP-Page_1-3' }));
    const loops = diagnostics.filter((d) => /The loop |The cycle |the loop that starts/.test(d.message));
    expect(loops.map((d) => d.message)).toEqual([
      expect.stringContaining('has no step that waits'),
      expect.stringContaining('has no step that waits'),
    ]);
    expect(loops.map((d) => d.elementId).sort()).toEqual([
      '_2f24e6da-b44f-4e30-8d85-fd35fd56e209',
      '__f61e9ae0-855f-4ce6-9e3a-4b4f5c7dd0b8',
    ]);
  });
});
