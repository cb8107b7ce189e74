// Drills on the shape of the work (the drill numbers of docs/RELIABILITY.md): racing workers, a failing
// branch before a join, early and duplicate messages; real node and worker processes.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildBpmn, parallelBpmn, singleTaskBpmn } from '../support/bpmn.ts';
import type { TestDatabase } from '../support/db.ts';
import { deploy, waitForStatus } from '../support/flows.ts';
import { apiClient, waitFor, type ApiClient } from '../support/server.ts';
import { killAll, startNode, startWorker, type RuntimeNode } from './harness.ts';
import { summarizeLedger } from './ledger.ts';
import { chaosDatabase, expectInvariants, history, kinds, ledgerOf, startMany, statusCounts } from './support.ts';

let db: TestDatabase;
let node: RuntimeNode;
let api: ApiClient;

beforeAll(async () => {
  db = await chaosDatabase();
  // A stored message waits 100 ms before it is matched: a wider window for the message drill.
  node = await startNode(db.url, { faults: 'message:before-match:delay:100' });
  api = apiClient(node.url);
}, 90_000);
afterEach(async () => {
  for (const w of workers.splice(0)) await w.kill();
});
afterAll(async () => {
  await killAll();
  await db.drop();
});

const workers: ReturnType<typeof startWorker>[] = [];
const base = () => ({ baseUrl: node.url, databaseUrl: db.url });

async function allCompleted(key: string, n: number, timeoutMs: number): Promise<void> {
  await waitFor(
    async () => (((await statusCounts(db, key)).completed ?? 0) === n ? true : undefined),
    timeoutMs,
    `${n} ${key} instances to complete`,
  );
}

describe('chaos drills: flows', () => {
  it('drill 5: given two worker processes racing for the same 1,000 tasks, then never do both hold one, and each is applied once', async () => {
    await deploy(api, singleTaskBpmn('d5', 'd5'));
    const n = 1_000;
    // Both workers are parked before the first task exists, so every task is raced from its first
    // moment, and the starts overlap the work instead of preceding it.
    for (const w of ['d5-left', 'd5-right']) {
      // A long lease: a task locked twice here must mean a race, never a lease that ran out on a busy machine.
      const worker = startWorker({ ...base(), workerId: w, topics: ['d5'], concurrency: 16, lockDurationMs: 30_000 });
      workers.push(worker);
      await worker.waitForLine(/^started$/);
    }
    await Promise.all(Array.from({ length: 10 }, (_, lane) => startMany(api, 'd5', n / 10, `d5-${lane}`)));
    await allCompleted('d5', n, 120_000);
    const { rows } = await db.pool.query(
      `select data->>'workerId' as worker, count(*)::int as locks, count(distinct task_id)::int as tasks from events where kind = 'task:locked' and task_id in
         (select t.id from external_tasks t join instances i on i.id = t.instance_id where i.definition_key = 'd5') group by 1 order by 1`,
    );
    // Both raced the whole time, and every task was locked exactly once.
    expect(rows.map((r) => r.worker)).toEqual(['d5-left', 'd5-right']);
    expect(rows.reduce((s, r) => s + r.locks, 0)).toBe(n);
    expect(rows.reduce((s, r) => s + r.tasks, 0)).toBe(n);
    const ledger = await summarizeLedger(db.pool);
    expect(ledger).toMatchObject({ attempts: n, applied: n, appliedTwice: 0 });
    await expectInvariants(db);
  }, 180_000);

  it('drill 6: given one branch of a parallel join that fails and retries, then the join waits for it and fires once', async () => {
    await deploy(api, parallelBpmn('d6', 'd6-a', 'd6-b'));
    const ids = await startMany(api, 'd6', 10, 'd6');
    workers.push(startWorker({ ...base(), workerId: 'd6-w', topics: ['d6-a', 'd6-b'], failTopics: { 'd6-a': 1 } }));
    await allCompleted('d6', ids.length, 60_000);
    for (const id of ids) {
      const events = await history(db, id);
      const joins = events.filter((e) => e.kind === 'step:completed' && e.stepId === 'join');
      expect(joins).toHaveLength(1);
      const aDone = events.find((e) => e.kind === 'task:completed' && e.stepId === 'a')!;
      expect(aDone.data.attempt).toBe(2);
      expect(kinds(events, 'task:failed').map((e) => e.stepId)).toEqual(['a']);
      expect(joins[0]!.seq).toBeGreaterThan(aDone.seq);
      // Branch a's effect is applied before its planned failure; its retry finds the key.
      expect((await ledgerOf(db, id)).map((a) => a.outcome).sort()).toEqual(['already_applied', 'applied', 'applied']);
    }
    expect((await summarizeLedger(db.pool)).appliedTwice).toBe(0);
    await expectInvariants(db);
  }, 90_000);

  it('drill 11: given a message that arrives before the token reaches its catch, twice at once and again later, then it is matched once', async () => {
    await deploy(
      api,
      buildBpmn(
        'd11',
        [
          { id: 's', type: 'startEvent' },
          { id: 'prepare', type: 'serviceTask', topic: 'd11-prepare' },
          { id: 'paid', type: 'catchEvent', message: 'd11-payment', correlationKey: 'orderId' },
          { id: 'e', type: 'endEvent' },
        ],
        [
          { from: 's', to: 'prepare' },
          { from: 'prepare', to: 'paid' },
          { from: 'paid', to: 'e' },
        ],
      ),
    );
    const orders = Array.from({ length: 10 }, (_, i) => `o-${i}`);
    const ids: string[] = [];
    for (const orderId of orders) {
      const res = await api.post('/api/instances', { definitionKey: 'd11', variables: { orderId } });
      expect(res.status).toBe(201);
      ids.push(res.body.id);
    }
    // No worker yet: every token is short of its catch when the messages come, twice each, at once.
    const publish = (orderId: string) =>
      api.post('/api/messages', {
        name: 'd11-payment',
        correlationKey: orderId,
        messageId: `pay-${orderId}`,
        variables: { paid: orderId },
      });
    const first = await Promise.all(orders.flatMap((o) => [publish(o), publish(o)]));
    expect(first.map((r) => r.body.status).sort()).toEqual(
      [...Array(10).fill('buffered'), ...Array(10).fill('duplicate')].sort(),
    );
    workers.push(startWorker({ ...base(), workerId: 'd11-w', topics: ['d11-prepare'], holdMs: 200 }));
    await allCompleted('d11', ids.length, 60_000);
    const late = await Promise.all(orders.map(publish));
    expect(late.map((r) => [r.status, r.body.status])).toEqual(orders.map(() => [200, 'duplicate']));
    for (const [i, id] of ids.entries()) {
      const done = await waitForStatus(api, id, 'completed');
      expect(done.variables).toMatchObject({ orderId: orders[i], paid: orders[i] });
      expect((await history(db, id)).filter((e) => e.data?.messageId === `pay-${orders[i]}`)).toHaveLength(1);
    }
    const { rows } = await db.pool.query(
      `select state, count(*)::int as n from messages where name = 'd11-payment' group by state`,
    );
    expect(rows).toEqual([{ state: 'matched', n: 10 }]);
    for (const id of ids) expect((await ledgerOf(db, id)).map((a) => a.outcome)).toEqual(['applied']);
    expect((await summarizeLedger(db.pool)).appliedTwice).toBe(0);
    await expectInvariants(db);
  }, 90_000);
});
