// /engine-rest/external-task over plain HTTP: wire format, fencing by workerId, errors, bad input.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBpmn, singleTaskBpmn } from '../support/bpmn.ts';
import { deploy, waitForStatus } from '../support/flows.ts';
import { startTestServer, waitFor, type TestServer } from '../support/server.ts';
import { engineRest, startByKey } from './support.ts';

let t: TestServer;
let seq = 0;

beforeAll(async () => {
  t = await startTestServer();
  await deploy(t.api, singleTaskBpmn('rt_single', 'rt-single'));
  await deploy(
    t.api,
    buildBpmn(
      'rt_gate',
      [
        { id: 'start', type: 'startEvent' },
        { id: 'work', type: 'serviceTask', topic: 'rt-gate' },
        { id: 'gw', type: 'exclusiveGateway', default: 'low' },
        { id: 'high_task', type: 'serviceTask', topic: 'rt-gate-high' },
        { id: 'end', type: 'endEvent' },
      ],
      [
        { from: 'start', to: 'work' },
        { from: 'work', to: 'gw' },
        { id: 'high', from: 'gw', to: 'high_task', condition: '${score > 10}' },
        { id: 'low', from: 'gw', to: 'end' },
        { from: 'high_task', to: 'end' },
      ],
    ),
  );
});
afterAll(async () => {
  await t.close();
});

/** A fresh topic with one ready task, so tests never see each other's tasks. */
async function oneTask(variables: Record<string, unknown> = {}, businessKey?: string) {
  const topic = `rt-${++seq}`;
  const key = `rt_p${seq}`;
  await deploy(t.api, singleTaskBpmn(key, topic));
  const id = await startByKey(t.url, key, { variables, ...(businessKey ? { businessKey } : {}) });
  return { topic, key, instanceId: id };
}

async function fetchLock(workerId: string, topics: Record<string, unknown>[], extra: Record<string, unknown> = {}) {
  return engineRest(t.url, 'POST', '/external-task/fetchAndLock', { workerId, maxTasks: 10, topics, ...extra });
}

async function snapshot() {
  const { rows } = await t.db.pool.query(`select
    (select count(*) from events)::int as events,
    (select count(*) from external_tasks where state = 'locked')::int as locked,
    (select coalesce(sum(revision), 0) from instances)::int as revisions,
    (select count(*) from camunda_variables)::int as types,
    (select count(*) from definitions)::int as definitions`);
  return rows[0];
}

describe('fetchAndLock', () => {
  it('answers exactly Content-Type application/json and Camunda task fields', async () => {
    const { topic, key, instanceId } = await oneTask({ n: { value: 5, type: 'Integer' } }, 'bk-1');
    const res = await fetchLock('w1', [{ topicName: topic, lockDuration: 10_000, unknownProperty: true }], {
      usePriority: true,
      alsoUnknown: 1,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(res.body).toHaveLength(1);
    const task = res.body[0];
    expect(task).toMatchObject({
      topicName: topic,
      workerId: 'w1',
      processInstanceId: instanceId,
      executionId: instanceId,
      processDefinitionKey: key,
      activityId: 'work',
      businessKey: 'bk-1',
      retries: null,
      errorMessage: null,
      errorDetails: null,
      priority: 0,
      tenantId: null,
      variables: { n: { type: 'Integer', value: 5, valueInfo: {} } },
    });
    expect(task.lockExpirationTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+0000$/);
    expect(task.activityInstanceId).toBe(`work:${task.id}`);
  });

  it('filters by businessKey, processDefinitionKey and processVariables, and returns only the named variables', async () => {
    const a = await oneTask({ region: { value: 'eu' }, extra: { value: 1 } }, 'bk-a');
    const miss = await fetchLock('w1', [{ topicName: a.topic, lockDuration: 1000, businessKey: 'other' }]);
    expect(miss.body).toEqual([]);
    const missVar = await fetchLock('w1', [{ topicName: a.topic, lockDuration: 1000, processVariables: { region: 'us' } }]);
    expect(missVar.body).toEqual([]);
    const missTenant = await fetchLock('w1', [{ topicName: a.topic, lockDuration: 1000, tenantIdIn: ['t1'] }]);
    expect(missTenant.body).toEqual([]);
    const hit = await fetchLock('w1', [
      {
        topicName: a.topic,
        lockDuration: 1000,
        businessKey: 'bk-a',
        processDefinitionKeyIn: [a.key],
        processVariables: { region: 'eu' },
        variables: ['region'],
      },
    ]);
    expect(hit.body).toHaveLength(1);
    expect(Object.keys(hit.body[0].variables)).toEqual(['region']);
  });

  it('orders by priority when usePriority, and by createTime as sorting asks', async () => {
    const topic = `rt-prio-${++seq}`;
    await deploy(
      t.api,
      buildBpmn(
        `rt_low${seq}`,
        [
          { id: 's', type: 'startEvent' },
          { id: 'work', type: 'serviceTask', topic, priority: 1 },
          { id: 'e', type: 'endEvent' },
        ],
        [
          { from: 's', to: 'work' },
          { from: 'work', to: 'e' },
        ],
      ),
    );
    await deploy(
      t.api,
      buildBpmn(
        `rt_high${seq}`,
        [
          { id: 's', type: 'startEvent' },
          { id: 'work', type: 'serviceTask', topic, priority: 9 },
          { id: 'e', type: 'endEvent' },
        ],
        [
          { from: 's', to: 'work' },
          { from: 'work', to: 'e' },
        ],
      ),
    );
    const low1 = await startByKey(t.url, `rt_low${seq}`);
    const high = await startByKey(t.url, `rt_high${seq}`);
    const low2 = await startByKey(t.url, `rt_low${seq}`);
    const byPriority = await fetchLock('w1', [{ topicName: topic, lockDuration: 1000 }], { maxTasks: 1, usePriority: true });
    expect(byPriority.body[0].processInstanceId).toBe(high);
    const newest = await fetchLock('w1', [{ topicName: topic, lockDuration: 1000 }], {
      maxTasks: 1,
      usePriority: false,
      sorting: [{ sortBy: 'createTime', sortOrder: 'desc' }],
    });
    expect(newest.body[0].processInstanceId).toBe(low2);
    const oldest = await fetchLock('w1', [{ topicName: topic, lockDuration: 1000 }], { maxTasks: 1, usePriority: false });
    expect(oldest.body[0].processInstanceId).toBe(low1);
  });

  it('refuses asyncResponseTimeout above 1,800,000 and other bad bodies with 400 InvalidRequestException, changing nothing', async () => {
    const { topic } = await oneTask();
    const before = await snapshot();
    for (const body of [
      { workerId: 'w1', maxTasks: 1, asyncResponseTimeout: 1_800_001, topics: [{ topicName: topic, lockDuration: 1000 }] },
      { maxTasks: 1, topics: [{ topicName: topic, lockDuration: 1000 }] },
      { workerId: 'w1', maxTasks: 'ten', topics: [{ topicName: topic, lockDuration: 1000 }] },
      { workerId: 'w1', maxTasks: 1, topics: [{ topicName: topic }] },
      {
        workerId: 'w1',
        maxTasks: 1,
        sorting: [{ sortBy: 'priority', sortOrder: 'asc' }],
        topics: [{ topicName: topic, lockDuration: 1000 }],
      },
    ]) {
      const res = await engineRest(t.url, 'POST', '/external-task/fetchAndLock', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.type).toBe('InvalidRequestException');
      expect(res.headers.get('content-type')).toBe('application/json');
    }
    const malformed = await fetch(`${t.url}/engine-rest/external-task/fetchAndLock`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"workerId":',
    });
    expect(malformed.status).toBe(400);
    expect((await malformed.json()).type).toBe('InvalidRequestException');
    expect(await snapshot()).toEqual(before);
  });

  it('a client that disconnects while parked leaves nothing locked', async () => {
    const topic = `rt-gone-${++seq}`;
    await deploy(t.api, singleTaskBpmn(`rt_gone${seq}`, topic));
    const parkedBefore = t.server.parkedPolls.parked;
    const abort = new AbortController();
    const poll = fetch(`${t.url}/engine-rest/external-task/fetchAndLock`, {
      method: 'POST',
      signal: abort.signal,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        workerId: 'gone',
        maxTasks: 1,
        asyncResponseTimeout: 60_000,
        topics: [{ topicName: topic, lockDuration: 60_000 }],
      }),
    }).catch(() => undefined);
    await waitFor(async () => (t.server.parkedPolls.parked > parkedBefore ? true : undefined), 10_000, 'the poll to park');
    abort.abort();
    await poll;
    await waitFor(async () => (t.server.parkedPolls.parked === parkedBefore ? true : undefined), 10_000, 'the poll to end');
    const id = await startByKey(t.url, `rt_gone${seq}`);
    const { rows } = await t.db.pool.query(`select state, worker_id from external_tasks where instance_id = $1`, [id]);
    expect(rows[0]).toEqual({ state: 'ready', worker_id: null });
  });
});

describe('task calls by workerId', () => {
  async function locked(workerId = 'w1') {
    const task = await oneTask();
    const res = await fetchLock(workerId, [{ topicName: task.topic, lockDuration: 30_000 }]);
    return { ...task, id: res.body[0].id as string };
  }

  it('complete by the holder is 204; a repeat by the holder is 204; anyone else gets 404 once it is gone', async () => {
    const task = await locked();
    const other = await engineRest(t.url, 'POST', `/external-task/${task.id}/complete`, { workerId: 'intruder' });
    expect(other.status).toBe(400);
    expect(other.body.type).toBe('RestException');
    expect(other.body.message).toContain("locked by worker 'w1'");
    const ok = await engineRest(t.url, 'POST', `/external-task/${task.id}/complete`, {
      workerId: 'w1',
      variables: { done: { value: true, type: 'boolean' } },
    });
    expect(ok.status).toBe(204);
    expect(ok.body).toBeUndefined();
    expect((await engineRest(t.url, 'POST', `/external-task/${task.id}/complete`, { workerId: 'w1' })).status).toBe(204);
    const late = await engineRest(t.url, 'POST', `/external-task/${task.id}/complete`, { workerId: 'intruder' });
    expect(late.status).toBe(404);
    expect(late.body.type).toBe('RestException');
    await waitForStatus(t.api, task.instanceId, 'completed');
    const kinds = (await t.api.get(`/api/instances/${task.instanceId}/history`)).body.items.map((e: { kind: string }) => e.kind);
    expect(kinds.filter((k: string) => k === 'task:late_result')).toHaveLength(2);
  });

  it('two concurrent completes by the holder both answer 204 and the step completes once', async () => {
    const task = await locked();
    const both = await Promise.all(
      [1, 2].map((n) =>
        engineRest(t.url, 'POST', `/external-task/${task.id}/complete`, { workerId: 'w1', variables: { n: { value: n } } }),
      ),
    );
    expect(both.map((r) => r.status)).toEqual([204, 204]);
    const kinds = (await t.api.get(`/api/instances/${task.instanceId}/history`)).body.items.map((e: { kind: string }) => e.kind);
    expect(kinds.filter((k: string) => k === 'task:completed')).toHaveLength(1);
    expect(kinds.filter((k: string) => k === 'instance:completed')).toHaveLength(1);
  });

  it('two workers locking one ready task by id at once: exactly one gets it', async () => {
    const task = await oneTask();
    const [row] = (await t.db.pool.query(`select id from external_tasks where instance_id = $1`, [task.instanceId])).rows;
    const results = await Promise.all(
      ['a', 'b'].map((w) => engineRest(t.url, 'POST', `/external-task/${row.id}/lock`, { workerId: w, lockDuration: 30_000 })),
    );
    expect(results.map((r) => r.status).sort()).toEqual([204, 400]);
    const { rows } = await t.db.pool.query(`select attempt from external_tasks where id = $1`, [row.id]);
    expect(rows[0].attempt).toBe(1);
  });

  it('PUT retries 0 racing the holder complete: exactly one wins, the instance ends in one named state', async () => {
    const task = await locked();
    const [done, zero] = await Promise.all([
      engineRest(t.url, 'POST', `/external-task/${task.id}/complete`, { workerId: 'w1' }),
      engineRest(t.url, 'PUT', `/external-task/${task.id}/retries`, { retries: 0 }),
    ]);
    const status = (await t.api.get(`/api/instances/${task.instanceId}`)).body.status;
    if (done.status === 204) {
      expect(status).toBe('completed');
      expect(zero.status).toBe(404);
    } else {
      expect([done.status, zero.status]).toEqual([400, 204]);
      expect(status).toBe('incident');
    }
  });

  it('unknown and malformed task ids answer 404', async () => {
    for (const id of ['00000000-0000-0000-0000-000000000000', 'not-a-uuid']) {
      const res = await engineRest(t.url, 'POST', `/external-task/${id}/complete`, { workerId: 'w1' });
      expect(res.status).toBe(404);
      expect(res.body.type).toBe('RestException');
    }
  });

  it('a variable that does not fit its type is refused with 400 and the task stays locked', async () => {
    const task = await locked();
    const before = await snapshot();
    for (const variables of [
      { n: { value: 'abc', type: 'Integer' } },
      { n: { value: 2 ** 60, type: 'Long' } },
      { n: { value: 'x', type: 'Unknown' } },
      { n: { value: '2024-13-45', type: 'Date' } },
      { n: { value: '{oops', type: 'Json' } },
      { n: 'not an object' },
    ]) {
      const res = await engineRest(t.url, 'POST', `/external-task/${task.id}/complete`, { workerId: 'w1', variables });
      expect(res.status, JSON.stringify(variables)).toBe(400);
      expect(res.body.type).toBe('InvalidRequestException');
    }
    expect(await snapshot()).toEqual(before);
  });

  it('transient variables steer the gateway but are not stored', async () => {
    const id = await startByKey(t.url, 'rt_gate');
    const res = await fetchLock('w1', [{ topicName: 'rt-gate', lockDuration: 30_000 }]);
    const task = res.body.find((x: { processInstanceId: string }) => x.processInstanceId === id);
    const done = await engineRest(t.url, 'POST', `/external-task/${task.id}/complete`, {
      workerId: 'w1',
      variables: {
        score: { value: 50, type: 'Integer', valueInfo: { transient: true } },
        kept: { value: 'yes', type: 'String' },
      },
    });
    expect(done.status).toBe(204);
    const instance = await waitForStatus(t.api, id, 'running');
    expect(instance.tasks[0].topic).toBe('rt-gate-high');
    expect(instance.variables).toEqual({ kept: 'yes' });
  });

  it('failure sets absolute retries and retryTimeout; a repeat is 204; retries 0 raises an incident', async () => {
    const task = await locked();
    const bad = await engineRest(t.url, 'POST', `/external-task/${task.id}/failure`, { workerId: 'w1', retries: -1 });
    expect(bad.status).toBe(400);
    const fail = await engineRest(t.url, 'POST', `/external-task/${task.id}/failure`, {
      workerId: 'w1',
      errorMessage: 'boom',
      retries: 2,
      retryTimeout: 60_000,
    });
    expect(fail.status).toBe(204);
    expect(
      (
        await engineRest(t.url, 'POST', `/external-task/${task.id}/failure`, {
          workerId: 'w1',
          errorMessage: 'boom',
          retries: 2,
          retryTimeout: 60_000,
        })
      ).status,
    ).toBe(204);
    const { rows } = await t.db.pool.query(
      `select state, retries_left, retry_at > now() + interval '50 seconds' as delayed from external_tasks where id = $1`,
      [task.id],
    );
    expect(rows[0]).toEqual({ state: 'ready', retries_left: 1, delayed: true });
    const view = await engineRest(t.url, 'GET', `/external-task/${task.id}`);
    expect(view.body).toMatchObject({ retries: 2, errorMessage: 'boom', workerId: null });
    // Not fetchable during the retry timeout.
    expect((await fetchLock('w1', [{ topicName: task.topic, lockDuration: 1000 }])).body).toEqual([]);
    // Lock by id ignores the backoff (the caller names the task), then failing with no retries raises an incident.
    expect(
      (await engineRest(t.url, 'POST', `/external-task/${task.id}/lock`, { workerId: 'w2', lockDuration: 5000 })).status,
    ).toBe(204);
    expect(
      (await engineRest(t.url, 'POST', `/external-task/${task.id}/failure`, { workerId: 'w2', errorMessage: 'again' })).status,
    ).toBe(204);
    const instance = await waitForStatus(t.api, task.instanceId, 'incident');
    expect(instance.incidents[0].kind).toBe('task_failed');
    expect((await engineRest(t.url, 'GET', `/external-task/${task.id}`)).body.retries).toBe(0);
  });

  it('failure and bpmnError keep the Camunda types of their variables', async () => {
    const a = await locked();
    await engineRest(t.url, 'POST', `/external-task/${a.id}/failure`, {
      workerId: 'w1',
      retries: 1,
      retryTimeout: 60_000,
      variables: { failedAt: { value: '2024-03-01T10:00:00.000+0000', type: 'Date' } },
    });
    expect((await engineRest(t.url, 'GET', `/process-instance/${a.instanceId}/variables/failedAt`)).body).toEqual({
      type: 'Date',
      value: '2024-03-01T10:00:00.000+0000',
      valueInfo: {},
    });
    const b = await locked();
    await engineRest(t.url, 'POST', `/external-task/${b.id}/bpmnError`, {
      workerId: 'w1',
      errorCode: 'NOPE',
      variables: { detail: { value: '{"why":"x"}', type: 'Json' } },
    });
    await waitForStatus(t.api, b.instanceId, 'incident');
    expect((await engineRest(t.url, 'GET', `/process-instance/${b.instanceId}/variables/detail`)).body).toEqual({
      type: 'Json',
      value: '{"why":"x"}',
      valueInfo: {},
    });
    expect(
      (await engineRest(t.url, 'POST', `/external-task/${b.id}/bpmnError`, { workerId: 'w1', errorCode: 'NOPE' })).status,
    ).toBe(204);
    expect(
      (await engineRest(t.url, 'POST', `/external-task/${b.id}/bpmnError`, { workerId: 'w9', errorCode: 'NOPE' })).status,
    ).toBe(400);
  });

  it('lock by id: a ready task locks, the holder renews, another worker gets 400', async () => {
    const task = await oneTask();
    const [row] = (await t.db.pool.query(`select id from external_tasks where instance_id = $1`, [task.instanceId])).rows;
    expect(
      (await engineRest(t.url, 'POST', `/external-task/${row.id}/lock`, { workerId: 'w1', lockDuration: 1000 })).status,
    ).toBe(204);
    expect(
      (await engineRest(t.url, 'POST', `/external-task/${row.id}/lock`, { workerId: 'w1', lockDuration: 60_000 })).status,
    ).toBe(204);
    const other = await engineRest(t.url, 'POST', `/external-task/${row.id}/lock`, { workerId: 'w2', lockDuration: 1000 });
    expect(other.status).toBe(400);
    expect(other.body.type).toBe('RestException');
    const { rows } = await t.db.pool.query(
      `select worker_id, attempt, lock_expires_at > now() + interval '50 seconds' as renewed from external_tasks where id = $1`,
      [row.id],
    );
    expect(rows[0]).toEqual({ worker_id: 'w1', attempt: 1, renewed: true });
  });

  it('lock by id takes over a lease that expired before the sweeper returned it; the old holder is refused', async () => {
    const task = await oneTask();
    const first = await fetchLock('w1', [{ topicName: task.topic, lockDuration: 100 }]);
    const id = first.body[0].id as string;
    await waitFor(
      async () => {
        const { rows } = await t.db.pool.query(`select lock_expires_at <= now() as expired from external_tasks where id = $1`, [
          id,
        ]);
        return rows[0].expired ? true : undefined;
      },
      10_000,
      'the lease to expire',
    );
    expect((await engineRest(t.url, 'POST', `/external-task/${id}/lock`, { workerId: 'w2', lockDuration: 30_000 })).status).toBe(
      204,
    );
    const { rows } = await t.db.pool.query(`select state, worker_id, attempt from external_tasks where id = $1`, [id]);
    expect(rows[0]).toEqual({ state: 'locked', worker_id: 'w2', attempt: 2 });
    expect((await engineRest(t.url, 'POST', `/external-task/${id}/complete`, { workerId: 'w1' })).status).toBe(400);
    expect((await engineRest(t.url, 'POST', `/external-task/${id}/complete`, { workerId: 'w2' })).status).toBe(204);
  });

  it('extendLock by a worker that does not hold the lock is 400; unlock needs no worker and a second unlock is a no-op', async () => {
    const task = await locked();
    const other = await engineRest(t.url, 'POST', `/external-task/${task.id}/extendLock`, { workerId: 'w2', newDuration: 1000 });
    expect(other.status).toBe(400);
    expect(
      (await engineRest(t.url, 'POST', `/external-task/${task.id}/extendLock`, { workerId: 'w1', newDuration: 0 })).status,
    ).toBe(400);
    expect(
      (await engineRest(t.url, 'POST', `/external-task/${task.id}/extendLock`, { workerId: 'w1', newDuration: 5000 })).status,
    ).toBe(204);
    expect((await engineRest(t.url, 'POST', `/external-task/${task.id}/unlock`)).status).toBe(204);
    expect((await engineRest(t.url, 'POST', `/external-task/${task.id}/unlock`)).status).toBe(204);
    const { rows } = await t.db.pool.query(`select state, worker_id from external_tasks where id = $1`, [task.id]);
    expect(rows[0]).toEqual({ state: 'ready', worker_id: null });
  });

  it('PUT retries 0 raises an incident; retries > 0 resolves it and the task is fetchable again', async () => {
    const task = await locked();
    expect((await engineRest(t.url, 'PUT', `/external-task/${task.id}/retries`, { retries: 'x' })).status).toBe(400);
    expect((await engineRest(t.url, 'PUT', `/external-task/${task.id}/retries`, { retries: 0 })).status).toBe(204);
    await waitForStatus(t.api, task.instanceId, 'incident');
    expect((await engineRest(t.url, 'PUT', `/external-task/${task.id}/retries`, { retries: 3 })).status).toBe(204);
    await waitForStatus(t.api, task.instanceId, 'running');
    const again = await fetchLock('w3', [{ topicName: task.topic, lockDuration: 1000 }]);
    expect(again.body[0]).toMatchObject({ id: task.id, retries: 3 });
  });

  it('lists, counts and reads open tasks as Camunda does', async () => {
    const task = await locked('lister');
    const list = await engineRest(t.url, 'GET', `/external-task?topicName=${task.topic}&locked=true`);
    expect(list.status).toBe(200);
    expect(list.headers.get('content-type')).toBe('application/json');
    expect(list.body).toHaveLength(1);
    expect(list.body[0]).toMatchObject({
      id: task.id,
      workerId: 'lister',
      topicName: task.topic,
      processInstanceId: task.instanceId,
      suspended: false,
    });
    expect((await engineRest(t.url, 'GET', `/external-task/count?workerId=lister`)).body).toEqual({ count: 1 });
    expect((await engineRest(t.url, 'GET', `/external-task?locked=maybe`)).status).toBe(400);
    await engineRest(t.url, 'POST', `/external-task/${task.id}/complete`, { workerId: 'lister' });
    expect((await engineRest(t.url, 'GET', `/external-task/${task.id}`)).status).toBe(404);
  });
});
