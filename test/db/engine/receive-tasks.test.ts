// Receive tasks against a real PostgreSQL through the HTTP API: the task waits for its message as
// a message catch event does (the same subscription rows and correlation), and its timer, message
// and signal boundaries work as on a service task: the message skips them, an interrupting one
// ends the receive task's subscription.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { complete, deploy, fetchOne, fetchTasks, instanceOf, start, waitForStatus } from '../../support/flows.ts';
import { startTestServer, waitFor, type TestServer } from '../../support/server.ts';
import { engineRest } from '../../camunda/support.ts';

let t: TestServer;

const NS = [
  'xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"',
  'xmlns:camunda="http://camunda.org/schema/1.0/bpmn"',
  'xmlns:baton="https://baton.dev/schema/bpmn/1.0"',
].join(' ');

/**
 * start -> receive task "await payment" (message `<key>-paid`, keyed by orderId) -> service task
 * `<key>-ship` -> end; `boundaries` sit on the receive task, each leading to its own service task
 * `<key>-<boundary id>` and end.
 */
function paymentProcess(key: string, boundaries: string[] = [], roots = ''): string {
  const paths = boundaries
    .map((b) => {
      const id = /id="([^"]+)"/.exec(b)?.[1] ?? '';
      return [
        b,
        `<bpmn:serviceTask id="${id}_task" camunda:type="external" camunda:topic="${key}-${id}" />`,
        `<bpmn:endEvent id="${id}_end" />`,
        `<bpmn:sequenceFlow id="${id}_f1" sourceRef="${id}" targetRef="${id}_task" />`,
        `<bpmn:sequenceFlow id="${id}_f2" sourceRef="${id}_task" targetRef="${id}_end" />`,
      ].join('\n    ');
    })
    .join('\n    ');
  return `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions ${NS} id="D_${key}" targetNamespace="https://baton.dev/test">
  <bpmn:message id="Paid" name="${key}-paid" />
  ${roots}
  <bpmn:process id="${key}" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:receiveTask id="await" name="await payment" messageRef="Paid" baton:correlationKey="= orderId" />
    <bpmn:serviceTask id="ship" camunda:type="external" camunda:topic="${key}-ship" />
    <bpmn:endEvent id="end" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="await" />
    <bpmn:sequenceFlow id="f2" sourceRef="await" targetRef="ship" />
    <bpmn:sequenceFlow id="f3" sourceRef="ship" targetRef="end" />
    ${paths}
  </bpmn:process>
</bpmn:definitions>`;
}

async function stepStatuses(id: string): Promise<Record<string, string>> {
  const view = await instanceOf(t.api, id);
  return Object.fromEntries((view.steps as { stepId: string; status: string }[]).map((s) => [s.stepId, s.status]));
}

async function waitsOf(id: string): Promise<{ timers: string[]; subscriptions: string[] }> {
  const timers = await t.db.pool.query<{ step_id: string; state: string }>(
    'select step_id, state from timers where instance_id = $1 order by step_id',
    [id],
  );
  const subscriptions = await t.db.pool.query<{ step_id: string }>(
    'select step_id from subscriptions where instance_id = $1 order by step_id',
    [id],
  );
  return {
    timers: timers.rows.map((r) => `${r.step_id}:${r.state}`),
    subscriptions: subscriptions.rows.map((r) => r.step_id),
  };
}

function publish(name: string, correlationKey: string, extra: Record<string, unknown> = {}) {
  return t.api.post('/api/messages', { name, correlationKey, ...extra });
}

beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t?.close();
});

describe('receive tasks', () => {
  it('given a receive task, when its message comes with the right key, then the token moves on; another key moves nothing', async () => {
    await deploy(t.api, paymentProcess('rt_pay'));
    const { plan } = (await t.api.get('/api/definitions/rt_pay')).body;
    expect(plan.steps.find((s: { id: string }) => s.id === 'await')).toMatchObject({
      kind: 'catchEvent',
      elementType: 'bpmn:ReceiveTask',
      wait: { trigger: 'message', name: 'rt_pay-paid', correlationKey: 'orderId' },
    });
    const id = await start(t.api, 'rt_pay', { variables: { orderId: 'o-1' } });
    expect(await stepStatuses(id)).toMatchObject({ await: 'active' });
    expect((await waitsOf(id)).subscriptions).toEqual(['await']);

    const other = await publish('rt_pay-paid', 'o-2', { messageId: 'rt-other' });
    expect(other.status).toBe(202);
    expect(other.body.status).toBe('buffered');
    expect(await fetchTasks(t.api, 'w', ['rt_pay-ship'])).toEqual([]);
    expect(await stepStatuses(id)).toMatchObject({ await: 'active' });

    const right = await publish('rt_pay-paid', 'o-1', { messageId: 'rt-right', variables: { amount: 42 } });
    expect(right.status).toBe(200);
    expect(right.body).toEqual({ status: 'matched', instanceId: id, messageId: 'rt-right' });
    const ship = await fetchOne(t.api, 'w', 'rt_pay-ship');
    expect(ship.instanceId).toBe(id);
    expect(ship.variables).toMatchObject({ orderId: 'o-1', amount: 42 });
    expect(await stepStatuses(id)).toMatchObject({ await: 'completed', ship: 'active' });
    expect(await waitsOf(id)).toEqual({ timers: [], subscriptions: [] });
    expect((await complete(t.api, ship, 'w')).status).toBe(204);
    await waitForStatus(t.api, id, 'completed');
  });

  it('given a receive task, then Camunda 7 /engine-rest/message correlates it by its key as it does a catch event', async () => {
    const id = await start(t.api, 'rt_pay', { variables: { orderId: 'o-c7' } });
    const res = await engineRest(t.url, 'POST', '/message', {
      messageName: 'rt_pay-paid',
      correlationKeys: { orderId: { value: 'o-c7', type: 'String' } },
      resultEnabled: true,
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual([expect.objectContaining({ resultType: 'Execution', execution: expect.objectContaining({ id }) })]);
    const ship = await fetchOne(t.api, 'w', 'rt_pay-ship');
    expect(ship.instanceId).toBe(id);
    await complete(t.api, ship, 'w');
    await waitForStatus(t.api, id, 'completed');
  });

  it('given an interrupting timer boundary that fires first, then the boundary path runs and a later message moves nothing', async () => {
    const key = 'rt_late';
    await deploy(
      t.api,
      paymentProcess(key, [
        '<bpmn:boundaryEvent id="late" attachedToRef="await"><bpmn:timerEventDefinition><bpmn:timeDuration>PT0.3S</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:boundaryEvent>',
      ]),
    );
    const id = await start(t.api, key, { variables: { orderId: 'o-late' } });
    expect(await waitsOf(id)).toEqual({ timers: ['late:waiting'], subscriptions: ['await'] });
    const escalate = await fetchOne(t.api, 'w', `${key}-late`);
    expect(escalate.instanceId).toBe(id);
    expect(await stepStatuses(id)).toMatchObject({ await: 'canceled', late: 'completed', late_task: 'active' });
    // The receive task's subscription ended with it.
    expect(await waitsOf(id)).toEqual({ timers: ['late:fired'], subscriptions: [] });

    const after = await publish(`${key}-paid`, 'o-late', { messageId: 'rt-late-msg' });
    expect(after.status).toBe(202);
    expect(after.body.status).toBe('buffered');
    const { rows } = await t.db.pool.query('select state, instance_id from messages where message_id = $1', ['rt-late-msg']);
    expect(rows).toEqual([{ state: 'pending', instance_id: null }]);
    const refused = await publish(`${key}-paid`, 'o-late', { ttlMs: 0 });
    expect(refused.status).toBe(404);
    expect(refused.body.type).toBe('NoMatch');
    expect(await fetchTasks(t.api, 'w', [`${key}-ship`])).toEqual([]);
    expect(await stepStatuses(id)).toMatchObject({ await: 'canceled', ship: 'skipped' });

    expect((await complete(t.api, escalate, 'w')).status).toBe(204);
    await waitForStatus(t.api, id, 'completed');
    expect(await stepStatuses(id)).toMatchObject({ await: 'canceled', ship: 'skipped', end: 'skipped', late_end: 'completed' });
  });

  it('given the message before the timer boundary, then the boundary is skipped, its timer canceled, and nothing is left waiting', async () => {
    const key = 'rt_early';
    await deploy(
      t.api,
      paymentProcess(key, [
        '<bpmn:boundaryEvent id="late" attachedToRef="await"><bpmn:timerEventDefinition><bpmn:timeDuration>PT1H</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:boundaryEvent>',
      ]),
    );
    const id = await start(t.api, key, { variables: { orderId: 'o-early' } });
    expect(await waitsOf(id)).toEqual({ timers: ['late:waiting'], subscriptions: ['await'] });
    expect((await publish(`${key}-paid`, 'o-early')).body).toMatchObject({ status: 'matched', instanceId: id });
    expect(await stepStatuses(id)).toMatchObject({ await: 'completed', late: 'skipped', late_task: 'skipped' });
    expect(await waitsOf(id)).toEqual({ timers: ['late:canceled'], subscriptions: [] });
    await complete(t.api, await fetchOne(t.api, 'w', `${key}-ship`), 'w');
    await waitForStatus(t.api, id, 'completed');
    expect(await waitsOf(id)).toEqual({ timers: ['late:canceled'], subscriptions: [] });
  });

  it('given a message already in the inbox, then the receive task takes it as it starts waiting and its boundary never waits', async () => {
    const key = 'rt_early';
    expect((await publish(`${key}-paid`, 'o-inbox', { variables: { early: true } })).status).toBe(202);
    const id = await start(t.api, key, { variables: { orderId: 'o-inbox' } });
    expect(await stepStatuses(id)).toMatchObject({ await: 'completed', late: 'skipped', ship: 'active' });
    expect(await waitsOf(id)).toEqual({ timers: [], subscriptions: [] });
    const ship = await fetchOne(t.api, 'w', `${key}-ship`);
    expect(ship.variables.early).toBe(true);
    await complete(t.api, ship, 'w');
    await waitForStatus(t.api, id, 'completed');
  });

  it('given a non-interrupting message boundary, when it fires, then its path runs while the receive task and the boundary keep waiting', async () => {
    const key = 'rt_remind';
    await deploy(
      t.api,
      paymentProcess(
        key,
        [
          '<bpmn:boundaryEvent id="remind" attachedToRef="await" cancelActivity="false" baton:correlationKey="= orderId"><bpmn:messageEventDefinition messageRef="Remind" /></bpmn:boundaryEvent>',
        ],
        `<bpmn:message id="Remind" name="${key}-remind" />`,
      ),
    );
    const id = await start(t.api, key, { variables: { orderId: 'o-remind' } });
    expect(await waitsOf(id)).toEqual({ timers: [], subscriptions: ['await', 'remind'] });
    expect((await publish(`${key}-remind`, 'o-remind')).body).toMatchObject({ status: 'matched', instanceId: id });
    const reminder = await fetchOne(t.api, 'w', `${key}-remind`);
    expect(reminder.instanceId).toBe(id);
    // It keeps waiting: every reminder while the receive task waits runs the path again.
    expect(await stepStatuses(id)).toMatchObject({ await: 'active', remind: 'active', remind_task: 'active' });
    expect(await waitsOf(id)).toEqual({ timers: [], subscriptions: ['await', 'remind'] });
    await complete(t.api, reminder, 'w');
    await waitFor(async () => ((await stepStatuses(id)).remind_end === 'completed' ? true : undefined));
    expect((await instanceOf(t.api, id)).status).toBe('running');

    expect((await publish(`${key}-paid`, 'o-remind')).body).toMatchObject({ status: 'matched', instanceId: id });
    await complete(t.api, await fetchOne(t.api, 'w', `${key}-ship`), 'w');
    await waitForStatus(t.api, id, 'completed');
    expect(await waitsOf(id)).toEqual({ timers: [], subscriptions: [] });
  });

  it('given a key that cannot be computed, then the receive task waits in an incident with its boundary not armed; the retry arms both once', async () => {
    const key = 'rt_early';
    const id = await start(t.api, key, { variables: { orderId: { nested: true } } });
    const stuck = await waitForStatus(t.api, id, 'incident');
    expect(stuck.incidents).toMatchObject([{ stepId: 'await', kind: 'condition_error' }]);
    expect(await waitsOf(id)).toEqual({ timers: [], subscriptions: [] });
    const retried = await t.api.post(`/api/incidents/${stuck.incidents[0].id}/retry`, { variables: { orderId: 'o-fixed' } });
    expect(retried.status, JSON.stringify(retried.body)).toBeLessThan(300);
    await waitForStatus(t.api, id, 'running');
    expect(await waitsOf(id)).toEqual({ timers: ['late:waiting'], subscriptions: ['await'] });
    expect((await publish(`${key}-paid`, 'o-fixed')).body).toMatchObject({ status: 'matched', instanceId: id });
    await complete(t.api, await fetchOne(t.api, 'w', `${key}-ship`), 'w');
    await waitForStatus(t.api, id, 'completed');
    expect(await waitsOf(id)).toEqual({ timers: ['late:canceled'], subscriptions: [] });
  });

  it('given a Zeebe file whose message has zeebe:subscription correlationKey="=orderId", then the receive task is correlated by it', async () => {
    const key = 'rt_zeebe';
    await deploy(
      t.api,
      `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="D_${key}" targetNamespace="https://baton.dev/test">
  <bpmn:message id="Paid" name="${key}-paid">
    <bpmn:extensionElements><zeebe:subscription correlationKey="=orderId" /></bpmn:extensionElements>
  </bpmn:message>
  <bpmn:process id="${key}" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:receiveTask id="await" name="await payment" messageRef="Paid" />
    <bpmn:serviceTask id="ship"><bpmn:extensionElements><zeebe:taskDefinition type="${key}-ship" /></bpmn:extensionElements></bpmn:serviceTask>
    <bpmn:endEvent id="end" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="await" />
    <bpmn:sequenceFlow id="f2" sourceRef="await" targetRef="ship" />
    <bpmn:sequenceFlow id="f3" sourceRef="ship" targetRef="end" />
  </bpmn:process>
</bpmn:definitions>`,
    );
    // The business key is not the correlation key here: only orderId correlates.
    const id = await start(t.api, key, { businessKey: 'bk-zeebe', variables: { orderId: 'z-1' } });
    expect((await publish(`${key}-paid`, 'bk-zeebe')).status).toBe(202);
    expect(await stepStatuses(id)).toMatchObject({ await: 'active' });
    expect((await publish(`${key}-paid`, 'z-1')).body).toMatchObject({ status: 'matched', instanceId: id });
    const ship = await fetchOne(t.api, 'w', `${key}-ship`);
    expect(ship.instanceId).toBe(id);
    await complete(t.api, ship, 'w');
    await waitForStatus(t.api, id, 'completed');
  });
});
