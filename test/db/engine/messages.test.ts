import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBpmn } from '../../support/bpmn.ts';
import { complete, deploy, fetchOne, fetchTasks, instanceOf, start, waitForStatus } from '../../support/flows.ts';
import { retryWhileBusy } from '../../../runtime/engine/waits.ts';
import { lockMessageKey } from '../../../runtime/store/waits.ts';
import { startTestServer, waitFor, type TestServer } from '../../support/server.ts';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
  // start -> prepare (task) -> wait for "payment" (keyed by orderId) -> ship (task) -> end
  await deploy(
    t.api,
    buildBpmn(
      'payment',
      [
        { id: 's', type: 'startEvent' },
        { id: 'prepare', type: 'serviceTask', topic: 'prepare' },
        { id: 'paid', type: 'catchEvent', message: 'payment', correlationKey: 'orderId' },
        { id: 'ship', type: 'serviceTask', topic: 'ship' },
        { id: 'e', type: 'endEvent' },
      ],
      [
        { from: 's', to: 'prepare' },
        { from: 'prepare', to: 'paid' },
        { from: 'paid', to: 'ship' },
        { from: 'ship', to: 'e' },
      ],
    ),
  );
  // Correlated by business key, with a message boundary that cancels the task and a signal catch.
  await deploy(
    t.api,
    buildBpmn(
      'cancellable',
      [
        { id: 's', type: 'startEvent' },
        { id: 'work', type: 'serviceTask', topic: 'cancellable-work' },
        { id: 'stop', type: 'boundaryEvent', attachedTo: 'work', message: 'stop-order' },
        { id: 'go', type: 'catchEvent', signal: 'go-live' },
        { id: 'e1', type: 'endEvent' },
        { id: 'e2', type: 'endEvent' },
      ],
      [
        { from: 's', to: 'work' },
        { from: 'work', to: 'go' },
        { from: 'go', to: 'e1' },
        { from: 'stop', to: 'e2' },
      ],
    ),
  );
});
afterAll(async () => {
  await t.close();
});

async function advanceToWait(orderId: string): Promise<string> {
  const id = await start(t.api, 'payment', { variables: { orderId } });
  const prepare = await fetchOne(t.api, 'w', 'prepare');
  await complete(t.api, prepare, 'w');
  return id;
}

describe('messages', () => {
  it('given a waiting catch, when the message comes, then it is matched, its variables merge and the token moves on', async () => {
    const id = await advanceToWait('o-1');
    const res = await t.api.post('/api/messages', {
      name: 'payment',
      correlationKey: 'o-1',
      messageId: 'pay-o-1',
      variables: { amount: 42 },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'matched', instanceId: id, messageId: 'pay-o-1' });
    const ship = await fetchOne(t.api, 'w', 'ship');
    expect(ship.variables).toMatchObject({ orderId: 'o-1', amount: 42 });
    const again = await t.api.post('/api/messages', {
      name: 'payment',
      correlationKey: 'o-1',
      messageId: 'pay-o-1',
      variables: { amount: 99 },
    });
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ status: 'duplicate', instanceId: id, messageId: 'pay-o-1' });
    await complete(t.api, ship, 'w');
    expect((await waitForStatus(t.api, id, 'completed')).variables.amount).toBe(42);
  });

  it('given a message before the token reaches the catch, then it is buffered (202) and consumed when the catch starts waiting', async () => {
    const id = await start(t.api, 'payment', { variables: { orderId: 'o-2' } });
    const early = await t.api.post('/api/messages', { name: 'payment', correlationKey: 'o-2', variables: { early: true } });
    expect(early.status).toBe(202);
    expect(early.body.status).toBe('buffered');
    const prepare = await fetchOne(t.api, 'w', 'prepare');
    await complete(t.api, prepare, 'w');
    const ship = await fetchOne(t.api, 'w', 'ship');
    expect(ship.instanceId).toBe(id);
    expect(ship.variables.early).toBe(true);
    const { rows } = await t.db.pool.query(`select state, instance_id from messages where message_id = $1`, [
      early.body.messageId,
    ]);
    expect(rows).toEqual([{ state: 'matched', instance_id: id }]);
    await complete(t.api, ship, 'w');
  });

  it('given no waiting catch and ttlMs 0, then 404 NoMatch and nothing is stored', async () => {
    const res = await t.api.post('/api/messages', { name: 'payment', correlationKey: 'nobody', messageId: 'lost-1', ttlMs: 0 });
    expect(res.status).toBe(404);
    expect(res.body.type).toBe('NoMatch');
    const { rowCount } = await t.db.pool.query(`select 1 from messages where message_id = 'lost-1'`);
    expect(rowCount).toBe(0);
  });

  it('given an instanceId no instance has, then 404 NotFound and nothing is stored', async () => {
    const res = await t.api.post('/api/messages', {
      name: 'payment',
      instanceId: '00000000-0000-4000-8000-000000000000',
      messageId: 'lost-2',
    });
    expect(res.status).toBe(404);
    expect(res.body.type).toBe('NotFound');
    const { rowCount } = await t.db.pool.query(`select 1 from messages where message_id = 'lost-2'`);
    expect(rowCount).toBe(0);
  });

  it('given the longest ttl, then the message is kept for 30 days', async () => {
    const res = await t.api.post('/api/messages', { name: 'payment', correlationKey: 'o-later', ttlMs: 2_592_000_000 });
    expect(res.status).toBe(202);
    const { rows } = await t.db.pool.query(
      `select round(extract(epoch from expires_at - received_at) / 86400) as days from messages where message_id = $1`,
      [res.body.messageId],
    );
    expect(Number(rows[0].days)).toBe(30);
  });

  it('given an expired buffered message, then a later catch does not take it', async () => {
    const early = await t.api.post('/api/messages', { name: 'payment', correlationKey: 'o-3', ttlMs: 1 });
    expect(early.status).toBe(202);
    await new Promise((r) => setTimeout(r, 20)); // let the 1 ms ttl pass on the database clock
    const id = await advanceToWait('o-3');
    expect((await instanceOf(t.api, id)).steps.find((s: { stepId: string }) => s.stepId === 'paid').status).toBe('active');
    expect(await fetchTasks(t.api, 'w', ['ship'])).toEqual([]);
    await t.api.post('/api/instances/' + id + '/cancel');
  });

  it('given a message published while the token is moving to the catch, then it is consumed exactly once (50 rounds)', async () => {
    for (let round = 0; round < 50; round++) {
      const key = `race-${round}`;
      const id = await start(t.api, 'payment', { variables: { orderId: key } });
      const prepare = await fetchOne(t.api, 'w', 'prepare');
      const [, published] = await Promise.all([
        complete(t.api, prepare, 'w'),
        t.api.post('/api/messages', { name: 'payment', correlationKey: key, messageId: `m-${key}` }),
      ]);
      expect(['matched', 'buffered']).toContain(published.body.status);
      const ship = await fetchOne(t.api, 'w', 'ship');
      expect(ship.instanceId, `round ${round}`).toBe(id);
      const { rows } = await t.db.pool.query(`select state from messages where message_id = $1`, [`m-${key}`]);
      expect(rows).toEqual([{ state: 'matched' }]);
      await complete(t.api, ship, 'w');
      await waitForStatus(t.api, id, 'completed');
    }
  });

  it('given the waiting instance held by another transaction, then the message waits for it and is matched once, not answered as a duplicate of itself', async () => {
    const id = await advanceToWait('o-busy');
    const holder = await t.db.pool.connect();
    try {
      await holder.query('begin');
      await holder.query('select 1 from instances where id = $1 for no key update', [id]);
      const published = t.api.post('/api/messages', { name: 'payment', correlationKey: 'o-busy', messageId: 'busy-1' });
      // The publisher finds the instance busy and tries again until the holder lets go.
      await new Promise((r) => setTimeout(r, 150));
      await holder.query('commit');
      const res = await published;
      expect(res.body).toEqual({ status: 'matched', instanceId: id, messageId: 'busy-1' });
    } finally {
      holder.release();
    }
    const { rows } = await t.db.pool.query(`select state, instance_id from messages where message_id = 'busy-1'`);
    expect(rows).toEqual([{ state: 'matched', instance_id: id }]);
    const ship = await fetchOne(t.api, 'w', 'ship');
    expect(ship.instanceId).toBe(id);
    await complete(t.api, ship, 'w');
    await waitForStatus(t.api, id, 'completed');
  });

  it('given a publisher holding its key, then a message of the same name with another key is matched meanwhile; the same key and a Camunda correlation of the name wait for it', async () => {
    const [one, two, three] = [await advanceToWait('k-one'), await advanceToWait('k-two'), await advanceToWait('k-three')];
    const holder = await t.db.pool.connect();
    const waiting = async (n: number) =>
      waitFor(
        async () => {
          const { rows } = await t.db.pool.query(
            `select count(*)::int as n from pg_locks where locktype = 'advisory' and not granted`,
          );
          return rows[0].n === n ? true : undefined;
        },
        5000,
        `${n} publishers waiting on a message lock`,
      );
    try {
      await holder.query('begin');
      await lockMessageKey(holder, { name: 'payment', correlationKey: 'k-one', instanceId: null, byKey: true });
      const other = await t.api.post('/api/messages', { name: 'payment', correlationKey: 'k-two' });
      expect(other.body).toMatchObject({ status: 'matched', instanceId: two });
      const same = t.api.post('/api/messages', { name: 'payment', correlationKey: 'k-one' });
      await waiting(1);
      const camunda = t.api.post('/engine-rest/message', {
        messageName: 'payment',
        correlationKeys: { orderId: { value: 'k-three', type: 'String' } },
      });
      await waiting(2);
      await holder.query('commit');
      expect((await same).body).toMatchObject({ status: 'matched', instanceId: one });
      expect((await camunda).status).toBe(204);
    } finally {
      holder.release();
    }
    const shipped: string[] = [];
    for (let n = 0; n < 3; n++) {
      const ship = await fetchOne(t.api, 'w', 'ship');
      shipped.push(ship.instanceId);
      await complete(t.api, ship, 'w');
      await waitForStatus(t.api, ship.instanceId, 'completed');
    }
    expect(shipped.sort()).toEqual([one, two, three].sort());
  });

  it("given two deliveries that deadlock on each other's message locks, then the one PostgreSQL aborts is tried again whole and both finish", async () => {
    const attempts = { a: 0, b: 0 };
    const holding = { a: false, b: false };
    const run = (me: 'a' | 'b', first: string, second: string) =>
      retryWhileBusy(t.server.engine, `deliver ${me}`, async (tx) => {
        attempts[me]++;
        await lockMessageKey(tx, { name: 'deadlock', correlationKey: first, instanceId: null, byKey: true });
        holding[me] = true;
        const other = me === 'a' ? 'b' : 'a';
        await waitFor(async () => (holding[other] || attempts[me] > 1 ? true : undefined), 5000, `${other} to hold its key`);
        await lockMessageKey(tx, { name: 'deadlock', correlationKey: second, instanceId: null, byKey: true });
        holding[me] = false;
        return me;
      });
    expect(await Promise.all([run('a', 'k1', 'k2'), run('b', 'k2', 'k1')])).toEqual(['a', 'b']);
    expect(attempts.a + attempts.b).toBe(3);
  });

  it('given the same messageId sent twice at once, then one effect (50 rounds)', async () => {
    for (let round = 0; round < 50; round++) {
      const key = `dup-${round}`;
      const id = await advanceToWait(key);
      const results = await Promise.all(
        [1, 2].map(() => t.api.post('/api/messages', { name: 'payment', correlationKey: key, messageId: `d-${key}` })),
      );
      expect(results.map((r) => r.body.status).sort()).toEqual(['duplicate', 'matched']);
      const ship = await fetchOne(t.api, 'w', 'ship');
      expect(ship.instanceId).toBe(id);
      await complete(t.api, ship, 'w');
      await waitForStatus(t.api, id, 'completed');
    }
  });

  it('given an interrupting message boundary correlated by business key, then it cancels the task and ends the other path', async () => {
    const id = await start(t.api, 'cancellable', { businessKey: 'order-77' });
    const task = await fetchOne(t.api, 'w', 'cancellable-work');
    const res = await t.api.post('/api/messages', { name: 'stop-order', businessKey: 'order-77' });
    expect(res.body).toMatchObject({ status: 'matched', instanceId: id });
    const done = await waitForStatus(t.api, id, 'completed');
    const status = Object.fromEntries(done.steps.map((s: { stepId: string; status: string }) => [s.stepId, s.status]));
    expect(status).toMatchObject({ work: 'canceled', stop: 'completed', e2: 'completed', go: 'skipped', e1: 'skipped' });
    expect((await complete(t.api, task, 'w')).status).toBe(409);
  });
});

describe('signals', () => {
  it('given instances waiting for a signal, then a broadcast reaches every one waiting at that moment and is not kept for later', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const id = await start(t.api, 'cancellable', { businessKey: `sig-${i}` });
      const task = await fetchOne(t.api, 'w', 'cancellable-work');
      await complete(t.api, task, 'w');
      ids.push(id);
    }
    const late = await start(t.api, 'cancellable', { businessKey: 'sig-late' });
    const res = await t.api.post('/api/signals', { name: 'go-live', variables: { live: true } });
    expect(res.body).toEqual({ name: 'go-live', delivered: 3, started: [] });
    for (const id of ids) expect((await waitForStatus(t.api, id, 'completed')).variables.live).toBe(true);
    const lateTask = await fetchOne(t.api, 'w', 'cancellable-work');
    expect(lateTask.instanceId).toBe(late);
    await complete(t.api, lateTask, 'w');
    const waiting = await instanceOf(t.api, late);
    expect(waiting.status).toBe('running');
    expect((await t.api.post('/api/signals', { name: 'go-live' })).body.delivered).toBe(1);
    await waitForStatus(t.api, late, 'completed');
  });

  it('given bad message or signal bodies, then 400 and nothing stored', async () => {
    expect((await t.api.post('/api/messages', {})).status).toBe(400);
    expect((await t.api.post('/api/messages', { name: 'x', ttlMs: -1 })).status).toBe(400);
    expect((await t.api.post('/api/messages', { name: 'x', instanceId: 'nope' })).status).toBe(400);
    expect((await t.api.post('/api/signals', { name: '' })).status).toBe(400);
    const { rowCount } = await t.db.pool.query(`select 1 from messages where name = 'x'`);
    expect(rowCount).toBe(0);
  });

  it('given a Camunda 8 file whose message has a zeebe:subscription correlationKey, then the catch correlates by that variable, not by the business key', async () => {
    const xml = `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="D_zsub" targetNamespace="https://baton.dev/test">
  <bpmn:message id="M" name="zsub-paid"><bpmn:extensionElements><zeebe:subscription correlationKey="=order.id" /></bpmn:extensionElements></bpmn:message>
  <bpmn:process id="zsub" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:intermediateCatchEvent id="paid"><bpmn:messageEventDefinition messageRef="M" /></bpmn:intermediateCatchEvent>
    <bpmn:endEvent id="end" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="paid" />
    <bpmn:sequenceFlow id="f2" sourceRef="paid" targetRef="end" />
  </bpmn:process>
</bpmn:definitions>`;
    const deployed = await t.api.post('/api/definitions', { xml });
    expect(deployed.status, JSON.stringify(deployed.body)).toBe(201);
    expect(deployed.body.warnings).toEqual([]);
    const a = await start(t.api, 'zsub', { businessKey: 'zsub-bk-1', variables: { order: { id: 'A-7' } } });
    const b = await start(t.api, 'zsub', { businessKey: 'zsub-bk-2', variables: { order: { id: 'B-9' } } });
    // The business key no longer correlates: the message waits in the inbox.
    const byKey = await t.api.post('/api/messages', { name: 'zsub-paid', correlationKey: 'zsub-bk-1', ttlMs: 0 });
    expect(byKey.body.status).not.toBe('matched');
    const res = await t.api.post('/api/messages', { name: 'zsub-paid', correlationKey: 'B-9' });
    expect(res.body).toMatchObject({ status: 'matched', instanceId: b });
    await waitForStatus(t.api, b, 'completed');
    expect((await instanceOf(t.api, a)).status).toBe('running');
  });
});
