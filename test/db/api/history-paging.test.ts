// History pages by afterSeq never skip an event that commits after the page: writers number
// events under a shared lock of the instance's bucket, readers wait until they hold it alone
// (migration 0038). The writer held open here numbers its event as every writer does.
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBpmn, singleTaskBpmn } from '../../support/bpmn.ts';
import { complete, deploy, fetchOne, fetchTasks, start, waitForStatus } from '../../support/flows.ts';
import { startTestServer, type TestServer } from '../../support/server.ts';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
  await deploy(t.api, singleTaskBpmn('paged', 'paged-task'));
  await deploy(
    t.api,
    buildBpmn(
      'paged_many',
      [
        { id: 'start', type: 'startEvent' },
        { id: 'each', type: 'serviceTask', topic: 'paged-each', multiInstance: { cardinality: '40' } },
        { id: 'end', type: 'endEvent' },
      ],
      [
        { from: 'start', to: 'each' },
        { from: 'each', to: 'end' },
      ],
    ),
  );
});
afterAll(async () => {
  await t.close();
});

interface Item {
  seq: number;
  kind: string;
}

async function lastSeq(id: string): Promise<number> {
  const res = await t.api.get<{ items: Item[] }>(`/api/instances/${id}/history`);
  expect(res.status).toBe(200);
  return res.body.items.at(-1)!.seq;
}

/** A transaction that has numbered one event of the instance and not committed. */
async function openWriter(id: string): Promise<{ client: pg.PoolClient; seq: number }> {
  const client = await t.db.pool.connect();
  await client.query('begin');
  const { rows } = await client.query<{ seq: number }>(
    `insert into events (seq, instance_id, generation, kind) values (baton_event_seq($1), $1, 1, 'test:late') returning seq`,
    [id],
  );
  return { client, seq: Number(rows[0]!.seq) };
}

describe('history paging', () => {
  it('given an event numbered before others that commit first, when a page is read meanwhile, then it waits for the late commit and skips nothing', async () => {
    const id = await start(t.api, 'paged');
    const task = await fetchOne(t.api, 'w', 'paged-task');
    const before = await lastSeq(id);
    const late = await openWriter(id);
    try {
      // the completion's events are numbered after the open one and commit first
      await complete(t.api, task, 'w');
      await waitForStatus(t.api, id, 'completed');
      let answered = false;
      const page = t.api.get<{ items: Item[] }>(`/api/instances/${id}/history?afterSeq=${before}`).then((res) => {
        answered = true;
        return res;
      });
      // a page answered now would end past the open event's seq and never show it
      await new Promise((r) => setTimeout(r, 300));
      expect(answered).toBe(false);
      await late.client.query('commit');
      const res = await page;
      expect(res.status).toBe(200);
      const seqs = res.body.items.map((e) => e.seq);
      expect(res.body.items[0]).toMatchObject({ seq: late.seq, kind: 'test:late' });
      expect(res.body.items.map((e) => e.kind)).toContain('instance:completed');
      expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
      const { rows } = await t.db.pool.query<{ seq: string }>(
        'select seq from events where instance_id = $1 and seq > $2 order by seq',
        [id, before],
      );
      expect(seqs).toEqual(rows.map((r) => Number(r.seq)));
    } finally {
      await late.client.query('rollback').catch(() => undefined);
      late.client.release();
    }
  });

  it('given a writer that stays open past the wait, then the page answers 503 Unavailable and the next read after its commit is whole', async () => {
    const id = await start(t.api, 'paged');
    const before = await lastSeq(id);
    const late = await openWriter(id);
    try {
      const busy = await t.api.get(`/api/instances/${id}/history?afterSeq=${before}`);
      expect(busy.status).toBe(503);
      expect(busy.body).toMatchObject({ type: 'Unavailable' });
      expect(busy.body.message).toContain(id);
      expect(busy.headers.get('retry-after')).toBe('1');
      await late.client.query('commit');
      const res = await t.api.get<{ items: Item[] }>(`/api/instances/${id}/history?afterSeq=${before}`);
      expect(res.status).toBe(200);
      expect(res.body.items.map((e) => e.seq)).toEqual([late.seq]);
    } finally {
      await late.client.query('rollback').catch(() => undefined);
      late.client.release();
    }
  });

  it('given three workers fetching and completing 40 elements of one instance while a reader pages its history, then the pages hold every event once, in seq order', async () => {
    const id = await start(t.api, 'paged_many');
    let finished = false;
    const seen: number[] = [];
    const reader = (async () => {
      for (;;) {
        const wasFinished = finished;
        const res = await t.api.get<{ items: Item[] }>(`/api/instances/${id}/history?afterSeq=${seen.at(-1) ?? 0}&limit=7`);
        expect(res.status).toBe(200);
        seen.push(...res.body.items.map((e) => e.seq));
        // Once the instance has ended, an empty page is the end of its history.
        if (wasFinished && res.body.items.length === 0) return;
      }
    })();
    const worker = async (name: string) => {
      for (let idle = 0; idle < 3;) {
        const tasks = await fetchTasks(t.api, name, ['paged-each'], { maxTasks: 5 });
        idle = tasks.length === 0 ? idle + 1 : 0;
        for (const task of tasks) expect((await complete(t.api, task, name)).status).toBe(204);
      }
    };
    await Promise.all([worker('w1'), worker('w2'), worker('w3')]);
    await waitForStatus(t.api, id, 'completed');
    finished = true;
    await reader;
    const whole = await t.api.get<{ items: Item[] }>(`/api/instances/${id}/history?limit=5000`);
    expect(whole.body.items.filter((e) => e.kind === 'task:completed')).toHaveLength(40);
    expect(seen).toEqual(whole.body.items.map((e) => e.seq));
  });

  it('given an insert that does not number its event through baton_event_seq, then the database refuses it', async () => {
    const id = await start(t.api, 'paged');
    await expect(
      t.db.pool.query(`insert into events (instance_id, generation, kind) values ($1, 1, 'test:unnumbered')`, [id]),
    ).rejects.toMatchObject({ code: '23502' });
    const res = await t.api.get<{ items: Item[] }>(`/api/instances/${id}/history`);
    expect(res.body.items.map((e) => e.kind)).not.toContain('test:unnumbered');
  });
});
