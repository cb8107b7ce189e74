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
import { deleteEndedInstances } from '../../runtime/store/retention.ts';
import { recordLateResult } from '../../runtime/store/tasks.ts';
import { singleTaskBpmn } from '../support/bpmn.ts';
import { complete, deploy, fetchOne, start } from '../support/flows.ts';
import { waitsForLock } from '../support/db.ts';
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
    const sink = new Writable({
      write(chunk, _e, done) {
        text += String(chunk);
        done();
      },
    });
    expect(await exportHistory(t.db.pool, before(), sink)).toBe(5);
    const lines = text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
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
    // events, frames and frame heads have no foreign key (migration 0014): the statement deletes them
    for (const table of ['events', 'steps', 'flows', 'external_tasks', 'frames', 'frame_heads']) {
      const left = await t.db.pool.query(`select count(*)::int as n from ${table} where instance_id = any($1::uuid[])`, [old]);
      expect(left.rows[0].n, table).toBe(0);
    }
  });
});

// The late result of a task is the one writer of history for an ended instance; events have
// no foreign key, so it locks the instance row itself and never leaves an orphan row.
describe('retention racing a late result', () => {
  beforeAll(async () => {
    await deploy(t.api, singleTaskBpmn('late', 'late-task'));
  });
  async function agedEnded(key: string): Promise<{ id: string; taskId: string }> {
    const id = await start(t.api, 'late', { businessKey: key });
    const task = await fetchOne(t.api, 'w', 'late-task');
    expect(task.instanceId).toBe(id);
    expect((await complete(t.api, task, 'w')).status).toBe(204);
    await waitFor(async () => ((await t.api.get(`/api/instances/${id}`)).body.status === 'completed' ? true : undefined));
    await t.db.pool.query(`update instances set ended_at = ended_at - interval '40 days' where id = $1`, [id]);
    return { id, taskId: task.id };
  }
  const rowsOf = async (id: string) => {
    const {
      rows: [n],
    } = await t.db.pool.query(
      `select (select count(*) from events where instance_id = $1)::int as events,
                                                        (select count(*) from frames where instance_id = $1)::int as frames,
                                                        (select count(*) from instances where id = $1)::int as instances`,
      [id],
    );
    return n;
  };

  it('given retention deleting the instance in an open transaction, when a late result arrives, then it waits and records nothing: no orphan event', async () => {
    const { id, taskId } = await agedEnded('late-1');
    const tx = await t.db.pool.connect();
    try {
      await tx.query('begin');
      expect(await deleteEndedInstances(tx, before(), 100)).toBeGreaterThanOrEqual(1);
      const late = recordLateResult(t.db.pool, {
        taskId,
        workerId: 'late',
        lockToken: '00000000-0000-0000-0000-000000000000',
        kind: 'complete',
        payloadBytes: 0,
      });
      await waitFor(
        async () => ((await waitsForLock(t.db.pool, 'task:late_result')) ? true : undefined),
        10_000,
        'the late result to wait for the instance row',
      );
      await tx.query('commit');
      await late;
    } finally {
      tx.release();
    }
    expect(await rowsOf(id)).toEqual({ events: 0, frames: 0, instances: 0 });
  });

  it('given a late result recorded in an open transaction, when retention runs, then it skips that instance, and deletes it with the late event once the result committed', async () => {
    const { id, taskId } = await agedEnded('late-2');
    const tx = await t.db.pool.connect();
    try {
      await tx.query('begin');
      await recordLateResult(tx, {
        taskId,
        workerId: 'late',
        lockToken: '00000000-0000-0000-0000-000000000000',
        kind: 'complete',
        payloadBytes: 0,
      });
      await deleteEndedInstances(t.db.pool, before(), 100);
      expect((await rowsOf(id)).instances).toBe(1);
      await tx.query('commit');
    } finally {
      tx.release();
    }
    const { rows } = await t.db.pool.query(`select kind from events where instance_id = $1 and kind = 'task:late_result'`, [id]);
    expect(rows).toHaveLength(1);
    expect(await deleteEndedInstances(t.db.pool, before(), 100)).toBeGreaterThanOrEqual(1);
    expect(await rowsOf(id)).toEqual({ events: 0, frames: 0, instances: 0 });
  });

  // The frame trim (store/frames.ts) locks heads, then deletes their runs. Retention deletes an
  // instance's heads before its runs, so it waits for the trim at the head and holds no run the
  // trim needs: the two never wait for each other in a cycle (PostgreSQL would abort one).
  it('given a frame trim holding the head of an instance retention deletes, then retention waits for it and neither deadlocks', async () => {
    const { id } = await agedEnded('late-3');
    const trim = await t.db.pool.connect();
    try {
      await trim.query('begin');
      const { rows: heads } = await trim.query<{ last_seq: number }>(
        'select last_seq from frame_heads where instance_id = $1 for update',
        [id],
      );
      const retention = deleteEndedInstances(t.db.pool, before(), 100);
      await waitFor(
        async () => ((await waitsForLock(t.db.pool, 'delete from frame_heads')) ? true : undefined),
        10_000,
        'retention to wait for the head',
      );
      await trim.query('delete from frame_runs where instance_id = $1 and generation = 1 and last_seq < $2', [
        id,
        heads[0]!.last_seq,
      ]);
      await trim.query('commit');
      expect(await retention).toBeGreaterThanOrEqual(1);
    } finally {
      trim.release();
    }
    expect(await rowsOf(id)).toEqual({ events: 0, frames: 0, instances: 0 });
  });
});
