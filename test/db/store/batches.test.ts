// The batch lease and its guards on real PostgreSQL, two nodes' statements on two connections:
// one node at a time writes a batch's results, and each result is counted once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBatch, runBatchChunk, stopBatch } from '../../../runtime/engine/batches.ts';
import { withTransaction } from '../../../runtime/store/db.ts';
import {
  advanceBatch,
  claimBatch,
  findBatch,
  holdBatch,
  insertBatchResult,
  nextBatchInstances,
} from '../../../runtime/store/batches.ts';
import { singleTaskBpmn } from '../../support/bpmn.ts';
import { deploy, start } from '../../support/flows.ts';
import { startTestServer, waitFor, type TestServer } from '../../support/server.ts';

let t: TestServer;
beforeAll(async () => {
  // The server's own runner never looks during the test: the test plays the nodes.
  t = await startTestServer({ batches: { intervalMs: 600_000 } });
  await deploy(t.api, singleTaskBpmn('lease', 'lease-work'));
  await deploy(t.api, singleTaskBpmn('held', 'held-work'));
});
afterAll(async () => {
  await t.close();
});

async function startMany(key: string, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push(await start(t.api, key));
  return ids;
}

describe('batch lease', () => {
  it('given node A holds a batch, then B claims it only once the lease expired, A changes nothing after that, and B ends with exact counts', async () => {
    const ids = await startMany('lease', 5);
    const batch = await createBatch(t.server.engine, {
      operation: 'cancel',
      filter: { definitionKey: 'lease' },
      createdBy: null,
    });
    const a = { owner: 'node-a', chunkSize: 2, leaseMs: 30_000 };
    const b = { owner: 'node-b', chunkSize: 2, leaseMs: 30_000 };

    const heldByA = await claimBatch(t.db.pool, a.owner, a.leaseMs);
    expect(heldByA?.id).toBe(batch.id);
    expect(await claimBatch(t.db.pool, b.owner, b.leaseMs)).toBeUndefined();
    const first = await runBatchChunk(t.server.engine, heldByA!, a);
    expect(first).toMatchObject({ state: 'advanced', batch: { done: 2 } });

    // A stalls past its lease; B takes the batch.
    await t.db.pool.query(`update batches set lease_until = now() - interval '1 second' where id = $1`, [batch.id]);
    const heldByB = await claimBatch(t.db.pool, b.owner, b.leaseMs);
    expect(heldByB).toMatchObject({ id: batch.id, lease_owner: 'node-b', done: 2 });

    // A's next instance transaction and its cursor move are refused.
    expect(first.state === 'advanced' && (await runBatchChunk(t.server.engine, first.batch, a)).state).toBe('lost');
    expect(await withTransaction(t.db.pool, (tx) => holdBatch(tx, batch.id, a.owner))).toBe(false);
    expect(await advanceBatch(t.db.pool, { id: batch.id, owner: a.owner, to: ids[4]!, leaseMs: 1000 })).toEqual({
      ok: false,
      reason: 'lease_lost',
    });

    let current = heldByB!;
    for (;;) {
      const r = await runBatchChunk(t.server.engine, current, b);
      if (r.state !== 'advanced') {
        expect(r.state).toBe('completed');
        break;
      }
      current = r.batch;
    }
    expect(await findBatch(t.db.pool, batch.id)).toMatchObject({ state: 'completed', total: 5, done: 5, failed: 0, skipped: 0 });
    const { rows } = await t.db.pool.query(
      `select count(*)::int as n from events where kind = 'instance:canceled' and instance_id = any($1::uuid[])`,
      [ids],
    );
    expect(rows[0].n).toBe(5);
  });

  it('given an instance transaction holding the batch, then a cancel waits for its commit and counts its result', async () => {
    const ids = await startMany('held', 3);
    const batch = await createBatch(t.server.engine, { operation: 'cancel', filter: { definitionKey: 'held' }, createdBy: null });
    const claimed = await claimBatch(t.db.pool, 'node-h', 30_000);
    expect(claimed?.id).toBe(batch.id);
    const [first] = await nextBatchInstances(t.db.pool, claimed!, 1);
    expect(ids).toContain(first);

    const tx = await t.db.pool.connect();
    try {
      await tx.query('begin');
      expect(await holdBatch(tx, batch.id, 'node-h')).toBe(true);
      await insertBatchResult(tx, { batchId: batch.id, instanceId: first!, outcome: 'skipped', message: 'held' });
      const cancel = stopBatch(t.server.engine, batch.id);
      await waitFor(
        async () => {
          const { rows } = await t.db.pool.query(
            `select 1 from pg_stat_activity where wait_event_type = 'Lock' and query like '%for update%' and datname = current_database()`,
          );
          return rows.length > 0 ? true : undefined;
        },
        10_000,
        'the cancel to wait for the instance transaction',
      );
      await tx.query('commit');
      const stopped = await cancel;
      expect(stopped).toMatchObject({ ok: true, batch: { state: 'canceled', skipped: 1, done: 0 } });
    } finally {
      tx.release();
    }
    expect(await withTransaction(t.db.pool, (db) => holdBatch(db, batch.id, 'node-h'))).toBe(false);
  });
});
