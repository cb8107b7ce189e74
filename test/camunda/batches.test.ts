// Camunda 7's bulk operations on Baton's durable batches, over real HTTP and PostgreSQL:
// async delete and suspend or activate make batches, the synchronous suspensions apply at once,
// /batch and /batch/statistics show the running batches, and refused inputs change nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBatch, runBatchChunk } from '../../runtime/engine/batches.ts';
import { claimBatch } from '../../runtime/store/batches.ts';
import { singleTaskBpmn } from '../support/bpmn.ts';
import { deploy } from '../support/flows.ts';
import { startTestServer, waitFor, type TestServer } from '../support/server.ts';
import { engineRest, startByKey } from './support.ts';

let t: TestServer;

beforeAll(async () => {
  // Chunks of 2; no polling: a batch made through an API starts at once (its node is poked),
  // one made through the engine waits for the test to run it.
  t = await startTestServer({ batches: { chunkSize: 2, intervalMs: 600_000, leaseMs: 30_000 } });
  await deploy(t.api, singleTaskBpmn('cb_parcel', 'cb-pack'));
  await deploy(t.api, singleTaskBpmn('cb_hold', 'cb-hold'));
  await deploy(t.api, singleTaskBpmn('cb_hold', 'cb-hold-2'));
  await deploy(t.api, singleTaskBpmn('cb_refused', 'cb-refused'));
  await deploy(t.api, singleTaskBpmn('cb_watch', 'cb-watch'));
});
afterAll(async () => {
  await t?.close();
});

const rest = (method: string, path: string, body?: unknown) => engineRest(t.url, method, path, body);

// A start with a business key already used answers that instance: each start gets its own.
let started = 0;
async function startMany(key: string, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push(await startByKey(t.url, key, { businessKey: `${key}-${started++}` }));
  return ids;
}

async function waitForNativeBatch(id: string, state: string): Promise<any> {
  return waitFor(
    async () => {
      const res = await t.api.get(`/api/batches/${id}`);
      return res.body.state === state ? res.body : undefined;
    },
    20_000,
    `batch ${id} to be ${state}`,
  );
}

async function suspendedOf(ids: string[]): Promise<boolean[]> {
  const { rows } = await t.db.pool.query(
    'select id, suspended_at is not null as suspended from instances where id = any($1::uuid[])',
    [ids],
  );
  const byId = new Map(rows.map((r) => [r.id as string, r.suspended as boolean]));
  return ids.map((id) => byId.get(id) ?? false);
}

async function batchCount(): Promise<number> {
  return (await t.db.pool.query('select count(*)::int as n from batches')).rows[0].n as number;
}

describe('POST /process-instance/delete', () => {
  it('given three instances by id, then an instance-deletion batch completes and cancels each once', async () => {
    const ids = await startMany('cb_parcel', 3);
    const other = await startByKey(t.url, 'cb_parcel');
    const res = await rest('POST', '/process-instance/delete', { processInstanceIds: ids, skipCustomListeners: true });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({
      type: 'instance-deletion',
      totalJobs: 3,
      invocationsPerBatchJob: 1,
      suspended: false,
      tenantId: null,
      seedJobDefinitionId: null,
    });
    const native = await waitForNativeBatch(res.body.id, 'completed');
    expect(native).toMatchObject({ operation: 'cancel', filter: { instanceIds: ids }, total: 3, done: 3, failed: 0, skipped: 0 });

    const { rows } = await t.db.pool.query(
      `select instance_id, count(*)::int as n from events where kind = 'instance:canceled' and instance_id = any($1::uuid[]) group by instance_id`,
      [[...ids, other]],
    );
    expect(new Map(rows.map((r) => [r.instance_id, r.n]))).toEqual(new Map(ids.map((id) => [id, 1])));
    expect((await t.api.get(`/api/instances/${other}`)).body.status).toBe('running');
    // Ended: Camunda keeps a finished batch only in its history.
    expect((await rest('GET', `/batch/${res.body.id}`)).status).toBe(404);
  });

  it('given a query, then the running instances it matches when the batch is made are canceled', async () => {
    const ids = await startMany('cb_parcel', 2);
    const res = await rest('POST', '/process-instance/delete', {
      processInstanceQuery: { processDefinitionKey: 'cb_parcel', processInstanceIds: ids },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.totalJobs).toBe(2);
    await waitForNativeBatch(res.body.id, 'completed');
    for (const id of ids) expect((await t.api.get(`/api/instances/${id}`)).body.status).toBe('canceled');
  });
});

describe('suspending and activating many instances', () => {
  it('given a definition key, when suspended-async then activated, then batches suspend and activate every instance', async () => {
    const ids = await startMany('cb_hold', 3);
    const suspend = await rest('POST', '/process-instance/suspended-async', {
      suspended: true,
      processInstanceQuery: { processDefinitionKey: 'cb_hold' },
    });
    expect(suspend.status, JSON.stringify(suspend.body)).toBe(200);
    expect(suspend.body).toMatchObject({ type: 'instance-update-suspension-state', totalJobs: 3 });
    expect(await waitForNativeBatch(suspend.body.id, 'completed')).toMatchObject({ operation: 'suspend', done: 3 });
    expect(await suspendedOf(ids)).toEqual([true, true, true]);
    expect((await rest('GET', '/process-instance/count?processDefinitionKey=cb_hold&suspended=true')).body).toEqual({ count: 3 });

    const activate = await rest('POST', '/process-instance/suspended-async', { suspended: false, processInstanceIds: ids });
    expect(activate.status, JSON.stringify(activate.body)).toBe(200);
    expect(await waitForNativeBatch(activate.body.id, 'completed')).toMatchObject({ operation: 'resume', done: 3 });
    expect(await suspendedOf(ids)).toEqual([false, false, false]);
  });

  it('given two versions, when PUT process-definition suspended with includeProcessInstances, then that version’s instances change at once', async () => {
    const versions = await rest('GET', '/process-definition?key=cb_hold&sortBy=version&sortOrder=asc');
    const [v1, v2] = versions.body as { id: string }[];
    const onV2 = await startByKey(t.url, 'cb_hold'); // the latest version
    const started = await rest('POST', `/process-definition/${v1!.id}/start`, {});
    const firstVersion = started.body.id as string;

    const res = await rest('PUT', `/process-definition/${v1!.id}/suspended`, { suspended: true, includeProcessInstances: true });
    expect(res.status, JSON.stringify(res.body)).toBe(204);
    expect(await suspendedOf([firstVersion, onV2])).toEqual([true, false]);

    const byKey = await rest('PUT', '/process-definition/key/cb_hold/suspended', {
      suspended: true,
      includeProcessInstances: true,
      executionDate: null,
    });
    expect(byKey.status).toBe(204);
    expect(await suspendedOf([firstVersion, onV2])).toEqual([true, true]);
    expect(v2).toBeDefined();

    const all = await rest('PUT', '/process-instance/suspended', { suspended: false, processDefinitionKey: 'cb_hold' });
    expect(all.status).toBe(204);
    expect(await suspendedOf([firstVersion, onV2])).toEqual([false, false]);
    const one = await rest('PUT', '/process-instance/suspended', { suspended: true, processInstanceIds: [onV2] });
    expect(one.status).toBe(204);
    expect(await suspendedOf([firstVersion, onV2])).toEqual([false, true]);
    const byId = await rest('PUT', '/process-instance/suspended', { suspended: false, processDefinitionId: v2!.id });
    expect(byId.status).toBe(204);
    expect(await suspendedOf([onV2])).toEqual([false]);
  });
});

describe('refused inputs', () => {
  it('given inputs Baton cannot honour, then each answers 400 naming the field and nothing changes', async () => {
    const ids = await startMany('cb_refused', 2);
    const definition = (await rest('GET', '/process-definition/key/cb_refused')).body.id as string;
    const before = await batchCount();
    const refused: [string, string, unknown, RegExp][] = [
      ['PUT', `/process-definition/${definition}/suspended`, { suspended: true }, /includeProcessInstances/],
      [
        'PUT',
        `/process-definition/${definition}/suspended`,
        { suspended: true, includeProcessInstances: false },
        /does not suspend/,
      ],
      ['PUT', '/process-definition/key/cb_refused/suspended', { suspended: true, includeProcessInstances: false }, /definitions/],
      [
        'PUT',
        `/process-definition/${definition}/suspended`,
        { suspended: true, includeProcessInstances: true, executionDate: '2030-01-01T00:00:00.000+0000' },
        /executionDate/,
      ],
      ['POST', '/process-instance/delete', { processInstanceIds: ids, deleteReason: 'tidy up' }, /deleteReason/],
      ['POST', '/process-instance/delete', { processInstanceIds: ids, skipSubprocesses: true }, /skipSubprocesses/],
      ['POST', '/process-instance/delete', { processInstanceIds: ids, skipCustomListeners: false }, /skipCustomListeners/],
      ['POST', '/process-instance/delete', { processInstanceIds: ids, skipIoMappings: false }, /skipIoMappings/],
      ['POST', '/process-instance/delete', { historicProcessInstanceQuery: {} }, /historicProcessInstanceQuery/],
      ['POST', '/process-instance/delete', { processInstanceIds: [...ids, crypto.randomUUID()] }, /failIfNotExists/],
      ['POST', '/process-instance/delete', {}, /processInstanceIds/],
      ['POST', '/process-instance/delete', { processInstanceQuery: { processDefinitionKey: 'nobody' } }, /empty/],
      ['POST', '/process-instance/delete', { processInstanceIds: ['not-an-id'] }, /not-an-id/],
      ['POST', '/process-instance/suspended-async', { processInstanceIds: ids }, /suspended/],
      [
        'POST',
        '/process-instance/suspended-async',
        { suspended: true, processInstanceQuery: { tenantIdIn: ['t'] } },
        /tenantIdIn/,
      ],
      [
        'PUT',
        '/process-instance/suspended',
        { suspended: true, processDefinitionKey: 'cb_refused', processInstanceIds: ids },
        /exactly one/,
      ],
      ['PUT', '/process-instance/suspended', { suspended: true }, /exactly one/],
      [
        'PUT',
        '/process-instance/suspended',
        { suspended: true, processDefinitionKey: 'cb_refused', processDefinitionTenantId: 't' },
        /tenant/,
      ],
      [
        'PUT',
        '/process-instance/suspended',
        { suspended: true, processInstanceIds: [...ids, ...Array.from({ length: 999 }, () => crypto.randomUUID())] },
        /at most 1000 instances.*suspended-async/,
      ],
      [
        'POST',
        '/process-instance/delete',
        { processInstanceIds: Array.from({ length: 10_001 }, () => crypto.randomUUID()) },
        /processInstanceIds/,
      ],
      ['GET', '/batch?tenantIdIn=a', undefined, /tenantIdIn/],
      ['GET', '/batch/statistics?sortBy=tenantId&sortOrder=asc', undefined, /batchId/],
      ['DELETE', `/batch/${crypto.randomUUID()}`, undefined, /Unable to delete batch/],
    ];
    for (const [method, path, body, message] of refused) {
      const res = await rest(method, path, body);
      expect(res.status, `${method} ${path} ${JSON.stringify(body)}: ${JSON.stringify(res.body)}`).toBe(400);
      expect(res.body.type).toBe('InvalidRequestException');
      expect(res.body.message).toMatch(message);
    }
    expect(await batchCount()).toBe(before);
    expect(await suspendedOf(ids)).toEqual([false, false]);
    for (const id of ids) expect((await t.api.get(`/api/instances/${id}`)).body.status).toBe('running');
    expect(
      (await rest('PUT', '/process-definition/key/nobody/suspended', { suspended: true, includeProcessInstances: true })).status,
    ).toBe(404);
  });

  it('given more ids than a filter holds, then the native batch is refused and the count takes ids separated by commas', async () => {
    const ids = await startMany('cb_refused', 1);
    const tooMany = Array.from({ length: 10_001 }, () => crypto.randomUUID());
    const big = await t.api.post('/api/batches', { operation: 'cancel', filter: { instanceIds: tooMany } });
    expect(big.status).toBe(400);
    const count = await t.api.get(`/api/instances/count?instanceIds=${ids[0]},${crypto.randomUUID()}`);
    expect(count.status, JSON.stringify(count.body)).toBe(200);
    expect(count.body.count).toBe(1);
    expect((await t.api.get('/api/instances/count?instanceIds=nope')).status).toBe(400);
  });
});

describe('GET /batch and /batch/statistics', () => {
  it('given a running batch, then the list, count and statistics show it while it runs and not once it stopped', async () => {
    const ids = await startMany('cb_watch', 3);
    const batch = await createBatch(t.server.engine, {
      operation: 'suspend',
      filter: { instanceIds: ids },
      createdBy: 'ops (admin)',
    });
    const listed = await rest('GET', `/batch?type=instance-update-suspension-state&batchId=${batch.id}`);
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual([
      expect.objectContaining({
        id: batch.id,
        type: 'instance-update-suspension-state',
        totalJobs: 3,
        jobsCreated: 0,
        createUserId: 'ops (admin)',
      }),
    ]);
    expect((await rest('GET', '/batch?type=instance-deletion')).body.map((b: { id: string }) => b.id)).not.toContain(batch.id);
    expect((await rest('GET', '/batch/count')).body).toEqual({ count: 1 });
    expect((await rest('GET', `/batch/${batch.id}`)).body).toMatchObject({ id: batch.id, suspended: false });
    expect((await rest('GET', '/batch/statistics')).body).toEqual([
      expect.objectContaining({ id: batch.id, remainingJobs: 3, completedJobs: 0, failedJobs: 0 }),
    ]);

    // One chunk of 2 by hand: the statistics move per instance.
    const claimed = await claimBatch(t.db.pool, 'test-node', 30_000);
    expect(claimed?.id).toBe(batch.id);
    const chunk = await runBatchChunk(t.server.engine, claimed!, { owner: 'test-node', chunkSize: 2, leaseMs: 30_000 });
    expect(chunk.state).toBe('advanced');
    expect((await rest('GET', '/batch/statistics?withoutFailures=true')).body).toEqual([
      expect.objectContaining({ id: batch.id, jobsCreated: 2, remainingJobs: 1, completedJobs: 2, failedJobs: 0 }),
    ]);
    expect((await rest('GET', '/batch/statistics?withFailures=true')).body).toEqual([]);
    expect((await rest('GET', '/batch/statistics/count')).body).toEqual({ count: 1 });

    expect((await rest('DELETE', `/batch/${batch.id}?cascade=true`)).status).toBe(400);
    expect((await rest('DELETE', `/batch/${batch.id}`)).status).toBe(204);
    expect((await t.api.get(`/api/batches/${batch.id}`)).body).toMatchObject({ state: 'canceled', done: 2 });
    expect((await rest('GET', `/batch/${batch.id}`)).status).toBe(404);
    expect((await rest('GET', '/batch')).body).toEqual([]);
    expect((await rest('GET', '/batch/statistics')).body).toEqual([]);
    expect((await rest('GET', '/batch/count')).body).toEqual({ count: 0 });
    const reached = [...ids].sort().slice(0, 2); // the batch takes instances in id order
    expect(await suspendedOf(ids)).toEqual(ids.map((id) => reached.includes(id)));
  });
});
