// Camunda 7 sequence-flow conditions written in JavaScript (language="javascript"), against a
// real PostgreSQL through the HTTP API: the script sandbox runs each over the variables, by name
// and through `execution`; the flow is taken when the value is true. A variable the script reads
// and the instance lacks, a value that is not true or false, and a condition that sets variables
// are condition_error incidents whose retry decides again.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { complete, deploy, fetchOne, start, waitForStatus } from '../../support/flows.ts';
import { startTestServer, type TestServer } from '../../support/server.ts';

let t: TestServer;

/** start -> exclusive gateway -> big (`toBig`) | small (`toSmall`), each a service task `<key>-<big|small>`, then end. */
function routing(key: string, toBig: string, toSmall: string): string {
  const js = (body: string) =>
    `<bpmn:conditionExpression xsi:type="bpmn:tFormalExpression" language="javascript"><![CDATA[${body}]]></bpmn:conditionExpression>`;
  return `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:camunda="http://camunda.org/schema/1.0/bpmn"
  xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" id="D_${key}" targetNamespace="https://baton.dev/test">
  <bpmn:process id="${key}" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:exclusiveGateway id="route" />
    <bpmn:serviceTask id="big" camunda:type="external" camunda:topic="${key}-big" />
    <bpmn:serviceTask id="small" camunda:type="external" camunda:topic="${key}-small" />
    <bpmn:endEvent id="end" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="route" />
    <bpmn:sequenceFlow id="toBig" sourceRef="route" targetRef="big">${js(toBig)}</bpmn:sequenceFlow>
    <bpmn:sequenceFlow id="toSmall" sourceRef="route" targetRef="small">${js(toSmall)}</bpmn:sequenceFlow>
    <bpmn:sequenceFlow id="f2" sourceRef="big" targetRef="end" />
    <bpmn:sequenceFlow id="f3" sourceRef="small" targetRef="end" />
  </bpmn:process>
</bpmn:definitions>`;
}

async function finish(key: string, id: string, topic: 'big' | 'small'): Promise<void> {
  const task = await fetchOne(t.api, 'w', `${key}-${topic}`);
  expect(task.instanceId).toBe(id);
  expect((await complete(t.api, task, 'w')).status).toBe(204);
  await waitForStatus(t.api, id, 'completed');
}

async function incidentOf(id: string): Promise<{ id: string; kind: string; message: string; details: Record<string, unknown> }> {
  const stuck = await waitForStatus(t.api, id, 'incident');
  expect(stuck.incidents).toHaveLength(1);
  return stuck.incidents[0];
}

beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t?.close();
});

describe('JavaScript conditions', () => {
  it('given conditions reading variables by name and through execution, then each instance takes the flow whose script is true, and the history shows what was tested', async () => {
    await deploy(
      t.api,
      routing('jsc_route', 'amount > 100 && execution.getVariable("priority") !== "low"', 'amount <= 100 || priority === "low"'),
    );
    const big = await start(t.api, 'jsc_route', { variables: { amount: 150, priority: 'high' } });
    const small = await start(t.api, 'jsc_route', { variables: { amount: 150, priority: 'low' } });
    await finish('jsc_route', big, 'big');
    await finish('jsc_route', small, 'small');
    const history = (await t.api.get(`/api/instances/${small}/history`)).body.items as {
      kind: string;
      stepId?: string;
      data: any;
    }[];
    expect(history.find((e) => e.kind === 'step:completed' && e.stepId === 'route')?.data).toMatchObject({
      taken: ['toSmall'],
      flows: [
        { id: 'toBig', condition: 'amount > 100 && execution.getVariable("priority") !== "low"', result: false },
        { id: 'toSmall', condition: 'amount <= 100 || priority === "low"', result: true },
      ],
    });
  });

  it('given a condition reading a variable the instance lacks, then a condition_error incident names the flow and the error; its retry with the variable set decides again', async () => {
    const id = await start(t.api, 'jsc_route', { variables: { priority: 'high' } });
    const incident = await incidentOf(id);
    expect(incident).toMatchObject({
      kind: 'condition_error',
      message: expect.stringContaining(
        "Condition of flow toBig at route failed: the script threw ReferenceError: 'amount' is not defined",
      ),
      details: { flowId: 'toBig' },
    });
    const retried = await t.api.post(`/api/incidents/${incident.id}/retry`, { variables: { amount: 5 } });
    expect(retried.status, JSON.stringify(retried.body)).toBe(200);
    await finish('jsc_route', id, 'small');
  });

  it('given a condition whose value is not true or false, or one that sets a variable, then the instance stops in an incident saying so and no flow is taken', async () => {
    await deploy(t.api, routing('jsc_odd', 'amount > 100 ? "yes" : false', 'execution.setVariable("seen", true); true'));
    const odd = await start(t.api, 'jsc_odd', { variables: { amount: 500 } });
    expect((await incidentOf(odd)).message).toContain('the script\'s value is "yes", not true or false');
    const writes = await start(t.api, 'jsc_odd', { variables: { amount: 1 } });
    expect((await incidentOf(writes)).message).toContain(
      'the script set seen: a condition reads variables, it does not set them',
    );
    for (const id of [odd, writes]) {
      const steps = (await t.api.get(`/api/instances/${id}`)).body.steps as { stepId: string }[];
      expect(steps.map((s) => s.stepId)).not.toContain('big');
      expect(steps.map((s) => s.stepId)).not.toContain('small');
    }
  });
});
