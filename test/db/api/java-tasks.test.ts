// Deploying a Camunda 7 diagram whose tasks run Java code: refused by default, naming the task and
// the option; with javaTasksAsTopics each becomes an external task on its class or expression,
// listed in the answer (lint says the same), and a worker on that topic runs the process.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { complete, fetchOne, start, waitForStatus } from '../../support/flows.ts';
import { startTestServer, type TestServer } from '../../support/server.ts';

let t: TestServer;

const xml = `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="D_java" targetNamespace="https://baton.dev/test">
  <bpmn:message id="m" name="order-shipped" />
  <bpmn:process id="java_tasks" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:serviceTask id="charge" name="Charge card" camunda:class="org.acme.ChargeCardDelegate" />
    <bpmn:sendTask id="mail" camunda:delegateExpression="\${mailSender}" />
    <bpmn:endEvent id="end"><bpmn:messageEventDefinition messageRef="m" camunda:expression="\${shipping.notify(execution)}" /></bpmn:endEvent>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="charge" />
    <bpmn:sequenceFlow id="f2" sourceRef="charge" targetRef="mail" />
    <bpmn:sequenceFlow id="f3" sourceRef="mail" targetRef="end" />
  </bpmn:process>
</bpmn:definitions>`;

const MAPPED = [
  { elementId: 'charge', implementation: 'camunda:class', topic: 'org.acme.ChargeCardDelegate' },
  { elementId: 'mail', implementation: 'camunda:delegateExpression', topic: 'mailSender' },
  { elementId: 'end', implementation: 'camunda:expression', topic: 'shipping.notify(execution)' },
];

beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t?.close();
});

describe('Java tasks as topics', () => {
  it('given tasks that run Java code, when deployed as they are, then each is refused naming its code and the option', async () => {
    const res = await t.api.post('/api/definitions', { xml });
    expect(res.status).toBe(400);
    expect(res.body.details.map((d: any) => d.elementId)).toEqual(['charge', 'mail', 'end']);
    expect(res.body.details[0].message).toContain('runs Java code (camunda:class "org.acme.ChargeCardDelegate")');
    expect(res.body.details[0].message).toContain('or deploy with javaTasksAsTopics');
  });

  it('given javaTasksAsTopics, then lint and deploy list each mapped task, and a worker on those topics runs the process to its end', async () => {
    const lint = await t.api.post('/api/definitions/lint', { xml, javaTasksAsTopics: true });
    expect(lint.body).toMatchObject({ ok: true, javaTasks: MAPPED });
    const res = await t.api.post('/api/definitions', { xml, javaTasksAsTopics: true });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.javaTasks).toEqual(MAPPED);
    expect(res.body.warnings).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          elementId: 'charge',
          message: expect.stringContaining('deployed as an external task on topic "org.acme.ChargeCardDelegate"'),
        }),
      ]),
    );
    const id = await start(t.api, 'java_tasks');
    for (const { topic } of MAPPED) {
      const task = await fetchOne(t.api, 'w', topic);
      expect(task.instanceId).toBe(id);
      expect((await complete(t.api, task, 'w')).status).toBe(204);
    }
    await waitForStatus(t.api, id, 'completed');
  });
});
