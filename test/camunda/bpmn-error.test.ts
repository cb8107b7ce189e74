// Acceptance: handleBpmnError from the official client caught by an error boundary event.
import { Variables } from 'camunda-external-task-client-js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { deploy, waitForStatus } from '../support/flows.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { clientPool, deferred, startByKey } from './support.ts';

const xml = `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="Defs_cam_boundary" targetNamespace="http://bpmn.io/schema/bpmn">
  <bpmn:error id="Err_declined" name="Declined" errorCode="CARD_DECLINED"/>
  <bpmn:process id="cam_boundary" isExecutable="true">
    <bpmn:startEvent id="start"><bpmn:outgoing>f1</bpmn:outgoing></bpmn:startEvent>
    <bpmn:serviceTask id="charge" camunda:type="external" camunda:topic="cam-charge"><bpmn:incoming>f1</bpmn:incoming><bpmn:outgoing>f2</bpmn:outgoing></bpmn:serviceTask>
    <bpmn:boundaryEvent id="declined" attachedToRef="charge"><bpmn:outgoing>f3</bpmn:outgoing><bpmn:errorEventDefinition id="declined_def" errorRef="Err_declined"/></bpmn:boundaryEvent>
    <bpmn:endEvent id="charged"><bpmn:incoming>f2</bpmn:incoming></bpmn:endEvent>
    <bpmn:serviceTask id="notify" camunda:type="external" camunda:topic="cam-notify"><bpmn:incoming>f3</bpmn:incoming><bpmn:outgoing>f4</bpmn:outgoing></bpmn:serviceTask>
    <bpmn:endEvent id="declined_end"><bpmn:incoming>f4</bpmn:incoming></bpmn:endEvent>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="charge"/>
    <bpmn:sequenceFlow id="f2" sourceRef="charge" targetRef="charged"/>
    <bpmn:sequenceFlow id="f3" sourceRef="declined" targetRef="notify"/>
    <bpmn:sequenceFlow id="f4" sourceRef="notify" targetRef="declined_end"/>
  </bpmn:process>
</bpmn:definitions>
`;

let t: TestServer;
const clients = clientPool();

beforeAll(async () => {
  t = await startTestServer();
  await deploy(t.api, xml);
});
afterAll(async () => {
  clients.stopAll();
  await t?.close();
});

it('handleBpmnError is caught by the error boundary and the process takes its path', async () => {
  const client = clients.create(t.url);
  const notified = deferred<unknown>();
  client.subscribe('cam-charge', async ({ task, taskService }: any) => {
    await taskService.handleBpmnError(task, 'CARD_DECLINED', 'card declined', new Variables().set('declineReason', 'limit'));
  });
  client.subscribe('cam-notify', async ({ task, taskService }: any) => {
    notified.resolve(task.variables.get('declineReason'));
    await taskService.complete(task);
  });
  client.start();
  const id = await startByKey(t.url, 'cam_boundary');
  expect(await notified.promise).toBe('limit');
  const instance = await waitForStatus(t.api, id, 'completed');
  expect(instance.incidents).toEqual([]);
});
