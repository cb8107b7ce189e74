import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { singleTaskBpmn } from '../../support/bpmn.ts';
import { deploy, fetchOne, start, type LockedTask } from '../../support/flows.ts';
import { inlineDefinitions, inlineFlow } from '../../support/bpmn.ts';
import { startTestServer, waitFor, type TestServer } from '../../support/server.ts';

let t: TestServer;
let task: LockedTask;
let instanceId: string;
let userTaskId: string;
const missing = '00000000-0000-4000-8000-000000000000';

beforeAll(async () => {
  t = await startTestServer();
  await deploy(t.api, singleTaskBpmn('guarded', 'guarded-task'));
  instanceId = await start(t.api, 'guarded', { businessKey: 'bk' });
  task = await fetchOne(t.api, 'holder', 'guarded-task');
  await deploy(t.api, approval);
  const approvalId = await start(t.api, 'guarded_approval');
  userTaskId = await waitFor(
    async () => (await t.api.get(`/api/user-tasks?instanceId=${approvalId}`)).body.items[0]?.id,
    10_000,
    'the user task',
  );
  expect((await t.api.post(`/api/user-tasks/${userTaskId}/claim`, { userId: 'alice' })).status).toBe(200);
});

/** start -> approve (a user task with a form: approved required, amount at most 1000) -> end */
const approval = inlineDefinitions('guarded_approval', [
  '<bpmn:startEvent id="start" />',
  `<bpmn:userTask id="approve"><bpmn:extensionElements><camunda:formData>
    <camunda:formField id="approved" type="boolean"><camunda:validation><camunda:constraint name="required" /></camunda:validation></camunda:formField>
    <camunda:formField id="amount" type="long"><camunda:validation><camunda:constraint name="max" config="1000" /></camunda:validation></camunda:formField>
  </camunda:formData></bpmn:extensionElements></bpmn:userTask>`,
  '<bpmn:endEvent id="end" />',
  inlineFlow('f1', 'start', 'approve'),
  inlineFlow('f2', 'approve', 'end'),
]);
afterAll(async () => {
  await t.close();
});

// A digest of every table's rows: bad input must leave it unchanged.
async function databaseDigest(): Promise<string> {
  const tables = [
    'definitions',
    'instances',
    'steps',
    'flows',
    'external_tasks',
    'incidents',
    'timers',
    'messages',
    'subscriptions',
    'events',
    'batches',
    'batch_results',
  ];
  const parts = await Promise.all(
    tables.map(async (name) => {
      const { rows } = await t.db.pool.query(
        `select md5(coalesce(string_agg(x::text, '|' order by x::text), '')) as h from ${name} x`,
      );
      return `${name}:${rows[0].h}`;
    }),
  );
  return parts.join(',');
}

type Case = [
  label: string,
  method: 'GET' | 'POST',
  path: () => string,
  body: unknown | (() => unknown),
  status: number,
  type: string,
  contentType?: string,
];

const holder = () => ({ workerId: 'holder', lockToken: task.lockToken });
const big = 'x'.repeat(1_100_000);

const cases: Case[] = [
  ['deploy: no body', 'POST', () => '/api/definitions', undefined, 415, 'UnsupportedMediaType'],
  ['conditions: unknown field', 'POST', () => '/api/conditions', { variables: {}, extra: 1 }, 400, 'ValidationError'],
  [
    'conditions: no conditional start event',
    'POST',
    () => '/api/conditions',
    { definitionKey: 'nobody' },
    400,
    'ValidationError',
  ],
  ['deploy: xml not a string', 'POST', () => '/api/definitions', { xml: 42 }, 400, 'ValidationError'],
  ['deploy: unknown field', 'POST', () => '/api/definitions', { xml: '<x/>', extra: 1 }, 400, 'ValidationError'],
  ['deploy: malformed XML', 'POST', () => '/api/definitions', { xml: '<bpmn:definitions' }, 400, 'CompileError'],
  ['deploy: malformed XML as application/xml', 'POST', () => '/api/definitions', '<<<', 400, 'CompileError', 'application/xml'],
  [
    'deploy: DOCTYPE',
    'POST',
    () => '/api/definitions',
    { xml: '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "b">]><x>&a;</x>' },
    400,
    'CompileError',
  ],
  ['deploy: not JSON', 'POST', () => '/api/definitions', '{"xml":', 400, 'ValidationError', 'application/json'],
  ['deploy: oversize JSON', 'POST', () => '/api/definitions', { xml: big }, 413, 'PayloadTooLarge'],
  ['deploy: text/plain', 'POST', () => '/api/definitions', 'hello', 415, 'UnsupportedMediaType', 'text/plain'],
  ['start: missing key', 'POST', () => '/api/instances', {}, 400, 'ValidationError'],
  ['start: unknown key', 'POST', () => '/api/instances', { definitionKey: 'nope' }, 404, 'NotFound'],
  ['start: unknown version', 'POST', () => '/api/instances', { definitionKey: 'guarded', version: 7 }, 404, 'NotFound'],
  [
    'start: variables not an object',
    'POST',
    () => '/api/instances',
    { definitionKey: 'guarded', variables: [1] },
    400,
    'ValidationError',
  ],
  [
    'start: business key wrong type',
    'POST',
    () => '/api/instances',
    { definitionKey: 'guarded', businessKey: 5 },
    400,
    'ValidationError',
  ],
  [
    'start: version beyond int range',
    'POST',
    () => '/api/instances',
    { definitionKey: 'guarded', version: 3_000_000_000 },
    400,
    'ValidationError',
  ],
  ['start: body is an array', 'POST', () => '/api/instances', [1, 2], 400, 'ValidationError'],
  [
    'start: business key with a lone surrogate',
    'POST',
    () => '/api/instances',
    '{"definitionKey":"guarded","businessKey":"\\ud800"}',
    400,
    'ValidationError',
    'application/json',
  ],
  [
    'start: variable with a lone surrogate',
    'POST',
    () => '/api/instances',
    '{"definitionKey":"guarded","variables":{"a":["x\\udc00"]}}',
    400,
    'ValidationError',
    'application/json',
  ],
  [
    'start: variable name with a lone surrogate',
    'POST',
    () => '/api/instances',
    '{"definitionKey":"guarded","variables":{"\\uDBFFa":1}}',
    400,
    'ValidationError',
    'application/json',
  ],
  ['list: bad status', 'GET', () => '/api/instances?status=nope', undefined, 400, 'ValidationError'],
  ['list: bad limit', 'GET', () => '/api/instances?limit=0', undefined, 400, 'ValidationError'],
  ['list: bad cursor', 'GET', () => '/api/instances?cursor=zzz', undefined, 400, 'ValidationError'],
  ['instance: not a uuid', 'GET', () => '/api/instances/abc', undefined, 404, 'NotFound'],
  ['instance: unknown', 'GET', () => `/api/instances/${missing}`, undefined, 404, 'NotFound'],
  ['history: unknown', 'GET', () => `/api/instances/${missing}/history`, undefined, 404, 'NotFound'],
  ['history: bad afterSeq', 'GET', () => `/api/instances/${instanceId}/history?afterSeq=-1`, undefined, 400, 'ValidationError'],
  [
    'history: afterSeq beyond bigint',
    'GET',
    () => `/api/instances/${instanceId}/history?afterSeq=99999999999999999999`,
    undefined,
    400,
    'ValidationError',
  ],
  ['list: limit beyond double range', 'GET', () => '/api/instances?limit=1e309', undefined, 400, 'ValidationError'],
  [
    'history: afterSeq beyond double range',
    'GET',
    () => `/api/instances/${instanceId}/history?afterSeq=1e309`,
    undefined,
    400,
    'ValidationError',
  ],
  [
    'heatmap: version beyond double range',
    'GET',
    () => '/api/definitions/guarded/heatmap?version=1e309',
    undefined,
    400,
    'ValidationError',
  ],
  ['cancel: unknown', 'POST', () => `/api/instances/${missing}/cancel`, undefined, 404, 'NotFound'],
  ['suspend: unknown', 'POST', () => `/api/instances/${missing}/suspend`, undefined, 404, 'NotFound'],
  ['resume: not a uuid', 'POST', () => '/api/instances/abc/resume', undefined, 404, 'NotFound'],
  ['modify: no instructions', 'POST', () => `/api/instances/${instanceId}/modify`, { instructions: [] }, 400, 'ValidationError'],
  [
    'modify: unknown type',
    'POST',
    () => `/api/instances/${instanceId}/modify`,
    { instructions: [{ type: 'skip', elementId: 'work' }] },
    400,
    'ValidationError',
  ],
  [
    'modify: unknown element',
    'POST',
    () => `/api/instances/${instanceId}/modify`,
    { instructions: [{ type: 'cancel', elementId: 'nowhere' }] },
    400,
    'ValidationError',
  ],
  ['migrate: no version', 'POST', () => `/api/instances/${instanceId}/migrate`, {}, 400, 'ValidationError'],
  ['migrate: unknown field', 'POST', () => `/api/instances/${instanceId}/migrate`, { version: 2, to: 2 }, 400, 'ValidationError'],
  [
    'migrate: mapping not text',
    'POST',
    () => `/api/instances/${instanceId}/migrate`,
    { version: 2, mapping: { work: 5 } },
    400,
    'ValidationError',
  ],
  ['migrate: version not deployed', 'POST', () => `/api/instances/${instanceId}/migrate`, { version: 2 }, 404, 'NotFound'],
  ['migrate: same version', 'POST', () => `/api/instances/${instanceId}/migrate`, { version: 1 }, 409, 'Conflict'],
  ['migrate: unknown instance', 'POST', () => `/api/instances/${missing}/migrate`, { version: 2 }, 404, 'NotFound'],
  ['migration plan: no from', 'GET', () => '/api/definitions/guarded/migration-plan?to=1', undefined, 400, 'ValidationError'],
  [
    'migration plan: unknown version',
    'GET',
    () => '/api/definitions/guarded/migration-plan?from=1&to=3',
    undefined,
    404,
    'NotFound',
  ],
  [
    'fetch: maxTasks 0',
    'POST',
    () => '/api/external-tasks/fetch-and-lock',
    { workerId: 'w', maxTasks: 0, topics: [{ name: 'guarded-task', lockDurationMs: 1000 }] },
    400,
    'ValidationError',
  ],
  [
    'fetch: maxTasks 501',
    'POST',
    () => '/api/external-tasks/fetch-and-lock',
    { workerId: 'w', maxTasks: 501, topics: [{ name: 'guarded-task', lockDurationMs: 1000 }] },
    400,
    'ValidationError',
  ],
  [
    'fetch: lock too short',
    'POST',
    () => '/api/external-tasks/fetch-and-lock',
    { workerId: 'w', maxTasks: 1, topics: [{ name: 'guarded-task', lockDurationMs: 99 }] },
    400,
    'ValidationError',
  ],
  [
    'fetch: lock over 24 h',
    'POST',
    () => '/api/external-tasks/fetch-and-lock',
    { workerId: 'w', maxTasks: 1, topics: [{ name: 'guarded-task', lockDurationMs: 86_400_001 }] },
    400,
    'ValidationError',
  ],
  [
    'fetch: waitMs over 30 min',
    'POST',
    () => '/api/external-tasks/fetch-and-lock',
    { workerId: 'w', maxTasks: 1, waitMs: 1_800_001, topics: [{ name: 'guarded-task', lockDurationMs: 1000 }] },
    400,
    'ValidationError',
  ],
  [
    'fetch: no topics',
    'POST',
    () => '/api/external-tasks/fetch-and-lock',
    { workerId: 'w', maxTasks: 1, topics: [] },
    400,
    'ValidationError',
  ],
  [
    'fetch: no worker',
    'POST',
    () => '/api/external-tasks/fetch-and-lock',
    { maxTasks: 1, topics: [{ name: 'guarded-task', lockDurationMs: 1000 }] },
    400,
    'ValidationError',
  ],
  [
    'complete: missing token',
    'POST',
    () => `/api/external-tasks/${task.id}/complete`,
    { workerId: 'holder' },
    400,
    'ValidationError',
  ],
  [
    'complete: token not a uuid',
    'POST',
    () => `/api/external-tasks/${task.id}/complete`,
    { workerId: 'holder', lockToken: 'abc' },
    400,
    'ValidationError',
  ],
  [
    'complete: variables wrong type',
    'POST',
    () => `/api/external-tasks/${task.id}/complete`,
    () => ({ ...holder(), variables: 'x' }),
    400,
    'ValidationError',
  ],
  ['complete: unknown task', 'POST', () => `/api/external-tasks/${missing}/complete`, () => holder(), 404, 'NotFound'],
  ['complete: task id not a uuid', 'POST', () => '/api/external-tasks/123/complete', () => holder(), 404, 'NotFound'],
  ['failure: missing message', 'POST', () => `/api/external-tasks/${task.id}/failure`, () => holder(), 400, 'ValidationError'],
  ['bpmn-error: missing code', 'POST', () => `/api/external-tasks/${task.id}/bpmn-error`, () => holder(), 400, 'ValidationError'],
  [
    'extend-lock: missing duration',
    'POST',
    () => `/api/external-tasks/${task.id}/extend-lock`,
    () => holder(),
    400,
    'ValidationError',
  ],
  [
    'extend-lock: unknown task',
    'POST',
    () => `/api/external-tasks/${missing}/extend-lock`,
    () => ({ ...holder(), lockDurationMs: 1000 }),
    404,
    'NotFound',
  ],
  ['unlock: wrong body', 'POST', () => `/api/external-tasks/${task.id}/unlock`, { workerId: 7 }, 400, 'ValidationError'],
  ['incident retry: unknown', 'POST', () => `/api/incidents/${missing}/retry`, {}, 404, 'NotFound'],
  ['incident retry: retries 0', 'POST', () => `/api/incidents/${missing}/retry`, { retries: 0 }, 400, 'ValidationError'],
  ['incidents: bad status', 'GET', () => '/api/incidents?status=all', undefined, 400, 'ValidationError'],
  ['batch: no body', 'POST', () => '/api/batches', {}, 400, 'ValidationError'],
  [
    'batch: unknown operation',
    'POST',
    () => '/api/batches',
    { operation: 'delete', filter: { definitionKey: 'guarded' } },
    400,
    'ValidationError',
  ],
  ['batch: empty filter', 'POST', () => '/api/batches', { operation: 'cancel', filter: {} }, 400, 'ValidationError'],
  [
    'batch: unknown filter field',
    'POST',
    () => '/api/batches',
    { operation: 'cancel', filter: { key: 'guarded' } },
    400,
    'ValidationError',
  ],
  [
    'batch: bad status',
    'POST',
    () => '/api/batches',
    { operation: 'cancel', filter: { status: 'gone' } },
    400,
    'ValidationError',
  ],
  [
    'batch: version without key',
    'POST',
    () => '/api/batches',
    { operation: 'cancel', filter: { version: 1 } },
    400,
    'ValidationError',
  ],
  [
    'batch: options on a cancel',
    'POST',
    () => '/api/batches',
    { operation: 'cancel', filter: { definitionKey: 'guarded' }, options: { retries: 2 } },
    400,
    'ValidationError',
  ],
  [
    'batch: retries 0',
    'POST',
    () => '/api/batches',
    { operation: 'retry', filter: { definitionKey: 'guarded' }, options: { retries: 0 } },
    400,
    'ValidationError',
  ],
  ['batch: unknown', 'GET', () => `/api/batches/${missing}`, undefined, 404, 'NotFound'],
  ['batch: not a uuid', 'GET', () => '/api/batches/abc', undefined, 404, 'NotFound'],
  ['batch results: unknown', 'GET', () => `/api/batches/${missing}/results`, undefined, 404, 'NotFound'],
  ['batch cancel: unknown', 'POST', () => `/api/batches/${missing}/cancel`, undefined, 404, 'NotFound'],
  ['batches: bad cursor', 'GET', () => '/api/batches?cursor=bm9wZQ', undefined, 400, 'ValidationError'],
  ['batches: bad limit', 'GET', () => '/api/batches?limit=0', undefined, 400, 'ValidationError'],
  ['unknown route', 'GET', () => '/api/nothing', undefined, 404, 'NotFound'],
  ['user tasks: bad limit', 'GET', () => '/api/user-tasks?limit=0', undefined, 400, 'ValidationError'],
  ['user tasks: bad cursor', 'GET', () => '/api/user-tasks?cursor=zzz', undefined, 400, 'ValidationError'],
  ['user tasks: bad dueBefore', 'GET', () => '/api/user-tasks?dueBefore=soon', undefined, 400, 'ValidationError'],
  ['user task: not a uuid', 'GET', () => '/api/user-tasks/abc', undefined, 404, 'NotFound'],
  ['user task: unknown', 'GET', () => `/api/user-tasks/${missing}`, undefined, 404, 'NotFound'],
  [
    'user task claim: userId not text',
    'POST',
    () => `/api/user-tasks/${userTaskId}/claim`,
    { userId: 7 },
    400,
    'ValidationError',
  ],
  [
    'user task claim: unknown field',
    'POST',
    () => `/api/user-tasks/${userTaskId}/claim`,
    { userId: 'bob', x: 1 },
    400,
    'ValidationError',
  ],
  ['user task claim: held by another', 'POST', () => `/api/user-tasks/${userTaskId}/claim`, { userId: 'bob' }, 409, 'Conflict'],
  ['user task claim: unknown task', 'POST', () => `/api/user-tasks/${missing}/claim`, { userId: 'bob' }, 404, 'NotFound'],
  ['user task assign: not text', 'POST', () => `/api/user-tasks/${userTaskId}/assignee`, { assignee: 5 }, 400, 'ValidationError'],
  [
    'user task escalation: no code',
    'POST',
    () => `/api/user-tasks/${userTaskId}/bpmn-escalation`,
    { userId: 'alice' },
    400,
    'ValidationError',
  ],
  [
    'user task escalation: nothing catches it',
    'POST',
    () => `/api/user-tasks/${userTaskId}/bpmn-escalation`,
    { userId: 'alice', escalationCode: 'nobody-catches-this' },
    409,
    'Conflict',
  ],
  [
    'user task complete: form not filled in',
    'POST',
    () => `/api/user-tasks/${userTaskId}/complete`,
    { userId: 'alice', variables: { amount: 5 } },
    400,
    'ValidationError',
  ],
  [
    'user task complete: over the form maximum',
    'POST',
    () => `/api/user-tasks/${userTaskId}/complete`,
    { userId: 'alice', variables: { approved: true, amount: 5000 } },
    400,
    'ValidationError',
  ],
  [
    'user task complete: wrong type',
    'POST',
    () => `/api/user-tasks/${userTaskId}/complete`,
    { userId: 'alice', variables: { approved: 'yes' } },
    400,
    'ValidationError',
  ],
  [
    'user task complete: not the holder',
    'POST',
    () => `/api/user-tasks/${userTaskId}/complete`,
    { userId: 'bob', variables: { approved: true } },
    409,
    'Conflict',
  ],
  [
    'user task complete: variables not an object',
    'POST',
    () => `/api/user-tasks/${userTaskId}/complete`,
    { userId: 'alice', variables: [1] },
    400,
    'ValidationError',
  ],
];

describe('bad input', () => {
  it.each(cases.map((c) => [`${c[0]} → ${c[4]} ${c[5]}, database unchanged`, ...c.slice(1)] as Case))(
    '%s',
    async (_label, method, path, body, status, type, contentType) => {
      const before = await databaseDigest();
      const payload = typeof body === 'function' ? (body as () => unknown)() : body;
      const res = await t.api.call(method, path(), payload, contentType ? { contentType } : {});
      expect(res.status).toBe(status);
      expect(res.body).toMatchObject({ type, message: expect.any(String) });
      expect(res.body.message.length).toBeGreaterThan(10);
      expect(await databaseDigest()).toBe(before);
    },
  );

  it('given a wrong lock token on complete, then 409 LockLost and only a late-result history row is added', async () => {
    const before = await t.db.pool.query('select state, lock_token from external_tasks where id = $1', [task.id]);
    const res = await t.api.post(`/api/external-tasks/${task.id}/complete`, { workerId: 'holder', lockToken: missing });
    expect(res.status).toBe(409);
    expect(res.body.type).toBe('LockLost');
    const after = await t.db.pool.query('select state, lock_token from external_tasks where id = $1', [task.id]);
    expect(after.rows).toEqual(before.rows);
    const { rows } = await t.db.pool.query(`select kind from events where task_id = $1 order by seq desc limit 1`, [task.id]);
    expect(rows[0].kind).toBe('task:late_result');
  });

  it('given a surrogate pair written as two escapes, then it is one character and the start is accepted; the refusal of a lone one names where it is', async () => {
    const ok = await t.api.call(
      'POST',
      '/api/instances',
      '{"definitionKey":"guarded","businessKey":"pair-\\ud83d\\ude00","variables":{"e":"\\uD83D\\uDE00"}}',
    );
    expect(ok.status, JSON.stringify(ok.body)).toBe(201);
    const { rows } = await t.db.pool.query('select business_key, variables from instances where id = $1', [ok.body.id]);
    expect(rows[0]).toEqual({ business_key: 'pair-\u{1F600}', variables: { e: '\u{1F600}' } });
    const refused = await t.api.call('POST', '/api/instances', '{"definitionKey":"guarded","variables":{"list":[1,"\\ud800"]}}');
    expect(refused.status).toBe(400);
    expect(refused.body.message).toContain('variables.list[1]');
  });
});
