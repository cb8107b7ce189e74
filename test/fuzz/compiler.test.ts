// Property: the compiler answers every mutated BPMN file (samples/ and the MIWG corpus)
// with a plan or diagnostics, never a throw; through HTTP, deploy and lint never 5xx and a
// refused deploy changes nothing.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileBpmn } from '../../runtime/compiler/index.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { databaseDigest } from '../security/digest.ts';
import { mutatedXml, runs, timeoutFor } from './mutate.ts';

const root = path.resolve(import.meta.dirname, '../..');
const miwg = path.resolve(root, 'test/fixtures/miwg');

function bpmnFiles(dir: string): string[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.bpmn'))
    .sort()
    .map((f) => readFileSync(path.join(dir, f), 'utf8'));
}

let files: string[] = [];
let t: TestServer;
beforeAll(async () => {
  if (!existsSync(miwg)) throw new Error(`The MIWG corpus is missing at ${miwg} (test/fixtures/miwg)`);
  files = [...bpmnFiles(path.join(root, 'samples')), ...bpmnFiles(miwg)];
  t = await startTestServer();
});
afterAll(async () => t?.close());

describe('fuzzing the compiler', () => {
  it('reads the samples and the MIWG corpus', () => {
    expect(files.length).toBeGreaterThan(20);
  });

  it(
    'mutated BPMN compiles to a plan or diagnostics, never a throw',
    async () => {
      await fc.assert(
        fc.asyncProperty(mutatedXml(files), async (xml) => {
          const result = await compileBpmn(xml);
          if (!result.ok) expect(Array.isArray(result.diagnostics) && result.diagnostics.length > 0).toBe(true);
        }),
        { numRuns: runs(60) },
      );
    },
    timeoutFor(runs(60), 200),
  );

  it(
    'mutated BPMN through deploy and lint: never 5xx; a refused deploy changes nothing',
    async () => {
      await fc.assert(
        fc.asyncProperty(mutatedXml(files), fc.boolean(), async (xml, asJson) => {
          const before = await databaseDigest(t.db.pool);
          const deployed = asJson
            ? await t.api.post('/api/definitions', { xml })
            : await t.api.post('/api/definitions', xml, { contentType: 'application/xml' });
          expect(deployed.status, `deploy of ${xml.slice(0, 300)}`).toBeLessThan(500);
          if (deployed.status >= 400) expect(await databaseDigest(t.db.pool)).toBe(before);
          const linted = await t.api.post('/api/definitions/lint', { xml });
          expect(linted.status, `lint of ${xml.slice(0, 300)}`).toBeLessThan(500);
        }),
        { numRuns: runs(20) },
      );
    },
    timeoutFor(runs(20), 1000),
  );
});
