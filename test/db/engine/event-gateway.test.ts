import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBpmn } from '../../support/bpmn.ts';
import { complete, deploy, fetchOne, fetchTasks, instanceOf, start, waitForStatus } from '../../support/flows.ts';
import { startTestServer, waitFor, type TestServer } from '../../support/server.ts';

let t: TestServer;

/** start -> race: "payment" (keyed by orderId) -> ship, or a timer -> remind; both merge -> end */
function raceBpmn(key: string, duration: string): string {
  return buildBpmn(
    key,
    [
      { id: 's', type: 'startEvent' },
      { id: 'race', type: 'eventBasedGateway' },
      { id: 'paid', type: 'catchEvent', message: `${key}-payment`, correlationKey: 'orderId' },
      { id: 'late', type: 'catchEvent', timer: { duration } },
      { id: 'ship', type: 'serviceTask', topic: `${key}-ship` },
      { id: 'remind', type: 'serviceTask', topic: `${key}-remind` },
      { id: 'merge', type: 'exclusiveGateway' },
      { id: 'e', type: 'endEvent' },
    ],
    [
      { from: 's', to: 'race' },
      { from: 'race', to: 'paid' },
      { from: 'race', to: 'late' },
      { from: 'paid', to: 'ship' },
      { from: 'late', to: 'remind' },
      { from: 'ship', to: 'merge' },
      { from: 'remind', to: 'merge' },
      { from: 'merge', to: 'e' },
    ],
  );
}

beforeAll(async () => {
  t = await startTestServer();
  await deploy(t.api, raceBpmn('quick', 'PT0.4S'));
  await deploy(t.api, raceBpmn('slow', 'PT1H'));
});
afterAll(async () => {
  await t.close();
});

async function history(id: string): Promise<{ kind: string; stepId?: string; data?: Record<string, unknown> }[]> {
  const res = await t.api.get(`/api/instances/${id}/history`);
  expect(res.status).toBe(200);
  return res.body.items;
}

async function timerStatuses(instanceId: string): Promise<string[]> {
  const { rows } = await t.db.pool.query<{ state: string }>('select state from timers where instance_id = $1 order by step_id', [
    instanceId,
  ]);
  return rows.map((r) => r.state);
}

async function stepStatuses(id: string): Promise<Record<string, string>> {
  const view = await instanceOf(t.api, id);
  return Object.fromEntries((view.steps as { stepId: string; status: string }[]).map((s) => [s.stepId, s.status]));
}

function publish(name: string, orderId: string) {
  return t.api.post('/api/messages', { name, correlationKey: orderId, messageId: `${name}-${orderId}-${Date.now()}` });
}

describe('event-based gateway', () => {
  it('given the message first, the payment path runs and the timer never fires, even once it is due', async () => {
    const messageFirst = await start(t.api, 'quick', { variables: { orderId: 'egw-1' } });
    const res = await publish('quick-payment', 'egw-1');
    expect(res.body).toMatchObject({ status: 'matched', instanceId: messageFirst });
    // An instance started after the first: once its timer fired, the first one's timer was due too.
    const control = await start(t.api, 'quick', { variables: { orderId: 'egw-control' } });
    const remind = await fetchOne(t.api, 'w', 'quick-remind');
    expect(remind.instanceId).toBe(control);

    const ship = await fetchOne(t.api, 'w', 'quick-ship');
    expect(ship.instanceId).toBe(messageFirst);
    expect((await complete(t.api, ship, 'w')).status).toBe(204);
    await waitForStatus(t.api, messageFirst, 'completed');
    expect(await fetchTasks(t.api, 'w', ['quick-remind'])).toEqual([]);
    const events = await history(messageFirst);
    expect(events.filter((e) => e.stepId === 'late').map((e) => e.kind)).toEqual(['step:activated', 'step:skipped']);
    expect(events.find((e) => e.stepId === 'late' && e.kind === 'step:skipped')?.data).toEqual({ by: 'paid' });
    expect(events.filter((e) => e.stepId === 'remind').map((e) => e.kind)).toEqual(['step:skipped']);
    expect(await timerStatuses(messageFirst)).toEqual(['canceled']);
    expect((await complete(t.api, remind, 'w')).status).toBe(204);
  });

  it('given the timer first, the reminder path runs and a late message is kept in the inbox, not matched', async () => {
    const id = await start(t.api, 'quick', { variables: { orderId: 'egw-2' } });
    const remind = await waitFor(async () => (await fetchTasks(t.api, 'w', ['quick-remind']))[0], 10_000, 'the reminder');
    expect(remind.instanceId).toBe(id);
    const late = await publish('quick-payment', 'egw-2');
    expect(late.body).toMatchObject({ status: 'buffered' });
    expect((await complete(t.api, remind, 'w')).status).toBe(204);
    await waitForStatus(t.api, id, 'completed');
    expect(await stepStatuses(id)).toMatchObject({ late: 'completed', paid: 'skipped', ship: 'skipped', merge: 'completed' });
    expect(await fetchTasks(t.api, 'w', ['quick-ship'])).toEqual([]);
  });

  it('given a message that arrived before the gateway, it wins at once from the inbox', async () => {
    expect((await publish('slow-payment', 'egw-3')).body).toMatchObject({ status: 'buffered' });
    const id = await start(t.api, 'slow', { variables: { orderId: 'egw-3' } });
    const ship = await fetchOne(t.api, 'w', 'slow-ship');
    expect(ship.instanceId).toBe(id);
    expect(await stepStatuses(id)).toMatchObject({ paid: 'completed', late: 'skipped' });
    expect(await timerStatuses(id)).toEqual([]);
  });

  it('given a message and the due timer at the same moment, exactly one path is taken', async () => {
    const ids = await Promise.all(
      ['egw-4a', 'egw-4b', 'egw-4c'].map((orderId) => start(t.api, 'quick', { variables: { orderId } })),
    );
    await new Promise((r) => setTimeout(r, 380)); // publish as the 0.4 s timers fall due
    await Promise.all(['egw-4a', 'egw-4b', 'egw-4c'].map((orderId) => publish('quick-payment', orderId)));
    for (const id of ids) {
      const i = await waitFor(
        async () => {
          const steps = await stepStatuses(id);
          return steps.ship === 'active' || steps.remind === 'active' ? steps : undefined;
        },
        10_000,
        `instance ${id} to take one path`,
      );
      const taken = [i.paid, i.late].sort();
      expect(taken).toEqual(['completed', 'skipped']);
    }
    const tasks = [
      ...(await fetchTasks(t.api, 'w', ['quick-ship'], { maxTasks: 10 })),
      ...(await fetchTasks(t.api, 'w', ['quick-remind'], { maxTasks: 10 })),
    ].filter((task) => ids.includes(task.instanceId));
    expect(tasks.map((task) => task.instanceId).sort()).toEqual([...ids].sort());
    for (const task of tasks) expect((await complete(t.api, task, 'w')).status).toBe(204);
    for (const id of ids) await waitForStatus(t.api, id, 'completed');
  });

  it('given a correlation key that cannot be evaluated, the message event is in an incident until the timer wins and resolves it', async () => {
    const id = await start(t.api, 'quick'); // no orderId: the key reads null
    await waitForStatus(t.api, id, 'incident');
    const open = (await t.api.get(`/api/incidents?instanceId=${id}&status=open`)).body.items;
    expect(open).toEqual([expect.objectContaining({ stepId: 'paid' })]);
    const remind = await fetchOne(t.api, 'w', 'quick-remind');
    expect(remind.instanceId).toBe(id);
    expect(await stepStatuses(id)).toMatchObject({ paid: 'skipped', late: 'completed', remind: 'active' });
    expect((await t.api.get(`/api/incidents?instanceId=${id}&status=open`)).body.items).toEqual([]);
    expect((await complete(t.api, remind, 'w')).status).toBe(204);
    await waitForStatus(t.api, id, 'completed');
  });
});
