// Batches on real PostgreSQL: a cancel and a retry over an instance search run to completion a
// chunk at a time, with a result per instance; a canceled batch touches nothing more.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBatch, runBatchChunk } from '../../../runtime/engine/batches.ts';
import { claimBatch } from '../../../runtime/store/batches.ts';
import { singleTaskBpmn } from '../../support/bpmn.ts';
import { complete, deploy, fetchOne, fetchTasks, start, waitForStatus } from '../../support/flows.ts';
import { startTestServer, waitFor, type TestServer } from '../../support/server.ts';

let t: TestServer;
beforeAll(async () => {
  // Chunks of 3; no polling during the test: a batch created through the API starts at once
  // (its node is poked), one created through the engine waits for the test to run it.
  t = await startTestServer({ batches: { chunkSize: 3, intervalMs: 600_000, leaseMs: 30_000 } });
  await deploy(t.api, singleTaskBpmn('parcel', 'pack', { retries: 0 }));
  await deploy(t.api, singleTaskBpmn('invoice', 'bill', { retries: 0 }));
  await deploy(t.api, singleTaskBpmn('ledger', 'post', { retries: 0 }));
});
afterAll(async () => {
  await t.close();
});

async function startMany(key: string, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push(await start(t.api, key, { variables: { n: i } }));
  return ids;
}

async function waitForBatch(id: string, state: string): Promise<any> {
  return waitFor(
    async () => {
      const res = await t.api.get(`/api/batches/${id}`);
      expect(res.status).toBe(200);
      return res.body.state === state ? res.body : undefined;
    },
    20_000,
    `batch ${id} to be ${state}`,
  );
}

async function allResults(id: string, query = ''): Promise<any[]> {
  const items: any[] = [];
  let cursor: string | undefined;
  do {
    const page = await t.api.get(`/api/batches/${id}/results?limit=4${query}${cursor ? `&cursor=${cursor}` : ''}`);
    expect(page.status, JSON.stringify(page.body)).toBe(200);
    items.push(...page.body.items);
    cursor = page.body.nextCursor;
  } while (cursor);
  return items;
}

async function cancelEvents(ids: string[]): Promise<Map<string, number>> {
  const { rows } = await t.db.pool.query(
    `select instance_id, count(*)::int as n from events where kind = 'instance:canceled' and instance_id = any($1::uuid[]) group by instance_id`,
    [ids],
  );
  return new Map(rows.map((r) => [r.instance_id as string, r.n as number]));
}

describe('batches API', () => {
  it('given 7 instances, one of them completed, when a cancel batch runs, then 6 are canceled once, 1 skipped, and results page in instance order', async () => {
    const ids = await startMany('parcel', 7);
    const task = await fetchOne(t.api, 'w', 'pack');
    expect((await complete(t.api, task, 'w')).status).toBe(204);
    await waitForStatus(t.api, task.instanceId, 'completed');

    const created = await t.api.post('/api/batches', { operation: 'cancel', filter: { definitionKey: 'parcel' } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body).toMatchObject({ operation: 'cancel', filter: { definitionKey: 'parcel' }, total: 7, createdBy: null });
    const later = await start(t.api, 'parcel'); // started after the batch: not its instance

    const batch = await waitForBatch(created.body.id, 'completed');
    expect(batch).toMatchObject({ total: 7, done: 6, failed: 0, skipped: 1, endedAt: expect.any(String) });
    const results = await allResults(batch.id);
    expect(results.map((r) => r.instanceId)).toEqual([...ids].sort());
    expect(results.find((r) => r.instanceId === task.instanceId)).toMatchObject({
      outcome: 'skipped',
      message: expect.stringContaining('completed'),
    });
    expect(await allResults(batch.id, '&outcome=skipped')).toHaveLength(1);
    const events = await cancelEvents([...ids, later]);
    for (const id of ids) expect(events.get(id) ?? 0).toBe(id === task.instanceId ? 0 : 1);
    expect((await t.api.get(`/api/instances/${later}`)).body.status).toBe('running');

    const again = await t.api.post(`/api/batches/${batch.id}/cancel`);
    expect(again.status).toBe(409);
    expect(again.body.type).toBe('Conflict');
  });

  it('given instances in incident, when a retry batch with retries and variables runs, then their tasks come back with the variables and the others are left alone', async () => {
    const failing = await startMany('invoice', 4);
    for (let i = 0; i < 3; i++) {
      const task = await fetchOne(t.api, 'w', 'bill');
      const res = await t.api.post(`/api/external-tasks/${task.id}/failure`, {
        workerId: 'w',
        lockToken: task.lockToken,
        errorMessage: 'down',
        retries: 0,
      });
      expect(res.status).toBe(204);
      await waitForStatus(t.api, task.instanceId, 'incident');
    }
    const created = await t.api.post('/api/batches', {
      operation: 'retry',
      filter: { definitionKey: 'invoice', withIncident: true },
      options: { retries: 2, variables: { fixed: true } },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body).toMatchObject({ total: 3, options: { retries: 2, variables: { fixed: true } } });
    const batch = await waitForBatch(created.body.id, 'completed');
    expect(batch).toMatchObject({ total: 3, done: 3, failed: 0, skipped: 0 });

    const tasks = await fetchTasks(t.api, 'w', ['bill'], { maxTasks: 10 });
    expect(tasks).toHaveLength(4); // the 3 retried and the one never fetched
    for (const task of tasks.filter((x) => x.variables.fixed === true)) {
      expect((await t.api.get(`/api/instances/${task.instanceId}`)).body.status).toBe('running');
    }
    expect(tasks.filter((x) => x.variables.fixed === true)).toHaveLength(3);
    const open = await t.api.get('/api/incidents/count?definitionKey=invoice');
    expect(open.body.count).toBe(0);
    expect(new Set(tasks.map((x) => x.instanceId))).toEqual(new Set(failing));
  });

  it('given a filter that matches nothing, then the batch is created completed with total 0', async () => {
    const res = await t.api.post('/api/batches', { operation: 'cancel', filter: { definitionKey: 'nobody-deployed-this' } });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ state: 'completed', total: 0, done: 0, endedAt: expect.any(String) });
    expect((await t.api.get(`/api/batches/${res.body.id}/results`)).body).toEqual({ items: [] });
  });

  it('given a filter of instance ids, then only those instances are reached, and too many ids or a bad id are refused', async () => {
    await deploy(t.api, singleTaskBpmn('picked', 'pick'));
    const ids = await startMany('picked', 3);
    const picked = [ids[0]!, ids[2]!];
    const created = await t.api.post('/api/batches', { operation: 'cancel', filter: { instanceIds: picked } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body).toMatchObject({ filter: { instanceIds: picked }, total: 2 });
    expect(await waitForBatch(created.body.id, 'completed')).toMatchObject({ done: 2, failed: 0, skipped: 0 });
    const events = await cancelEvents(ids);
    expect(ids.map((id) => events.get(id) ?? 0)).toEqual([1, 0, 1]);

    const before = (await t.api.get('/api/batches?limit=500')).body.items.length;
    const tooMany = Array.from({ length: 10_001 }, (_v, i) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`);
    for (const instanceIds of [tooMany, [], ['not-an-id']]) {
      const res = await t.api.post('/api/batches', { operation: 'cancel', filter: { instanceIds } });
      expect(res.status, JSON.stringify(res.body).slice(0, 200)).toBe(400);
    }
    expect((await t.api.get('/api/batches?limit=500')).body.items.length).toBe(before);
  });

  it('given a batch stopped after its first chunk, then the counts match its results, no other instance is touched and its runner stops', async () => {
    const ids = await startMany('ledger', 8);
    const batch = await createBatch(t.server.engine, {
      operation: 'cancel',
      filter: { definitionKey: 'ledger', status: 'running' },
      createdBy: 'test',
    });
    const claimed = await claimBatch(t.db.pool, 'test-node', 30_000);
    expect(claimed?.id).toBe(batch.id);
    const opts = { owner: 'test-node', chunkSize: 3, leaseMs: 30_000 };
    const first = await runBatchChunk(t.server.engine, claimed!, opts);
    expect(first.state).toBe('advanced');

    const canceled = await t.api.post(`/api/batches/${batch.id}/cancel`);
    expect(canceled.status, JSON.stringify(canceled.body)).toBe(200);
    expect(canceled.body).toMatchObject({ state: 'canceled', total: 8, done: 3, endedAt: expect.any(String) });
    expect(first.state === 'advanced' && (await runBatchChunk(t.server.engine, first.batch, opts)).state).toBe('lost');

    expect(await allResults(batch.id)).toHaveLength(3);
    const { rows } = await t.db.pool.query(
      `select status, count(*)::int as n from instances where id = any($1::uuid[]) group by status`,
      [ids],
    );
    expect(Object.fromEntries(rows.map((r) => [r.status, r.n]))).toEqual({ canceled: 3, running: 5 });
  });

  it('given several batches, then the list pages newest first', async () => {
    const made: string[] = [];
    for (let i = 0; i < 3; i++)
      made.push((await t.api.post('/api/batches', { operation: 'cancel', filter: { businessKey: `none-${i}` } })).body.id);
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await t.api.get(`/api/batches?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.status, JSON.stringify(page.body)).toBe(200);
      seen.push(...page.body.items.map((b: { id: string }) => b.id));
      cursor = page.body.nextCursor;
    } while (cursor);
    expect(seen.slice(0, 3)).toEqual([...made].reverse());
    expect(seen.length).toBeGreaterThanOrEqual(made.length + 2);
  });

  it('given every running instance of a version, when a suspend batch and then a resume batch run, then each is suspended once and resumed once', async () => {
    await deploy(t.api, singleTaskBpmn('pause-all', 'pause-all'));
    const ids = await startMany('pause-all', 5);
    const suspended = await t.api.post('/api/batches', {
      operation: 'suspend',
      filter: { definitionKey: 'pause-all', version: 1 },
    });
    expect(suspended.status, JSON.stringify(suspended.body)).toBe(201);
    expect(await waitForBatch(suspended.body.id, 'completed')).toMatchObject({ total: 5, done: 5, skipped: 0 });
    expect(await fetchTasks(t.api, 'w', ['pause-all'], { waitMs: 0 })).toEqual([]);
    expect((await t.api.get('/api/instances/count?definitionKey=pause-all&suspended=true')).body.count).toBe(5);

    const again = await t.api.post('/api/batches', { operation: 'suspend', filter: { definitionKey: 'pause-all' } });
    const repeated = await waitForBatch(again.body.id, 'completed');
    expect(repeated).toMatchObject({ done: 0, skipped: 5 });
    expect((await allResults(repeated.id)).map((r) => r.message)).toEqual(Array(5).fill('already suspended'));
    const refused = await t.api.post('/api/batches', {
      operation: 'resume',
      filter: { definitionKey: 'pause-all' },
      options: { retries: 2 },
    });
    expect(refused.status).toBe(400);

    const resumed = await t.api.post('/api/batches', {
      operation: 'resume',
      filter: { definitionKey: 'pause-all', suspended: true },
    });
    expect(await waitForBatch(resumed.body.id, 'completed')).toMatchObject({ total: 5, done: 5 });
    const { rows } = await t.db.pool.query(
      `select kind, data->>'by' as by from events where instance_id = any($1::uuid[]) and kind in ('instance:suspended', 'instance:resumed')`,
      [ids],
    );
    expect(rows.filter((r) => r.kind === 'instance:suspended')).toHaveLength(5);
    expect(rows.filter((r) => r.kind === 'instance:resumed')).toHaveLength(5);
    // The rows come in no order: the first suspension names the batch that made it.
    expect(rows.find((r) => r.kind === 'instance:suspended')?.by).toContain(`batch ${suspended.body.id}`);
    for (let i = 0; i < ids.length; i++)
      expect((await complete(t.api, await fetchOne(t.api, 'w', 'pause-all'), 'w')).status).toBe(204);
    for (const id of ids) await waitForStatus(t.api, id, 'completed');
  });

  it('given instances of version 1, when a migrate batch runs, then each moves to version 2 once, a suspended one fails naming why, and they finish on the new version', async () => {
    await deploy(t.api, singleTaskBpmn('move-all', 'move-all'));
    const ids = await startMany('move-all', 4);
    await deploy(t.api, singleTaskBpmn('move-all', 'move-all-v2'));
    const refusedOptions = await t.api.post('/api/batches', { operation: 'migrate', filter: { definitionKey: 'move-all' } });
    expect(refusedOptions.status).toBe(400);
    const stray = await t.api.post('/api/batches', {
      operation: 'migrate',
      filter: { definitionKey: 'move-all' },
      options: { version: 2, retries: 1 },
    });
    expect(stray.status).toBe(400);
    await t.api.post(`/api/instances/${ids[0]}/suspend`, {});

    const created = await t.api.post('/api/batches', {
      operation: 'migrate',
      filter: { definitionKey: 'move-all', version: 1 },
      options: { version: 2 },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(await waitForBatch(created.body.id, 'completed')).toMatchObject({ total: 4, done: 3, failed: 1 });
    const results = await allResults(created.body.id);
    expect(results.find((r) => r.instanceId === ids[0])).toMatchObject({
      outcome: 'failed',
      message: expect.stringContaining('suspended'),
    });
    expect((await t.api.get('/api/instances/count?definitionKey=move-all&version=2')).body.count).toBe(3);
    // The open tasks took the new version's topic with them.
    for (let i = 0; i < 3; i++) expect((await complete(t.api, await fetchOne(t.api, 'w', 'move-all-v2'), 'w')).status).toBe(204);
    for (const id of ids.slice(1)) await waitForStatus(t.api, id, 'completed');
    const { rows } = await t.db.pool.query(
      `select count(*)::int as n from events where kind = 'instance:migrated' and instance_id = any($1::uuid[])`,
      [ids],
    );
    expect(rows[0].n).toBe(3);
  });
});
