// /engine-rest/process-definition and /process-instance queries as Camunda 7 tools send them:
// list, count, latest by key, by id, the XML, instance queries (query string and POST body) and
// delete; filters Baton cannot answer are refused with a reason.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { singleTaskBpmn } from '../support/bpmn.ts';
import { deploy, waitForStatus } from '../support/flows.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { engineRest, startByKey } from './support.ts';

let t: TestServer;

beforeAll(async () => {
  t = await startTestServer();
  await deploy(t.api, singleTaskBpmn('pq_orders', 'pq-orders'));
  // a second version of the same key: a changed topic is a new XML
  await deploy(t.api, singleTaskBpmn('pq_orders', 'pq-orders-2'));
  await deploy(t.api, singleTaskBpmn('pq_refunds', 'pq-refunds'));
});
afterAll(async () => {
  await t?.close();
});

const rest = (method: string, path: string, body?: unknown) => engineRest(t.url, method, path, body);

describe('process definitions', () => {
  it('given two versions of a key, then the list, count, latest by key, by id and the XML answer as Camunda does', async () => {
    const all = await rest('GET', '/process-definition?key=pq_orders&sortBy=version&sortOrder=asc');
    expect(all.status).toBe(200);
    expect(all.body.map((d: { version: number }) => d.version)).toEqual([1, 2]);
    expect(all.body[0]).toMatchObject({ key: 'pq_orders', suspended: false, tenantId: null, resource: 'pq_orders.bpmn' });
    const latest = await rest(
      'GET',
      '/process-definition?latestVersion=true&keysIn=pq_orders,pq_refunds&sortBy=key&sortOrder=desc',
    );
    expect(latest.body.map((d: { key: string; version: number }) => `${d.key}:${d.version}`)).toEqual([
      'pq_refunds:1',
      'pq_orders:2',
    ]);
    expect((await rest('GET', '/process-definition/count?key=pq_orders')).body).toEqual({ count: 2 });

    const byKey = await rest('GET', '/process-definition/key/pq_orders');
    expect(byKey.body).toMatchObject({ key: 'pq_orders', version: 2 });
    const byId = await rest('GET', `/process-definition/${all.body[0].id}`);
    expect(byId.body).toMatchObject({ id: all.body[0].id, version: 1 });
    const xml = await rest('GET', `/process-definition/key/pq_orders/xml`);
    expect(xml.body.id).toBe(byKey.body.id);
    expect(xml.body.bpmn20Xml).toContain('pq-orders-2');
    expect((await rest('GET', `/process-definition/${all.body[0].id}/xml`)).body.bpmn20Xml).toContain('"pq-orders"');

    expect((await rest('GET', '/process-definition/key/nope')).status).toBe(404);
    expect((await rest('GET', '/process-definition/not-an-id')).status).toBe(404);
    expect((await rest('GET', '/process-definition?suspended=true')).body).toEqual([]);
  });
});

describe('process instances', () => {
  it('given running and ended instances, then queries list the running ones, POST bodies filter alike, and delete cancels', async () => {
    const a = await startByKey(t.url, 'pq_orders', { businessKey: 'pq-a' });
    const b = await startByKey(t.url, 'pq_orders', { businessKey: 'pq-b' });
    const refund = await startByKey(t.url, 'pq_refunds', { businessKey: 'pq-r' });
    const ids = (res: { body: { id: string }[] }) => res.body.map((i) => i.id).sort();

    expect(ids(await rest('GET', '/process-instance?processDefinitionKey=pq_orders'))).toEqual([a, b].sort());
    expect(ids(await rest('POST', '/process-instance', { processDefinitionKeyIn: ['pq_orders', 'pq_refunds'] }))).toEqual(
      [a, b, refund].sort(),
    );
    expect(
      ids(
        await rest('POST', '/process-instance?maxResults=1', {
          businessKeyLike: 'pq-%',
          sorting: [{ sortBy: 'businessKey', sortOrder: 'asc' }],
        }),
      ),
    ).toEqual([a]);
    expect((await rest('GET', `/process-instance/count?processInstanceIds=${a},${refund}`)).body).toEqual({ count: 2 });
    expect((await rest('POST', '/process-instance/count', { businessKey: 'pq-b' })).body).toEqual({ count: 1 });
    const one = (await rest('GET', `/process-instance?businessKey=pq-a`)).body[0];
    expect(one).toMatchObject({ id: a, businessKey: 'pq-a', ended: false, suspended: false });

    expect((await rest('DELETE', `/process-instance/${b}`)).status).toBe(204);
    await waitForStatus(t.api, b, 'canceled');
    expect(ids(await rest('GET', '/process-instance?processDefinitionKey=pq_orders'))).toEqual([a]);
    expect((await rest('DELETE', `/process-instance/${b}`)).status).toBe(404);
    expect((await rest('DELETE', '/process-instance/not-an-id')).status).toBe(404);
  });

  it('given filters Baton cannot answer or bad values, then 400 InvalidRequestException names them and nothing changes', async () => {
    const cases: [string, string, unknown?][] = [
      ['GET', '/process-instance?variables=amount_eq_5'],
      ['POST', '/process-instance', { tenantIdIn: ['t1'] }],
      ['GET', '/process-instance?sortBy=startTime&sortOrder=asc'],
      ['GET', '/process-instance?withIncident=maybe'],
      ['GET', '/process-instance?maxResults=-1'],
      ['POST', '/process-instance', [1]],
      ['GET', '/process-definition?categoryLike=abc'],
      ['GET', '/process-definition?version=two'],
      ['GET', '/process-definition?sortBy=category&sortOrder=asc'],
    ];
    const before = (await rest('GET', '/process-instance/count')).body.count;
    for (const [method, path, body] of cases) {
      const res = await rest(method, path, body);
      expect({ path, status: res.status, type: res.body.type }).toEqual({ path, status: 400, type: 'InvalidRequestException' });
    }
    expect((await rest('GET', '/process-instance/count')).body.count).toBe(before);
  });
});

describe('incidents and history', () => {
  it('given a failed task and ended instances, then /incident lists the open incident and /history/process-instance every instance with its state', async () => {
    await deploy(t.api, singleTaskBpmn('pq_fail', 'pq-fail'));
    const failing = await startByKey(t.url, 'pq_fail', { businessKey: 'pq-f' });
    const locked = await rest('POST', '/external-task/fetchAndLock', {
      workerId: 'w',
      maxTasks: 1,
      topics: [{ topicName: 'pq-fail', lockDuration: 10_000 }],
    });
    const taskId = locked.body[0].id as string;
    expect(
      (await rest('POST', `/external-task/${taskId}/failure`, { workerId: 'w', errorMessage: 'card service down', retries: 0 }))
        .status,
    ).toBe(204);
    await waitForStatus(t.api, failing, 'incident');

    const incidents = await rest('GET', `/incident?processInstanceId=${failing}`);
    expect(incidents.body).toEqual([
      expect.objectContaining({
        processInstanceId: failing,
        incidentType: 'failedExternalTask',
        activityId: 'work',
        configuration: taskId,
        incidentMessage: expect.stringContaining('card service down'),
      }),
    ]);
    expect((await rest('GET', '/incident/count?incidentType=failedExternalTask&processDefinitionKeyIn=pq_fail')).body).toEqual({
      count: 1,
    });
    expect((await rest('GET', `/incident/${incidents.body[0].id}`)).body.id).toBe(incidents.body[0].id);
    expect((await rest('GET', '/incident?tenantIdIn=t1')).status).toBe(400);

    const canceled = await startByKey(t.url, 'pq_fail', { businessKey: 'pq-c' });
    expect((await rest('DELETE', `/process-instance/${canceled}`)).status).toBe(204);
    await waitForStatus(t.api, canceled, 'canceled');
    const history = await rest('GET', '/history/process-instance?processDefinitionKey=pq_fail&sortBy=businessKey&sortOrder=asc');
    expect(history.body.map((h: { businessKey: string; state: string }) => `${h.businessKey}:${h.state}`)).toEqual([
      'pq-c:EXTERNALLY_TERMINATED',
      'pq-f:ACTIVE',
    ]);
    expect(history.body[0].endTime).toMatch(/\+0000$/);
    expect(history.body[0].durationInMillis).toBeGreaterThanOrEqual(0);
    expect(
      (await rest('POST', '/history/process-instance/count', { processDefinitionKey: 'pq_fail', finished: true })).body,
    ).toEqual({ count: 1 });
    expect((await rest('GET', `/history/process-instance/${failing}`)).body).toMatchObject({
      id: failing,
      state: 'ACTIVE',
      endTime: null,
    });
    expect((await rest('GET', '/history/process-instance?variables=a_eq_1')).status).toBe(400);

    // The history keeps the incident once it is resolved: retried here, with its end time.
    const incidentId = incidents.body[0].id as string;
    expect((await rest('GET', `/history/incident?processInstanceId=${failing}&open=true`)).body).toEqual([
      expect.objectContaining({ id: incidentId, open: true, resolved: false, endTime: null, processDefinitionKey: 'pq_fail' }),
    ]);
    expect((await t.api.post(`/api/incidents/${incidentId}/retry`, {})).status).toBe(200);
    expect((await rest('GET', `/incident?processInstanceId=${failing}`)).body).toEqual([]);
    const resolved = await rest('GET', `/history/incident?processInstanceId=${failing}&resolved=true`);
    expect(resolved.body).toEqual([
      expect.objectContaining({ id: incidentId, open: false, resolved: true, deleted: false, historyConfiguration: taskId }),
    ]);
    expect(resolved.body[0].endTime).toMatch(/\+0000$/);
    expect((await rest('GET', '/history/incident/count?processDefinitionKeyIn=pq_fail')).body).toEqual({ count: 1 });
    expect((await rest('GET', '/history/incident?deleted=true')).status).toBe(400);
    expect((await rest('GET', '/history/incident?open=true&resolved=true')).status).toBe(400);
  });
});

describe('process instance variables', () => {
  it('given Camunda variable writes, then modifications keep their types, PUT sets one, DELETE removes one, each recorded in the history', async () => {
    const id = await startByKey(t.url, 'pq_orders', {
      businessKey: 'pq-vars',
      variables: { amount: { value: 5, type: 'Integer' }, note: { value: 'x', type: 'String' } },
    });
    const posted = await rest('POST', `/process-instance/${id}/variables`, {
      modifications: { amount: { value: 7, type: 'Long' }, due: { value: '2026-12-24T17:00:00.000+0000', type: 'Date' } },
      deletions: ['note'],
    });
    expect(posted.status).toBe(204);
    let vars = (await rest('GET', `/process-instance/${id}/variables`)).body;
    expect(vars).toEqual({
      amount: { type: 'Long', value: 7, valueInfo: {} },
      due: { type: 'Date', value: '2026-12-24T17:00:00.000+0000', valueInfo: {} },
    });
    expect((await rest('PUT', `/process-instance/${id}/variables/approved`, { value: true, type: 'Boolean' })).status).toBe(204);
    expect((await rest('DELETE', `/process-instance/${id}/variables/due`)).status).toBe(204);
    vars = (await rest('GET', `/process-instance/${id}/variables`)).body;
    expect(Object.keys(vars).sort()).toEqual(['amount', 'approved']);
    const edits = (await t.api.get(`/api/instances/${id}/history`)).body.items.filter(
      (e: { kind: string }) => e.kind === 'variables:edited',
    );
    expect(edits.map((e: { data: { set: string[]; deleted: string[] } }) => [e.data.set, e.data.deleted])).toEqual([
      [['amount', 'due'], ['note']],
      [['approved'], []],
      [[], ['due']],
    ]);

    const bad = await rest('POST', `/process-instance/${id}/variables`, {
      modifications: { amount: { value: 'many', type: 'Long' } },
    });
    expect(bad).toMatchObject({ status: 400, body: { type: 'InvalidRequestException' } });
    expect((await rest('GET', `/process-instance/${id}/variables/amount`)).body.value).toBe(7);
    expect(
      (await rest('PUT', `/process-instance/${'0'.repeat(8)}-0000-4000-8000-000000000000/variables/x`, { value: 1 })).status,
    ).toBe(404);
  });
});
