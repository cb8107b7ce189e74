// docs/progress.md's client, taken from the page as it is and run against a real server
// and PostgreSQL: it is disconnected while the instance is replayed (once, and twice) and
// must end with every frame of every generation once, in order; it also meets a retention
// gap and a server that drops it for falling behind.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Socket } from 'socket.io-client';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { singleTaskBpmn } from '../support/bpmn.ts';
import { complete, deploy, fetchOne, start, waitForStatus } from '../support/flows.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

interface Frame {
  instanceId: string;
  generation: number;
  seq: number;
  kind: string;
  data: any;
  at: string;
}
interface Gap {
  instanceId: string;
  generation: number;
  fromSeq: number;
  toSeq: number;
}
type FollowInstance = (
  url: string,
  instanceId: string,
  onFrame: (f: Frame) => void,
  opts?: { token?: string; onGap?: (g: Gap) => void; onRefused?: (e: { type: string; message: string }) => void },
) => { socket: Socket; at: { generation?: number; seq: number }; close(): void };

/** The fenced block after `<!-- example: name -->` in a doc, written next to the repository's modules so its imports resolve. */
function extractExample(doc: string, name: string): string {
  const text = readFileSync(path.join(root, doc), 'utf8');
  const marker = `<!-- example: ${name} -->`;
  const at = text.indexOf(marker);
  if (at < 0) throw new Error(`${doc} has no ${marker}`);
  const block = /^```ts\n([\s\S]*?)^```$/m.exec(text.slice(at + marker.length));
  if (!block?.[1]) throw new Error(`${doc}: no \`\`\`ts block after ${marker}`);
  const dir = path.join(root, 'test-output', 'doc-examples');
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${name}.ts`);
  writeFileSync(file, block[1]);
  return file;
}

let t: TestServer;
let exampleFile: string;
let followInstance: FollowInstance;
const sockets: Socket[] = [];

beforeAll(async () => {
  exampleFile = extractExample('docs/progress.md', 'follow-instance');
  ({ followInstance } = (await import(pathToFileURL(exampleFile).href)) as {
    followInstance: FollowInstance;
  });
  t = await startTestServer();
  await deploy(t.api, singleTaskBpmn('example-fail', 'example-fail', { retries: 0 }));
});
afterAll(async () => {
  for (const s of sockets) s.disconnect();
  await t?.close();
});

interface Followed {
  frames: Frame[];
  gaps: Gap[];
  refusals: { type: string; message: string }[];
  socket: Socket;
}

function follow(url: string, instanceId: string): Followed {
  const got: Omit<Followed, 'socket'> = { frames: [], gaps: [], refusals: [] };
  const handle = followInstance(url, instanceId, (f) => got.frames.push(f), {
    onGap: (g) => got.gaps.push(g),
    onRefused: (e) => got.refusals.push(e),
  });
  sockets.push(handle.socket);
  return { ...got, socket: handle.socket };
}

async function storedFrames(s: TestServer, instanceId: string): Promise<string[]> {
  const { rows } = await s.db.pool.query<{ generation: number; seq: number; kind: string }>(
    'select generation, seq, kind from frames where instance_id = $1 order by generation, seq',
    [instanceId],
  );
  return rows.map((r) => `${r.generation}/${r.seq} ${r.kind}`);
}

const described = (frames: Frame[]) => frames.map((f) => `${f.generation}/${f.seq} ${f.kind}`);

/** The worker's task fails with no retries left: the instance goes to incident. */
async function failToIncident(instanceId: string): Promise<void> {
  const task = await fetchOne(t.api, 'w', 'example-fail');
  expect(task.instanceId).toBe(instanceId);
  const failed = await t.api.post(`/api/external-tasks/${task.id}/failure`, {
    workerId: 'w',
    lockToken: task.lockToken,
    errorMessage: 'no',
  });
  expect(failed.status).toBe(204);
  await waitForStatus(t.api, instanceId, 'incident');
}

async function replay(instanceId: string, generation: number): Promise<void> {
  const res = await t.api.post(`/api/instances/${instanceId}/replay`);
  expect(res.status).toBe(200);
  expect(res.body).toMatchObject({ instanceId, generation });
}

describe('the reconnecting client of docs/progress.md', () => {
  it('given the example as a reader copies it, then it compiles under strict TypeScript', () => {
    const program = ts.createProgram([exampleFile], {
      strict: true,
      noUncheckedIndexedAccess: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      skipLibCheck: true,
      noEmit: true,
      types: ['node'],
    });
    const errors = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
    expect(errors).toEqual([]);
  });

  it('given the client is disconnected while its instance is replayed, when it reconnects, then it has every frame of both generations once, in order, ending with generation 2', async () => {
    const id = await start(t.api, 'example-fail');
    const c = follow(t.url, id);
    const task = await fetchOne(t.api, 'w', 'example-fail');
    await expect.poll(() => c.frames.some((f) => f.kind === 'task:locked')).toBe(true);

    c.socket.disconnect();
    const seenBefore = described(c.frames);
    const failed = await t.api.post(`/api/external-tasks/${task.id}/failure`, {
      workerId: 'w',
      lockToken: task.lockToken,
      errorMessage: 'no',
    });
    expect(failed.status).toBe(204);
    await waitForStatus(t.api, id, 'incident');
    await replay(id, 2);
    // What the client missed: the rest of generation 1 and the start of generation 2.
    const missed = (await storedFrames(t, id)).filter((f) => !seenBefore.includes(f));
    expect(missed.some((f) => f.startsWith('1/') && f.endsWith('instance:ended'))).toBe(true);
    expect(missed.some((f) => f.startsWith('2/'))).toBe(true);

    c.socket.connect();
    const again = await fetchOne(t.api, 'w', 'example-fail');
    expect((await complete(t.api, again, 'w')).status).toBe(204);
    await expect.poll(() => described(c.frames).at(-1), { timeout: 10_000 }).toMatch(/^2\/\d+ instance:ended$/);
    expect(described(c.frames)).toEqual(await storedFrames(t, id));
    expect(c.refusals).toEqual([]);
  });

  it('given the client is disconnected while its instance is replayed twice, when it reconnects, then it goes through generations 1, 2 and 3 and has every frame once', async () => {
    const id = await start(t.api, 'example-fail');
    const c = follow(t.url, id);
    await expect.poll(() => c.frames.some((f) => f.kind === 'instance:started')).toBe(true);

    c.socket.disconnect();
    await failToIncident(id);
    await replay(id, 2);
    await failToIncident(id);
    await replay(id, 3);
    c.socket.connect();

    const task = await fetchOne(t.api, 'w', 'example-fail');
    expect((await complete(t.api, task, 'w')).status).toBe(204);
    await expect.poll(() => described(c.frames).at(-1), { timeout: 10_000 }).toMatch(/^3\/\d+ instance:ended$/);
    const stored = await storedFrames(t, id);
    expect(stored.filter((f) => f.startsWith('2/')).length).toBeGreaterThan(1);
    expect(described(c.frames)).toEqual(stored);
  });

  it('given frames deleted by retention, then the client is told the gone range and gets the final frame', async () => {
    const r = await startTestServer({ sweepIntervalMs: 100, frameRetentionMs: 0 });
    try {
      await deploy(r.api, singleTaskBpmn('example-kept', 'example-kept'));
      const id = await start(r.api, 'example-kept');
      expect((await complete(r.api, await fetchOne(r.api, 'w', 'example-kept'), 'w')).status).toBe(204);
      await expect.poll(async () => (await storedFrames(r, id)).length, { timeout: 10_000 }).toBe(1);
      const [last] = await storedFrames(r, id);
      const lastSeq = Number(/^1\/(\d+) /.exec(last ?? '')?.[1]);
      expect(lastSeq).toBeGreaterThan(3);

      const c = follow(r.url, id);
      await expect.poll(() => described(c.frames), { timeout: 10_000 }).toEqual([last]);
      expect(c.gaps).toEqual([{ instanceId: id, generation: 1, fromSeq: 1, toSeq: lastSeq - 1 }]);
      c.socket.disconnect();
    } finally {
      await r.close();
    }
  });

  it('given a server that drops the client whenever a few frames wait unsent, then the client resubscribes each time and has every frame once', async () => {
    const s = await startTestServer({ progressStream: { maxBacklog: 1, batchSize: 5 } });
    try {
      await deploy(s.api, singleTaskBpmn('example-slow', 'example-slow'));
      const id = await start(s.api, 'example-slow');
      for (let i = 0; i < 200; i++) await s.db.pool.query(`select append_frame($1, 1, 'test:tick', '{}'::jsonb, now())`, [id]);
      const c = follow(s.url, id);
      const dropped: unknown[] = [];
      c.socket.on('resubscribe', (r: unknown) => dropped.push(r));
      expect((await complete(s.api, await fetchOne(s.api, 'w', 'example-slow'), 'w')).status).toBe(204);
      await expect.poll(() => c.frames.at(-1)?.kind, { timeout: 20_000 }).toBe('instance:ended');
      expect(described(c.frames)).toEqual(await storedFrames(s, id));
      expect(dropped.length).toBeGreaterThan(0);
      c.socket.disconnect();
    } finally {
      await s.close();
    }
  });
});
