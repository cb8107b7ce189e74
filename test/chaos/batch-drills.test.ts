// Drills where a node running a batch dies: `baton serve` child processes SIGKILLed mid-batch
// (under load, and at the fault point between an instance's commit and the chunk's cursor),
// then another node finishes the batch once the lease expires. Every instance is canceled (or
// its incident retried) exactly once and has exactly one result.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { inlineDefinitions, inlineFlow, singleTaskBpmn } from '../support/bpmn.ts';
import type { TestDatabase } from '../support/db.ts';
import { deploy } from '../support/flows.ts';
import { apiClient, type ApiClient } from '../support/server.ts';
import { killAll, startNode, waitFor } from './harness.ts';
import { chaosDatabase, expectInvariants, startMany, statusCounts } from './support.ts';

let db: TestDatabase;

beforeAll(async () => {
  db = await chaosDatabase();
});
afterEach(async () => {
  await killAll();
});
afterAll(async () => {
  await killAll();
  await db.drop();
});

/** Small chunks and a short lease, so a dead node's batch is taken again within seconds. */
const BATCH_ENV = { BATON_BATCH_CHUNK_SIZE: '10', BATON_BATCH_LEASE_MS: '2000', BATON_BATCH_INTERVAL_MS: '100' };

interface BatchProgress {
  state: string;
  total: number;
  done: number;
  failed: number;
  skipped: number;
  results: number;
}

async function progressOf(batchId: string): Promise<BatchProgress> {
  const { rows } = await db.pool.query(
    `select state, total, done, failed, skipped, (select count(*)::int from batch_results r where r.batch_id = b.id) as results
       from batches b where id = $1`,
    [batchId],
  );
  return rows[0];
}

async function createCancelBatch(api: ApiClient, key: string, total: number): Promise<string> {
  const res = await api.post('/api/batches', { operation: 'cancel', filter: { definitionKey: key } });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  expect(res.body.total).toBe(total);
  return res.body.id;
}

/** Each instance of the key canceled exactly once: one instance:canceled event and one result each. */
async function expectCanceledOnce(batchId: string, key: string, ids: string[]): Promise<void> {
  const { rows } = await db.pool.query(
    `select i.id, i.status,
            (select count(*)::int from events e where e.instance_id = i.id and e.kind = 'instance:canceled') as canceled,
            (select count(*)::int from batch_results r where r.batch_id = $2 and r.instance_id = i.id and r.outcome = 'done') as results
       from instances i where i.definition_key = $1`,
    [key, batchId],
  );
  expect(rows.map((r) => r.id).sort()).toEqual([...ids].sort());
  const wrong = rows.filter((r) => r.status !== 'canceled' || r.canceled !== 1 || r.results !== 1);
  expect(wrong).toEqual([]);
}

describe('chaos drills: batches', () => {
  it('given a node SIGKILLed mid-way through a cancel batch of 200, then a restarted node completes it and each instance is canceled exactly once', async () => {
    // 20 ms after each instance: the batch takes seconds, so the kill lands mid-way.
    const first = await startNode(db.url, { faults: 'batch:after-instance:delay:20', env: BATCH_ENV });
    const api = apiClient(first.url);
    await deploy(api, singleTaskBpmn('bd1', 'bd1-work'));
    const ids = await startMany(api, 'bd1', 200, 'bd1');
    const batchId = await createCancelBatch(api, 'bd1', 200);

    await waitFor(
      async () => {
        const p = await progressOf(batchId);
        return p.done >= 20 && p.done <= 100 ? true : undefined;
      },
      60_000,
      'the batch to be between 20 and 100 instances done',
    );
    await first.kill();
    const atKill = await progressOf(batchId);
    expect(atKill.state).toBe('running');
    expect(atKill.results).toBeLessThan(200);
    expect((await statusCounts(db, 'bd1')).running ?? 0).toBe(200 - atKill.results);

    const second = await startNode(db.url, { port: first.port, env: BATCH_ENV });
    await waitFor(
      async () => ((await progressOf(batchId)).state === 'completed' ? true : undefined),
      60_000,
      'the batch to complete on the restarted node',
    );
    expect(await progressOf(batchId)).toEqual({ state: 'completed', total: 200, done: 200, failed: 0, skipped: 0, results: 200 });
    await expectCanceledOnce(batchId, 'bd1', ids);
    const answer = await apiClient(second.url).get(`/api/batches/${batchId}`);
    expect(answer.body).toMatchObject({ state: 'completed', total: 200, done: 200 });
    await expectInvariants(db);
  }, 180_000);

  it('given a node that dies right after an instance commits and before the chunk moves the cursor, then that instance is not canceled again and the counts are exact', async () => {
    const doomed = await startNode(db.url, { faults: 'batch:after-instance:crash:once', env: BATCH_ENV });
    const api = apiClient(doomed.url);
    await deploy(api, singleTaskBpmn('bd2', 'bd2-work'));
    const ids = await startMany(api, 'bd2', 25, 'bd2');
    const batchId = await createCancelBatch(api, 'bd2', 25);
    await doomed.exited;
    expect(doomed.output()).toContain('baton-fault batch:after-instance crash');
    // One instance committed with its result; the cursor and counts never moved.
    expect(await progressOf(batchId)).toMatchObject({ state: 'running', done: 0, results: 1 });

    await startNode(db.url, { port: doomed.port, env: BATCH_ENV });
    await waitFor(
      async () => ((await progressOf(batchId)).state === 'completed' ? true : undefined),
      60_000,
      'the batch to complete on the restarted node',
    );
    expect(await progressOf(batchId)).toEqual({ state: 'completed', total: 25, done: 25, failed: 0, skipped: 0, results: 25 });
    await expectCanceledOnce(batchId, 'bd2', ids);
    await expectInvariants(db);
  }, 180_000);

  it('given a node SIGKILLed half-way through a retry batch of 500 incidents chosen by filter, then a restarted node completes it and each instance is retried exactly once', async () => {
    // start -> route: no flow holds until `ok` is set, so every instance starts in an incident
    const routed = inlineDefinitions('bd3', [
      '<bpmn:startEvent id="start" />',
      '<bpmn:exclusiveGateway id="route" />',
      '<bpmn:endEvent id="done" />',
      inlineFlow('f1', 'start', 'route'),
      '<bpmn:sequenceFlow id="f2" sourceRef="route" targetRef="done"><bpmn:conditionExpression xsi:type="bpmn:tFormalExpression">${ok == true}</bpmn:conditionExpression></bpmn:sequenceFlow>',
    ]);
    const first = await startNode(db.url, { faults: 'batch:after-instance:delay:10', env: BATCH_ENV });
    const api = apiClient(first.url);
    await deploy(api, routed);
    const ids = await startMany(api, 'bd3', 500, 'bd3');
    expect((await statusCounts(db, 'bd3')).incident).toBe(500);
    const created = await api.post('/api/batches', {
      operation: 'retry',
      filter: { definitionKey: 'bd3', withIncident: true },
      options: { variables: { ok: true } },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.total).toBe(500);
    const batchId = created.body.id as string;

    await waitFor(
      async () => {
        const p = await progressOf(batchId);
        return p.done >= 150 && p.done <= 350 ? true : undefined;
      },
      90_000,
      'the batch to be about half done',
    );
    await first.kill();
    const atKill = await progressOf(batchId);
    expect(atKill.state).toBe('running');
    expect(atKill.results).toBeLessThan(500);

    await startNode(db.url, { port: first.port, env: BATCH_ENV });
    await waitFor(
      async () => ((await progressOf(batchId)).state === 'completed' ? true : undefined),
      90_000,
      'the retry batch to complete on the restarted node',
    );
    expect(await progressOf(batchId)).toEqual({ state: 'completed', total: 500, done: 500, failed: 0, skipped: 0, results: 500 });
    const { rows } = await db.pool.query(
      `select i.id, i.status, (select count(*)::int from events e where e.instance_id = i.id and e.kind = 'incident:resolved') as retried
         from instances i where i.definition_key = 'bd3'`,
    );
    expect(rows.map((r) => r.id).sort()).toEqual([...ids].sort());
    expect(rows.filter((r) => r.status !== 'completed' || r.retried !== 1)).toEqual([]);
    await expectInvariants(db);
  }, 240_000);
});
