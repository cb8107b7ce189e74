// Camunda 8 job listeners against a real PostgreSQL through the HTTP API: a start listener's job
// is done before its task can be fetched, an end listener's after the task completes and before
// the token moves on; each is an external task with its own retries and incident.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { complete, deploy, fetchOne, fetchTasks, instanceOf, start, waitForStatus } from '../../support/flows.ts';
import { startTestServer, type TestServer } from '../../support/server.ts';

let t: TestServer;

const XML = `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="D" targetNamespace="https://baton.dev/test">
  <bpmn:process id="el_order" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:serviceTask id="ship" name="Ship">
      <bpmn:extensionElements>
        <zeebe:taskDefinition type="el-ship" />
        <zeebe:executionListeners>
          <zeebe:executionListener eventType="start" type="el-check" retries="0" />
          <zeebe:executionListener eventType="end" type="el-audit" />
        </zeebe:executionListeners>
      </bpmn:extensionElements>
    </bpmn:serviceTask>
    <bpmn:endEvent id="end" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="ship" />
    <bpmn:sequenceFlow id="f2" sourceRef="ship" targetRef="end" />
  </bpmn:process>
</bpmn:definitions>`;

beforeAll(async () => {
  t = await startTestServer();
  await deploy(t.api, XML);
});
afterAll(async () => {
  await t?.close();
});

describe('execution listeners', () => {
  it('given start and end listeners on a task, then the start job runs first, its variables reach the task, and the end job runs before the instance ends', async () => {
    const id = await start(t.api, 'el_order');
    expect(await fetchTasks(t.api, 'w', ['el-ship', 'el-audit'])).toEqual([]);
    const check = await fetchOne(t.api, 'w', 'el-check');
    expect(check).toMatchObject({ instanceId: id, stepId: 'listener:ship:start:1' });
    expect((await complete(t.api, check, 'w', { inStock: true })).status).toBe(204);
    const ship = await fetchOne(t.api, 'w', 'el-ship');
    expect(ship.variables).toMatchObject({ inStock: true });
    expect(await fetchTasks(t.api, 'w', ['el-audit'])).toEqual([]);
    expect((await complete(t.api, ship, 'w', { tracking: 'T1' })).status).toBe(204);
    const audit = await fetchOne(t.api, 'w', 'el-audit');
    expect(audit).toMatchObject({ stepId: 'listener:ship:end:1', variables: { tracking: 'T1' } });
    expect((await instanceOf(t.api, id)).status).toBe('running');
    expect((await complete(t.api, audit, 'w')).status).toBe(204);
    await waitForStatus(t.api, id, 'completed');
  });

  it('given a start listener with no retries whose worker fails, then the instance is in an incident on the listener step and the task was never created', async () => {
    const id = await start(t.api, 'el_order');
    const check = await fetchOne(t.api, 'w', 'el-check');
    const failed = await t.api.post(`/api/external-tasks/${check.id}/failure`, {
      workerId: 'w',
      lockToken: check.lockToken,
      errorMessage: 'stock service down',
    });
    expect(failed.status).toBeLessThan(300);
    const instance = await waitForStatus(t.api, id, 'incident');
    expect(instance.incidents).toEqual([expect.objectContaining({ stepId: 'listener:ship:start:1' })]);
    expect(await fetchTasks(t.api, 'w', ['el-ship'])).toEqual([]);
  });
});
