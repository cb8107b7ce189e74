// Signals thrown by processes, against a real PostgreSQL through the HTTP API: a signal end event
// reaches every instance waiting for the signal and starts the process with a signal start event;
// an intermediate throw goes on at once and reaches only the waits that were there when it was
// thrown; each receiver gets the signal once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  complete,
  deploy,
  fetchOne,
  fetchTasks,
  start,
  waitForStatus,
  signalWaiterXml,
  waitForActiveStep,
} from '../../support/flows.ts';
import { startTestServer, waitFor, type TestServer } from '../../support/server.ts';

let t: TestServer;

const NS = `xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:camunda="http://camunda.org/schema/1.0/bpmn"`;

function definitions(id: string, signal: string, body: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions ${NS} id="D_${id}" targetNamespace="https://baton.dev/test">
  <bpmn:signal id="sig" name="${signal}" />
  <bpmn:process id="${id}" isExecutable="true">
${body}
  </bpmn:process>
</bpmn:definitions>`;
}

beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t?.close();
});

describe('signal throw events', () => {
  it('given two instances waiting for a signal and a process with its signal start, when a signal end event throws it, then both move on once and one instance starts', async () => {
    await deploy(t.api, signalWaiterXml('sg_wait', 'sg-go'));
    await deploy(
      t.api,
      definitions(
        'sg_started',
        'sg-go',
        `<bpmn:startEvent id="on_signal"><bpmn:signalEventDefinition signalRef="sig" /></bpmn:startEvent>
    <bpmn:serviceTask id="work" camunda:type="external" camunda:topic="sg_started-work" />
    <bpmn:endEvent id="end" />
    <bpmn:sequenceFlow id="f1" sourceRef="on_signal" targetRef="work" />
    <bpmn:sequenceFlow id="f2" sourceRef="work" targetRef="end" />`,
      ),
    );
    await deploy(
      t.api,
      definitions(
        'sg_thrower',
        'sg-go',
        `<bpmn:startEvent id="start" />
    <bpmn:serviceTask id="work" camunda:type="external" camunda:topic="sg_thrower-work" />
    <bpmn:endEvent id="shout"><bpmn:signalEventDefinition signalRef="sig" /></bpmn:endEvent>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="work" />
    <bpmn:sequenceFlow id="f2" sourceRef="work" targetRef="shout" />`,
      ),
    );
    const waiters = [await start(t.api, 'sg_wait'), await start(t.api, 'sg_wait')];
    for (const id of waiters) await waitForActiveStep(t.api, id, 'wait');
    const thrower = await start(t.api, 'sg_thrower');
    expect((await complete(t.api, await fetchOne(t.api, 'w', 'sg_thrower-work'), 'w')).status).toBe(204);
    const done = await waitForStatus(t.api, thrower, 'completed');
    expect(done.steps.find((s: any) => s.stepId === 'shout')?.status).toBe('completed');

    const after = [await fetchOne(t.api, 'w', 'sg_wait-after'), await fetchOne(t.api, 'w', 'sg_wait-after')];
    expect(after.map((task) => task.instanceId).sort()).toEqual([...waiters].sort());
    const started = await fetchOne(t.api, 'w', 'sg_started-work');
    expect(waiters).not.toContain(started.instanceId);
    for (const task of [...after, started]) expect((await complete(t.api, task, 'w')).status).toBe(204);
    for (const id of waiters) await waitForStatus(t.api, id, 'completed');
    const history = (await t.api.get(`/api/instances/${waiters[0]}/history`)).body.items as any[];
    expect(history.find((e) => e.kind === 'step:completed' && e.stepId === 'wait')?.data).toMatchObject({
      signal: 'sg-go',
      thrownBy: thrower,
      throwStep: 'shout',
    });
    // Nothing is delivered twice: no second task, no second started instance.
    expect(await fetchTasks(t.api, 'w', ['sg_wait-after', 'sg_started-work'])).toEqual([]);
    expect((await t.db.pool.query('select count(*)::int as n from signal_broadcasts')).rows[0].n).toBe(0);
  });

  it('given an intermediate signal throw, then its own path goes on at once, and a broadcast left undelivered reaches only the waits that were there when it was thrown', async () => {
    await deploy(t.api, signalWaiterXml('sg_late', 'sg-late'));
    await deploy(
      t.api,
      definitions(
        'sg_mid',
        'sg-late',
        `<bpmn:startEvent id="start" />
    <bpmn:intermediateThrowEvent id="shout"><bpmn:signalEventDefinition signalRef="sig" /></bpmn:intermediateThrowEvent>
    <bpmn:serviceTask id="next" camunda:type="external" camunda:topic="sg_mid-next" />
    <bpmn:endEvent id="end" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="shout" />
    <bpmn:sequenceFlow id="f2" sourceRef="shout" targetRef="next" />
    <bpmn:sequenceFlow id="f3" sourceRef="next" targetRef="end" />`,
      ),
    );
    const early = await start(t.api, 'sg_late');
    await waitForActiveStep(t.api, early, 'wait');
    const thrower = await start(t.api, 'sg_mid');
    expect((await fetchOne(t.api, 'w', 'sg_mid-next')).instanceId).toBe(thrower);
    expect((await fetchOne(t.api, 'w', 'sg_late-after')).instanceId).toBe(early);
    const late = await start(t.api, 'sg_late');
    await waitForActiveStep(t.api, late, 'wait');
    // A broadcast thrown before this wait began, not delivered yet (as after a node died): the relay's
    // re-check delivers it, and it passes the later wait by.
    await t.db.pool.query(
      `insert into signal_broadcasts (name, instance_id, step_id, created_at) values ('sg-late', $1, 'shout', now() - interval '1 minute')`,
      [thrower],
    );
    await waitFor(
      async () => (await t.db.pool.query('select count(*)::int as n from signal_broadcasts')).rows[0].n === 0 || undefined,
      5_000,
      'the broadcast to be delivered',
    );
    expect(await fetchTasks(t.api, 'w', ['sg_late-after'])).toEqual([]);
    expect((await t.api.get(`/api/instances/${late}`)).body.steps.find((s: any) => s.stepId === 'wait').status).toBe('active');
  });

  it('given a signal end event with outgoing flows, a signal named by an expression or a business key passed with it, then deploy refuses it naming the event', async () => {
    const xml = (end: string, extra = '') =>
      definitions(
        'sg_bad',
        'sg-bad',
        `<bpmn:startEvent id="start" />${end}${extra}
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="shout" />`,
      );
    const withFlow = await t.api.post('/api/definitions', {
      xml: xml(
        '<bpmn:endEvent id="shout"><bpmn:signalEventDefinition signalRef="sig" /></bpmn:endEvent><bpmn:endEvent id="e2" />',
        '<bpmn:sequenceFlow id="f2" sourceRef="shout" targetRef="e2" />',
      ),
    });
    expect(withFlow.status).toBe(400);
    expect(JSON.stringify(withFlow.body)).toContain('End event shout has outgoing sequence flows');
    const variables = await t.api.post('/api/definitions', {
      xml: xml(
        '<bpmn:endEvent id="shout"><bpmn:signalEventDefinition signalRef="sig"><bpmn:extensionElements><camunda:in businessKey="#{execution.processBusinessKey}" /></bpmn:extensionElements></bpmn:signalEventDefinition></bpmn:endEvent>',
      ),
    });
    expect(variables.status).toBe(400);
    expect(JSON.stringify(variables.body)).toContain('camunda:in businessKey is not supported on a signal');
  });
});
