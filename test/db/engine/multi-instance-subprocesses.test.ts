// Sequential multi-instance subprocesses against a real PostgreSQL, through the HTTP API: the
// body runs once per element of the collection, one element after another, each pass with the
// element variable and loopCounter as its own locals; outputElement gathers a result per element
// into outputCollection in input order; completionCondition ends it early; an empty collection
// skips it; a collection that is not a list is an incident whose retry reads it again. Parallel
// ones are in parallel-subprocesses.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { complete, deploy, fetchOne, fetchTasks, instanceOf, start, waitForStatus } from '../../support/flows.ts';
import { startTestServer, type TestServer } from '../../support/server.ts';

let t: TestServer;

const NS = `xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:camunda="http://camunda.org/schema/1.0/bpmn" xmlns:baton="https://baton.dev/schema/bpmn/1.0"`;

/** start -> each (sequential multi-instance subprocess: pick -> pack, or `body`) -> after -> end */
function camunda(id: string, loop: string, body?: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions ${NS} id="D_${id}" targetNamespace="https://baton.dev/test">
  <bpmn:process id="${id}" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:subProcess id="each">
      ${loop}
      ${
        body ??
        `<bpmn:startEvent id="s_in" />
      <bpmn:serviceTask id="pick" camunda:type="external" camunda:topic="${id}-pick" />
      <bpmn:serviceTask id="pack" camunda:type="external" camunda:topic="${id}-pack" />
      <bpmn:endEvent id="e_in" />
      <bpmn:sequenceFlow id="i1" sourceRef="s_in" targetRef="pick" />
      <bpmn:sequenceFlow id="i2" sourceRef="pick" targetRef="pack" />
      <bpmn:sequenceFlow id="i3" sourceRef="pack" targetRef="e_in" />`
      }
    </bpmn:subProcess>
    <bpmn:serviceTask id="after" camunda:type="external" camunda:topic="${id}-after" />
    <bpmn:endEvent id="end" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="each" />
    <bpmn:sequenceFlow id="f2" sourceRef="each" targetRef="after" />
    <bpmn:sequenceFlow id="f3" sourceRef="after" targetRef="end" />
  </bpmn:process>
</bpmn:definitions>`;
}

const sequential = (body = '', attributes = '') =>
  `<bpmn:multiInstanceLoopCharacteristics isSequential="true" camunda:collection="items" camunda:elementVariable="item" baton:outputCollection="packed" baton:outputElement="= picked" ${attributes}>${body}</bpmn:multiInstanceLoopCharacteristics>`;

/** Runs one element's two tasks; answers what the pick worker saw. */
async function runElement(id: string, prefix: string, picked: unknown): Promise<Record<string, unknown>> {
  const pick = await fetchOne(t.api, 'w', `${prefix}-pick`);
  expect(pick.instanceId).toBe(id);
  // One element at a time: nothing of the next element, and pack only after pick.
  expect(await fetchTasks(t.api, 'w', [`${prefix}-pick`, `${prefix}-pack`])).toEqual([]);
  expect((await complete(t.api, pick, 'w', { picked })).status).toBe(204);
  const pack = await fetchOne(t.api, 'w', `${prefix}-pack`);
  expect(pack.variables).toMatchObject({ item: pick.variables.item, picked });
  expect((await complete(t.api, pack, 'w')).status).toBe(204);
  return pick.variables;
}

async function history(id: string): Promise<{ kind: string; stepId?: string; data?: any }[]> {
  const res = await t.api.get(`/api/instances/${id}/history?limit=1000`);
  expect(res.status).toBe(200);
  return res.body.items;
}

beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t?.close();
});

describe('sequential multi-instance subprocesses', () => {
  it('given three elements, then each runs pick then pack in turn with its own item and loopCounter, and the results land in input order', async () => {
    await deploy(t.api, camunda('mis_three', sequential()));
    const id = await start(t.api, 'mis_three', { variables: { items: ['a', 'b', 'c'] } });
    const seen = [];
    for (const picked of ['A', 'B', 'C']) seen.push(await runElement(id, 'mis_three', picked));
    expect(seen.map((v) => [v.item, v.loopCounter])).toEqual([
      ['a', 0],
      ['b', 1],
      ['c', 2],
    ]);
    const after = await fetchOne(t.api, 'w', 'mis_three-after');
    expect(after.variables.packed).toEqual(['A', 'B', 'C']);
    expect((await complete(t.api, after, 'w')).status).toBe(204);
    const done = await waitForStatus(t.api, id, 'completed');
    // The element variable and loopCounter were the passes' own; the workers' results are process variables.
    expect(done.variables).toEqual({ items: ['a', 'b', 'c'], packed: ['A', 'B', 'C'], picked: 'C' });
    expect(done.steps.find((s: any) => s.stepId === 'loop:each')).toMatchObject({ status: 'completed', pass: 3 });
    const events = await history(id);
    expect(events.filter((e) => e.kind === 'loop:pass_started').map((e) => e.data.pass)).toEqual([1, 2, 3]);
    expect(events.filter((e) => e.kind === 'loop:element_completed').map((e) => e.data.loopCounter)).toEqual([0, 1, 2]);
    expect(events.filter((e) => e.kind === 'step:completed' && e.stepId === 'pick').map((e) => e.data?.scopePath)).toEqual([
      '/loop:each#1',
      '/loop:each#2',
      '/loop:each#3',
    ]);
  });

  it('given a completionCondition over nrOfCompletedInstances, then it ends after two of three elements, the third never runs and its result stays null', async () => {
    await deploy(
      t.api,
      camunda(
        'mis_early',
        sequential(
          '<bpmn:completionCondition xsi:type="bpmn:tFormalExpression" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">${nrOfCompletedInstances &gt;= 2}</bpmn:completionCondition>',
        ),
      ),
    );
    const id = await start(t.api, 'mis_early', { variables: { items: [1, 2, 3] } });
    await runElement(id, 'mis_early', 'one');
    await runElement(id, 'mis_early', 'two');
    const after = await fetchOne(t.api, 'w', 'mis_early-after');
    expect(after.instanceId).toBe(id);
    expect(after.variables.packed).toEqual(['one', 'two', null]);
    expect(await fetchTasks(t.api, 'w', ['mis_early-pick'])).toEqual([]);
  });

  it('given a gateway inside that reads the element variable, then each pass decides on its own element, and a boundary timer on the subprocess ends every pass', async () => {
    const body = `<bpmn:startEvent id="s_in" />
      <bpmn:exclusiveGateway id="big" default="small" />
      <bpmn:serviceTask id="heavy" camunda:type="external" camunda:topic="mis_gate-heavy" />
      <bpmn:endEvent id="e_in" /><bpmn:endEvent id="e_small" />
      <bpmn:sequenceFlow id="i1" sourceRef="s_in" targetRef="big" />
      <bpmn:sequenceFlow id="heavy_flow" sourceRef="big" targetRef="heavy">
        <bpmn:conditionExpression xsi:type="bpmn:tFormalExpression" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">\${item &gt; 10}</bpmn:conditionExpression>
      </bpmn:sequenceFlow>
      <bpmn:sequenceFlow id="small" sourceRef="big" targetRef="e_small" />
      <bpmn:sequenceFlow id="i3" sourceRef="heavy" targetRef="e_in" />`;
    const timer = `<bpmn:boundaryEvent id="late" attachedToRef="each"><bpmn:timerEventDefinition><bpmn:timeDuration>PT2S</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:boundaryEvent>
      <bpmn:endEvent id="gave_up" /><bpmn:sequenceFlow id="b1" sourceRef="late" targetRef="gave_up" />`;
    const xml = camunda('mis_gate', sequential(), body).replace('</bpmn:process>', `${timer}</bpmn:process>`);
    await deploy(t.api, xml);
    const id = await start(t.api, 'mis_gate', { variables: { items: [1, 20, 3, 40], picked: null } });
    const heavy = await fetchOne(t.api, 'w', 'mis_gate-heavy');
    expect(heavy.variables).toMatchObject({ item: 20, loopCounter: 1 });
    expect((await complete(t.api, heavy, 'w')).status).toBe(204);
    // The fourth element's task is left open: the boundary timer ends the subprocess and its passes.
    const fourth = await fetchOne(t.api, 'w', 'mis_gate-heavy');
    expect(fourth.variables).toMatchObject({ item: 40, loopCounter: 3 });
    const done = await waitForStatus(t.api, id, 'completed');
    expect(done.steps.find((s: any) => s.stepId === 'late').status).toBe('completed');
    expect(done.steps.find((s: any) => s.stepId === 'after').status).toBe('skipped');
    expect(done.variables.packed).toBeUndefined();
    expect((await complete(t.api, fourth, 'w')).status).toBe(409);
  });

  it('given a Camunda 8 file with zeebe:loopCharacteristics on a subprocess, then each element runs with its inputElement and loopCounter from 1, and outputElement collects in input order', async () => {
    const zeebeTask = (id: string, type: string) =>
      `<bpmn:serviceTask id="${id}"><bpmn:extensionElements><zeebe:taskDefinition type="${type}" /></bpmn:extensionElements></bpmn:serviceTask>`;
    const xml = `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="D_mis_zeebe" targetNamespace="https://baton.dev/test">
  <bpmn:process id="mis_zeebe" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:subProcess id="each">
      <bpmn:multiInstanceLoopCharacteristics isSequential="true"><bpmn:extensionElements>
        <zeebe:loopCharacteristics inputCollection="=orders" inputElement="order" outputCollection="totals" outputElement="=total" />
      </bpmn:extensionElements></bpmn:multiInstanceLoopCharacteristics>
      <bpmn:startEvent id="s_in" />
      ${zeebeTask('price', 'mis_zeebe-price')}
      <bpmn:endEvent id="e_in" />
      <bpmn:sequenceFlow id="i1" sourceRef="s_in" targetRef="price" />
      <bpmn:sequenceFlow id="i2" sourceRef="price" targetRef="e_in" />
    </bpmn:subProcess>
    ${zeebeTask('after', 'mis_zeebe-after')}
    <bpmn:endEvent id="end" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="each" />
    <bpmn:sequenceFlow id="f2" sourceRef="each" targetRef="after" />
    <bpmn:sequenceFlow id="f3" sourceRef="after" targetRef="end" />
  </bpmn:process>
</bpmn:definitions>`;
    const res = await t.api.post('/api/definitions', { xml });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(JSON.stringify(res.body.warnings ?? [])).not.toContain('loopCounter');
    const id = await start(t.api, 'mis_zeebe', { variables: { orders: [{ n: 2 }, { n: 5 }] } });
    // Camunda 8 counts its elements from 1.
    for (const [counter, expected] of [
      [1, 2],
      [2, 5],
    ] as const) {
      const task = await fetchOne(t.api, 'w', 'mis_zeebe-price');
      expect(task.variables.order).toEqual({ n: expected });
      expect(task.variables.loopCounter).toBe(counter);
      expect((await complete(t.api, task, 'w', { total: expected * 10 })).status).toBe(204);
    }
    const after = await fetchOne(t.api, 'w', 'mis_zeebe-after');
    expect(after.instanceId).toBe(id);
    expect(after.variables.totals).toEqual([20, 50]);
    expect(after.variables.order).toBeUndefined();
  });

  it('given an empty collection, then the subprocess is skipped and the token moves on; given no list, an incident whose retry with the list fixed runs it', async () => {
    await deploy(t.api, camunda('mis_edge', sequential()));
    const empty = await start(t.api, 'mis_edge', { variables: { items: [] } });
    const after = await fetchOne(t.api, 'w', 'mis_edge-after');
    expect(after.instanceId).toBe(empty);
    const skipped = await instanceOf(t.api, empty);
    expect(skipped.steps.find((s: any) => s.stepId === 'each')).toMatchObject({ status: 'skipped' });

    const broken = await start(t.api, 'mis_edge', { variables: { items: 'not a list' } });
    const stuck = await waitForStatus(t.api, broken, 'incident');
    expect(stuck.incidents).toMatchObject([{ stepId: 'each', kind: 'condition_error' }]);
    expect(stuck.incidents[0].message).toContain('not a list');
    const retried = await t.api.post(`/api/incidents/${stuck.incidents[0].id}/retry`, { variables: { items: ['x'] } });
    expect(retried.status, JSON.stringify(retried.body)).toBeLessThan(300);
    await runElement(broken, 'mis_edge', 'X');
    expect((await fetchOne(t.api, 'w', 'mis_edge-after')).variables.packed).toEqual(['X']);
  });
});
