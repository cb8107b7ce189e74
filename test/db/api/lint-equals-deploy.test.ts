// POST /api/definitions/lint answers exactly what POST /api/definitions would, over every
// sample and fixture: the same errors, accepted exactly when lint finds none, the same warnings
// (besides lint's own topic-without-worker ones), the same key and fingerprint. Files go one after
// another into one database, lint right before deploy, so a conflict with a definition deployed
// earlier counts too. The public corpus gets the same check in corpus.test.ts.
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bpmnCases, lintThenDeploy, namesElementOf } from '../../support/lint-deploy.ts';
import { startTestServer, type TestServer } from '../../support/server.ts';

const repoRoot = path.resolve(import.meta.dirname, '../../..');
const folders = ['samples', 'test/fixtures/bpmn', 'test/fixtures/miwg'];

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t?.close();
});

describe('lint = deploy over samples and fixtures', () => {
  it.each(folders)('%s: every file (every executable process) gets the same answer from lint and deploy', async (folder) => {
    const cases = bpmnCases(path.join(repoRoot, folder));
    expect(cases.length).toBeGreaterThan(0);
    const disagreements: Record<string, string> = {};
    let deployed = 0;
    for (const c of cases) {
      const result = await lintThenDeploy(t.api, c);
      if (result.disagreement) disagreements[c.label] = result.disagreement;
      if (result.deployed) deployed++;
      for (const e of result.errors) expect(namesElementOf(c.xml, e.elementId), `${c.label} ${e.elementId}`).toBe(true);
    }
    expect(disagreements).toEqual({});
    // samples/ are runnable: every one deploys.
    if (folder === 'samples') expect(deployed).toBe(cases.length);
  });
});
