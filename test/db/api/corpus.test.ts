// The public BPMN corpus (test/fixtures/corpus: Camunda 7, Zeebe and bpmn-engine files, each
// with its source, commit and license in the README) against a real server through the HTTP
// API. Every file (every executable process of it) is linted and deployed: the two answers must
// be the same. A refused file names elements of the file and says what to do. A deployed one is
// started with no variables (but the few of START_VARIABLES; a process that starts only on a message or a signal gets it once)
// and served by one generic worker that completes every task with no variables: it runs to
// completion, waits where it must (a message, a signal, a timer due more than 5 s later) or holds
// an incident, never counted as done; its outcome is pinned in corpus-outcomes.json
// (`npx vitest run test/db/api/corpus.test.ts -u` rewrites it after a deliberate change).
// The counts are printed at the end.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  planStepsOf,
  runToRest,
  startGenericWorker,
  topicsOf,
  type Outcome,
  type PlanStepView,
} from '../../support/generic-run.ts';
import { bpmnCases, lintThenDeploy, namesElementOf, type LintDeployResult } from '../../support/lint-deploy.ts';
import { startTestServer, type TestServer } from '../../support/server.ts';
import { refusalReason } from '../../support/refusal-reasons.ts';

const corpusDir = path.resolve(import.meta.dirname, '../../fixtures/corpus');
const cases = existsSync(corpusDir) ? bpmnCases(corpusDir) : [];
const files = new Set(cases.map((c) => c.label.split('#')[0]));

/** Instances run at once: enough to keep the test short, few enough for a 2-core machine. */
const BATCH = 8;

/**
 * Start variables of the few files whose own repository starts them with some: without them
 * they would loop for ever, as they would on their own engine.
 */
const START_VARIABLES: Record<string, Record<string, unknown>> = {
  // The loop's exit condition compares the counter its start event sets to this.
  'zeebe-process-test/looping-servicetask.bpmn': { totalLoops: 3 },
};

/**
 * Lint and deploy answers known to differ, by case label, with what the difference says: each
 * is a bug in runtime/, kept here so the test shows it and fails when it is fixed (then delete
 * the entry). Lint does not look at deployed definitions, so it passes a message start event
 * whose message another key already starts on; deploy refuses it (engine/event-starts.ts).
 */

type Row = { outcome: 'refused'; errors: string[] } | Outcome;

let t: TestServer;
const answers = new Map<string, LintDeployResult>();
const rows = new Map<string, Row>();

beforeAll(async () => {
  // Timers due within seconds fire while the test waits for them.
  t = await startTestServer({ sweepIntervalMs: 200 });
});
afterAll(async () => {
  if (rows.size > 0) console.log(countsReport());
  await t?.close();
});

describe('public BPMN corpus', () => {
  it('holds at least 60 files from several sources, each listed in README.md with its commit and license', () => {
    expect(files.size).toBeGreaterThanOrEqual(60);
    const readme = readFileSync(path.join(corpusDir, 'README.md'), 'utf8');
    const sources = new Set([...files].map((f) => f?.split('/')[0]));
    expect(sources.size).toBeGreaterThanOrEqual(4);
    for (const file of files) expect(readme, `${file} is not listed in README.md`).toContain(`\`${file}\``);
    for (const source of sources) {
      expect(readme).toMatch(new RegExp(`## \`${source}/\`[^#]*commit \`[0-9a-f]{40}\`[^#]*License: `));
      expect(existsSync(path.join(corpusDir, `${source}/LICENSE`)), `${source}/LICENSE`).toBe(true);
    }
  });

  it('lint answers exactly what deploy answers, file by file, in one database (conflicts with earlier deploys included)', async () => {
    // One after another, lint right before deploy, so both see the same deployed definitions.
    for (const c of cases) answers.set(c.label, await lintThenDeploy(t.api, c));
    const disagreements = Object.fromEntries(
      [...answers].filter(([, a]) => a.disagreement !== undefined).map(([label, a]) => [label, a.disagreement]),
    );
    expect(disagreements).toEqual({});
  });

  it('a refused file names elements of the file and says what to do, never with a stack trace or a compiler crash', () => {
    const refused = [...answers.values()].filter((a) => !a.deployed);
    expect(refused.length).toBeGreaterThan(0);
    for (const a of refused) {
      expect(a.errors.filter((e) => e.severity === 'error').length, a.case.label).toBeGreaterThan(0);
      for (const e of a.errors) {
        const where = `${a.case.label} ${e.elementId}: ${e.message}`;
        expect(namesElementOf(a.case.xml, e.elementId), where).toBe(true);
        expect(e.message.length, where).toBeGreaterThan(20);
        expect(e.message, where).not.toMatch(/\n\s+at |The compiler failed on this file/);
      }
    }
  });

  it('a deployed file runs to completion with a generic worker, or waits where it must; each outcome is pinned', async () => {
    expect(answers.size).toBe(cases.length);
    const worker = startGenericWorker(t.api);
    try {
      const deployed: [string, LintDeployResult['deployed'] & {}, PlanStepView[]][] = [];
      for (const [label, a] of answers) if (a.deployed) deployed.push([label, a.deployed, await planStepsOf(t.api, a.deployed)]);
      for (const [, , steps] of deployed) worker.serve(topicsOf(steps));
      for (let i = 0; i < deployed.length; i += BATCH) {
        const batch = deployed.slice(i, i + BATCH);
        const outcomes = await Promise.all(
          batch.map(([label, d, steps]) =>
            runToRest(t.api, t.db, d, steps, { variables: START_VARIABLES[label.split('#')[0]!] }),
          ),
        );
        batch.forEach(([label], j) => rows.set(label, outcomes[j]!));
      }
    } finally {
      await worker.stop();
    }
    for (const [label, a] of answers) {
      if (a.deployed) continue;
      const errors = a.errors.filter((e) => e.severity === 'error');
      rows.set(label, { outcome: 'refused', errors: errors.map((e) => `${e.elementId}: ${refusalReason(e.message)}`) });
    }
    const pinned = Object.fromEntries(cases.map((c) => [c.label, rows.get(c.label)]));
    await expect(`${JSON.stringify(pinned, null, 2)}\n`).toMatchFileSnapshot('../../fixtures/corpus/corpus-outcomes.json');
    // Running is not completing: nothing the worker could not finish is counted as done.
    expect([...rows.values()].filter((r) => r.outcome === 'stuck' || r.outcome === 'not-started')).toEqual([]);
  }, 120_000);

  it('given a definition that starts on a message, when a file of another key starting on it is linted, then lint refuses it as deploy does', async () => {
    const first = readFileSync(path.join(corpusDir, 'zeebe-client-node-js/Client-MessageStart.bpmn'), 'utf8');
    const xml = (key: string) =>
      first
        .replace(/(<bpmn:process id=")[^"]+"/, `$1${key}"`)
        .replace(/bpmnElement="Process_1tbhm8x"/, `bpmnElement="${key}"`)
        // A message name of its own: the corpus run before deployed a process that starts on the file's.
        .replace('name="MSG-START_JOB"', 'name="corpus-lint-start"');
    expect((await t.api.post('/api/definitions', { xml: xml('corpus-msg-first') })).status).toBe(201);
    const deploy = await t.api.post('/api/definitions', { xml: xml('corpus-msg-second') });
    expect(deploy.status).toBe(400);
    expect(deploy.body.details).toEqual([
      expect.objectContaining({
        elementId: 'Event_0abanqm',
        message: expect.stringContaining('already starts process corpus-msg-first'),
      }),
    ]);
    const lint = await t.api.post('/api/definitions/lint', { xml: xml('corpus-msg-second') });
    expect(lint.body).toMatchObject({ ok: false, diagnostics: deploy.body.details });
  });
});

function countsReport(): string {
  const all = [...rows.values()];
  const count = (pred: (r: Row) => boolean) => all.filter(pred).length;
  const reasons = new Map<string, number>();
  for (const r of all) {
    if (r.outcome !== 'refused') continue;
    for (const reason of new Set(r.errors.map((e) => e.slice(e.indexOf(': ') + 2))))
      reasons.set(reason, (reasons.get(reason) ?? 0) + 1);
  }
  const incidents = new Map<string, number>();
  for (const r of all) if (r.outcome === 'incident') incidents.set(r.kind, (incidents.get(r.kind) ?? 0) + 1);
  return [
    `BPMN corpus: ${files.size} files, ${all.length} processes`,
    `  deployed ${count((r) => r.outcome !== 'refused')}: completed ${count((r) => r.outcome === 'completed')}, ` +
      `waiting for a message ${count((r) => r.outcome === 'waiting-for-message')}, ` +
      `for a signal ${count((r) => r.outcome === 'waiting-for-signal')}, ` +
      `for a timer ${count((r) => r.outcome === 'waiting-for-timer')}, ` +
      `incident ${count((r) => r.outcome === 'incident')} (${[...incidents].map(([k, n]) => `${k} ${n}`).join(', ')})`,
    `  refused ${count((r) => r.outcome === 'refused')}; processes refused for each reason:`,
    ...[...reasons].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).map(([reason, n]) => `    ${n}  ${reason}`),
  ].join('\n');
}
