// Task kinds besides the service task, against a real PostgreSQL through the HTTP API: a plain
// task, a manual task and a none intermediate throw event pass the token on at once; a send task
// and a business rule task with an external implementation (either dialect) are external tasks a
// worker fetches by topic, with their boundaries; a business rule task that names a DMN decision
// is refused at deploy, naming it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { complete, deploy, fetchOne, fetchTasks, start, waitForStatus } from '../../support/flows.ts';
import { startTestServer, type TestServer } from '../../support/server.ts';

let t: TestServer;

const NS = `xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:camunda="http://camunda.org/schema/1.0/bpmn" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0"`;

function process(id: string, elements: string[], order: string[]): string {
  const ids = ['start', ...order, 'end'];
  const flows = ids
    .slice(1)
    .map((target, i) => `<bpmn:sequenceFlow id="f${i}" sourceRef="${ids[i]}" targetRef="${target}" />`)
    .join('\n');
  return `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions ${NS} id="D_${id}" targetNamespace="https://baton.dev/test">
  <bpmn:process id="${id}" isExecutable="true">
    <bpmn:startEvent id="start" />
    ${elements.join('\n    ')}
    <bpmn:endEvent id="end" />
    ${flows}
  </bpmn:process>
</bpmn:definitions>`;
}

beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t?.close();
});

describe('task kinds', () => {
  it('given a plain task, a manual task and a none throw event between two external tasks, then they pass at once and deploy warns about the plain one', async () => {
    const xml = process(
      'tk_pass',
      [
        '<bpmn:serviceTask id="first" camunda:type="external" camunda:topic="tk_pass-first" />',
        '<bpmn:task id="note" name="Note it" />',
        '<bpmn:manualTask id="sign" name="Sign on paper" />',
        '<bpmn:intermediateThrowEvent id="signed" />',
        '<bpmn:serviceTask id="last" camunda:type="external" camunda:topic="tk_pass-last" />',
      ],
      ['first', 'note', 'sign', 'signed', 'last'],
    );
    const res = await t.api.post('/api/definitions', { xml });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.warnings).toEqual([
      expect.objectContaining({ elementId: 'note', message: expect.stringContaining('is a plain task') }),
    ]);
    const id = await start(t.api, 'tk_pass');
    expect(await fetchTasks(t.api, 'w', ['tk_pass-last'])).toEqual([]);
    expect((await complete(t.api, await fetchOne(t.api, 'w', 'tk_pass-first'), 'w')).status).toBe(204);
    const last = await fetchOne(t.api, 'w', 'tk_pass-last');
    expect(last.instanceId).toBe(id);
    const running = await t.api.get(`/api/instances/${id}`);
    const status = (stepId: string) => running.body.steps.find((s: any) => s.stepId === stepId)?.status;
    expect([status('note'), status('sign'), status('signed')]).toEqual(['completed', 'completed', 'completed']);
    expect((await complete(t.api, last, 'w')).status).toBe(204);
    await waitForStatus(t.api, id, 'completed');
  });

  it('given a send task (Camunda 7) and a business rule task (Camunda 8 file), then workers fetch them by topic, and the send task has its boundary', async () => {
    const xml = process(
      'tk_ext',
      [
        '<bpmn:sendTask id="mail" camunda:type="external" camunda:topic="tk_ext-mail" />',
        '<bpmn:boundaryEvent id="bounced" attachedToRef="mail"><bpmn:errorEventDefinition /></bpmn:boundaryEvent>',
        '<bpmn:endEvent id="gave_up" /><bpmn:sequenceFlow id="b1" sourceRef="bounced" targetRef="gave_up" />',
        '<bpmn:businessRuleTask id="score"><bpmn:extensionElements><zeebe:taskDefinition type="tk_ext-score" /></bpmn:extensionElements></bpmn:businessRuleTask>',
      ],
      ['mail', 'score'],
    );
    await deploy(t.api, xml);
    const id = await start(t.api, 'tk_ext', { variables: { amount: 10 } });
    const mail = await fetchOne(t.api, 'w', 'tk_ext-mail');
    expect(mail.instanceId).toBe(id);
    expect((await complete(t.api, mail, 'w', { sent: true })).status).toBe(204);
    const score = await fetchOne(t.api, 'w', 'tk_ext-score');
    expect(score.variables).toMatchObject({ amount: 10, sent: true });
    expect((await complete(t.api, score, 'w', { risk: 'low' })).status).toBe(204);
    const done = await waitForStatus(t.api, id, 'completed');
    expect(done.variables).toEqual({ amount: 10, sent: true, risk: 'low' });

    // The error boundary on the send task catches its worker's BPMN error.
    const other = await start(t.api, 'tk_ext');
    const again = await fetchOne(t.api, 'w', 'tk_ext-mail');
    const thrown = await t.api.post(`/api/external-tasks/${again.id}/bpmn-error`, {
      workerId: 'w',
      lockToken: again.lockToken,
      errorCode: 'BOUNCED',
    });
    expect(thrown.status, JSON.stringify(thrown.body)).toBe(204);
    const caught = await waitForStatus(t.api, other, 'completed');
    expect(caught.steps.find((s: any) => s.stepId === 'bounced').status).toBe('completed');
  });

  it('given a business rule task with a DMN decision, then deploy answers 400 naming it and saying to use a worker', async () => {
    const xml = process('tk_dmn', ['<bpmn:businessRuleTask id="decide" camunda:decisionRef="approval" />'], ['decide']);
    const res = await t.api.post('/api/definitions', { xml });
    expect(res.status).toBe(400);
    expect(res.body.details).toEqual([
      expect.objectContaining({ elementId: 'decide', message: expect.stringContaining('does not evaluate DMN decisions') }),
    ]);
    expect((await t.api.get('/api/definitions/tk_dmn')).status).toBe(404);
  });

  it('given zeebe:taskHeaders on a service task, then its worker receives them as headers with every task, and a task without any has none', async () => {
    const xml = process(
      'tk_headers',
      [
        '<bpmn:serviceTask id="ship"><bpmn:extensionElements><zeebe:taskDefinition type="tk_headers-ship" /><zeebe:taskHeaders><zeebe:header key="carrier" value="dhl" /><zeebe:header key="express" value="true" /></zeebe:taskHeaders></bpmn:extensionElements></bpmn:serviceTask>',
        '<bpmn:serviceTask id="bill"><bpmn:extensionElements><zeebe:taskDefinition type="tk_headers-bill" /></bpmn:extensionElements></bpmn:serviceTask>',
      ],
      ['ship', 'bill'],
    );
    const res = await t.api.post('/api/definitions', { xml });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.warnings).toEqual([]);
    await start(t.api, 'tk_headers');
    const ship = await fetchOne(t.api, 'w', 'tk_headers-ship');
    expect(ship.headers).toEqual({ carrier: 'dhl', express: 'true' });
    expect((await complete(t.api, ship, 'w')).status).toBe(204);
    const bill = await fetchOne(t.api, 'w', 'tk_headers-bill');
    expect(bill).not.toHaveProperty('headers');
  });

  it('given a link throw event after the first task, then the token goes on at the link catch of its name and the history shows both', async () => {
    const xml = `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions ${NS} id="D_tk_link" targetNamespace="https://baton.dev/test">
  <bpmn:process id="tk_link" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:serviceTask id="first" camunda:type="external" camunda:topic="tk_link-first" />
    <bpmn:intermediateThrowEvent id="jump"><bpmn:linkEventDefinition name="page2" /></bpmn:intermediateThrowEvent>
    <bpmn:intermediateCatchEvent id="land"><bpmn:linkEventDefinition name="page2" /></bpmn:intermediateCatchEvent>
    <bpmn:serviceTask id="last" camunda:type="external" camunda:topic="tk_link-last" />
    <bpmn:endEvent id="end" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="first" />
    <bpmn:sequenceFlow id="f2" sourceRef="first" targetRef="jump" />
    <bpmn:sequenceFlow id="f3" sourceRef="land" targetRef="last" />
    <bpmn:sequenceFlow id="f4" sourceRef="last" targetRef="end" />
  </bpmn:process>
</bpmn:definitions>`;
    await deploy(t.api, xml);
    const id = await start(t.api, 'tk_link');
    expect((await complete(t.api, await fetchOne(t.api, 'w', 'tk_link-first'), 'w')).status).toBe(204);
    const last = await fetchOne(t.api, 'w', 'tk_link-last');
    expect(last.instanceId).toBe(id);
    const history = (await t.api.get(`/api/instances/${id}/history`)).body.items as any[];
    const completed = history.filter((e) => e.kind === 'step:completed').map((e) => e.stepId);
    expect(completed).toEqual(expect.arrayContaining(['jump', 'land']));
    expect(completed.indexOf('jump')).toBeLessThan(completed.indexOf('land'));
    expect((await complete(t.api, last, 'w')).status).toBe(204);
    await waitForStatus(t.api, id, 'completed');
  });

  it('given a message throw event and a message end event with topics, then workers fetch them as tasks and the instance ends when the last one completes', async () => {
    const xml = process(
      'tk_msg',
      [
        '<bpmn:intermediateThrowEvent id="notify"><bpmn:messageEventDefinition camunda:type="external" camunda:topic="tk_msg-notify" /></bpmn:intermediateThrowEvent>',
        '<bpmn:serviceTask id="work" camunda:type="external" camunda:topic="tk_msg-work" />',
      ],
      ['notify', 'work'],
    ).replace(
      '<bpmn:endEvent id="end" />',
      '<bpmn:endEvent id="end"><bpmn:extensionElements><zeebe:taskDefinition type="tk_msg-bye" /></bpmn:extensionElements><bpmn:messageEventDefinition /></bpmn:endEvent>',
    );
    await deploy(t.api, xml);
    const id = await start(t.api, 'tk_msg');
    const notify = await fetchOne(t.api, 'w', 'tk_msg-notify');
    expect(notify.instanceId).toBe(id);
    expect(await fetchTasks(t.api, 'w', ['tk_msg-work'])).toEqual([]);
    expect((await complete(t.api, notify, 'w')).status).toBe(204);
    expect((await complete(t.api, await fetchOne(t.api, 'w', 'tk_msg-work'), 'w')).status).toBe(204);
    const bye = await fetchOne(t.api, 'w', 'tk_msg-bye');
    expect((await t.api.get(`/api/instances/${id}`)).body.status).toBe('running');
    expect((await complete(t.api, bye, 'w')).status).toBe(204);
    await waitForStatus(t.api, id, 'completed');
  });
});
