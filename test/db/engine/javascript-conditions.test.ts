// Camunda 7 conditions written in JavaScript (language="javascript"), against a real PostgreSQL
// through the HTTP API: the script sandbox runs each over the variables, by name and through
// `execution`; a flow is taken, a loop repeats, a multi-instance ends, a conditional event fires
// or a conditional start event starts when the value is true. A variable the script reads and the
// instance lacks, a value that is not true or false, and a condition that sets variables are
// condition_error incidents whose retry decides again.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { complete, deploy, fetchOne, fetchTasks, start, waitForStatus } from '../../support/flows.ts';
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

const NS =
  'xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:camunda="http://camunda.org/schema/1.0/bpmn" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"';
const cdata = (body: string) => `<![CDATA[${body}]]>`;

/** start -> `work` -> service task `<key>-after` -> end, with `extra` elements in the process. */
function around(key: string, work: string, extra = ''): string {
  return `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions ${NS} id="D_${key}" targetNamespace="https://baton.dev/test">
  <bpmn:process id="${key}" isExecutable="true">
    <bpmn:startEvent id="start" />
    ${work}
    <bpmn:serviceTask id="after" camunda:type="external" camunda:topic="${key}-after" />
    <bpmn:endEvent id="end" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="work" />
    <bpmn:sequenceFlow id="f2" sourceRef="work" targetRef="after" />
    <bpmn:sequenceFlow id="f3" sourceRef="after" targetRef="end" />
    ${extra}
  </bpmn:process>
</bpmn:definitions>`;
}

async function finish(key: string, id: string, topic: 'big' | 'small'): Promise<void> {
  const task = await fetchOne(t.api, 'w', `${key}-${topic}`);
  expect(task.instanceId).toBe(id);
  expect((await complete(t.api, task, 'w')).status).toBe(204);
  await waitForStatus(t.api, id, 'completed');
}

async function finishAfter(key: string, id: string): Promise<void> {
  const after = await fetchOne(t.api, 'w', `${key}-after`);
  expect(after.instanceId).toBe(id);
  expect((await complete(t.api, after, 'w')).status).toBe(204);
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

  it('given a loop marker whose loopCondition is JavaScript, then the task repeats while the script is true', async () => {
    const loop = `<bpmn:standardLoopCharacteristics><bpmn:loopCondition xsi:type="bpmn:tFormalExpression" language="javascript">${cdata('execution.getVariable("attempts") < 3')}</bpmn:loopCondition></bpmn:standardLoopCharacteristics>`;
    await deploy(
      t.api,
      around(
        'jsc_loop',
        `<bpmn:serviceTask id="work" camunda:type="external" camunda:topic="jsc_loop-work">${loop}</bpmn:serviceTask>`,
      ),
    );
    const id = await start(t.api, 'jsc_loop', { variables: { attempts: 0 } });
    for (let attempt = 1; attempt <= 3; attempt++) {
      const work = await fetchOne(t.api, 'w', 'jsc_loop-work');
      expect((await complete(t.api, work, 'w', { attempts: attempt })).status).toBe(204);
    }
    await finishAfter('jsc_loop', id);
  });

  it('given a sequential multi-instance task whose completionCondition is JavaScript, then it ends after the element that makes the script true', async () => {
    const mi = `<bpmn:multiInstanceLoopCharacteristics isSequential="true" camunda:collection="\${items}" camunda:elementVariable="item"><bpmn:completionCondition xsi:type="bpmn:tFormalExpression" language="javascript">${cdata('nrOfCompletedInstances >= 2 || found === true')}</bpmn:completionCondition></bpmn:multiInstanceLoopCharacteristics>`;
    await deploy(
      t.api,
      around(
        'jsc_mi',
        `<bpmn:serviceTask id="work" camunda:type="external" camunda:topic="jsc_mi-work">${mi}</bpmn:serviceTask>`,
      ),
    );
    const id = await start(t.api, 'jsc_mi', { variables: { items: ['a', 'b', 'c'], found: false } });
    const seen: unknown[] = [];
    for (let i = 0; i < 2; i++) {
      const work = await fetchOne(t.api, 'w', 'jsc_mi-work');
      seen.push(work.variables.item);
      expect((await complete(t.api, work, 'w')).status).toBe(204);
    }
    expect(seen).toEqual(['a', 'b']);
    await finishAfter('jsc_mi', id);
  });

  it('given an interrupting conditional boundary in JavaScript, then it fires in the transition whose variables make the script true', async () => {
    await deploy(
      t.api,
      around(
        'jsc_cond',
        '<bpmn:serviceTask id="work" camunda:type="external" camunda:topic="jsc_cond-work" />',
        `<bpmn:boundaryEvent id="cancelled" attachedToRef="work"><bpmn:conditionalEventDefinition><bpmn:condition xsi:type="bpmn:tFormalExpression" language="javascript">${cdata('typeof status !== "undefined" && status === "cancelled"')}</bpmn:condition></bpmn:conditionalEventDefinition></bpmn:boundaryEvent>
    <bpmn:serviceTask id="undo" camunda:type="external" camunda:topic="jsc_cond-undo" />
    <bpmn:endEvent id="undone" />
    <bpmn:sequenceFlow id="c1" sourceRef="cancelled" targetRef="undo" />
    <bpmn:sequenceFlow id="c2" sourceRef="undo" targetRef="undone" />`,
      ),
    );
    const id = await start(t.api, 'jsc_cond');
    const { revision } = (await t.api.get(`/api/instances/${id}`)).body;
    const edited = await t.api.patch(`/api/instances/${id}/variables`, { revision, set: { status: 'open' } });
    expect(edited.status, JSON.stringify(edited.body)).toBe(200);
    expect(await fetchTasks(t.api, 'w', ['jsc_cond-undo'])).toEqual([]);
    const next = (await t.api.get(`/api/instances/${id}`)).body.revision;
    expect((await t.api.patch(`/api/instances/${id}/variables`, { revision: next, set: { status: 'cancelled' } })).status).toBe(
      200,
    );
    const undo = await fetchOne(t.api, 'w', 'jsc_cond-undo');
    expect(undo.instanceId).toBe(id);
    const steps = (await t.api.get(`/api/instances/${id}`)).body.steps as { stepId: string; status: string }[];
    expect(steps.find((x) => x.stepId === 'work')?.status).toBe('canceled');
  });

  it('given a conditional start event in JavaScript, then POST /api/conditions starts an instance only when the script is true', async () => {
    const xml = `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions ${NS} id="D_jsc_start" targetNamespace="https://baton.dev/test">
  <bpmn:process id="jsc_start" isExecutable="true">
    <bpmn:startEvent id="start"><bpmn:conditionalEventDefinition><bpmn:condition xsi:type="bpmn:tFormalExpression" language="javascript">${cdata('temperature > 30')}</bpmn:condition></bpmn:conditionalEventDefinition></bpmn:startEvent>
    <bpmn:serviceTask id="cool" camunda:type="external" camunda:topic="jsc_start-cool" />
    <bpmn:endEvent id="end" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="cool" />
    <bpmn:sequenceFlow id="f2" sourceRef="cool" targetRef="end" />
  </bpmn:process>
</bpmn:definitions>`;
    await deploy(t.api, xml);
    const cold = await t.api.post('/api/conditions', { definitionKey: 'jsc_start', variables: { temperature: 12 } });
    expect(cold.status, JSON.stringify(cold.body)).toBe(200);
    expect(cold.body).toEqual({ evaluated: 1, started: [] });
    const hot = await t.api.post('/api/conditions', { definitionKey: 'jsc_start', variables: { temperature: 35 } });
    expect(hot.status, JSON.stringify(hot.body)).toBe(200);
    expect(hot.body.started).toHaveLength(1);
    const cool = await fetchOne(t.api, 'w', 'jsc_start-cool');
    expect(cool.instanceId).toBe(hot.body.started[0]);
    expect(cool.variables).toEqual({ temperature: 35 });
    const missing = await t.api.post('/api/conditions', { definitionKey: 'jsc_start', variables: {} });
    expect(missing.status).toBe(400);
    expect(missing.body.message).toContain("the script threw ReferenceError: 'temperature' is not defined; nothing was started");
  });
});
