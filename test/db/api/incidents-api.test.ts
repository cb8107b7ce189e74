// The operator's incident API on real PostgreSQL: filters, paging, counts, retry of many.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { retryIncidents } from '../../../runtime/engine/incidents.ts';
import { singleTaskBpmn } from '../../support/bpmn.ts';
import { complete, deploy, fetchOne, start, waitForStatus, type LockedTask } from '../../support/flows.ts';
import { startTestServer, type TestServer } from '../../support/server.ts';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({ limits: { maxVariablesBytes: 2_000 } });
  await deploy(t.api, singleTaskBpmn('billing', 'charge', { retries: 0 }));
  await deploy(t.api, singleTaskBpmn('shipping', 'ship', { retries: 0 }));
});
afterAll(async () => {
  await t.close();
});

/** Starts an instance and fails its one task for good: an open task_failed incident. */
async function failInto(key: string, topic: string, variables: Record<string, unknown> = {}): Promise<string> {
  const id = await start(t.api, key, { variables });
  const task = await waitForTaskOf(topic, id);
  const res = await t.api.post(`/api/external-tasks/${task.id}/failure`, {
    workerId: 'w',
    lockToken: task.lockToken,
    errorMessage: `${key} broke`,
    errorDetails: `Error: ${key} broke\n    at charge (worker.js:1:1)`,
    retries: 0,
  });
  expect(res.status, JSON.stringify(res.body)).toBe(204);
  await waitForStatus(t.api, id, 'incident');
  return id;
}

async function waitForTaskOf(topic: string, instanceId: string): Promise<LockedTask> {
  const task = await fetchOne(t.api, 'w', topic);
  expect(task.instanceId).toBe(instanceId);
  return task;
}

describe('incidents API', () => {
  it('given task incidents of two processes, then the list filters by process and kind, pages newest first and shows the worker error', async () => {
    const billing = [];
    for (let i = 0; i < 3; i++) billing.push(await failInto('billing', 'charge', { n: i }));
    const shipping = await failInto('shipping', 'ship');

    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page: any = await t.api.get(`/api/incidents?definitionKey=billing&limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.status, JSON.stringify(page.body)).toBe(200);
      seen.push(...page.body.items.map((x: { instanceId: string }) => x.instanceId));
      cursor = page.body.nextCursor;
    } while (cursor);
    expect(seen).toEqual([...billing].reverse());

    const one = await t.api.get(`/api/incidents?instanceId=${shipping}`);
    expect(one.body.items).toEqual([
      expect.objectContaining({
        definitionKey: 'shipping',
        version: 1,
        stepId: 'work',
        kind: 'task_failed',
        errorMessage: 'shipping broke',
        errorDetails: expect.stringContaining('at charge (worker.js:1:1)'),
      }),
    ]);
    expect((await t.api.get('/api/incidents?kind=bpmn_error&definitionKey=shipping')).body.items).toEqual([]);
    expect((await t.api.get('/api/incidents?definitionKey=shipping&newerThan=1h')).body.items).toHaveLength(1);
    expect((await t.api.get('/api/incidents?definitionKey=shipping&olderThan=1h')).body.items).toHaveLength(0);

    const count = await t.api.get('/api/incidents/count?definitionKey=billing');
    expect(count.body).toEqual({ count: 3, byKind: { task_failed: 3 } });
    expect((await t.api.get('/api/incidents?cursor=bm9wZQ')).status).toBe(400);
    expect((await t.api.get('/api/incidents?olderThan=yesterday')).status).toBe(400);
  });

  it('given a retry of many by filter with variables, then each incident answers for itself, the variables are set and the tasks come back', async () => {
    const a = await failInto('shipping', 'ship', { fixed: false });
    const b = await failInto('shipping', 'ship', { fixed: false });
    const res = await t.api.post('/api/incidents/retry', {
      filter: { definitionKey: 'shipping', kind: 'task_failed' },
      retries: 2,
      variables: { fixed: true },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.more).toBe(false);
    expect(res.body.results.length).toBeGreaterThanOrEqual(2);
    expect(res.body.results.every((r: { ok: boolean }) => r.ok)).toBe(true);
    for (const id of [a, b]) {
      const instance = await waitForStatus(t.api, id, 'running');
      expect(instance.variables).toEqual({ fixed: true });
      expect(instance.tasks).toEqual([expect.objectContaining({ state: 'ready', retriesLeft: 2 })]);
    }
    expect((await t.api.get('/api/incidents/count?definitionKey=shipping')).body.count).toBe(0);
  });

  it('given a retry of many by ids, then a resolved or unknown id answers not ok with its reason and the rest are retried', async () => {
    const id = await failInto('billing', 'charge', { n: 9 });
    const [incident] = (await t.api.get(`/api/incidents?instanceId=${id}`)).body.items;
    const unknown = '00000000-0000-4000-8000-000000000000';
    const first = await t.api.post('/api/incidents/retry', { ids: [incident.id, unknown] });
    expect(first.body.results).toEqual([
      { id: incident.id, ok: true, instanceStatus: 'running' },
      { id: unknown, ok: false, reason: 'not_found' },
    ]);
    const again = await t.api.post('/api/incidents/retry', { ids: [incident.id] });
    expect(again.body.results).toEqual([{ id: incident.id, ok: false, reason: 'not_open' }]);
    const task = await waitForTaskOf('charge', id);
    expect((await complete(t.api, task, 'w')).status).toBe(204);
    await waitForStatus(t.api, id, 'completed');
  });

  it('given a bad retry body, then 400 and nothing changes', async () => {
    const id = await failInto('billing', 'charge', { n: 10 });
    for (const body of [{}, { ids: [] }, { ids: ['x'] }, { ids: [id], filter: {} }, { filter: { nope: 1 } }]) {
      const res = await t.api.post('/api/incidents/retry', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body).toMatchObject({ type: 'ValidationError', message: expect.any(String) });
    }
    expect((await t.api.get(`/api/incidents?instanceId=${id}`)).body.items).toHaveLength(1);
  });

  it('given a single retry whose variables pass the limit, then 413 and the incident stays open', async () => {
    const id = await failInto('billing', 'charge', { n: 11, pad: 'y'.repeat(1_000) });
    const [incident] = (await t.api.get(`/api/incidents?instanceId=${id}`)).body.items;
    const res = await t.api.post(`/api/incidents/${incident.id}/retry`, { variables: { big: 'x'.repeat(1_500) } });
    expect(res.status).toBe(413);
    expect((await t.api.get(`/api/incidents?instanceId=${id}`)).body.items).toHaveLength(1);
    const ok = await t.api.post(`/api/incidents/${incident.id}/retry`, { variables: { n: 12 } });
    expect(ok.status).toBe(200);
    expect((await waitForStatus(t.api, id, 'running')).variables).toMatchObject({ n: 12 });
  });

  it('given more open incidents than one call retries, then it says more and the next call with the same filter retries the rest', async () => {
    await deploy(t.api, singleTaskBpmn('bulk', 'bulk-task', { retries: 0 }));
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push(await failInto('bulk', 'bulk-task'));
    const first = await retryIncidents(t.server.engine, { filter: { definitionKey: 'bulk' } }, 2);
    expect(first.more).toBe(true);
    expect(first.results.map((r) => r.ok)).toEqual([true, true]);
    const second = await retryIncidents(t.server.engine, { filter: { definitionKey: 'bulk' } }, 2);
    expect(second.more).toBe(false);
    expect(second.results).toHaveLength(1);
    for (const id of ids) await waitForStatus(t.api, id, 'running');
  });
});
