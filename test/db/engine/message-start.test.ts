// Message and signal start events: POST /api/messages starts an instance when no
// instance waits; POST /api/signals starts one instance per definition; the same
// through /engine-rest/message and /engine-rest/signal.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBpmn } from '../../support/bpmn.ts';
import { complete, deploy, fetchOne, instanceOf, start, waitForStatus } from '../../support/flows.ts';
import { startTestServer, waitFor, type TestServer } from '../../support/server.ts';
import { engineRest } from '../../camunda/support.ts';

let t: TestServer;

/** order: message start "order-placed" -> pick -> wait for "order-paid" (business key) -> ship -> end; a none start too */
const orderBpmn = buildBpmn(
  'order_on_message',
  [
    { id: 'placed', type: 'eventStart', message: 'order-placed' },
    { id: 'manual', type: 'startEvent' },
    { id: 'pick', type: 'serviceTask', topic: 'ms-pick' },
    { id: 'paid', type: 'catchEvent', message: 'order-paid' },
    { id: 'ship', type: 'serviceTask', topic: 'ms-ship' },
    { id: 'e', type: 'endEvent' },
  ],
  [
    { from: 'placed', to: 'pick' },
    { from: 'manual', to: 'pick' },
    { from: 'pick', to: 'paid' },
    { from: 'paid', to: 'ship' },
    { from: 'ship', to: 'e' },
  ],
);

function signalStartBpmn(id: string, topic: string): string {
  return buildBpmn(
    id,
    [
      { id: 'go', type: 'eventStart', signal: 'inventory-day' },
      { id: 'count', type: 'serviceTask', topic },
      { id: 'e', type: 'endEvent' },
    ],
    [
      { from: 'go', to: 'count' },
      { from: 'count', to: 'e' },
    ],
  );
}

beforeAll(async () => {
  t = await startTestServer();
  await deploy(t.api, orderBpmn);
  await deploy(t.api, signalStartBpmn('count_shelves', 'ms-count-shelves'));
  await deploy(t.api, signalStartBpmn('count_cellar', 'ms-count-cellar'));
  // catches the start message of order_on_message: a waiting instance takes precedence
  await deploy(
    t.api,
    buildBpmn(
      'waits_for_placed',
      [
        { id: 's', type: 'startEvent' },
        { id: 'w', type: 'catchEvent', message: 'order-placed' },
        { id: 'e', type: 'endEvent' },
      ],
      [
        { from: 's', to: 'w' },
        { from: 'w', to: 'e' },
      ],
    ),
  );
  // only a message start: the API cannot start it
  await deploy(
    t.api,
    buildBpmn(
      'only_on_message',
      [
        { id: 'hello', type: 'eventStart', message: 'hello' },
        { id: 'e', type: 'endEvent' },
      ],
      [{ from: 'hello', to: 'e' }],
    ),
  );
});
afterAll(async () => {
  await t.close();
});

async function waitForSubscription(id: string): Promise<void> {
  await waitFor(
    async () => ((await t.db.pool.query('select 1 from subscriptions where instance_id = $1', [id])).rowCount ? true : undefined),
    10_000,
    `${id} to wait`,
  );
}

async function steps(id: string): Promise<Record<string, string>> {
  const { rows } = await t.db.pool.query('select step_id, status from steps where instance_id = $1', [id]);
  return Object.fromEntries(rows.map((r) => [r.step_id, r.status]));
}

describe('message start events', () => {
  it('given no waiting instance, then the message starts one with its business key and variables; the none start is skipped', async () => {
    const res = await t.api.post('/api/messages', {
      name: 'order-placed',
      businessKey: 'ord-1',
      messageId: 'placed-ord-1',
      variables: { total: 30 },
    });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ status: 'started', instanceId: expect.any(String), messageId: 'placed-ord-1' });
    const id = res.body.instanceId as string;
    const instance = await instanceOf(t.api, id);
    expect(instance).toMatchObject({
      businessKey: 'ord-1',
      definitionKey: 'order_on_message',
      status: 'running',
      variables: { total: 30 },
    });
    expect(await steps(id)).toEqual({ placed: 'completed', manual: 'skipped', pick: 'active' });
    const { rows } = await t.db.pool.query('select state, instance_id, step_id from messages where message_id = $1', [
      res.body.messageId,
    ]);
    expect(rows).toEqual([{ state: 'matched', instance_id: id, step_id: 'placed' }]);
    const history = await t.api.get(`/api/instances/${id}/history`);
    expect(history.body.items[0]).toMatchObject({
      kind: 'instance:started',
      data: { startEvent: 'placed', businessKey: 'ord-1' },
    });

    // the instance's own catch correlates on the same business key
    const pick = await fetchOne(t.api, 'w', 'ms-pick');
    expect(pick.instanceId).toBe(id);
    await complete(t.api, pick, 'w');
    const paid = await t.api.post('/api/messages', { name: 'order-paid', businessKey: 'ord-1' });
    expect(paid.body).toMatchObject({ status: 'matched', instanceId: id });
    await complete(t.api, await fetchOne(t.api, 'w', 'ms-ship'), 'w');
    await waitForStatus(t.api, id, 'completed');
  });

  it('given an instance already holding the business key, then a second start message answers duplicate and starts nothing', async () => {
    const first = await t.api.post('/api/messages', { name: 'order-placed', businessKey: 'ord-2' });
    expect(first.status).toBe(201);
    const again = await t.api.post('/api/messages', { name: 'order-placed', businessKey: 'ord-2' });
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ status: 'duplicate', instanceId: first.body.instanceId, messageId: again.body.messageId });
    const repeat = await t.api.post('/api/messages', {
      name: 'order-placed',
      businessKey: 'ord-2',
      messageId: first.body.messageId,
    });
    expect(repeat.body).toEqual({ status: 'duplicate', instanceId: first.body.instanceId, messageId: first.body.messageId });
    const { rows } = await t.db.pool.query(`select count(*)::int as n from instances where business_key = 'ord-2'`);
    expect(rows[0].n).toBe(1);
  });

  it('given the same start message 20 times at once, then one instance starts and 19 answers are duplicates (10 rounds)', async () => {
    for (let round = 0; round < 10; round++) {
      const key = `ord-race-${round}`;
      const answers = await Promise.all(
        Array.from({ length: 20 }, () => t.api.post('/api/messages', { name: 'order-placed', businessKey: key })),
      );
      const started = answers.filter((a) => a.body.status === 'started');
      expect(started).toHaveLength(1);
      expect(
        answers.filter((a) => a.body.status === 'duplicate').every((a) => a.body.instanceId === started[0]!.body.instanceId),
      ).toBe(true);
      const { rows } = await t.db.pool.query('select count(*)::int as n from instances where business_key = $1', [key]);
      expect(rows[0].n).toBe(1);
    }
  });

  it('given an instance waiting for the message name, then the waiting instance takes it first and nothing starts', async () => {
    const waiting = await start(t.api, 'waits_for_placed', { businessKey: 'ord-w' });
    await waitForSubscription(waiting);
    const res = await t.api.post('/api/messages', { name: 'order-placed', businessKey: 'ord-w' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'matched', instanceId: waiting });
    await waitForStatus(t.api, waiting, 'completed');
    const { rows } = await t.db.pool.query(`select definition_key from instances where business_key = 'ord-w'`);
    expect(rows).toEqual([{ definition_key: 'waits_for_placed' }]);
  });

  it('given a process with only a message start, then POST /api/instances is 409 and a message starts it', async () => {
    const res = await t.api.post('/api/instances', { definitionKey: 'only_on_message' });
    expect(res.status).toBe(409);
    expect(res.body.message).toContain('no none start event');
    const started = await t.api.post('/api/messages', { name: 'hello' });
    expect(started.status).toBe(201);
    const instance = await waitForStatus(t.api, started.body.instanceId, 'completed');
    expect(instance.businessKey).toBeNull();
  });

  it('given another process that starts on the same message name, then its deploy is refused naming the start event; a new version of the owner deploys', async () => {
    const res = await t.api.post('/api/definitions', {
      xml: buildBpmn(
        'thief',
        [
          { id: 'steal', type: 'eventStart', message: 'order-placed' },
          { id: 'e', type: 'endEvent' },
        ],
        [{ from: 'steal', to: 'e' }],
      ),
    });
    expect(res.status).toBe(400);
    expect(res.body.type).toBe('CompileError');
    expect(res.body.details).toEqual([
      { elementId: 'steal', severity: 'error', message: expect.stringContaining('already starts process order_on_message') },
    ]);
    const v2 = await deploy(
      t.api,
      orderBpmn.replace(
        '<bpmn:process id="order_on_message" isExecutable="true">',
        '<bpmn:process id="order_on_message" name="Order v2" isExecutable="true">',
      ),
    );
    expect(v2.version).toBe(2);
    const res2 = await t.api.post('/api/messages', { name: 'order-placed', businessKey: 'ord-v2' });
    expect((await instanceOf(t.api, res2.body.instanceId)).version).toBe(2);
  });

  it('given a targeted message (instanceId) or an unknown name, then nothing starts', async () => {
    const other = await t.api.post('/api/messages', { name: 'nobody-starts-on-this', businessKey: 'x', ttlMs: 0 });
    expect(other.status).toBe(404);
    const ended = await t.api.post('/api/messages', { name: 'hello' });
    await waitForStatus(t.api, ended.body.instanceId, 'completed');
    const before = (await t.db.pool.query('select count(*)::int as n from instances')).rows[0].n;
    const targeted = await t.api.post('/api/messages', { name: 'order-placed', instanceId: ended.body.instanceId });
    expect(targeted.status).toBe(202);
    expect((await t.db.pool.query('select count(*)::int as n from instances')).rows[0].n).toBe(before);
  });
});

describe('signal start events', () => {
  it('given two definitions starting on a signal, then POST /api/signals starts one instance of each with the signal variables', async () => {
    const res = await t.api.post('/api/signals', { name: 'inventory-day', variables: { day: 'mon' } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ name: 'inventory-day', delivered: 0, started: [expect.any(String), expect.any(String)] });
    const instances = await Promise.all((res.body.started as string[]).map((id) => instanceOf(t.api, id)));
    expect(instances.map((i) => i.definitionKey).sort()).toEqual(['count_cellar', 'count_shelves']);
    expect(instances.every((i) => i.variables.day === 'mon' && i.status === 'running')).toBe(true);
    for (const topic of ['ms-count-shelves', 'ms-count-cellar']) {
      const task = await fetchOne(t.api, 'w', topic);
      expect(task.variables).toEqual({ day: 'mon' });
      await complete(t.api, task, 'w');
      await waitForStatus(t.api, task.instanceId, 'completed');
    }
  });

  it('given a signal with no start event and no waiting instance, then nothing starts', async () => {
    const res = await t.api.post('/api/signals', { name: 'nobody-listens' });
    expect(res.body).toEqual({ name: 'nobody-listens', delivered: 0, started: [] });
  });
});

describe('/engine-rest/message and /engine-rest/signal start instances too', () => {
  it('message: a start message with a business key starts one instance and answers its result; the same key again correlates nothing new', async () => {
    const res = await engineRest(t.url, 'POST', '/message', {
      messageName: 'order-placed',
      businessKey: 'ord-c7',
      processVariables: { total: { value: 5, type: 'Integer' } },
      resultEnabled: true,
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual([
      {
        resultType: 'ProcessDefinition',
        execution: null,
        processInstance: expect.objectContaining({ businessKey: 'ord-c7', ended: false, tenantId: null }),
      },
    ]);
    const id = res.body[0].processInstance.id as string;
    expect(await instanceOf(t.api, id)).toMatchObject({ businessKey: 'ord-c7', variables: { total: 5 } });
    const all = await engineRest(t.url, 'POST', '/message', { messageName: 'order-placed', businessKey: 'ord-c8', all: true });
    expect(all.status).toBe(204);
    const { rows } = await t.db.pool.query(`select count(*)::int as n from instances where business_key in ('ord-c7', 'ord-c8')`);
    expect(rows[0].n).toBe(2);
  });

  it('signal: starts one instance per signal start definition', async () => {
    const before = (
      await t.db.pool.query(`select count(*)::int as n from instances where definition_key in ('count_cellar', 'count_shelves')`)
    ).rows[0].n;
    expect((await engineRest(t.url, 'POST', '/signal', { name: 'inventory-day' })).status).toBe(204);
    const after = (
      await t.db.pool.query(`select count(*)::int as n from instances where definition_key in ('count_cellar', 'count_shelves')`)
    ).rows[0].n;
    expect(after - before).toBe(2);
  });
});
