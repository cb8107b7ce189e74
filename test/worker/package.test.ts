// The SDK as another repository gets it: `npm pack -w runtime/worker`, the tarball installed in
// a folder outside this repository, and a plain .mjs worker run from there as a child process
// through samples/order.bpmn against a real server.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deploy, start, waitForStatus } from '../support/flows.ts';
import { installTarballOffline } from '../support/offline-install.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../../', import.meta.url));
const PACKAGE = '@baton-engine/worker';
const SHIPPED = /^(dist\/[a-z-]+\.(js|d\.ts)|package\.json|README\.md|LICENSE)$/;

interface Packed {
  filename: string;
  files: { path: string }[];
}

let t: TestServer;
let folder: string;
let packed: Packed;
let manifest: { name: string; version: string; license: string; dependencies: Record<string, string>; exports: unknown };
const children: ChildProcess[] = [];

beforeAll(async () => {
  folder = mkdtempSync(join(tmpdir(), 'baton-sdk-consumer-'));
  const [server, pack] = await Promise.all([
    startTestServer(),
    // prepack builds dist/ with runtime/worker/tsconfig.build.json
    run('npm', ['pack', '-w', 'runtime/worker', '--pack-destination', folder, '--json'], { cwd: root, timeout: 60_000 }),
  ]);
  t = server;
  // Lifecycle scripts print on the same stdout; the JSON report is the array after them.
  const report = pack.stdout.slice(pack.stdout.search(/^\[/m));
  packed = (JSON.parse(report) as Packed[])[0]!;
  manifest = JSON.parse(readFileSync(join(root, 'runtime/worker/package.json'), 'utf8'));
}, 90_000);

afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await t?.close();
  if (folder) rmSync(folder, { recursive: true, force: true });
});

describe('the worker SDK package', () => {
  it('given the packed tarball, then it holds only the built SDK, its README and LICENSE, and depends on pino alone', async () => {
    const paths = packed.files.map((f) => f.path);
    expect(paths).toContain('dist/index.js');
    expect(paths).toContain('dist/index.d.ts');
    expect(paths.filter((p) => !SHIPPED.test(p))).toEqual([]);
    expect(manifest).toMatchObject({ name: PACKAGE, license: 'Apache-2.0' });
    expect(Object.keys(manifest.dependencies)).toEqual(['pino']);
    expect(readFileSync(join(root, 'runtime/worker/LICENSE'), 'utf8')).toBe(readFileSync(join(root, 'LICENSE'), 'utf8'));
    // Every import of the built code stays inside dist/, in Node, or in pino.
    const imports = paths
      .filter((p) => p.endsWith('.js'))
      .flatMap((file) => {
        const code = readFileSync(join(root, 'runtime/worker', file), 'utf8');
        return [...code.matchAll(/^(?:import|export)\b[^'"]*?from ['"]([^'"]+)['"]/gm)].map((m) => `${file} imports ${m[1]}`);
      });
    expect(imports).toContain('dist/worker.js imports pino');
    expect(imports).toContain('dist/index.js imports ./worker.js');
    for (const line of imports) expect(line).toMatch(/ imports (\.\/[a-z-]+\.js|node:[a-z]+|pino)$/);
  });

  it('given the tarball installed outside the repository, then a plain .mjs worker from there runs an order to completion', async () => {
    await installTarballOffline(folder, join(folder, packed.filename), manifest, join(root, 'package-lock.json'), 60_000);
    writeFileSync(join(folder, 'worker.mjs'), ORDER_WORKER);
    // Types ship too: a TypeScript consumer compiles against dist/*.d.ts.
    writeFileSync(join(folder, 'consumer.ts'), TYPED_CONSUMER);
    writeFileSync(join(folder, 'tsconfig.json'), JSON.stringify(consumerTsconfig()));
    await run(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', folder], { timeout: 30_000 });

    await deploy(t.api, readFileSync(join(root, 'samples/order.bpmn'), 'utf8'));
    const worker = spawn(process.execPath, ['worker.mjs'], {
      cwd: folder,
      env: { PATH: process.env.PATH, BATON_URL: t.url, LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(worker);
    let output = '';
    worker.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    worker.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    const exited = new Promise<never>((_, reject) =>
      worker.once('exit', (code, signal) => reject(new Error(`worker.mjs exited (${code ?? signal}): ${output}`))),
    );
    exited.catch(() => {});

    // total > 100 takes the review path: all three topics of the sample run.
    const id = await start(t.api, 'order', { variables: { total: 150 } });
    const done = await Promise.race([waitForStatus(t.api, id, 'completed', 30_000), exited]);
    expect(done.variables).toEqual({ total: 150, stockReserved: true, charged: 150, reviewed: true });
    expect(output).toContain('worker:ready');

    worker.kill('SIGTERM');
    await expect(exited).rejects.toThrow(/exited \(0\)/);
  }, 120_000);
});

const ORDER_WORKER = `
import { BpmnError, createWorker } from '${PACKAGE}';

const worker = createWorker({ baseUrl: process.env.BATON_URL, workerId: 'packaged-' + process.pid, pollWaitMs: 1000 });
worker.subscribe('reserve-stock', async () => ({ stockReserved: true }));
worker.subscribe('charge-card', async (task) => {
  const total = Number(task.variables.total ?? 0);
  if (total > 10000) throw new BpmnError('CARD_DECLINED', 'needs a manual check');
  return { charged: total };
});
worker.subscribe('review-order', async () => ({ reviewed: true }));
worker.start();
await worker.ready();
console.log('worker:ready');
process.once('SIGTERM', () => void worker.stop().then(() => process.exit(0)));
`;

const TYPED_CONSUMER = `
import { createWorker, type WorkerTask } from '${PACKAGE}';

const worker = createWorker({ baseUrl: 'http://127.0.0.1:8080', workerId: 'typed', hooks: { afterHandler: (task: WorkerTask) => void task.id } });
worker.subscribe('topic', async (task) => ({ attempt: task.attempt }));
// @ts-expect-error concurrency is a number
createWorker({ baseUrl: 'http://127.0.0.1:8080', workerId: 'typed', concurrency: 'many' });
`;

function consumerTsconfig() {
  return {
    compilerOptions: {
      module: 'NodeNext',
      moduleResolution: 'NodeNext',
      strict: true,
      noEmit: true,
      typeRoots: [join(root, 'node_modules/@types')],
      types: ['node'],
    },
    files: ['consumer.ts'],
  };
}
