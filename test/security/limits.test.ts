// Every limit answers 4xx JSON naming it (503 for parked polls) and changes nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { singleTaskBpmn } from '../support/bpmn.ts';
import { deploy, fetchOne, start, type LockedTask } from '../support/flows.ts';
import { startTestServer, waitFor, type TestServer } from '../support/server.ts';
import { databaseDigest } from './digest.ts';

let t: TestServer;
let task: LockedTask;
const MAX_VARS = 2000;

beforeAll(async () => {
  t = await startTestServer({
    limits: { maxVariablesBytes: MAX_VARS, maxParkedPolls: 1, jsonLimit: '20kb', xmlLimit: '30kb', maxBpmnElements: 200 },
  });
  await deploy(t.api, singleTaskBpmn('limited', 'limited-task'));
  await start(t.api, 'limited', { businessKey: 'bk' });
  task = await fetchOne(t.api, 'holder', 'limited-task');
});
afterAll(async () => t?.close());

const bigVars = { blob: 'x'.repeat(MAX_VARS) };
/** JSON text of `levels` nested arrays around `inner` (built as text: JSON.stringify of such a value would overflow this test's own stack) */
const nested = (levels: number, inner = '1') => `${'['.repeat(levels)}${inner}${']'.repeat(levels)}`;

describe('limits', () => {
  const cases: [string, string, () => unknown, number, string, string?][] = [
    [
      'start variables',
      '/api/instances',
      () => ({ definitionKey: 'limited', variables: bigVars }),
      413,
      'BATON_MAX_VARIABLES_BYTES',
    ],
    [
      'complete variables',
      '',
      () => ({ workerId: 'holder', lockToken: task.lockToken, variables: bigVars }),
      413,
      'BATON_MAX_VARIABLES_BYTES',
    ],
    ['message variables', '/api/messages', () => ({ name: 'm', variables: bigVars }), 413, 'BATON_MAX_VARIABLES_BYTES'],
    ['signal variables', '/api/signals', () => ({ name: 's', variables: bigVars }), 413, 'BATON_MAX_VARIABLES_BYTES'],
    [
      'Camunda start variables',
      '/engine-rest/process-definition/key/limited/start',
      () => ({ variables: { blob: { value: 'x'.repeat(MAX_VARS), type: 'String' } } }),
      413,
      'BATON_MAX_VARIABLES_BYTES',
    ],
    [
      'Camunda message variables',
      '/engine-rest/message',
      () => ({ messageName: 'm', processVariables: { blob: { value: 'x'.repeat(MAX_VARS), type: 'String' } } }),
      413,
      'BATON_MAX_VARIABLES_BYTES',
    ],
    ['JSON body', '/api/definitions', () => ({ xml: 'x'.repeat(25_000) }), 413, 'limit'],
    [
      'Camunda JSON body (its own, larger limit is not the one)',
      '/engine-rest/process-definition/key/limited/start',
      () => ({ businessKey: 'x'.repeat(100) }),
      200,
      '',
    ],
    ['BPMN elements', '/api/definitions', () => ({ xml: `<a>${'<b/>'.repeat(250)}</a>` }), 413, 'BATON_MAX_BPMN_ELEMENTS'],
    [
      'BPMN elements when linting',
      '/api/definitions/lint',
      () => ({ xml: `<a>${'<b/>'.repeat(250)}</a>` }),
      413,
      'BATON_MAX_BPMN_ELEMENTS',
    ],
    ['XML body', '/api/definitions', () => `<a>${'x'.repeat(40_000)}</a>`, 413, 'limit', 'application/xml'],
    ['NUL in a string', '/api/instances', () => ({ definitionKey: 'a\u0000b' }), 400, 'noNulCharacters'],
    [
      'NUL in a Camunda worker id',
      '/engine-rest/external-task/fetchAndLock',
      () => ({ workerId: '\u0000', maxTasks: 1, topics: [{ topicName: 't', lockDuration: 1000 }] }),
      400,
      'noNulCharacters',
    ],
    ['NUL in a path', '/api/definitions/a%00b/versions/1', () => ({}), 400, 'noNulCharacters'],
    [
      'XML with a DOCTYPE',
      '/api/definitions',
      () => '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "b">]><x>&a;</x>',
      400,
      'DOCTYPE',
      'application/xml',
    ],
  ];
  for (const [label, route, body, status, names, contentType] of cases) {
    it(`${label}: ${status}${names ? ` naming ${names}` : ''}, nothing changed`, async () => {
      const before = await databaseDigest(t.db.pool);
      const res = await t.api.post(
        route || `/api/external-tasks/${task.id}/complete`,
        body(),
        contentType ? { contentType } : undefined,
      );
      expect(res.status, JSON.stringify(res.body)).toBe(status);
      if (status >= 400) {
        expect(JSON.stringify(res.body)).toContain(names);
        expect(await databaseDigest(t.db.pool)).toBe(before);
      }
    });
  }

  it('a complete that would grow the instance past the variables limit: 413 naming it, nothing changed', async () => {
    await deploy(t.api, singleTaskBpmn('merged', 'merged-task'));
    await start(t.api, 'merged', { variables: { first: 'a'.repeat(1200) } });
    const mine = await fetchOne(t.api, 'holder', 'merged-task');
    const before = await databaseDigest(t.db.pool);
    const res = await t.api.post(`/api/external-tasks/${mine.id}/complete`, {
      workerId: 'holder',
      lockToken: mine.lockToken,
      variables: { second: 'b'.repeat(1200) },
    });
    expect(res.status).toBe(413);
    expect(res.body).toMatchObject({ type: 'PayloadTooLarge', details: { limit: 'maxVariablesBytes', max: MAX_VARS } });
    expect(res.body.message).toContain('the instance would hold');
    expect(await databaseDigest(t.db.pool)).toBe(before);
    // Overwriting the big variable keeps the size: accepted.
    expect(
      (
        await t.api.post(`/api/external-tasks/${mine.id}/complete`, {
          workerId: 'holder',
          lockToken: mine.lockToken,
          variables: { first: 'c'.repeat(1200) },
        })
      ).status,
    ).toBe(204);
  });

  it('parked long polls: past the limit a waiting fetch gets 503 naming the limit; a fetch that does not wait still works', async () => {
    const parked = t.api.post('/api/external-tasks/fetch-and-lock', {
      workerId: 'w',
      maxTasks: 1,
      waitMs: 60_000,
      topics: [{ name: 'idle', lockDurationMs: 1000 }],
    });
    await waitFor(async () => (t.server.parkedPolls.parked >= 1 ? true : undefined), 10_000, 'a parked poll');
    const refused = await t.api.post('/api/external-tasks/fetch-and-lock', {
      workerId: 'w',
      maxTasks: 1,
      waitMs: 1000,
      topics: [{ name: 'idle', lockDurationMs: 1000 }],
    });
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(refused.body).toMatchObject({ type: 'TooManyParkedPolls', details: { limit: 'maxParkedPolls', max: 1 } });
    expect(refused.body.message).toContain('BATON_MAX_PARKED_POLLS');
    const camunda = await t.api.post('/engine-rest/external-task/fetchAndLock', {
      workerId: 'w',
      maxTasks: 1,
      asyncResponseTimeout: 1000,
      topics: [{ topicName: 'idle', lockDuration: 1000 }],
    });
    expect(camunda.status).toBe(503);
    // The routes answer a trailing slash or another case as well; the limit must too.
    for (const path of [
      '/api/external-tasks/fetch-and-lock/',
      '/API/External-Tasks/Fetch-And-Lock',
      '/engine-rest/external-task/fetchAndLock/',
    ]) {
      const body = path.startsWith('/engine-rest')
        ? { workerId: 'w', maxTasks: 1, asyncResponseTimeout: 1000, topics: [{ topicName: 'idle', lockDuration: 1000 }] }
        : { workerId: 'w', maxTasks: 1, waitMs: 1000, topics: [{ name: 'idle', lockDurationMs: 1000 }] };
      expect((await t.api.post(path, body)).status, path).toBe(503);
    }
    expect(
      (
        await t.api.post('/api/external-tasks/fetch-and-lock', {
          workerId: 'w',
          maxTasks: 1,
          topics: [{ name: 'idle', lockDurationMs: 1000 }],
        })
      ).status,
    ).toBe(200);
    // Wake the parked poll: a task on its topic.
    await deploy(t.api, singleTaskBpmn('idle', 'idle'));
    await start(t.api, 'idle');
    expect((await parked).status).toBe(200);
  });

  it('BPMN elements on the Camunda deployment upload: 413 naming the limit and the resource, nothing deployed; a small one deploys', async () => {
    const upload = async (name: string, xml: string) => {
      const form = new FormData();
      form.append('deployment-name', 'limited');
      form.append('upload', new Blob([xml], { type: 'application/octet-stream' }), name);
      const res = await fetch(`${t.url}/engine-rest/deployment/create`, { method: 'POST', body: form });
      return { status: res.status, type: res.headers.get('content-type'), body: await res.json() };
    };
    const before = await databaseDigest(t.db.pool);
    const padded = singleTaskBpmn('camunda-big', 'big-task').replace(
      '<bpmn:startEvent',
      `${Array.from({ length: 200 }, (_, i) => `<bpmn:dataObject id="d${i}"/>`).join('')}<bpmn:startEvent`,
    );
    const refused = await upload('big.bpmn', padded);
    expect(refused.status).toBe(413);
    expect(refused.type).toBe('application/json');
    expect(refused.body).toMatchObject({
      type: 'PayloadTooLarge',
      details: { limit: 'maxBpmnElements', max: 200, resource: 'big.bpmn' },
    });
    expect(refused.body.message).toContain('BATON_MAX_BPMN_ELEMENTS');
    expect(await databaseDigest(t.db.pool)).toBe(before);
    expect((await upload('small.bpmn', singleTaskBpmn('camunda-small', 'small-task'))).status).toBe(200);
  });

  it('CORS is off: no allow-origin header even when a browser sends an Origin', async () => {
    const res = await fetch(`${t.url}/api/definitions`, { headers: { origin: 'https://evil.example' } });
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
  });

  it("the designer pages carry helmet's security headers", async () => {
    const res = await fetch(`${t.url}/`);
    expect(res.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('x-frame-options')).toBe('SAMEORIGIN');
  });
});

// A body of 20,000 nested arrays is 40 KB: inside the default size limits, deep enough to overflow
// every recursive walk of it. This server keeps those defaults.
describe('JSON nesting (BATON_MAX_JSON_DEPTH, default 64)', () => {
  let d: TestServer;
  beforeAll(async () => {
    d = await startTestServer();
    await deploy(d.api, singleTaskBpmn('nested', 'nested-task'));
  });
  afterAll(async () => d?.close());

  const cases: [string, string, () => unknown, number, string][] = [
    // the body, its variables and 63 arrays: 65 levels
    [
      'one level past the limit',
      '/api/instances',
      () => `{"definitionKey":"nested","variables":{"a":${nested(63)}}}`,
      400,
      'BATON_MAX_JSON_DEPTH',
    ],
    // used to end in a 500 (a stack overflow measuring the variables)
    [
      '20,000 levels',
      '/api/instances',
      () => `{"definitionKey":"nested","variables":{"a":${nested(20_000)}}}`,
      400,
      'BATON_MAX_JSON_DEPTH',
    ],
    // the surrogate check's walk overflowed outside any router layer: an uncaught exception that stopped the process
    [
      '20,000 levels around a lone surrogate escape',
      '/api/instances',
      () => `{"definitionKey":"nested","variables":{"a":${nested(20_000, '"\\ud800"')}}}`,
      400,
      'BATON_MAX_JSON_DEPTH',
    ],
    [
      '20,000 levels, Camunda',
      '/engine-rest/process-definition/key/nested/start',
      () => `{"variables":{"a":{"value":${nested(20_000)},"type":"Json"}}}`,
      400,
      'BATON_MAX_JSON_DEPTH',
    ],
    // JSON text inside a string is parsed by the variable reader, past the body's check
    [
      'a Camunda Json variable whose text nests 20,000 levels',
      '/engine-rest/process-definition/key/nested/start',
      () => JSON.stringify({ variables: { a: { value: nested(20_000), type: 'Json' } } }),
      400,
      'more than 1000 levels deep',
    ],
  ];
  for (const [label, route, body, status, names] of cases) {
    it(`${label}: ${status} naming ${names}, nothing changed`, async () => {
      const before = await databaseDigest(d.db.pool);
      const res = await d.api.post(route, body(), { contentType: 'application/json' });
      expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(status);
      expect(JSON.stringify(res.body)).toContain(names);
      expect(await databaseDigest(d.db.pool)).toBe(before);
    });
  }

  it('a body nested exactly to the limit (64 levels) starts its instance, and the server still answers after the refusals', async () => {
    const res = await d.api.post('/api/instances', `{"definitionKey":"nested","variables":{"a":${nested(62)}}}`, {
      contentType: 'application/json',
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect((await d.api.get(`/api/instances/${res.body.id as string}`)).status).toBe(200);
  });
});
