// The lean lane (runtime/api/lean-lane.ts) serves the hot routes' plain requests without
// express. It must answer every request it takes exactly as express would have: the same
// request sent once to the lane's path and once with a query string (which the lane leaves
// to express, and which changes nothing else: the routes, the roles and the limits read the
// path) must get the same status, headers that matter and body.
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createServer, type Server } from 'node:http';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { leanLane, parseJson } from '../../runtime/api/lean-lane.ts';
import { ProgressCoalescer } from '../../runtime/engine/progress.ts';
import { createDrain } from '../../runtime/ops/shutdown.ts';
import { createAuthorizer } from '../../runtime/security/auth.ts';
import { DEFAULT_LIMITS } from '../../runtime/security/limits.ts';
import { parseTokens } from '../../runtime/security/tokens.ts';
import { singleTaskBpmn } from '../support/bpmn.ts';
import { deploy, fetchOne, start, type LockedTask } from '../support/flows.ts';
import { apiClient, startTestServer, type TestServer } from '../support/server.ts';
import { databaseDigest } from './digest.ts';

const ADMIN = 'admin-secret-0123456789';
const WORKER = 'worker-secret-0123456789';
const VIEWER = 'viewer-secret-0123456789';
const MAX_VARS = 2000;

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/** One request over node:http, so every header (and chunked bodies) is the test's to choose. */
function send(
  base: string,
  path: string,
  opts: { method?: string; headers?: Record<string, string>; body?: string | Buffer; chunked?: boolean } = {},
): Promise<Answer> {
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

describe('given a server with tokens and tight limits', () => {
  let t: TestServer;
  let held: LockedTask;
  let spare: LockedTask;

  beforeAll(async () => {
    t = await startTestServer({
      auth: {
        tokens: parseTokens(`admin:${ADMIN},worker:${WORKER},viewer:${VIEWER}`),
        failures: { burst: 1000, perMinute: 1000 },
      },
      limits: { maxVariablesBytes: MAX_VARS, maxParkedPolls: 0 },
    });
    const admin = apiClient(t.url, ADMIN);
    const worker = apiClient(t.url, WORKER);
    await deploy(admin, singleTaskBpmn('lane', 'lane-task'));
    await start(admin, 'lane', { variables: { first: 'a'.repeat(1200) } });
    await start(admin, 'lane');
    held = await fetchOne(worker, 'holder', 'lane-task');
    spare = await fetchOne(worker, 'holder', 'lane-task');
  });
  afterAll(async () => t?.close());

  const deep = `{"definitionKey":"lane","variables":{"a":${'['.repeat(70)}1${']'.repeat(70)}}}`;
  // lateResult: a refused complete is kept in the history as a late result, through either path
  const cases: {
    label: string;
    path: () => string;
    token?: string;
    basic?: string;
    body: () => string | Buffer;
    contentType?: string;
    lateResult?: true;
  }[] = [
    {
      label: 'start of an unknown definition',
      path: () => '/api/instances',
      token: ADMIN,
      body: () => '{"definitionKey":"nope"}',
    },
    { label: 'start with an empty object', path: () => '/api/instances', token: ADMIN, body: () => '{}' },
    { label: 'start with an array', path: () => '/api/instances', token: ADMIN, body: () => '[]' },
    {
      label: 'start with an unknown property',
      path: () => '/api/instances',
      token: ADMIN,
      body: () => '{"definitionKey":"lane","extra":1}',
    },
    { label: 'start with truncated JSON', path: () => '/api/instances', token: ADMIN, body: () => '{"definitionKey":' },
    { label: 'start with a string for a body', path: () => '/api/instances', token: ADMIN, body: () => '"lane"' },
    { label: 'start with a number after spaces', path: () => '/api/instances', token: ADMIN, body: () => '   42' },
    { label: 'start with only spaces', path: () => '/api/instances', token: ADMIN, body: () => '   ' },
    {
      label: 'start with a NUL in a string',
      path: () => '/api/instances',
      token: ADMIN,
      body: () => '{"definitionKey":"a\\u0000b"}',
    },
    {
      label: 'start with a lone surrogate',
      path: () => '/api/instances',
      token: ADMIN,
      body: () => '{"definitionKey":"lane","businessKey":"\\ud800"}',
    },
    { label: 'start nesting past the depth limit', path: () => '/api/instances', token: ADMIN, body: () => deep },
    {
      label: 'start with variables past the limit',
      path: () => '/api/instances',
      token: ADMIN,
      body: () => JSON.stringify({ definitionKey: 'lane', variables: { v: 'x'.repeat(MAX_VARS) } }),
    },
    { label: 'start without a token', path: () => '/api/instances', body: () => '{"definitionKey":"lane"}' },
    {
      label: 'start with an unknown token',
      path: () => '/api/instances',
      token: 'not-a-token-at-all-0000',
      body: () => '{"definitionKey":"lane"}',
    },
    { label: 'start by a worker', path: () => '/api/instances', token: WORKER, body: () => '{"definitionKey":"lane"}' },
    { label: 'start by a viewer', path: () => '/api/instances', token: VIEWER, body: () => '{"definitionKey":"lane"}' },
    {
      label: 'fetch that would park past the parked-poll limit',
      path: () => '/api/external-tasks/fetch-and-lock',
      token: WORKER,
      body: () => '{"workerId":"w","maxTasks":1,"waitMs":500,"topics":[{"name":"none","lockDurationMs":1000}]}',
    },
    {
      label: 'fetch with maxTasks 0',
      path: () => '/api/external-tasks/fetch-and-lock',
      token: WORKER,
      body: () => '{"workerId":"w","maxTasks":0,"topics":[{"name":"none","lockDurationMs":1000}]}',
    },
    {
      label: 'fetch of a topic with nothing ready',
      path: () => '/api/external-tasks/fetch-and-lock',
      token: WORKER,
      body: () => '{"workerId":"w","maxTasks":1,"topics":[{"name":"none","lockDurationMs":1000}]}',
    },
    {
      label: 'fetch by a viewer',
      path: () => '/api/external-tasks/fetch-and-lock',
      token: VIEWER,
      body: () => '{"workerId":"w","maxTasks":1,"topics":[]}',
    },
    {
      label: 'batch complete naming a task twice',
      path: () => '/api/external-tasks/complete-batch',
      token: WORKER,
      body: () =>
        JSON.stringify({
          workerId: 'holder',
          tasks: [
            { id: held.id, lockToken: held.lockToken },
            { id: held.id.toUpperCase(), lockToken: held.lockToken },
          ],
        }),
    },
    {
      label: 'batch complete of unknown tasks',
      path: () => '/api/external-tasks/complete-batch',
      token: WORKER,
      body: () =>
        JSON.stringify({
          workerId: 'holder',
          tasks: [{ id: '00000000-0000-4000-8000-000000000000', lockToken: '00000000-0000-4000-8000-000000000000' }],
        }),
    },
    {
      label: 'batch complete with the wrong lock token',
      path: () => '/api/external-tasks/complete-batch',
      token: WORKER,
      body: () =>
        JSON.stringify({ workerId: 'holder', tasks: [{ id: held.id, lockToken: '00000000-0000-4000-8000-000000000000' }] }),
      lateResult: true,
    },
    {
      label: 'batch complete that would grow an instance past the variables limit',
      path: () => '/api/external-tasks/complete-batch',
      token: WORKER,
      body: () =>
        JSON.stringify({
          workerId: 'holder',
          tasks: [{ id: held.id, lockToken: held.lockToken, variables: { second: 'b'.repeat(1200) } }],
        }),
    },
    {
      label: 'complete of an unknown task',
      path: () => '/api/external-tasks/00000000-0000-4000-8000-000000000000/complete',
      token: WORKER,
      body: () => '{"workerId":"holder","lockToken":"00000000-0000-4000-8000-000000000000"}',
    },
    {
      label: 'complete of an id that is no uuid',
      path: () => '/api/external-tasks/not-a-uuid/complete',
      token: WORKER,
      body: () => '{"workerId":"holder","lockToken":"00000000-0000-4000-8000-000000000000"}',
    },
    {
      label: 'complete with the wrong lock token',
      path: () => `/api/external-tasks/${held.id}/complete`,
      token: WORKER,
      body: () => JSON.stringify({ workerId: 'holder', lockToken: spare.lockToken }),
      lateResult: true,
    },
    {
      label: 'complete that would grow an instance past the variables limit',
      path: () => `/api/external-tasks/${held.id}/complete`,
      token: WORKER,
      body: () => JSON.stringify({ workerId: 'holder', lockToken: held.lockToken, variables: { second: 'b'.repeat(1200) } }),
    },
    {
      label: 'complete without a token',
      path: () => `/api/external-tasks/${held.id}/complete`,
      body: () => JSON.stringify({ workerId: 'holder', lockToken: held.lockToken }),
    },
    {
      label: 'complete of an id with a percent-escape (express decodes it)',
      path: () => `/api/external-tasks/${held.id.replace('-', '%2D')}/complete`,
      token: WORKER,
      body: () => JSON.stringify({ workerId: 'holder', lockToken: spare.lockToken }),
      lateResult: true,
    },
    {
      label: 'failure of an unknown task',
      path: () => '/api/external-tasks/00000000-0000-4000-8000-000000000000/failure',
      token: WORKER,
      body: () => '{"workerId":"holder","lockToken":"00000000-0000-4000-8000-000000000000","errorMessage":"boom"}',
    },
    {
      label: 'failure without an error message',
      path: () => `/api/external-tasks/${held.id}/failure`,
      token: WORKER,
      body: () => JSON.stringify({ workerId: 'holder', lockToken: held.lockToken }),
    },
    {
      label: 'failure with the wrong lock token',
      path: () => `/api/external-tasks/${held.id}/failure`,
      token: WORKER,
      body: () => JSON.stringify({ workerId: 'holder', lockToken: spare.lockToken, errorMessage: 'boom' }),
      lateResult: true,
    },
    {
      label: 'failure by a viewer',
      path: () => `/api/external-tasks/${held.id}/failure`,
      token: VIEWER,
      body: () => JSON.stringify({ workerId: 'holder', lockToken: held.lockToken, errorMessage: 'boom' }),
    },
    {
      label: 'bpmn-error of an id that is no uuid',
      path: () => '/api/external-tasks/not-a-uuid/bpmn-error',
      token: WORKER,
      body: () => '{"workerId":"holder","lockToken":"x","errorCode":"E"}',
    },
    {
      label: 'bpmn-error with the wrong lock token',
      path: () => `/api/external-tasks/${held.id}/bpmn-error`,
      token: WORKER,
      body: () => JSON.stringify({ workerId: 'holder', lockToken: spare.lockToken, errorCode: 'E' }),
      lateResult: true,
    },
    {
      label: 'bpmn-error that would grow an instance past the variables limit',
      path: () => `/api/external-tasks/${held.id}/bpmn-error`,
      token: WORKER,
      body: () =>
        JSON.stringify({
          workerId: 'holder',
          lockToken: held.lockToken,
          errorCode: 'E',
          variables: { second: 'b'.repeat(1200) },
        }),
    },
    {
      label: 'extend-lock with a negative duration',
      path: () => `/api/external-tasks/${held.id}/extend-lock`,
      token: WORKER,
      body: () => JSON.stringify({ workerId: 'holder', lockToken: held.lockToken, lockDurationMs: -1 }),
    },
    {
      label: 'extend-lock with the wrong lock token',
      path: () => `/api/external-tasks/${held.id}/extend-lock`,
      token: WORKER,
      body: () => JSON.stringify({ workerId: 'holder', lockToken: spare.lockToken, lockDurationMs: 1000 }),
      lateResult: true,
    },
    {
      label: 'unlock of an unknown task',
      path: () => '/api/external-tasks/00000000-0000-4000-8000-000000000000/unlock',
      token: WORKER,
      body: () => '{"workerId":"holder","lockToken":"00000000-0000-4000-8000-000000000000"}',
    },
    {
      label: 'unlock with the wrong lock token',
      path: () => `/api/external-tasks/${held.id}/unlock`,
      token: WORKER,
      body: () => JSON.stringify({ workerId: 'holder', lockToken: spare.lockToken }),
      lateResult: true,
    },
    {
      label: 'unlock without a token',
      path: () => `/api/external-tasks/${held.id}/unlock`,
      body: () => JSON.stringify({ workerId: 'holder', lockToken: held.lockToken }),
    },
    {
      label: 'progress of an unknown task',
      path: () => '/api/external-tasks/00000000-0000-4000-8000-000000000000/progress',
      token: WORKER,
      body: () => '{"workerId":"holder","lockToken":"00000000-0000-4000-8000-000000000000","data":{"done":1}}',
    },
    {
      label: 'progress with the wrong lock token',
      path: () => `/api/external-tasks/${held.id}/progress`,
      token: WORKER,
      body: () => JSON.stringify({ workerId: 'holder', lockToken: spare.lockToken, data: { done: 1 } }),
    },
    {
      label: 'progress without data',
      path: () => `/api/external-tasks/${held.id}/progress`,
      token: WORKER,
      body: () => JSON.stringify({ workerId: 'holder', lockToken: held.lockToken }),
    },
    {
      label: 'progress by a viewer',
      path: () => `/api/external-tasks/${held.id}/progress`,
      token: VIEWER,
      body: () => JSON.stringify({ workerId: 'holder', lockToken: held.lockToken, data: { done: 1 } }),
    },
    {
      label: 'Camunda fetchAndLock without topics',
      path: () => '/engine-rest/external-task/fetchAndLock',
      token: WORKER,
      body: () => '{"workerId":"c","maxTasks":1}',
    },
    {
      label: 'Camunda fetchAndLock without a workerId',
      path: () => '/engine-rest/external-task/fetchAndLock',
      token: WORKER,
      body: () => '{"maxTasks":1,"topics":[{"topicName":"none","lockDuration":1000}]}',
    },
    {
      label: 'Camunda fetchAndLock waiting longer than Camunda allows',
      path: () => '/engine-rest/external-task/fetchAndLock',
      token: WORKER,
      body: () =>
        '{"workerId":"c","maxTasks":1,"asyncResponseTimeout":1800001,"topics":[{"topicName":"none","lockDuration":1000}]}',
    },
    {
      label: 'Camunda fetchAndLock that would park past the parked-poll limit',
      path: () => '/engine-rest/external-task/fetchAndLock',
      token: WORKER,
      body: () => '{"workerId":"c","maxTasks":1,"asyncResponseTimeout":500,"topics":[{"topicName":"none","lockDuration":1000}]}',
    },
    {
      label: 'Camunda fetchAndLock of a topic with nothing ready',
      path: () => '/engine-rest/external-task/fetchAndLock',
      token: WORKER,
      body: () => '{"workerId":"c","maxTasks":1,"topics":[{"topicName":"none","lockDuration":1000}]}',
    },
    {
      label: 'Camunda fetchAndLock by a viewer',
      path: () => '/engine-rest/external-task/fetchAndLock',
      token: VIEWER,
      body: () => '{"workerId":"c","maxTasks":1,"topics":[]}',
    },
    {
      label: 'Camunda fetchAndLock with an unknown Basic password',
      path: () => '/engine-rest/external-task/fetchAndLock',
      basic: 'w:not-a-token-at-all-0000',
      body: () => '{"workerId":"c","maxTasks":1,"topics":[]}',
    },
    {
      label: 'Camunda fetchAndLock with truncated JSON',
      path: () => '/engine-rest/external-task/fetchAndLock',
      token: WORKER,
      body: () => '{"workerId":',
    },
    {
      label: 'Camunda fetchAndLock with a number for a body',
      path: () => '/engine-rest/external-task/fetchAndLock',
      token: WORKER,
      body: () => '7',
    },
    {
      label: 'Camunda fetchAndLock nesting past the depth limit',
      path: () => '/engine-rest/external-task/fetchAndLock',
      token: WORKER,
      body: () => `{"workerId":"c","maxTasks":1,"topics":${'['.repeat(70)}${']'.repeat(70)}}`,
    },
    {
      label: 'Camunda fetchAndLock with a lone surrogate',
      path: () => '/engine-rest/external-task/fetchAndLock',
      token: WORKER,
      body: () => '{"workerId":"\\udc00","maxTasks":1,"topics":[]}',
    },
    {
      label: 'Camunda complete of an unknown task',
      path: () => '/engine-rest/external-task/00000000-0000-4000-8000-000000000000/complete',
      token: WORKER,
      body: () => '{"workerId":"holder"}',
    },
    {
      label: 'Camunda complete of an id that is no uuid',
      path: () => '/engine-rest/external-task/not-a-uuid/complete',
      token: WORKER,
      body: () => '{"workerId":"holder"}',
    },
    {
      label: 'Camunda complete by another worker',
      path: () => `/engine-rest/external-task/${held.id}/complete`,
      token: WORKER,
      body: () => '{"workerId":"other"}',
      lateResult: true,
    },
    {
      label: 'Camunda complete by another worker, its id with a percent-escape',
      path: () => `/engine-rest/external-task/${held.id.replace('-', '%2d')}/complete`,
      token: WORKER,
      body: () => '{"workerId":"other"}',
      lateResult: true,
    },
    {
      label: 'Camunda complete with a variable of an unknown type',
      path: () => `/engine-rest/external-task/${held.id}/complete`,
      token: WORKER,
      body: () => '{"workerId":"holder","variables":{"v":{"value":1,"type":"Nonsense"}}}',
    },
    {
      label: 'Camunda complete with variables past the limit',
      path: () => `/engine-rest/external-task/${held.id}/complete`,
      token: WORKER,
      body: () => JSON.stringify({ workerId: 'holder', variables: { v: { value: 'x'.repeat(MAX_VARS), type: 'String' } } }),
    },
    {
      label: 'Camunda complete with a NUL in a variable',
      path: () => `/engine-rest/external-task/${held.id}/complete`,
      token: WORKER,
      body: () => '{"workerId":"holder","variables":{"v":{"value":"a\\u0000b","type":"String"}}}',
    },
    {
      label: 'Camunda complete with a raw NUL byte in its JSON',
      path: () => `/engine-rest/external-task/${held.id}/complete`,
      token: WORKER,
      body: () => '{"workerId":"holder","variables":{"v":{"value":"a\u0000b","type":"String"}}}',
    },
    {
      label: 'Camunda complete without a token',
      path: () => `/engine-rest/external-task/${held.id}/complete`,
      body: () => '{"workerId":"holder"}',
    },
    {
      label: 'Camunda failure by another worker',
      path: () => `/engine-rest/external-task/${held.id}/failure`,
      token: WORKER,
      body: () => '{"workerId":"other","errorMessage":"boom","retries":1,"retryTimeout":0}',
      lateResult: true,
    },
    {
      label: 'Camunda bpmnError without an errorCode',
      path: () => `/engine-rest/external-task/${held.id}/bpmnError`,
      token: WORKER,
      body: () => '{"workerId":"holder"}',
    },
    {
      label: 'Camunda extendLock by another worker',
      path: () => `/engine-rest/external-task/${held.id}/extendLock`,
      token: WORKER,
      body: () => '{"workerId":"other","newDuration":1000}',
      lateResult: true,
    },
    {
      label: 'Camunda lock of an unknown task',
      path: () => '/engine-rest/external-task/00000000-0000-4000-8000-000000000000/lock',
      token: WORKER,
      body: () => '{"workerId":"holder","lockDuration":1000}',
    },
    {
      label: 'Camunda unlock of an unknown task',
      path: () => '/engine-rest/external-task/00000000-0000-4000-8000-000000000000/unlock',
      token: WORKER,
      body: () => '{}',
    },
    {
      label: 'start with a byte-order mark and a charset',
      path: () => '/api/instances',
      token: ADMIN,
      body: () => Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"definitionKey":"nope"}')]),
      contentType: 'application/json; charset=UTF-8',
    },
  ];

  for (const c of cases) {
    it(`${c.label}: the lane answers as express does, and nothing changes`, async () => {
      const before = await databaseDigest(t.db.pool);
      const headers = c.basic
        ? { ...json(undefined, c.contentType), authorization: `Basic ${Buffer.from(c.basic).toString('base64')}` }
        : json(c.token, c.contentType);
      const viaLane = await send(t.url, c.path(), { headers, body: c.body() });
      const viaExpress = await send(t.url, `${c.path()}?via=express`, { headers, body: c.body() });
      expect(viaLane.status, viaLane.text).toBeGreaterThanOrEqual(200);
      expect({ status: viaLane.status, text: viaLane.text }).toEqual({ status: viaExpress.status, text: viaExpress.text });
      for (const header of ['content-type', 'retry-after', 'www-authenticate'])
        expect(viaLane.headers[header], header).toEqual(viaExpress.headers[header]);
      if (!c.lateResult) expect(await databaseDigest(t.db.pool)).toBe(before);
    });
  }

  it('a start and a complete that succeed answer alike through both', async () => {
    const body = '{"definitionKey":"lane"}';
    const [viaLane, viaExpress] = [
      await send(t.url, '/api/instances', { headers: json(ADMIN), body }),
      await send(t.url, '/api/instances?via=express', { headers: json(ADMIN), body }),
    ];
    expect([viaLane.status, viaExpress.status]).toEqual([201, 201]);
    expect(Object.keys(JSON.parse(viaLane.text) as object).sort()).toEqual(
      Object.keys(JSON.parse(viaExpress.text) as object).sort(),
    );
    expect(viaLane.headers['content-type']).toBe(viaExpress.headers['content-type']);
    const extend = JSON.stringify({ workerId: 'holder', lockToken: held.lockToken, lockDurationMs: 60_000 });
    const camundaExtend = '{"workerId":"holder","newDuration":60000}';
    const camunda = [
      await send(t.url, `/engine-rest/external-task/${held.id}/extendLock`, { headers: json(WORKER), body: camundaExtend }),
      await send(t.url, `/engine-rest/external-task/${held.id}/extendLock?via=express`, {
        headers: json(WORKER),
        body: camundaExtend,
      }),
    ];
    expect(camunda.map((a) => [a.status, a.text])).toEqual([
      [204, ''],
      [204, ''],
    ]);
    const report = JSON.stringify({ workerId: 'holder', lockToken: held.lockToken, data: { done: 1 } });
    const reports = [
      await send(t.url, `/api/external-tasks/${held.id}/progress`, { headers: json(WORKER), body: report }),
      await send(t.url, `/api/external-tasks/${held.id}/progress?via=express`, { headers: json(WORKER), body: report }),
    ];
    expect(reports.map((a) => [a.status, a.text, a.headers['content-type']])).toEqual([
      [202, '{"accepted":true}', 'application/json; charset=utf-8'],
      [202, '{"accepted":true}', 'application/json; charset=utf-8'],
    ]);
    const done = [
      await send(t.url, `/api/external-tasks/${held.id}/extend-lock`, { headers: json(WORKER), body: extend }),
      await send(t.url, `/api/external-tasks/${held.id}/extend-lock?via=express`, { headers: json(WORKER), body: extend }),
      await send(t.url, `/api/external-tasks/${spare.id}/complete`, {
        headers: json(WORKER),
        body: JSON.stringify({ workerId: 'holder', lockToken: spare.lockToken }),
      }),
    ];
    expect(done.map((a) => [a.status, a.text, a.headers['content-type']])).toEqual([
      [204, '', undefined],
      [204, '', undefined],
      [204, '', undefined],
    ]);
  });
});

describe('which requests the lane takes', () => {
  let t: TestServer;
  let lane: Server;
  let base: string;
  let progress: ProgressCoalescer;
  const drain = createDrain();

  beforeAll(async () => {
    t = await startTestServer();
    await deploy(t.api, singleTaskBpmn('taken', 'taken-task'));
    const log = pino({ level: 'silent' });
    progress = new ProgressCoalescer(t.server.engine.pool, log);
    const serve = leanLane({
      engine: t.server.engine,
      parkedPolls: t.server.parkedPolls,
      progress,
      drain,
      log,
      authorize: createAuthorizer(t.server.engine.pool, log),
      limits: { ...DEFAULT_LIMITS, jsonLimit: '1kb', camundaJsonLimit: '2kb' },
    });
    // What the lane leaves alone is answered 599, standing in for express.
    lane = createServer((req, res) => {
      if (serve(req, res)) return;
      req.resume();
      res.writeHead(599).end('left');
    });
    await new Promise<void>((resolve) => lane.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(lane.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((resolve) => lane?.close(resolve));
    await progress?.close();
    await t?.close();
  });

  const start = '{"definitionKey":"taken"}';
  const taken: [string, string, Parameters<typeof send>[2]][] = [
    ['a plain start', '/api/instances', { headers: json(), body: start }],
    [
      'a start with charset=utf-8',
      '/api/instances',
      { headers: json(undefined, 'application/json; charset=utf-8'), body: start },
    ],
    [
      'a fetch',
      '/api/external-tasks/fetch-and-lock',
      { headers: json(), body: '{"workerId":"w","maxTasks":1,"topics":[{"name":"none","lockDurationMs":1000}]}' },
    ],
    ['a batch complete', '/api/external-tasks/complete-batch', { headers: json(), body: '{"workerId":"w","tasks":[]}' }],
    ['a complete', '/api/external-tasks/not-a-uuid/complete', { headers: json(), body: '{"workerId":"w","lockToken":"x"}' }],
    ...['failure', 'bpmn-error', 'extend-lock', 'unlock', 'progress'].map(
      (call): [string, string, Parameters<typeof send>[2]] => [
        `a ${call}`,
        `/api/external-tasks/not-a-uuid/${call}`,
        { headers: json(), body: '{"workerId":"w","lockToken":"x"}' },
      ],
    ),
    [
      'a Camunda fetchAndLock',
      '/engine-rest/external-task/fetchAndLock',
      { headers: json(), body: '{"workerId":"w","maxTasks":1,"topics":[{"topicName":"none","lockDuration":1000}]}' },
    ],
    ...['complete', 'failure', 'bpmnError', 'extendLock', 'lock', 'unlock'].map(
      (call): [string, string, Parameters<typeof send>[2]] => [
        `a Camunda ${call}`,
        `/engine-rest/external-task/not-a-uuid/${call}`,
        { headers: json(), body: '{"workerId":"w"}' },
      ],
    ),
    [
      'a Camunda body past the native limit, within its own',
      '/engine-rest/external-task/fetchAndLock',
      { headers: json(), body: `{"workerId":"${'w'.repeat(1500)}","maxTasks":1,"topics":[]}` },
    ],
    [
      'a start of exactly the limit',
      '/api/instances',
      { headers: json(), body: `{"definitionKey":"taken","businessKey":"${'k'.repeat(1024 - 44)}"}` },
    ],
  ];
  const left: [string, string, Parameters<typeof send>[2]][] = [
    ['a query string', '/api/instances?x=1', { headers: json(), body: start }],
    ['a trailing slash', '/api/instances/', { headers: json(), body: start }],
    ['another case', '/API/instances', { headers: json(), body: start }],
    ['a GET', '/api/instances', { method: 'GET' }],
    ['a PUT', '/api/instances', { method: 'PUT', headers: json(), body: start }],
    ['another content type', '/api/instances', { headers: json(undefined, 'text/plain'), body: start }],
    ['another charset', '/api/instances', { headers: json(undefined, 'application/json; charset=latin1'), body: start }],
    ['a content encoding', '/api/instances', { headers: { ...json(), 'content-encoding': 'gzip' }, body: start }],
    ['a chunked body', '/api/instances', { headers: json(), body: start, chunked: true }],
    ['an empty body', '/api/instances', { headers: { ...json(), 'content-length': '0' } }],
    [
      'a body past the JSON limit',
      '/api/instances',
      { headers: json(), body: `{"definitionKey":"taken","businessKey":"${'k'.repeat(1024)}"}` },
    ],
    ['another route', '/api/instances/00000000-0000-4000-8000-000000000000/cancel', { headers: json(), body: '{}' }],
    [
      'a Camunda body past its limit',
      '/engine-rest/external-task/fetchAndLock',
      { headers: json(), body: `{"workerId":"${'w'.repeat(2100)}","maxTasks":1,"topics":[]}` },
    ],
    [
      'a Camunda fetchAndLock with a trailing slash',
      '/engine-rest/external-task/fetchAndLock/',
      { headers: json(), body: '{"workerId":"w","maxTasks":1,"topics":[]}' },
    ],
    [
      'a Camunda task id with a percent-escape',
      '/engine-rest/external-task/00000000%2D0000-4000-8000-000000000000/complete',
      { headers: json(), body: '{"workerId":"w"}' },
    ],
    [
      'a Camunda call the lane does not serve',
      '/engine-rest/external-task/00000000-0000-4000-8000-000000000000/retries',
      { method: 'PUT', headers: json(), body: '{"retries":1}' },
    ],
    [
      'a Camunda body as application/*+json',
      '/engine-rest/external-task/fetchAndLock',
      { headers: json(undefined, 'application/vnd.api+json'), body: '{"workerId":"w","maxTasks":1,"topics":[]}' },
    ],
    [
      'a task id with a percent-escape',
      '/api/external-tasks/00000000%2D0000-4000-8000-000000000000/complete',
      { headers: json(), body: '{"workerId":"w","lockToken":"x"}' },
    ],
    [
      'a call on a task the lane does not serve',
      '/api/external-tasks/00000000-0000-4000-8000-000000000000/variables',
      { headers: json(), body: '{}' },
    ],
  ];
  for (const [label, path, opts] of taken) {
    it(`takes ${label}`, async () => {
      const answer = await send(base, path, opts);
      expect(answer.status, answer.text).not.toBe(599);
      expect(answer.status).toBeLessThan(500);
    });
  }
  for (const [label, path, opts] of left) {
    it(`leaves ${label} to express`, async () => {
      expect(await send(base, path, opts)).toMatchObject({ status: 599, text: 'left' });
    });
  }

  it('a caller who hangs up mid-body gets nothing and leaves nothing behind', async () => {
    const before = await databaseDigest(t.db.pool);
    await new Promise<void>((resolve) => {
      const req = request(`${base}/api/instances`, { method: 'POST', headers: { ...json(), 'content-length': '100' } });
      req.on('error', () => resolve());
      req.write('{"definitionKey":');
      setTimeout(() => {
        req.destroy();
        resolve();
      }, 50);
    });
    // The lane is still serving, and nothing was started.
    expect(
      (
        await send(base, '/api/external-tasks/fetch-and-lock', {
          headers: json(),
          body: '{"workerId":"w","maxTasks":1,"topics":[{"name":"none","lockDurationMs":1000}]}',
        })
      ).text,
    ).toBe('[]');
    expect(await databaseDigest(t.db.pool)).toBe(before);
  });

  it('while the node drains, a request it would take is answered 503 ShuttingDown with Connection: close', async () => {
    drain.begin();
    const answer = await send(base, '/api/instances', { headers: json(), body: start });
    expect(answer.status).toBe(503);
    expect(JSON.parse(answer.text)).toMatchObject({ type: 'ShuttingDown' });
    expect(answer.headers.connection).toBe('close');
    expect(answer.headers['retry-after']).toBe('1');
  });
});

describe('parseJson', () => {
  it('reads as body-parser does: {} for nothing, a byte-order mark dropped, objects and arrays only', () => {
    expect(parseJson(Buffer.from(''))).toEqual({});
    expect(parseJson(Buffer.from('\ufeff{"a":1}'))).toEqual({ a: 1 });
    expect(parseJson(Buffer.from(' [1]'))).toEqual([1]);
    expect(() => parseJson(Buffer.from('"a"'))).toThrow(
      expect.objectContaining({ type: 'entity.parse.failed', message: `Unexpected token '"', ""a"" is not valid JSON` }),
    );
    expect(() => parseJson(Buffer.from('{'))).toThrow(expect.objectContaining({ type: 'entity.parse.failed' }));
  });
});
