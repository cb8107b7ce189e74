// The starters' and workers' routes, native and Camunda, as the one HTTP stack serves them
// behind the security layer: how a body is read (charsets, encodings, strict JSON, the two
// limits), task ids with percent-escapes, which refusals come first, and the content type
// of each kind of answer. Each request is sent over node:http, so every header is the test's.
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDrain } from '../../runtime/ops/shutdown.ts';
import { parseTokens } from '../../runtime/security/tokens.ts';
import { singleTaskBpmn } from '../support/bpmn.ts';
import { deploy, fetchOne, start, type LockedTask } from '../support/flows.ts';
import { apiClient, startTestServer, type TestServer } from '../support/server.ts';
import { databaseDigest } from './digest.ts';

const ADMIN = 'admin-secret-0123456789';
const WORKER = 'worker-secret-0123456789';
const MAX_VARS = 2000;
const JSON_LIMIT = 4096;
const CAMUNDA_JSON_LIMIT = 8192;
const NATIVE_JSON = 'application/json; charset=utf-8';
const CAMUNDA_JSON = 'application/json';

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

interface Sent {
  method?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** sent in two chunks, without a Content-Length */
  chunked?: boolean;
}

function send(base: string, path: string, opts: Sent = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const body = opts.body === undefined ? undefined : Buffer.isBuffer(opts.body) ? opts.body : Buffer.from(opts.body);
    const headers: Record<string, string> = { ...opts.headers };
    if (body && !opts.chunked && headers['content-length'] === undefined) headers['content-length'] = String(body.length);
    const req = request(`${base}${path}`, { method: opts.method ?? 'POST', headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }),
      );
    });
    req.on('error', reject);
    if (body && opts.chunked) {
      req.write(body.subarray(0, 1));
      req.end(body.subarray(1));
    } else req.end(body);
  });
}

const json = (token?: string, contentType = 'application/json') => ({
  'content-type': contentType,
  ...(token ? { authorization: `Bearer ${token}` } : {}),
});

/** `head`, spaces, then `}`: JSON text of exactly `size` bytes. */
const padded = (head: string, size: number) => `${head}${' '.repeat(size - head.length - 1)}}`;

describe('given a server with tokens and tight limits', () => {
  let t: TestServer;
  let held: LockedTask;
  let spare: LockedTask;

  beforeAll(async () => {
    t = await startTestServer({
      auth: { tokens: parseTokens(`admin:${ADMIN},worker:${WORKER}`), failures: { burst: 1000, perMinute: 1000 } },
      limits: { maxVariablesBytes: MAX_VARS, jsonLimit: `${JSON_LIMIT}b`, camundaJsonLimit: `${CAMUNDA_JSON_LIMIT}b` },
    });
    const admin = apiClient(t.url, ADMIN);
    const worker = apiClient(t.url, WORKER);
    await deploy(admin, singleTaskBpmn('hot', 'hot-task'));
    await start(admin, 'hot', { variables: { first: 'a'.repeat(1200) } });
    await start(admin, 'hot');
    held = await fetchOne(worker, 'holder', 'hot-task');
    spare = await fetchOne(worker, 'holder', 'hot-task');
  });
  afterAll(async () => t?.close());

  const unknownStart = '{"definitionKey":"nope"}';
  const noTopics = '{"workerId":"w","maxTasks":1,"topics":[]}';
  const cases: {
    label: string;
    path: () => string;
    sent: () => Sent;
    status: number;
    /** the error body's type; none for a success */
    type?: string;
    contentType: string | undefined;
    /** a piece of the answer's text */
    says?: () => string;
    headers?: Record<string, string>;
    /** a refused task call is kept in the history as a late result: the database changes */
    lateResult?: true;
  }[] = [
    {
      label: 'a byte-order mark and charset=UTF-8 are read',
      path: () => '/api/instances',
      sent: () => ({
        headers: json(ADMIN, 'application/json; charset=UTF-8'),
        body: Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(unknownStart)]),
      }),
      status: 404,
      type: 'NotFound',
      contentType: NATIVE_JSON,
      says: () => 'No deployed definition \\"nope\\"',
    },
    {
      label: 'another charset is refused',
      path: () => '/api/instances',
      sent: () => ({ headers: json(ADMIN, 'application/json; charset=latin1'), body: unknownStart }),
      status: 415,
      type: 'UnsupportedMediaType',
      contentType: NATIVE_JSON,
      says: () => 'unsupported charset \\"LATIN1\\"',
    },
    {
      label: 'a gzip-encoded body is inflated',
      path: () => '/api/instances',
      sent: () => ({ headers: { ...json(ADMIN), 'content-encoding': 'gzip' }, body: gzipSync(unknownStart) }),
      status: 404,
      type: 'NotFound',
      contentType: NATIVE_JSON,
    },
    {
      label: 'a chunked body is read',
      path: () => '/api/instances',
      sent: () => ({ headers: json(ADMIN), body: unknownStart, chunked: true }),
      status: 404,
      type: 'NotFound',
      contentType: NATIVE_JSON,
    },
    {
      label: 'a string for a body is not JSON to the API (objects and arrays only)',
      path: () => '/api/instances',
      sent: () => ({ headers: json(ADMIN), body: '"hot"' }),
      status: 400,
      type: 'ValidationError',
      contentType: NATIVE_JSON,
      says: () => 'Request body is not valid JSON: Unexpected token',
    },
    {
      label: 'a number after spaces is not JSON to the API',
      path: () => '/api/instances',
      sent: () => ({ headers: json(ADMIN), body: '   42' }),
      status: 400,
      type: 'ValidationError',
      contentType: NATIVE_JSON,
      says: () => 'Request body is not valid JSON',
    },
    {
      label: 'only spaces are not JSON',
      path: () => '/api/instances',
      sent: () => ({ headers: json(ADMIN), body: '   ' }),
      status: 400,
      type: 'ValidationError',
      contentType: NATIVE_JSON,
      says: () => 'Unexpected end of JSON input',
    },
    {
      label: 'an empty body is no start request',
      path: () => '/api/instances',
      sent: () => ({ headers: { ...json(ADMIN), 'content-length': '0' } }),
      status: 400,
      type: 'ValidationError',
      contentType: NATIVE_JSON,
    },
    {
      label: 'a body of exactly the JSON limit is read',
      path: () => '/api/instances',
      sent: () => ({ headers: json(ADMIN), body: padded('{"definitionKey":"nope"', JSON_LIMIT) }),
      status: 404,
      type: 'NotFound',
      contentType: NATIVE_JSON,
    },
    {
      label: 'a body a byte past the JSON limit is refused',
      path: () => '/api/instances',
      sent: () => ({ headers: json(ADMIN), body: padded('{"definitionKey":"nope"', JSON_LIMIT + 1) }),
      status: 413,
      type: 'PayloadTooLarge',
      contentType: NATIVE_JSON,
      says: () => `larger than the limit of ${JSON_LIMIT} bytes`,
    },
    {
      label: 'a trailing slash is the same route',
      path: () => '/api/instances/',
      sent: () => ({ headers: json(ADMIN), body: unknownStart }),
      status: 404,
      type: 'NotFound',
      contentType: NATIVE_JSON,
      says: () => 'No deployed definition',
    },
    {
      label: 'capitals are the same route',
      path: () => '/API/Instances',
      sent: () => ({ headers: json(ADMIN), body: unknownStart }),
      status: 404,
      type: 'NotFound',
      contentType: NATIVE_JSON,
      says: () => 'No deployed definition',
    },
    {
      label: 'a query string is the same route',
      path: () => '/api/instances?x=1',
      sent: () => ({ headers: json(ADMIN), body: unknownStart }),
      status: 404,
      type: 'NotFound',
      contentType: NATIVE_JSON,
      says: () => 'No deployed definition',
    },
    {
      label: 'a call without a token is challenged for Bearer only on /api',
      path: () => `/api/external-tasks/${held.id}/complete`,
      sent: () => ({ headers: json(), body: JSON.stringify({ workerId: 'holder', lockToken: held.lockToken }) }),
      status: 401,
      type: 'Unauthorized',
      contentType: NATIVE_JSON,
      headers: { 'www-authenticate': 'Bearer realm="baton"' },
    },
    {
      label: 'a complete whose task id has a percent-escape is the task it decodes to',
      path: () => `/api/external-tasks/${held.id.replace('-', '%2D')}/complete`,
      sent: () => ({ headers: json(WORKER), body: JSON.stringify({ workerId: 'holder', lockToken: spare.lockToken }) }),
      status: 409,
      type: 'LockLost',
      contentType: NATIVE_JSON,
      says: () => `The lock on task ${held.id} is not held`,
      lateResult: true,
    },
    {
      label: 'a bpmn-error has its body checked before its task id',
      path: () => '/api/external-tasks/not-a-uuid/bpmn-error',
      sent: () => ({ headers: json(WORKER), body: '{"workerId":"holder","lockToken":"x","errorCode":"E"}' }),
      status: 400,
      type: 'ValidationError',
      contentType: NATIVE_JSON,
      says: () => '/lockToken must match format',
    },
    {
      label: 'a bpmn-error that would grow its instance past the variables limit is refused',
      path: () => `/api/external-tasks/${held.id}/bpmn-error`,
      sent: () => ({
        headers: json(WORKER),
        body: JSON.stringify({
          workerId: 'holder',
          lockToken: held.lockToken,
          errorCode: 'E',
          variables: { second: 'b'.repeat(1200) },
        }),
      }),
      status: 413,
      type: 'PayloadTooLarge',
      contentType: NATIVE_JSON,
      says: () => 'the instance would hold',
    },
    {
      label: 'progress of an unknown task',
      path: () => '/api/external-tasks/00000000-0000-4000-8000-000000000000/progress',
      sent: () => ({
        headers: json(WORKER),
        body: '{"workerId":"holder","lockToken":"00000000-0000-4000-8000-000000000000","data":{"done":1}}',
      }),
      status: 404,
      type: 'NotFound',
      contentType: NATIVE_JSON,
    },
    {
      label: 'progress with the wrong lock token is not kept',
      path: () => `/api/external-tasks/${held.id}/progress`,
      sent: () => ({
        headers: json(WORKER),
        body: JSON.stringify({ workerId: 'holder', lockToken: spare.lockToken, data: { done: 1 } }),
      }),
      status: 409,
      type: 'LockLost',
      contentType: NATIVE_JSON,
      says: () => 'the report was not kept',
    },
    {
      label: 'progress without data',
      path: () => `/api/external-tasks/${held.id}/progress`,
      sent: () => ({ headers: json(WORKER), body: JSON.stringify({ workerId: 'holder', lockToken: held.lockToken }) }),
      status: 400,
      type: 'ValidationError',
      contentType: NATIVE_JSON,
    },
    {
      label: 'Camunda: a body past the native limit, within its own, is read',
      path: () => '/engine-rest/external-task/fetchAndLock',
      sent: () => ({ headers: json(WORKER), body: padded('{"workerId":"w","maxTasks":1,"topics":[]', JSON_LIMIT + 2000) }),
      status: 200,
      contentType: CAMUNDA_JSON,
      says: () => '[]',
    },
    {
      label: 'Camunda: a body a byte past its own limit is refused in its shape',
      path: () => '/engine-rest/external-task/fetchAndLock',
      sent: () => ({ headers: json(WORKER), body: padded('{"workerId":"w","maxTasks":1,"topics":[]', CAMUNDA_JSON_LIMIT + 1) }),
      status: 413,
      type: 'InvalidRequestException',
      contentType: CAMUNDA_JSON,
      says: () => `larger than the limit of ${CAMUNDA_JSON_LIMIT} bytes`,
    },
    {
      label: 'Camunda: application/*+json is read',
      path: () => '/engine-rest/external-task/fetchAndLock',
      sent: () => ({ headers: json(WORKER, 'application/vnd.api+json'), body: noTopics }),
      status: 200,
      contentType: CAMUNDA_JSON,
      says: () => '[]',
    },
    {
      label: 'Camunda: a trailing slash is the same route',
      path: () => '/engine-rest/external-task/fetchAndLock/',
      sent: () => ({ headers: json(WORKER), body: noTopics }),
      status: 200,
      contentType: CAMUNDA_JSON,
      says: () => '[]',
    },
    {
      label: 'Camunda: truncated JSON',
      path: () => '/engine-rest/external-task/fetchAndLock',
      sent: () => ({ headers: json(WORKER), body: '{"workerId":' }),
      status: 400,
      type: 'InvalidRequestException',
      contentType: CAMUNDA_JSON,
      says: () => 'The request body is not valid JSON: Unexpected end of JSON input',
    },
    {
      label: 'Camunda: a number for a body',
      path: () => '/engine-rest/external-task/fetchAndLock',
      sent: () => ({ headers: json(WORKER), body: '7' }),
      status: 400,
      type: 'InvalidRequestException',
      contentType: CAMUNDA_JSON,
      says: () => 'The request body is not valid JSON',
    },
    {
      label: 'Camunda: a raw NUL byte in the JSON',
      path: () => `/engine-rest/external-task/${held.id}/complete`,
      sent: () => ({
        headers: json(WORKER),
        body: '{"workerId":"holder","variables":{"v":{"value":"a\u0000b","type":"String"}}}',
      }),
      status: 400,
      type: 'InvalidRequestException',
      contentType: CAMUNDA_JSON,
      says: () => 'Bad control character',
    },
    {
      label: 'Camunda: a lone surrogate',
      path: () => '/engine-rest/external-task/fetchAndLock',
      sent: () => ({ headers: json(WORKER), body: '{"workerId":"\\udc00","maxTasks":1,"topics":[]}' }),
      status: 400,
      type: 'InvalidRequestException',
      contentType: CAMUNDA_JSON,
      says: () => 'lone UTF-16 surrogate',
    },
    {
      label: 'Camunda: variables past the limit are refused in the native shape, as every limit is',
      path: () => `/engine-rest/external-task/${held.id}/complete`,
      sent: () => ({
        headers: json(WORKER),
        body: JSON.stringify({ workerId: 'holder', variables: { v: { value: 'x'.repeat(MAX_VARS), type: 'String' } } }),
      }),
      status: 413,
      type: 'PayloadTooLarge',
      contentType: NATIVE_JSON,
      says: () => 'BATON_MAX_VARIABLES_BYTES',
    },
    {
      label: 'Camunda: a call without a token is challenged for Bearer and Basic',
      path: () => `/engine-rest/external-task/${held.id}/complete`,
      sent: () => ({ headers: json(), body: '{"workerId":"holder"}' }),
      status: 401,
      type: 'Unauthorized',
      contentType: NATIVE_JSON,
      headers: { 'www-authenticate': 'Bearer realm="baton", Basic realm="baton"' },
    },
    {
      label: 'Camunda: a complete whose task id has a percent-escape is the task it decodes to',
      path: () => `/engine-rest/external-task/${held.id.replace('-', '%2d')}/complete`,
      sent: () => ({ headers: json(WORKER), body: '{"workerId":"other"}' }),
      status: 400,
      type: 'RestException',
      contentType: CAMUNDA_JSON,
      says: () => `External Task ${held.id} cannot be completed by worker 'other'. It is locked by worker 'holder'.`,
      lateResult: true,
    },
    {
      label: 'Camunda: lock of an unknown task',
      path: () => '/engine-rest/external-task/00000000-0000-4000-8000-000000000000/lock',
      sent: () => ({ headers: json(WORKER), body: '{"workerId":"holder","lockDuration":1000}' }),
      status: 404,
      type: 'RestException',
      contentType: CAMUNDA_JSON,
    },
    {
      label: 'Camunda: unlock of an unknown task',
      path: () => '/engine-rest/external-task/00000000-0000-4000-8000-000000000000/unlock',
      sent: () => ({ headers: json(WORKER), body: '{}' }),
      status: 404,
      type: 'RestException',
      contentType: CAMUNDA_JSON,
    },
  ];

  for (const c of cases) {
    it(`${c.label}: ${c.status}${c.type ? ` ${c.type}` : ''}`, async () => {
      const before = await databaseDigest(t.db.pool);
      const answer = await send(t.url, c.path(), c.sent());
      expect(answer.status, answer.text).toBe(c.status);
      expect(answer.headers['content-type']).toBe(c.contentType);
      if (c.type) expect(JSON.parse(answer.text)).toMatchObject({ type: c.type, message: expect.any(String) });
      if (c.says) expect(answer.text).toContain(c.says());
      for (const [name, value] of Object.entries(c.headers ?? {})) expect(answer.headers[name], name).toBe(value);
      if (!c.lateResult) expect(await databaseDigest(t.db.pool)).toBe(before);
    });
  }

  it('a complete whose task id has a percent-escape is held to the merged variables limit too, and nothing changes', async () => {
    const before = await databaseDigest(t.db.pool);
    const answer = await send(t.url, `/api/external-tasks/${held.id.replace('-', '%2D')}/complete`, {
      headers: json(WORKER),
      body: JSON.stringify({ workerId: 'holder', lockToken: held.lockToken, variables: { second: 'b'.repeat(1200) } }),
    });
    expect(answer.status, answer.text).toBe(413);
    expect(JSON.parse(answer.text)).toMatchObject({ type: 'PayloadTooLarge', details: { limit: 'maxVariablesBytes' } });
    expect(await databaseDigest(t.db.pool)).toBe(before);
  });

  it('a caller who hangs up mid-body gets nothing and leaves nothing behind; the server goes on serving', async () => {
    const before = await databaseDigest(t.db.pool);
    await new Promise<void>((resolve) => {
      const req = request(`${t.url}/api/instances`, { method: 'POST', headers: { ...json(ADMIN), 'content-length': '100' } });
      req.on('error', () => resolve());
      req.write('{"definitionKey":');
      setTimeout(() => {
        req.destroy();
        resolve();
      }, 50);
    });
    const fetched = await send(t.url, '/api/external-tasks/fetch-and-lock', {
      headers: json(WORKER),
      body: '{"workerId":"w","maxTasks":1,"topics":[{"name":"none","lockDurationMs":1000}]}',
    });
    expect([fetched.status, fetched.text]).toEqual([200, '[]']);
    expect(await databaseDigest(t.db.pool)).toBe(before);
  });

  it('successes answer JSON with a charset, or 204 with no body and no content type; Camunda answers exactly application/json', async () => {
    const started = await send(t.url, '/api/instances', { headers: json(ADMIN), body: '{"definitionKey":"hot"}' });
    expect([started.status, started.headers['content-type']]).toEqual([201, NATIVE_JSON]);
    expect(JSON.parse(started.text)).toMatchObject({ definitionKey: 'hot', status: 'running' });
    const fetched = await send(t.url, '/engine-rest/external-task/fetchAndLock', {
      headers: json(WORKER),
      body: '{"workerId":"c","maxTasks":1,"topics":[{"topicName":"none","lockDuration":1000}]}',
    });
    expect([fetched.status, fetched.headers['content-type'], fetched.text]).toEqual([200, CAMUNDA_JSON, '[]']);
    const camundaExtend = await send(t.url, `/engine-rest/external-task/${held.id}/extendLock`, {
      headers: json(WORKER),
      body: '{"workerId":"holder","newDuration":60000}',
    });
    const report = await send(t.url, `/api/external-tasks/${held.id}/progress`, {
      headers: json(WORKER),
      body: JSON.stringify({ workerId: 'holder', lockToken: held.lockToken, data: { done: 1 } }),
    });
    const extend = await send(t.url, `/api/external-tasks/${held.id}/extend-lock`, {
      headers: json(WORKER),
      body: JSON.stringify({ workerId: 'holder', lockToken: held.lockToken, lockDurationMs: 60_000 }),
    });
    const complete = await send(t.url, `/api/external-tasks/${spare.id}/complete`, {
      headers: json(WORKER),
      body: JSON.stringify({ workerId: 'holder', lockToken: spare.lockToken }),
    });
    expect([camundaExtend, report, extend, complete].map((a) => [a.status, a.text, a.headers['content-type']])).toEqual([
      [204, '', undefined],
      [202, '{"accepted":true}', NATIVE_JSON],
      [204, '', undefined],
      [204, '', undefined],
    ]);
  });
});

describe('while the node drains', () => {
  it('a request is answered 503 ShuttingDown with Connection: close and Retry-After', async () => {
    const drain = createDrain();
    const app = express();
    app.use(drain.guard);
    app.post('/api/instances', (_req, res) => res.status(201).json({}));
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    try {
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      expect((await send(base, '/api/instances', { headers: json(), body: '{}' })).status).toBe(201);
      drain.begin();
      const answer = await send(base, '/api/instances', { headers: json(), body: '{}' });
      expect(answer.status).toBe(503);
      expect(JSON.parse(answer.text)).toMatchObject({ type: 'ShuttingDown' });
      expect(answer.headers.connection).toBe('close');
      expect(answer.headers['retry-after']).toBe('1');
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
