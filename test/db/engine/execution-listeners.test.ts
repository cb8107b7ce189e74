// Execution listeners against a real PostgreSQL through the HTTP API. A Camunda 8 job listener's
// job is done before its task can be fetched (start) or after the task completes and before the
// token moves on (end); each is an external task with its own retries and incident. A Camunda 7
// inline JavaScript listener runs in the engine at the same place; one that throws is a
// script_error incident on its listener step.
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

  it('given Camunda 7 JavaScript start and end listeners, then the start one sets a variable the task sees, the end one reads the result, and a throwing one stops in an incident its retry runs again', async () => {
    const listener = (event: string, body: string) =>
      `<camunda:executionListener event="${event}"><camunda:script scriptFormat="javascript"><![CDATA[${body}]]></camunda:script></camunda:executionListener>`;
    await deploy(
      t.api,
      `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="D7" targetNamespace="https://baton.dev/test">
  <bpmn:process id="el_c7" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:serviceTask id="ship" name="Ship" camunda:type="external" camunda:topic="el-c7-ship">
      <bpmn:extensionElements>
        ${listener('start', 'execution.setVariable("attempt", (typeof attempt === "number" ? attempt : 0) + 1);')}
        ${listener('end', 'if (!tracking) throw new Error("no tracking number"); execution.setVariable("audited", "shipped " + tracking);')}
      </bpmn:extensionElements>
    </bpmn:serviceTask>
    <bpmn:endEvent id="end" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="ship" />
    <bpmn:sequenceFlow id="f2" sourceRef="ship" targetRef="end" />
  </bpmn:process>
</bpmn:definitions>`,
    );
    const id = await start(t.api, 'el_c7');
    const ship = await fetchOne(t.api, 'w', 'el-c7-ship');
    expect(ship.variables).toEqual({ attempt: 1 });
    expect((await complete(t.api, ship, 'w', { tracking: '' })).status).toBe(204);
    const stuck = await waitForStatus(t.api, id, 'incident');
    expect(stuck.incidents).toEqual([
      expect.objectContaining({
        stepId: 'listener:ship:end:1',
        kind: 'script_error',
        message: expect.stringContaining('no tracking number'),
      }),
    ]);
    const retried = await t.api.post(`/api/incidents/${stuck.incidents[0].id}/retry`, { variables: { tracking: 'T7' } });
    expect(retried.status, JSON.stringify(retried.body)).toBe(200);
    const done = await waitForStatus(t.api, id, 'completed');
    expect(done.variables).toEqual({ attempt: 1, tracking: 'T7', audited: 'shipped T7' });
  });

  it('given a Camunda 7 JavaScript take listener on the back flow of a loop, then it runs each time the token goes back, and not when it leaves', async () => {
    await deploy(
      t.api,
      `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:camunda="http://camunda.org/schema/1.0/bpmn" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" id="D7take" targetNamespace="https://baton.dev/test">
  <bpmn:process id="el_take" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:exclusiveGateway id="merge" />
    <bpmn:serviceTask id="review" camunda:type="external" camunda:topic="el-take-review" />
    <bpmn:exclusiveGateway id="approved" default="again" />
    <bpmn:endEvent id="end" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="merge" />
    <bpmn:sequenceFlow id="f2" sourceRef="merge" targetRef="review" />
    <bpmn:sequenceFlow id="f3" sourceRef="review" targetRef="approved" />
    <bpmn:sequenceFlow id="done" sourceRef="approved" targetRef="end">
      <bpmn:conditionExpression xsi:type="bpmn:tFormalExpression">\${ok}</bpmn:conditionExpression>
    </bpmn:sequenceFlow>
    <bpmn:sequenceFlow id="again" sourceRef="approved" targetRef="merge">
      <bpmn:extensionElements>
        <camunda:executionListener><camunda:script scriptFormat="javascript"><![CDATA[execution.setVariable("reworks", (typeof reworks === "number" ? reworks : 0) + 1);]]></camunda:script></camunda:executionListener>
      </bpmn:extensionElements>
    </bpmn:sequenceFlow>
  </bpmn:process>
</bpmn:definitions>`,
    );
    const id = await start(t.api, 'el_take');
    for (const ok of [false, false, true]) {
      const review = await fetchOne(t.api, 'w', 'el-take-review');
      expect(review.instanceId).toBe(id);
      expect((await complete(t.api, review, 'w', { ok })).status).toBe(204);
    }
    const done = await waitForStatus(t.api, id, 'completed');
    expect(done.variables).toEqual({ ok: true, reworks: 2 });
  });
});
