// Every BPMN MIWG reference file (test/fixtures/miwg) opens in the designer without an
// import error, and the problems the designer lists are the server compiler's verdict on it.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileBpmn } from '../../runtime/compiler/index.ts';
import { openDesigner, type BrowserHarness } from './support/browser.ts';

const corpusDir = path.resolve('test/fixtures/miwg');
// A missing corpus fails the suite (the first test), it does not skip silently.
const files = existsSync(corpusDir)
  ? readdirSync(corpusDir)
      .filter((f) => f.endsWith('.bpmn'))
      .sort()
  : [];

let h: BrowserHarness;
beforeAll(async () => {
  h = await openDesigner();
}, 120_000);
afterAll(async () => {
  await h?.close();
});

interface Problem {
  elementId: string;
  severity: string;
}

async function readProblems(): Promise<Problem[]> {
  return h.page.locator('.problems .problem').evaluateAll((buttons) =>
    buttons.map((b) => ({
      elementId: (b as HTMLElement).dataset.elementId ?? '',
      severity: b.classList.contains('problem-error') ? 'error' : 'warning',
    })),
  );
}

const byKey = (a: Problem, b: Problem) => `${a.severity}/${a.elementId}`.localeCompare(`${b.severity}/${b.elementId}`);

describe('MIWG corpus in the designer', () => {
  it('is vendored in the repository', () => {
    expect(files.length, `no .bpmn files in ${corpusDir}`).toBeGreaterThanOrEqual(21);
  });

  it.each(files)('%s opens without an import error and lints like the server compiles it', async (file) => {
    const xml = readFileSync(path.join(corpusDir, file), 'utf8');
    const created = await h.t.api.post('/api/diagrams', { name: file, xml });
    expect(created.status).toBe(201);
    await h.page.goto(`${h.t.url}/#/diagrams/${created.body.id}`);
    const linted = h.page.locator('.problems-summary:not(:text("Not checked yet"))');
    await linted.waitFor({ timeout: 15_000 }).catch(async (err: Error) => {
      await h.screenshot(`miwg-${file}`); // shows the error the editor displayed
      throw err;
    });
    await h.page.locator('.problems .checking').waitFor({ state: 'detached' });
    expect(await h.page.locator('.editor .error').allTextContents()).toEqual([]);

    const compiled = await compileBpmn(xml);
    const expected = (compiled.ok ? compiled.warnings : compiled.diagnostics).map((d) => ({
      elementId: d.elementId,
      severity: d.severity,
    }));
    const summary = await h.page.locator('.problems-summary').textContent();
    expect(summary, file).toMatch(compiled.ok ? /^(No problems|Compiles)/ : /does not compile/);
    expect((await readProblems()).sort(byKey), file).toEqual(expected.sort(byKey));
  });

  it('logged no console errors', () => {
    expect(h.consoleErrors).toEqual([]);
  });
});
