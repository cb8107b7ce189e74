// /engine-rest deployment/create (multipart), process-definition start, process-instance and variable reads.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBpmn, singleTaskBpmn } from '../support/bpmn.ts';
import { deploy } from '../support/flows.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { checkResponse } from '../support/response-check.ts';
import { engineRest } from './support.ts';

let t: TestServer;

beforeAll(async () => {
  t = await startTestServer();
  await deploy(t.api, singleTaskBpmn('rp_single', 'rp-single'));
});
afterAll(async () => {
  await t.close();
});

async function deployForm(parts: { field: string; filename?: string; content: string }[]) {
  const form = new FormData();
  for (const p of parts) {
    if (p.filename) form.append(p.field, new Blob([p.content], { type: 'application/octet-stream' }), p.filename);
    else form.append(p.field, p.content);
  }
  const res = await fetch(`${t.url}/engine-rest/deployment/create`, { method: 'POST', body: form });
  const body = await res.json();
  const contentType = res.headers.get('content-type');
  checkResponse({ method: 'POST', path: '/engine-rest/deployment/create', status: res.status, contentType, body });
  return { status: res.status, headers: res.headers, body };
}

async function count(table: string): Promise<number> {
  const { rows } = await t.db.pool.query(`select count(*)::int as n from ${table}`);
  return rows[0].n;
}

describe('deployment/create', () => {
  it('deploys every .bpmn resource and answers deployedProcessDefinitions', async () => {
    const res = await deployForm([
      { field: 'deployment-name', content: 'orders' },
      { field: 'enable-duplicate-filtering', content: 'true' },
      { field: 'data', filename: 'one.bpmn', content: singleTaskBpmn('rp_one', 'rp-one') },
      { field: 'data2', filename: 'two.bpmn', content: singleTaskBpmn('rp_two', 'rp-two') },
      { field: 'notes', filename: 'readme.txt', content: 'ignored' },
    ]);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(res.body).toMatchObject({ name: 'orders', tenantId: null });
    const defs = Object.values(res.body.deployedProcessDefinitions) as any[];
    expect(defs.map((d) => [d.key, d.version, d.resource]).sort()).toEqual([
      ['rp_one', 1, 'one.bpmn'],
      ['rp_two', 1, 'two.bpmn'],
    ]);
    expect(defs[0].deploymentId).toBe(res.body.id);
  });

  it('refuses a resource that does not compile with 400 ParseException naming element ids, deploying nothing', async () => {
    const broken = buildBpmn(
      'rp_broken',
      [
        { id: 'start', type: 'startEvent' },
        { id: 'lonely', type: 'endEvent' },
      ],
      [{ from: 'start', to: 'missing_target' }],
    );
    const before = await count('definitions');
    const res = await deployForm([
      { field: 'ok', filename: 'fine.bpmn', content: singleTaskBpmn('rp_fine', 'rp-fine') },
      { field: 'bad', filename: 'broken.bpmn', content: broken },
    ]);
    expect(res.status).toBe(400);
    expect(res.body.type).toBe('ParseException');
    const errors = res.body.details['broken.bpmn'].errors as { mainElementId: string; elementIds: string[] }[];
    expect(errors.length).toBeGreaterThan(0);
    expect(errors.every((e) => typeof e.mainElementId === 'string' && e.elementIds.length === 1)).toBe(true);
    expect(res.body.details['fine.bpmn']).toBeUndefined();
    expect(await count('definitions')).toBe(before);
  });

  it('refuses a resource above 5 MB with 413, deploying nothing', async () => {
    const before = await count('definitions');
    const big = singleTaskBpmn('rp_big', 'rp-big').replace(
      '</bpmn:definitions>',
      `<!--${'x'.repeat(5 * 1024 * 1024)}--></bpmn:definitions>`,
    );
    const res = await deployForm([{ field: 'data', filename: 'big.bpmn', content: big }]);
    expect(res.status).toBe(413);
    expect(res.body.type).toBe('InvalidRequestException');
    expect(await count('definitions')).toBe(before);
  });

  it('refuses a form without resources, and a body that is not multipart', async () => {
    const empty = await deployForm([{ field: 'deployment-name', content: 'nothing' }]);
    expect(empty.status).toBe(400);
    expect(empty.body.type).toBe('InvalidRequestException');
    const json = await engineRest(t.url, 'POST', '/deployment/create', { xml: '<x/>' });
    expect(json.status).toBe(415);
  });
});

describe('process-definition start and process-instance', () => {
  it('starts by key with typed variables and reads them back with Camunda types', async () => {
    const res = await engineRest(t.url, 'POST', '/process-definition/key/rp_single/start', {
      businessKey: 'order-1',
      withVariablesInReturn: true,
      variables: {
        when: { value: '2024-02-29T23:59:59.123+0100', type: 'Date' },
        payload: { value: '{"a":[1,2]}', type: 'Json' },
        big: { value: 9007199254740991, type: 'long' },
        name: { value: 'Ada', type: 'String' },
        blob: { value: Buffer.from('raw').toString('base64'), type: 'Bytes' },
        thing: {
          value: '{"x":1}',
          type: 'Object',
          valueInfo: { objectTypeName: 'com.acme.Thing', serializationDataFormat: 'application/json' },
        },
        nothing: { value: null, type: 'Null' },
      },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(res.body).toMatchObject({ businessKey: 'order-1', ended: false, suspended: false, tenantId: null });
    const id = res.body.id;
    expect(res.body.variables.when).toEqual({ type: 'Date', value: '2024-02-29T22:59:59.123+0000', valueInfo: {} });
    const vars = (await engineRest(t.url, 'GET', `/process-instance/${id}/variables`)).body;
    expect(vars).toEqual({
      when: { type: 'Date', value: '2024-02-29T22:59:59.123+0000', valueInfo: {} },
      payload: { type: 'Json', value: '{"a":[1,2]}', valueInfo: {} },
      big: { type: 'Long', value: 9007199254740991, valueInfo: {} },
      name: { type: 'String', value: 'Ada', valueInfo: {} },
      blob: { type: 'Bytes', value: Buffer.from('raw').toString('base64'), valueInfo: {} },
      thing: {
        type: 'Object',
        value: '{"x":1}',
        valueInfo: { objectTypeName: 'com.acme.Thing', serializationDataFormat: 'application/json' },
      },
      nothing: { type: 'Null', value: null, valueInfo: {} },
    });
    // Native view: plain JSON.
    const native = (await t.api.get(`/api/instances/${id}`)).body.variables;
    expect(native.when).toBe('2024-02-29T22:59:59.123Z');
    expect(native.payload).toEqual({ a: [1, 2] });
    const bytes = await fetch(`${t.url}/engine-rest/process-instance/${id}/variables/blob/data`);
    expect(bytes.headers.get('content-type')).toBe('application/octet-stream');
    expect(Buffer.from(await bytes.arrayBuffer()).toString()).toBe('raw');
    const one = await engineRest(t.url, 'GET', `/process-instance/${id}/variables/name`);
    expect(one.body).toEqual({ type: 'String', value: 'Ada', valueInfo: {} });
    expect((await engineRest(t.url, 'GET', `/process-instance/${id}/variables/name/data`)).status).toBe(400);
    expect((await engineRest(t.url, 'GET', `/process-instance/${id}/variables/none`)).status).toBe(404);
  });

  it('a native write replaces the value: the Camunda type no longer applies and is inferred again', async () => {
    const start = await engineRest(t.url, 'POST', '/process-definition/key/rp_single/start', {
      variables: { when: { value: '2024-01-01T00:00:00.000+0000', type: 'Date' } },
    });
    const id = start.body.id;
    const fetched = (
      await t.api.post('/api/external-tasks/fetch-and-lock', {
        workerId: 'native',
        maxTasks: 10,
        topics: [{ name: 'rp-single', lockDurationMs: 10_000 }],
      })
    ).body;
    const task = fetched.find((x: { instanceId: string }) => x.instanceId === id);
    await t.api.post(`/api/external-tasks/${task.id}/complete`, {
      workerId: 'native',
      lockToken: task.lockToken,
      variables: { when: 'tomorrow' },
    });
    expect((await t.api.get(`/api/instances/${id}`)).body.status).toBe('completed');
    // Ended instances are gone from Camunda's runtime view.
    expect((await engineRest(t.url, 'GET', `/process-instance/${id}`)).status).toBe(404);
    const { rows } = await t.db.pool.query(
      `select count(*)::int as n from camunda_variables cv join instances i on i.id = cv.instance_id
      where i.id = $1 and cv.value_md5 = md5((i.variables -> cv.name)::text)`,
      [id],
    );
    expect(rows[0].n).toBe(0);
  });

  it('starts by definition id; GET process-instance answers Camunda fields', async () => {
    const def = (await t.api.get('/api/definitions/rp_single')).body;
    const res = await engineRest(t.url, 'POST', `/process-definition/${def.id}/start`, {});
    expect(res.status).toBe(200);
    const got = await engineRest(t.url, 'GET', `/process-instance/${res.body.id}`);
    expect(got.body).toEqual({
      links: [],
      id: res.body.id,
      definitionId: def.id,
      businessKey: null,
      caseInstanceId: null,
      ended: false,
      suspended: false,
      tenantId: null,
    });
  });

  it('unknown keys, ids and routes answer 404; bad start bodies 400 with nothing started', async () => {
    const before = await count('instances');
    expect((await engineRest(t.url, 'POST', '/process-definition/key/nope/start', {})).status).toBe(404);
    expect((await engineRest(t.url, 'POST', '/process-definition/not-a-uuid/start', {})).status).toBe(404);
    expect((await engineRest(t.url, 'GET', '/process-instance/00000000-0000-0000-0000-000000000000')).status).toBe(404);
    const bad = await engineRest(t.url, 'POST', '/process-definition/key/rp_single/start', {
      variables: { n: { value: 'x', type: 'Integer' } },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.type).toBe('InvalidRequestException');
    expect((await engineRest(t.url, 'POST', '/process-definition/key/rp_single/start', { businessKey: 5 })).status).toBe(400);
    const route = await engineRest(t.url, 'GET', '/no-such-resource');
    expect(route.status).toBe(404);
    expect(route.headers.get('content-type')).toBe('application/json');
    expect(await count('instances')).toBe(before);
  });

  it('names the engine and the Camunda REST version it follows', async () => {
    expect((await engineRest(t.url, 'GET', '/engine')).body).toEqual([{ name: 'default' }]);
    expect((await engineRest(t.url, 'GET', '/version')).body).toEqual({ version: '7.20.0' });
  });

  it('keeps idle keep-alive connections longer than a client waits between polls', () => {
    // The official client polls again after `interval` (300 ms by default); Node's default of 5 s races with agents that keep sockets 5 s.
    expect(t.server.http.keepAliveTimeout).toBeGreaterThanOrEqual(60_000);
  });

  it('accepts Basic and Bearer authorization headers (a server without tokens configured lets them through)', async () => {
    for (const authorization of ['Basic ZGVtbzpkZW1v', 'Bearer abc.def.ghi']) {
      const res = await fetch(`${t.url}/engine-rest/external-task/count`, { headers: { authorization } });
      expect(res.status).toBe(200);
    }
  });
});
