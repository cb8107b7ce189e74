// The workers' examples in the docs, taken from the pages as they are and run as programs
// against a real server: the package import resolves to the SDK's sources and the address
// to the test server's, nothing else changes. Each must finish an instance of its process.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { singleTaskBpmn } from '../support/bpmn.ts';
import { deploy, start, waitForStatus } from '../support/flows.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const workDir = path.join(root, 'test-output/docs-examples');
const DOC_URL = 'http://127.0.0.1:8080';

let t: TestServer;
const children: ChildProcess[] = [];

beforeAll(async () => {
  t = await startTestServer();
  mkdirSync(workDir, { recursive: true });
  await deploy(t.api, readFileSync(path.join(root, 'samples/order.bpmn'), 'utf8'));
});
afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  await t?.close();
});

/** The fenced block of `lang` in `doc` that contains `marker`. */
function block(doc: string, lang: string, marker: string): string {
  const text = readFileSync(path.join(root, doc), 'utf8');
  const found = [...text.matchAll(new RegExp('```' + lang + '\\n([\\s\\S]*?)```', 'g'))]
    .map((m) => m[1]!)
    .find((b) => b.includes(marker));
  if (!found) throw new Error(`${doc} has no \`\`\`${lang} block containing ${marker}`);
  return found;
}

/** Runs the example as a program of its own (through tsx, so TypeScript runs too); its output is kept for failures. */
function run(name: string, code: string, prelude = ''): { child: ChildProcess; output: () => string } {
  const source =
    prelude +
    code
      .replaceAll("'@baton-engine/worker'", JSON.stringify(path.join(root, 'runtime/worker/index.ts')))
      .replaceAll(DOC_URL, t.url);
  const file = path.join(workDir, name);
  writeFileSync(file, source);
  const child = spawn(process.execPath, ['--import', 'tsx', file], {
    cwd: root,
    env: { ...process.env, BATON_URL: t.url, LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  return { child, output: () => out };
}

async function completes(instanceId: string, output: () => string): Promise<any> {
  try {
    return await waitForStatus(t.api, instanceId, 'completed', 30_000);
  } catch (err) {
    throw new Error(`${(err as Error).message}\nexample output:\n${output()}`, { cause: err });
  }
}

async function stops(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null) return child.exitCode;
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  child.kill('SIGTERM');
  return exited;
}

describe('docs examples', () => {
  it('given the worker of docs/workers.md written in its own folder, then it works the sample order to the end and stops on SIGTERM', async () => {
    const { child, output } = run('order-worker.mjs', block('docs/workers.md', 'js', 'order-worker/worker.mjs'));
    const instanceId = await start(t.api, 'order', { variables: { total: 150 } });
    const done = await completes(instanceId, output);
    expect(done.variables).toMatchObject({ total: 150, charged: 150, stockReserved: true, reviewed: true });
    expect(await stops(child)).toBe(0);
  });

  it('given the TypeScript worker of docs/workers.md (with a stand-in payments service), then it charges and reports progress', async () => {
    await deploy(t.api, singleTaskBpmn('docs_ts_charge', 'charge-card'));
    const prelude = 'const payments = { charge: async (_total: number, _opts: object) => undefined };\n';
    const { child, output } = run('sdk-worker.ts', block('docs/workers.md', 'ts', 'concurrency: 8'), prelude);
    const instanceId = await start(t.api, 'docs_ts_charge', { variables: { total: 40 } });
    const done = await completes(instanceId, output);
    expect(done.variables).toMatchObject({ charged: 40 });
    const frames = await t.db.pool.query(`select data from frames where instance_id = $1 and kind = 'task:progress'`, [
      instanceId,
    ]);
    expect(JSON.stringify(frames.rows)).toContain('"message":"charged"');
    expect(await stops(child)).toBe(0);
  });

  it('given the Camunda client workers of docs/workers.md and docs/camunda-compatibility.md, then each completes a charge', async () => {
    await deploy(t.api, singleTaskBpmn('docs_c7_charge', 'charge-card'));
    for (const [doc, marker] of [
      ['docs/workers.md', 'new Client('],
      ['docs/camunda-compatibility.md', 'new Client('],
    ] as const) {
      const { child, output } = run(`camunda-${path.basename(doc, '.md')}.mjs`, block(doc, 'js', marker));
      const instanceId = await start(t.api, 'docs_c7_charge', { variables: { total: 70 } });
      const done = await completes(instanceId, output);
      expect(done.variables.charged).toBeDefined();
      child.kill('SIGKILL');
    }
  });
});
