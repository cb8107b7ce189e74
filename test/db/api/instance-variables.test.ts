// An operator's variable edit through the HTTP API: guarded by the revision it was made on.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseTokens } from '../../../runtime/security/tokens.ts';
import { singleTaskBpmn } from '../../support/bpmn.ts';
import { complete, deploy, fetchOne, instanceOf, start, waitForStatus } from '../../support/flows.ts';
import { apiClient, startTestServer, type ApiClient, type TestServer } from '../../support/server.ts';

const ADMIN = 'admin-secret-0123456789';
const VIEWER = 'viewer-secret-0123456789';

let t: TestServer;
let viewer: ApiClient;
beforeAll(async () => {
  t = await startTestServer({
    token: ADMIN,
    auth: { tokens: parseTokens(`admin:ops-anna:${ADMIN},viewer:dash:${VIEWER}`), failures: { burst: 1_000, perMinute: 1_000 } },
    limits: { maxVariablesBytes: 2_000 },
  });
  viewer = apiClient(t.url, VIEWER);
  await deploy(t.api, singleTaskBpmn('edited', 'edited-task'));
});
afterAll(async () => {
  await t.close();
});

async function historyOf(id: string): Promise<{ kind: string; data: Record<string, unknown> }[]> {
  return (await t.api.get(`/api/instances/${id}/history`)).body.items;
}

describe('instance variable edits', () => {
  it('given the revision read, then the edit sets and deletes in one transition and the history names the caller', async () => {
    const id = await start(t.api, 'edited', { variables: { amount: -5, note: 'typo', keep: 1 } });
    const before = await instanceOf(t.api, id);
    expect(before.revision).toEqual(expect.any(Number));

    const res = await t.api.patch(`/api/instances/${id}/variables`, {
      revision: before.revision,
      set: { amount: 5, added: { a: [1] } },
      delete: ['note'],
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({ id, revision: before.revision + 1, status: 'running' });

    const after = await instanceOf(t.api, id);
    expect(after.variables).toEqual({ amount: 5, added: { a: [1] }, keep: 1 });
    expect(after.revision).toBe(before.revision + 1);
    const edited = (await historyOf(id)).filter((e) => e.kind === 'variables:edited');
    expect(edited).toEqual([
      expect.objectContaining({
        data: { set: ['amount', 'added'], deleted: ['note'], by: 'ops-anna', revision: before.revision },
      }),
    ]);

    const task = await fetchOne(t.api, 'w', 'edited-task');
    expect(task.variables).toMatchObject({ amount: 5 });
    expect((await complete(t.api, task, 'w')).status).toBe(204);
    await waitForStatus(t.api, id, 'completed');
  });

  it('given a stale revision, then 409 names the current revision and nothing changes', async () => {
    const id = await start(t.api, 'edited', { variables: { amount: 1 } });
    const read = await instanceOf(t.api, id);
    const first = await t.api.patch(`/api/instances/${id}/variables`, { revision: read.revision, set: { amount: 2 } });
    expect(first.status).toBe(200);
    const stale = await t.api.patch(`/api/instances/${id}/variables`, { revision: read.revision, set: { amount: 3 } });
    expect(stale.status).toBe(409);
    expect(stale.body).toMatchObject({ type: 'Conflict', details: { revision: read.revision + 1 } });
    expect(stale.body.message).toContain(`revision ${read.revision + 1}`);
    const now = await instanceOf(t.api, id);
    expect(now.variables).toEqual({ amount: 2 });
    expect(now.revision).toBe(read.revision + 1);
    expect((await historyOf(id)).filter((e) => e.kind === 'variables:edited')).toHaveLength(1);
  });

  it('given an invalid body, then 400 {type, message, details} and nothing changes', async () => {
    const id = await start(t.api, 'edited', { variables: { amount: 1 } });
    const read = await instanceOf(t.api, id);
    const bodies: unknown[] = [
      {},
      { set: { amount: 2 } },
      { revision: 'one', set: { amount: 2 } },
      { revision: read.revision },
      { revision: read.revision, set: { '': 1 } },
      { revision: read.revision, delete: 'amount' },
      { revision: read.revision, set: { amount: 2 }, delete: ['amount'] },
      { revision: read.revision, set: { amount: 2 }, extra: true },
    ];
    for (const body of bodies) {
      const res = await t.api.patch(`/api/instances/${id}/variables`, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body).toMatchObject({ type: 'ValidationError', message: expect.any(String) });
    }
    const big = await t.api.patch(`/api/instances/${id}/variables`, {
      revision: read.revision,
      set: { a: 'x'.repeat(1_000), b: 'y'.repeat(1_000) },
    });
    expect(big.status).toBe(413);
    const now = await instanceOf(t.api, id);
    expect(now.variables).toEqual({ amount: 1 });
    expect(now.revision).toBe(read.revision);
  });

  it('given an ended instance, an unknown one or a viewer, then the edit is refused', async () => {
    const id = await start(t.api, 'edited');
    expect((await t.api.post(`/api/instances/${id}/cancel`)).status).toBe(200);
    const ended = await instanceOf(t.api, id);
    const res = await t.api.patch(`/api/instances/${id}/variables`, { revision: ended.revision, set: { a: 1 } });
    expect(res.status).toBe(409);
    expect(res.body.details).toEqual({ status: 'canceled' });
    const unknown = await t.api.patch('/api/instances/00000000-0000-4000-8000-000000000000/variables', {
      revision: 1,
      set: { a: 1 },
    });
    expect(unknown.status).toBe(404);
    const running = await start(t.api, 'edited');
    const read = await instanceOf(t.api, running);
    expect((await viewer.patch(`/api/instances/${running}/variables`, { revision: read.revision, set: { a: 1 } })).status).toBe(
      403,
    );
  });

  it('given an operator token, then every operator action on an instance records who did it', async () => {
    await deploy(t.api, singleTaskBpmn('actions', 'actions-task', { retries: 0 }));
    const id = await start(t.api, 'actions');
    const task = await fetchOne(t.api, 'w', 'actions-task');
    const failed = await t.api.post(`/api/external-tasks/${task.id}/failure`, {
      workerId: 'w',
      lockToken: task.lockToken,
      errorMessage: 'broke',
      retries: 0,
    });
    expect(failed.status).toBe(204);
    await waitForStatus(t.api, id, 'incident');
    const incidentId = (await instanceOf(t.api, id)).incidents[0].id;
    expect((await t.api.post(`/api/instances/${id}/suspend`, {})).status).toBe(200);
    expect((await t.api.post(`/api/instances/${id}/resume`, {})).status).toBe(200);
    expect((await t.api.post(`/api/incidents/${incidentId}/retry`, {})).status).toBe(200);
    expect(
      (await t.api.post(`/api/instances/${id}/modify`, { instructions: [{ type: 'startBefore', elementId: 'end' }] })).status,
    ).toBe(200);
    expect((await t.api.post(`/api/instances/${id}/cancel`, {})).status).toBe(200);
    const events = await historyOf(id);
    for (const kind of ['instance:suspended', 'instance:resumed', 'incident:resolved', 'instance:modified', 'instance:canceled'])
      expect(events.find((e) => e.kind === kind)?.data, kind).toMatchObject({ by: 'ops-anna' });
  });
});
