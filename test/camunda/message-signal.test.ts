// POST /engine-rest/message and /engine-rest/signal on the engine's message and signal waits.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deploy, waitForStatus } from '../support/flows.ts';
import { startTestServer, waitFor, type TestServer } from '../support/server.ts';
import { engineRest, startByKey } from './support.ts';

const NS =
  'xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:baton="https://baton.dev/schema/bpmn/1.0" targetNamespace="http://bpmn.io/schema/bpmn"';
/** start -> catch (message or signal) -> end */
function waitingBpmn(id: string, definition: string, root: string, key = ''): string {
  return `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions ${NS} id="Defs_${id}">
  ${root}
  <bpmn:process id="${id}" isExecutable="true">
    <bpmn:startEvent id="s"><bpmn:outgoing>f1</bpmn:outgoing></bpmn:startEvent>
    <bpmn:intermediateCatchEvent id="wait"${key}><bpmn:incoming>f1</bpmn:incoming><bpmn:outgoing>f2</bpmn:outgoing>${definition}</bpmn:intermediateCatchEvent>
    <bpmn:endEvent id="e"><bpmn:incoming>f2</bpmn:incoming></bpmn:endEvent>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="wait"/>
    <bpmn:sequenceFlow id="f2" sourceRef="wait" targetRef="e"/>
  </bpmn:process>
</bpmn:definitions>`;
}

let t: TestServer;

beforeAll(async () => {
  t = await startTestServer();
  await deploy(
    t.api,
    waitingBpmn(
      'ms_pay',
      '<bpmn:messageEventDefinition id="d" messageRef="m"/>',
      '<bpmn:message id="m" name="payment"/>',
      ' baton:correlationKey="orderId"',
    ),
  );
  await deploy(
    t.api,
    waitingBpmn('ms_go', '<bpmn:signalEventDefinition id="d" signalRef="g"/>', '<bpmn:signal id="g" name="go-live"/>'),
  );
});
afterAll(async () => {
  await t.close();
});

async function waiting(id: string) {
  return waitFor(
    async () => ((await t.db.pool.query('select 1 from subscriptions where instance_id = $1', [id])).rowCount ? true : undefined),
    10_000,
    `${id} to wait`,
  );
}

describe('POST /engine-rest/message', () => {
  it('correlates on one correlation key, merges typed variables, answers 204 (or results when asked)', async () => {
    const id = await startByKey(t.url, 'ms_pay', { variables: { orderId: { value: 'o-1', type: 'String' } } });
    await waiting(id);
    const res = await engineRest(t.url, 'POST', '/message', {
      messageName: 'payment',
      correlationKeys: { orderId: { value: 'o-1', type: 'String' } },
      processVariables: { amount: { value: 42, type: 'Integer' } },
      resultEnabled: true,
    });
    expect(res.status).toBe(200);
    // The catch leads straight to the end event: the instance ended in the correlation's transaction.
    expect(res.body).toEqual([
      { resultType: 'Execution', execution: { id, processInstanceId: id, ended: true, tenantId: null }, processInstance: null },
    ]);
    expect((await waitForStatus(t.api, id, 'completed')).variables).toMatchObject({ orderId: 'o-1', amount: 42 });
    const { rows } = await t.db.pool.query(`select type from camunda_variables where instance_id = $1 and name = 'amount'`, [id]);
    expect(rows).toEqual([{ type: 'Integer' }]);
  });

  it('with all: true, every waiting instance gets the message; nothing waiting is 400 and nothing is kept', async () => {
    const ids = [
      await startByKey(t.url, 'ms_pay', { variables: { orderId: { value: 'o-2' } } }),
      await startByKey(t.url, 'ms_pay', { variables: { orderId: { value: 'o-2' } } }),
    ];
    for (const id of ids) await waiting(id);
    const all = await engineRest(t.url, 'POST', '/message', {
      messageName: 'payment',
      correlationKeys: { orderId: { value: 'o-2' } },
      all: true,
    });
    expect(all.status).toBe(204);
    for (const id of ids) await waitForStatus(t.api, id, 'completed');
    const before = (await t.db.pool.query('select count(*)::int as n from messages')).rows[0].n;
    const none = await engineRest(t.url, 'POST', '/message', {
      messageName: 'payment',
      correlationKeys: { orderId: { value: 'nobody' } },
    });
    expect(none.status).toBe(400);
    expect(none.body.type).toBe('RestException');
    expect(none.body.message).toContain("Cannot correlate message 'payment'");
    expect((await t.db.pool.query('select count(*)::int as n from messages')).rows[0].n).toBe(before);
  });

  it('refuses bad bodies with 400 InvalidRequestException', async () => {
    for (const body of [
      {},
      { messageName: '' },
      { messageName: 'p', processInstanceId: 'x' },
      { messageName: 'payment', correlationKeys: { orderId: { value: 'x', type: 'Nope' } } },
    ]) {
      const res = await engineRest(t.url, 'POST', '/message', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.type).toBe('InvalidRequestException');
    }
  });
});

describe('POST /engine-rest/signal', () => {
  it('reaches every instance waiting for it and answers 204; a signal nobody waits for is 204 too', async () => {
    const ids = [await startByKey(t.url, 'ms_go'), await startByKey(t.url, 'ms_go')];
    for (const id of ids) await waiting(id);
    expect(
      (
        await engineRest(t.url, 'POST', '/signal', {
          name: 'go-live',
          variables: { when: { value: '2024-01-01T00:00:00.000+0000', type: 'Date' } },
        })
      ).status,
    ).toBe(204);
    for (const id of ids) expect((await waitForStatus(t.api, id, 'completed')).variables.when).toBe('2024-01-01T00:00:00.000Z');
    expect((await engineRest(t.url, 'POST', '/signal', { name: 'nobody-listens' })).status).toBe(204);
    expect((await engineRest(t.url, 'POST', '/signal', { variables: {} })).status).toBe(400);
    expect((await engineRest(t.url, 'POST', '/signal', { name: 'go-live', executionId: 'x' })).status).toBe(400);
  });
});
