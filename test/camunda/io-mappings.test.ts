// Input/output mappings through /engine-rest/external-task: a Camunda 7 worker sees a task's
// inputs in fetchAndLock, its complete goes through the outputs, and the locals stay on the task.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBpmn } from '../support/bpmn.ts';
import { deploy, waitForStatus } from '../support/flows.ts';
import { startTestServer, waitFor, type TestServer } from '../support/server.ts';
import { engineRest, startByKey } from './support.ts';

let t: TestServer;

beforeAll(async () => {
  t = await startTestServer();
  await deploy(
    t.api,
    buildBpmn(
      'cio',
      [
        { id: 'start', type: 'startEvent' },
        {
          id: 'work',
          type: 'serviceTask',
          topic: 'cio-work',
          io: {
            inputs: [
              ['amount', '${order.total}'],
              ['currency', 'EUR'],
            ],
            outputs: [['charged', '${amount}']],
          },
        },
        { id: 'end', type: 'endEvent' },
      ],
      [
        { from: 'start', to: 'work' },
        { from: 'work', to: 'end' },
      ],
    ),
  );
});
afterAll(async () => {
  await t.close();
});

async function fetchOneCamunda(topicName: string) {
  return waitFor(
    async () => {
      const res = await engineRest(t.url, 'POST', '/external-task/fetchAndLock', {
        workerId: 'cw',
        maxTasks: 1,
        topics: [{ topicName, lockDuration: 30_000 }],
      });
      expect(res.status).toBe(200);
      return res.body[0];
    },
    10_000,
    `a task on ${topicName}`,
  );
}

async function complete(taskId: string, body: Record<string, unknown>) {
  return engineRest(t.url, 'POST', `/external-task/${taskId}/complete`, { workerId: 'cw', ...body });
}

describe('input/output mappings through the Camunda 7 worker API', () => {
  it('given a task with inputs and an output, then fetchAndLock shows the inputs and complete writes only the output', async () => {
    const id = await startByKey(t.url, 'cio', { variables: { order: { value: '{"total":5}', type: 'Json' } } });
    const task = await fetchOneCamunda('cio-work');
    expect(task.variables.amount).toMatchObject({ value: 5 });
    expect(task.variables.currency).toMatchObject({ value: 'EUR', type: 'String' });
    const done = await complete(task.id, { variables: { amount: { value: 7 } }, localVariables: { note: { value: 'x' } } });
    expect(done.status).toBe(204);
    const instance = await waitForStatus(t.api, id, 'completed');
    expect(instance.variables).toEqual({ order: { total: 5 }, charged: 7 });
  });

  it('given a complete with transient variables, then the outputs still decide what is written', async () => {
    const id = await startByKey(t.url, 'cio', { variables: { order: { value: '{"total":2}', type: 'Json' } } });
    const task = await fetchOneCamunda('cio-work');
    const done = await complete(task.id, {
      variables: { note: { value: 'x' }, secret: { value: 's', type: 'String', valueInfo: { transient: true } } },
    });
    expect(done.status).toBe(204);
    expect((await waitForStatus(t.api, id, 'completed')).variables).toEqual({ order: { total: 2 }, charged: 2 });
  });

  it('given a task inside a subprocess with mappings, then fetchAndLock shows its locals and a complete, transient or not, writes to them', async () => {
    await deploy(
      t.api,
      buildBpmn(
        'cio_sub',
        [
          { id: 'start', type: 'startEvent' },
          {
            id: 'Sub',
            type: 'subProcess',
            io: { inputs: [['count', '${start}']], outputs: [['total', '${count}']] },
            nodes: [
              { id: 's', type: 'startEvent' },
              { id: 'one', type: 'serviceTask', topic: 'cio-sub-one' },
              { id: 'two', type: 'serviceTask', topic: 'cio-sub-two' },
              { id: 'e', type: 'endEvent' },
            ],
            flows: [
              { from: 's', to: 'one' },
              { from: 'one', to: 'two' },
              { from: 'two', to: 'e' },
            ],
          },
          { id: 'end', type: 'endEvent' },
        ],
        [
          { from: 'start', to: 'Sub' },
          { from: 'Sub', to: 'end' },
        ],
      ),
    );
    const id = await startByKey(t.url, 'cio_sub', { variables: { start: { value: 1 } } });
    const one = await fetchOneCamunda('cio-sub-one');
    expect(one.variables.count).toMatchObject({ value: 1 });
    expect((await complete(one.id, { variables: { count: { value: 2 }, seen: { value: true } } })).status).toBe(204);
    const two = await fetchOneCamunda('cio-sub-two');
    expect(two.variables.count).toMatchObject({ value: 2 });
    const done = await complete(two.id, {
      variables: { count: { value: 3 }, scratch: { value: 's', type: 'String', valueInfo: { transient: true } } },
    });
    expect(done.status).toBe(204);
    expect((await waitForStatus(t.api, id, 'completed')).variables).toEqual({ start: 1, seen: true, total: 3 });
  });

  it('given an output that cannot be evaluated, then 400 InvalidRequestException and the task stays locked for its worker', async () => {
    await deploy(
      t.api,
      `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="D" targetNamespace="https://baton.dev/test">
  <bpmn:process id="cio_bad" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:serviceTask id="work"><bpmn:extensionElements>
      <zeebe:taskDefinition type="cio-bad" /><zeebe:ioMapping><zeebe:output source="=2 in (1..limit)" target="inRange" /></zeebe:ioMapping>
    </bpmn:extensionElements></bpmn:serviceTask>
    <bpmn:endEvent id="end" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="work" />
    <bpmn:sequenceFlow id="f2" sourceRef="work" targetRef="end" />
  </bpmn:process>
</bpmn:definitions>`,
    );
    const id = await startByKey(t.url, 'cio_bad');
    const task = await fetchOneCamunda('cio-bad');
    const refused = await complete(task.id, { variables: { limit: { value: 'a' } } });
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({
      type: 'InvalidRequestException',
      message: expect.stringMatching(/^Output mapping of task work to inRange/),
    });
    const fine = await complete(task.id, { variables: { limit: { value: 3 } } });
    expect(fine.status).toBe(204);
    expect((await waitForStatus(t.api, id, 'completed')).variables).toEqual({ inRange: true });
  });

  it('given camunda:properties on the task, then includeExtensionProperties hands them over as extensionProperties, and without it they are null', async () => {
    await deploy(
      t.api,
      `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="D" targetNamespace="https://baton.dev/test">
  <bpmn:process id="cio_props" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:serviceTask id="work" camunda:type="external" camunda:topic="cio-props"><bpmn:extensionElements>
      <camunda:properties><camunda:property name="region" value="eu" /><camunda:property name="sla" value="PT1H" /></camunda:properties>
    </bpmn:extensionElements></bpmn:serviceTask>
    <bpmn:endEvent id="end" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="work" />
    <bpmn:sequenceFlow id="f2" sourceRef="work" targetRef="end" />
  </bpmn:process>
</bpmn:definitions>`,
    );
    await startByKey(t.url, 'cio_props');
    await startByKey(t.url, 'cio_props');
    const withProperties = await waitFor(
      async () => {
        const res = await engineRest(t.url, 'POST', '/external-task/fetchAndLock', {
          workerId: 'cw',
          maxTasks: 1,
          topics: [{ topicName: 'cio-props', lockDuration: 30_000, includeExtensionProperties: true }],
        });
        expect(res.status).toBe(200);
        return res.body[0];
      },
      10_000,
      'a task on cio-props',
    );
    expect(withProperties.extensionProperties).toEqual({ region: 'eu', sla: 'PT1H' });
    expect((await fetchOneCamunda('cio-props')).extensionProperties).toBeNull();
  });
});
