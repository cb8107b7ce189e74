// Retention deletes old ended instances in batches (with their rows, by cascade) and keeps
// running and recent ones; `baton export --before` writes their history first as JSON lines.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readConfig } from '../../runtime/config.ts';
import { runOpsCommand } from '../../runtime/ops/commands.ts';
import { exportHistory } from '../../runtime/ops/export.ts';
import { startRetention } from '../../runtime/ops/retention.ts';
import { singleTaskBpmn } from '../support/bpmn.ts';
import { complete, deploy, fetchOne, start } from '../support/flows.ts';
import { startTestServer, waitFor, type TestServer } from '../support/server.ts';

let t: TestServer;
const old: string[] = [];
let recent = '';
let running = '';
let dir = '';

async function finish(id: string): Promise<void> {
  const task = await fetchOne(t.api, 'w', 'kept-task');
  expect(task.instanceId).toBe(id);
  expect((await complete(t.api, task, 'w', { done: true })).status).toBe(204);
  await waitFor(async () => ((await t.api.get(`/api/instances/${id}`)).body.status === 'completed' ? true : undefined));
}

beforeAll(async () => {
  t = await startTestServer();
  dir = await mkdtemp(path.join(tmpdir(), 'baton-export-'));
  await deploy(t.api, singleTaskBpmn('kept', 'kept-task'));
  for (let i = 0; i < 5; i++) {
    const id = await start(t.api, 'kept', { businessKey: `old-${i}` });
    if (i % 2) expect((await t.api.post(`/api/instances/${id}/cancel`)).status).toBe(200);
    else await finish(id);
    old.push(id);
  }
  recent = await start(t.api, 'kept', { businessKey: 'recent' });
  await finish(recent);
  running = await start(t.api, 'kept', { businessKey: 'running' });
  // Age the first five by 40 days (test setup only; the server never moves ended_at).
  await t.db.pool.query(`update instances set ended_at = ended_at - interval '40 days' where id = any($1::uuid[])`, [old]);
});
afterAll(async () => {
  await t?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const before = () => new Date(Date.now() - 30 * 86_400_000);

describe('export', () => {
  it('writes one JSON line per ended instance before the date, oldest first, with its history', async () => {
    let text = '';
    const sink = new Writable({ write(chunk, _e, done) { text += String(chunk); done(); } });
    expect(await exportHistory(t.db.pool, before(), sink)).toBe(5);
    const lines = text.trim().split('\n').map((l) => JSON.parse(l));
    expect(lines.map((l) => l.id).sort()).toEqual([...old].sort());
    expect(lines[0]).toMatchObject({ definitionKey: 'kept', version: 1, status: expect.stringMatching(/completed|canceled/) });
    expect(lines[0].events[0]).toMatchObject({ kind: 'instance:started', seq: expect.any(Number) });
  });

  it('is `baton export --before DATE --out FILE` on the command line', async () => {
    const file = path.join(dir, 'history.jsonl');
    const config = readConfig({ DATABASE_URL: t.db.url });
    expect(await runOpsCommand(config, 'export', ['--before', before().toISOString(), '--out', file])).toBe(0);
    expect((await readFile(file, 'utf8')).trim().split('\n')).toHaveLength(5);
    expect(await runOpsCommand(config, 'export', ['--before', 'yesterday-ish'], () => undefined)).toBe(2);
  });
});

describe('retention', () => {
  it('deletes ended instances older than the period in batches, with their rows; keeps the rest', async () => {
    const job = startRetention(t.db.pool, pino({ level: 'silent' }), { days: 30, intervalMs: 3_600_000, batchSize: 2 });
    try {
      expect(await job.run()).toBe(5);
      expect(await job.run()).toBe(0);
    } finally {
      await job.stop();
    }
    const { rows } = await t.db.pool.query<{ id: string }>('select id from instances');
    expect(rows.map((r) => r.id).sort()).toEqual([recent, running].sort());
    for (const table of ['events', 'steps', 'flows', 'external_tasks']) {
      const left = await t.db.pool.query(`select count(*)::int as n from ${table} where instance_id = any($1::uuid[])`, [old]);
      expect(left.rows[0].n, table).toBe(0);
    }
  });
});
