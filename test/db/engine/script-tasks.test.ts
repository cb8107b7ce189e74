// Script tasks against a real PostgreSQL through the HTTP API: JavaScript in the sandbox and FEEL,
// in both dialects; a script that throws, or loops past its budget, is a script_error incident
// that its retry runs again, and the server keeps answering meanwhile.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { complete, deploy, fetchOne, fetchTasks, historyKinds, instanceOf, start, waitForStatus } from '../../support/flows.ts';
import { startTestServer, type TestServer } from '../../support/server.ts';

let t: TestServer;

const NS = `xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:camunda="http://camunda.org/schema/1.0/bpmn" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0"`;

/** start -> the script task `script` -> a service task `<id>-after` -> end */
function scriptProcess(id: string, script: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions ${NS} id="D_${id}" targetNamespace="https://baton.dev/test">
  <bpmn:process id="${id}" isExecutable="true">
    <bpmn:startEvent id="start" />
    ${script}
    <bpmn:serviceTask id="after" camunda:type="external" camunda:topic="${id}-after" />
    <bpmn:endEvent id="end" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="script" />
    <bpmn:sequenceFlow id="f2" sourceRef="script" targetRef="after" />
    <bpmn:sequenceFlow id="f3" sourceRef="after" targetRef="end" />
  </bpmn:process>
</bpmn:definitions>`;
}

beforeAll(async () => {
  t = await startTestServer();
  await deploy(t.api, readFileSync(new URL('../../fixtures/bpmn/scripts.bpmn', import.meta.url), 'utf8'));
});
afterAll(async () => {
  await t?.close();
});

describe('script tasks', () => {
  it('given a JavaScript and a FEEL script task (Camunda 7), then their results and what the script set reach the next worker', async () => {
    const id = await start(t.api, 'script_order', {
      variables: {
        items: [
          { price: 40, qty: 2 },
          { price: 25, qty: 1 },
        ],
      },
    });
    const ship = await fetchOne(t.api, 'w', 'script_order-ship');
    expect(ship.instanceId).toBe(id);
    expect(ship.variables).toMatchObject({ total: 105, lines: 2, size: 'big' });
    const history = (await t.api.get(`/api/instances/${id}/history`)).body.items as any[];
    expect(history.find((e) => e.kind === 'step:completed' && e.stepId === 'price')?.data).toEqual({ wrote: ['lines', 'total'] });
    expect((await complete(t.api, ship, 'w')).status).toBe(204);
    await waitForStatus(t.api, id, 'completed');
  });

  it('given a script that throws, then a script_error incident says why and where; its retry with fixed variables runs it again', async () => {
    const id = await start(t.api, 'script_order', { variables: { items: 'none' } });
    const stuck = await waitForStatus(t.api, id, 'incident');
    expect(stuck.incidents).toEqual([
      expect.objectContaining({
        stepId: 'price',
        kind: 'script_error',
        message:
          'Script task price: the script threw TypeError: items is not a list. Fix the script or the variables, then retry the incident.',
        details: expect.objectContaining({ language: 'javascript', error: 'TypeError', line: 2 }),
      }),
    ]);
    expect(await fetchTasks(t.api, 'w', ['script_order-ship'])).toEqual([]);
    const retried = await t.api.post(`/api/incidents/${stuck.incidents[0].id}/retry`, {
      variables: { items: [{ price: 10, qty: 1 }] },
    });
    expect(retried.status).toBe(200);
    const ship = await fetchOne(t.api, 'w', 'script_order-ship');
    expect(ship).toMatchObject({ instanceId: id, variables: { total: 10, lines: 1, size: 'small' } });
  });

  it('given a script that loops forever, then it is stopped at its budget as an incident while the server keeps serving other instances', async () => {
    await deploy(
      t.api,
      scriptProcess(
        'script_spin',
        '<bpmn:scriptTask id="script" scriptFormat="javascript"><bpmn:script>while (spin) {}</bpmn:script></bpmn:scriptTask>',
      ),
    );
    const spinning = await start(t.api, 'script_spin', { variables: { spin: true } });
    const stuck = await waitForStatus(t.api, spinning, 'incident');
    expect(stuck.incidents[0]).toMatchObject({
      kind: 'script_error',
      message: expect.stringContaining('did not finish within the budget of 100 ms (BATON_SCRIPT_TIME_BUDGET_MS)'),
    });
    expect((await t.api.get('/healthz')).status).toBe(200);
    const other = await start(t.api, 'script_spin', { variables: { spin: false } });
    expect((await fetchOne(t.api, 'w', 'script_spin-after')).instanceId).toBe(other);
    expect(await historyKinds(t.api, spinning)).toContain('incident:created');
  });

  it('given a Camunda 8 file, then zeebe:script FEEL, a looping one included, writes its result variable', async () => {
    const script = `<bpmn:scriptTask id="script"><bpmn:extensionElements><zeebe:script expression="=sum(for item in items return item.price * item.qty)" resultVariable="total" /></bpmn:extensionElements></bpmn:scriptTask>`;
    await deploy(t.api, scriptProcess('script_zeebe', script));
    const id = await start(t.api, 'script_zeebe', {
      variables: {
        items: [
          { price: 3, qty: 2 },
          { price: 4, qty: 1 },
        ],
      },
    });
    const after = await fetchOne(t.api, 'w', 'script_zeebe-after');
    expect(after).toMatchObject({ instanceId: id, variables: { total: 10 } });
  });

  it('given a script in a language Baton does not run, then deploy answers 400 naming the element and the language', async () => {
    const script = `<bpmn:scriptTask id="script" scriptFormat="groovy"><bpmn:script>println "hi"</bpmn:script></bpmn:scriptTask>`;
    const res = await t.api.post('/api/definitions', { xml: scriptProcess('script_groovy', script) });
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body)).toContain('Script task script: Baton does not run groovy scripts');
    expect((await t.api.get('/api/definitions/script_groovy')).status).toBe(404);
  });

  it('given a Zeebe script task with input and output mappings, then the script reads its inputs and only the outputs reach the process', async () => {
    await deploy(
      t.api,
      scriptProcess(
        'script_io',
        `<bpmn:scriptTask id="script">
          <bpmn:extensionElements>
            <zeebe:script expression="=net * (1 + rate)" resultVariable="gross" />
            <zeebe:ioMapping>
              <zeebe:input source="=order.amount" target="net" />
              <zeebe:input source="=0.2" target="rate" />
              <zeebe:output source="=round half up(gross, 2)" target="order.gross" />
            </zeebe:ioMapping>
          </bpmn:extensionElements>
        </bpmn:scriptTask>`,
      ),
    );
    const id = await start(t.api, 'script_io', { variables: { order: { amount: 10.5 } } });
    const after = await fetchOne(t.api, 'w', 'script_io-after');
    expect(after.instanceId).toBe(id);
    expect(after.variables).toEqual({ order: { amount: 10.5, gross: 12.6 } });
    expect((await complete(t.api, after, 'w')).status).toBe(204);
  });

  it("given Camunda's Spin example (a JavaScript script reading a JSON variable with S()), then it sets the price and the user task waits", async () => {
    await deploy(
      t.api,
      readFileSync(new URL('../../fixtures/corpus/camunda-bpm-examples/spin-dataformat-global.bpmn', import.meta.url), 'utf8'),
    );
    const id = await start(t.api, 'testProcess', { variables: { car: { make: 'Volvo', price: 12_000 } } });
    const view = await instanceOf(t.api, id);
    expect(view.status).toBe('running');
    expect(view.variables).toEqual({ car: { make: 'Volvo', price: 12_000 }, price: 12_000 });
    expect((view.steps as { stepId: string; status: string }[]).find((s) => s.stepId === 'UserTask_1')?.status).toBe('active');
  });
});
