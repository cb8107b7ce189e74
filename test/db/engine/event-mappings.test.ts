// Input and output mappings on the elements the token passes at once (none start, end and
// intermediate throw events, tasks that do nothing, signal throws), and the variables a thrown
// signal carries, against a real PostgreSQL through the HTTP API, in both dialects: inputs are the
// element's locals and never reach the process, outputs land where mapped, a mapping that fails
// stops the element in an io_mapping incident with nothing written (and no signal sent), and its
// retry after fixing the variables moves on. A message or signal start event maps its payload:
// only the targets of its output mappings reach the new instance.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  complete,
  deployMappingsRun,
  fetchOne,
  instanceOf,
  start,
  waitForIncident,
  waitForStatus,
  signalWaiterXml,
  waitForActiveStep,
} from '../../support/flows.ts';
import { startTestServer, type TestServer } from '../../support/server.ts';

let t: TestServer;

const ZEEBE = `xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0"`;
const CAMUNDA = `xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:camunda="http://camunda.org/schema/1.0/bpmn"`;

function definitions(ns: string, id: string, body: string, signal?: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions ${ns} id="D_${id}" targetNamespace="https://baton.dev/test">
  ${signal ? `<bpmn:signal id="sig" name="${signal}" />` : ''}
  <bpmn:process id="${id}" isExecutable="true">
${body}
  </bpmn:process>
</bpmn:definitions>`;
}

const zeebeIo = (mappings: string) =>
  `<bpmn:extensionElements><zeebe:ioMapping>${mappings}</zeebe:ioMapping></bpmn:extensionElements>`;

/** start (output) -> step (none throw: input, output) -> work -> end (output) */
const zeebePassing = definitions(
  ZEEBE,
  'em_zeebe',
  `<bpmn:startEvent id="start">${zeebeIo('<zeebe:output source="=0" target="count" />')}</bpmn:startEvent>
    <bpmn:intermediateThrowEvent id="step">${zeebeIo(
      '<zeebe:input source="=count + 1" target="next" /><zeebe:output source="=next * 10" target="total" />',
    )}</bpmn:intermediateThrowEvent>
    <bpmn:serviceTask id="work"><bpmn:extensionElements><zeebe:taskDefinition type="em_zeebe-work" /></bpmn:extensionElements></bpmn:serviceTask>
    <bpmn:endEvent id="end">${zeebeIo('<zeebe:output source="=&quot;done&quot;" target="status" />')}</bpmn:endEvent>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="step" />
    <bpmn:sequenceFlow id="f2" sourceRef="step" targetRef="work" />
    <bpmn:sequenceFlow id="f3" sourceRef="work" targetRef="end" />`,
);

/** start -> check (manual task: a JavaScript input over `limit` that throws unless it is a number, an output) -> work -> end */
const camundaPassing = definitions(
  CAMUNDA,
  'em_c7',
  `<bpmn:startEvent id="start" />
    <bpmn:manualTask id="check">
      <bpmn:extensionElements><camunda:inputOutput>
        <camunda:inputParameter name="half"><camunda:script scriptFormat="javascript">
          if (typeof limit !== 'number') throw new Error('limit is not a number');
          limit / 2;
        </camunda:script></camunda:inputParameter>
        <camunda:outputParameter name="ok">\${amount &lt; half}</camunda:outputParameter>
      </camunda:inputOutput></bpmn:extensionElements>
    </bpmn:manualTask>
    <bpmn:serviceTask id="work" camunda:type="external" camunda:topic="em_c7-work" />
    <bpmn:endEvent id="end" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="check" />
    <bpmn:sequenceFlow id="f2" sourceRef="check" targetRef="work" />
    <bpmn:sequenceFlow id="f3" sourceRef="work" targetRef="end" />`,
);

/** start -> shout (signal throw, its payload as given) -> end */
const thrower = (ns: string, id: string, signal: string, shout: string) =>
  definitions(
    ns,
    id,
    `<bpmn:startEvent id="start" />
    ${shout}
    <bpmn:endEvent id="end" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="shout" />
    <bpmn:sequenceFlow id="f2" sourceRef="shout" targetRef="end" />`,
    signal,
  );

beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t?.close();
});

describe('mappings on elements the token passes at once', () => {
  it("given Camunda 8 mappings on a none start, intermediate throw and end event, then outputs land in the process and the throw event's input stays its own", async () => {
    await deployMappingsRun(t.api, zeebePassing);
    const id = await start(t.api, 'em_zeebe');
    const work = await fetchOne(t.api, 'w', 'em_zeebe-work');
    expect(work.instanceId).toBe(id);
    expect(work.variables).toEqual({ count: 0, total: 10 });
    await complete(t.api, work, 'w');
    const done = await waitForStatus(t.api, id, 'completed');
    expect(done.variables).toEqual({ count: 0, total: 10, status: 'done' });
  });

  it('given a Camunda 7 manual task with an input and an output parameter, then the output reads the input, which does not leak', async () => {
    await deployMappingsRun(t.api, camundaPassing);
    const id = await start(t.api, 'em_c7', { variables: { limit: 10, amount: 3 } });
    const work = await fetchOne(t.api, 'w', 'em_c7-work');
    expect(work.instanceId).toBe(id);
    expect(work.variables).toEqual({ limit: 10, amount: 3, ok: true });
    await complete(t.api, work, 'w');
    await waitForStatus(t.api, id, 'completed');
  });

  it('given an input that cannot be evaluated, then the element holds an io_mapping incident with nothing written, and the retry with the variable fixed moves on once', async () => {
    const id = await start(t.api, 'em_c7', { variables: { limit: 'ten', amount: 3 } });
    const incident = await waitForIncident(t.api, id);
    expect(incident).toMatchObject({ stepId: 'check', kind: 'io_mapping' });
    expect(incident.message).toMatch(/Input mapping of element check to half .*limit is not a number/);
    const stuck = await instanceOf(t.api, id);
    expect(stuck.status).toBe('incident');
    expect(stuck.variables).toEqual({ limit: 'ten', amount: 3 });

    const retried = await t.api.post(`/api/incidents/${incident.id}/retry`, { variables: { limit: 4 } });
    expect(retried.status, JSON.stringify(retried.body)).toBeLessThan(300);
    const work = await fetchOne(t.api, 'w', 'em_c7-work');
    expect(work.instanceId).toBe(id);
    expect(work.variables).toEqual({ limit: 4, amount: 3, ok: false });
    await complete(t.api, work, 'w');
    await waitForStatus(t.api, id, 'completed');
    const history = (await t.api.get(`/api/instances/${id}/history`)).body.items as { kind: string; stepId?: string }[];
    expect(history.filter((e) => e.kind === 'step:completed' && e.stepId === 'check')).toHaveLength(1);
  });
  it('given a start event output that cannot be evaluated, then the new instance holds an io_mapping incident at its start with nothing written, and the retry moves on', async () => {
    await deployMappingsRun(
      t.api,
      definitions(
        ZEEBE,
        'em_start',
        `<bpmn:startEvent id="start">${zeebeIo('<zeebe:output source="=2 in (1..max)" target="fits" />')}</bpmn:startEvent>
    <bpmn:serviceTask id="work"><bpmn:extensionElements><zeebe:taskDefinition type="em_start-work" /></bpmn:extensionElements></bpmn:serviceTask>
    <bpmn:endEvent id="end" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="work" />
    <bpmn:sequenceFlow id="f2" sourceRef="work" targetRef="end" />`,
      ),
    );
    const id = await start(t.api, 'em_start', { variables: { max: 'x' } });
    const incident = await waitForIncident(t.api, id);
    expect(incident).toMatchObject({ stepId: 'start', kind: 'io_mapping' });
    const stuck = await instanceOf(t.api, id);
    expect(stuck.status).toBe('incident');
    expect(stuck.variables).toEqual({ max: 'x' });
    const retried = await t.api.post(`/api/incidents/${incident.id}/retry`, { variables: { max: 3 } });
    expect(retried.status, JSON.stringify(retried.body)).toBeLessThan(300);
    const work = await fetchOne(t.api, 'w', 'em_start-work');
    expect(work.variables).toEqual({ max: 3, fits: true });
    await complete(t.api, work, 'w');
    await waitForStatus(t.api, id, 'completed');
  });

  it('given output mappings on a message start event and a signal start event, then only their targets of the payload reach the new instance; one that fails opens it in an io_mapping incident with nothing written, and the retry with the variable set moves on', async () => {
    const messageStart = (id: string, output: string) =>
      definitions(
        ZEEBE,
        id,
        `<bpmn:startEvent id="ordered">${zeebeIo(output)}<bpmn:messageEventDefinition messageRef="M" /></bpmn:startEvent>
    <bpmn:serviceTask id="work"><bpmn:extensionElements><zeebe:taskDefinition type="${id}-work" /></bpmn:extensionElements></bpmn:serviceTask>
    <bpmn:endEvent id="end" />
    <bpmn:sequenceFlow id="f1" sourceRef="ordered" targetRef="work" />
    <bpmn:sequenceFlow id="f2" sourceRef="work" targetRef="end" />`,
      ).replace('<bpmn:process', `<bpmn:message id="M" name="${id}-ordered" />\n  <bpmn:process`);
    await deployMappingsRun(t.api, messageStart('em_msgstart', '<zeebe:output source="=order.id" target="orderId" />'));
    const sent = await t.api.post('/api/messages', {
      name: 'em_msgstart-ordered',
      variables: { order: { id: 'o-9' }, noise: 1 },
    });
    expect(sent.status, JSON.stringify(sent.body)).toBeLessThan(300);
    const work = await fetchOne(t.api, 'w', 'em_msgstart-work');
    expect(work.variables).toEqual({ orderId: 'o-9' });
    await complete(t.api, work, 'w');
    await waitForStatus(t.api, work.instanceId, 'completed');

    await deployMappingsRun(t.api, messageStart('em_msgbad', '<zeebe:output source="=2 in (1..max)" target="fits" />'));
    const bad = await t.api.post('/api/messages', { name: 'em_msgbad-ordered', variables: { max: 'x' } });
    expect(bad.status, JSON.stringify(bad.body)).toBeLessThan(300);
    const id = bad.body.instanceId as string;
    const incident = await waitForIncident(t.api, id);
    expect(incident).toMatchObject({ stepId: 'ordered', kind: 'io_mapping' });
    expect((await instanceOf(t.api, id)).variables).toEqual({});
    const retried = await t.api.post(`/api/incidents/${incident.id}/retry`, { variables: { max: 3 } });
    expect(retried.status, JSON.stringify(retried.body)).toBeLessThan(300);
    const fixed = await fetchOne(t.api, 'w', 'em_msgbad-work');
    expect(fixed.variables).toEqual({ max: 3, fits: true });
    await complete(t.api, fixed, 'w');
    await waitForStatus(t.api, id, 'completed');

    await deployMappingsRun(
      t.api,
      definitions(
        ZEEBE,
        'em_sigstart',
        `<bpmn:startEvent id="alarm">${zeebeIo('<zeebe:output source="=level * 10" target="score" />')}<bpmn:signalEventDefinition signalRef="sig" /></bpmn:startEvent>
    <bpmn:serviceTask id="work"><bpmn:extensionElements><zeebe:taskDefinition type="em_sigstart-work" /></bpmn:extensionElements></bpmn:serviceTask>
    <bpmn:endEvent id="end" />
    <bpmn:sequenceFlow id="f1" sourceRef="alarm" targetRef="work" />
    <bpmn:sequenceFlow id="f2" sourceRef="work" targetRef="end" />`,
        'em-alarm',
      ),
    );
    const broadcast = await t.api.post('/api/signals', { name: 'em-alarm', variables: { level: 4, noise: true } });
    expect(broadcast.status, JSON.stringify(broadcast.body)).toBeLessThan(300);
    const alarmed = await fetchOne(t.api, 'w', 'em_sigstart-work');
    expect(alarmed.variables).toEqual({ score: 40 });
    await complete(t.api, alarmed, 'w');
    await waitForStatus(t.api, alarmed.instanceId, 'completed');
  });
});

describe('variables a thrown signal carries', () => {
  it('given a Camunda 8 signal throw with input mappings, then a waiting catch and a signal start get exactly its inputs, and the thrower keeps none of them', async () => {
    await deployMappingsRun(t.api, signalWaiterXml('em_zwait', 'em-z'));
    await deployMappingsRun(
      t.api,
      definitions(
        CAMUNDA,
        'em_zstarted',
        `<bpmn:startEvent id="on_signal"><bpmn:signalEventDefinition signalRef="sig" /></bpmn:startEvent>
    <bpmn:serviceTask id="work" camunda:type="external" camunda:topic="em_zstarted-work" />
    <bpmn:endEvent id="end" />
    <bpmn:sequenceFlow id="f1" sourceRef="on_signal" targetRef="work" />
    <bpmn:sequenceFlow id="f2" sourceRef="work" targetRef="end" />`,
        'em-z',
      ),
    );
    await deployMappingsRun(
      t.api,
      thrower(
        ZEEBE,
        'em_zthrow',
        'em-z',
        `<bpmn:intermediateThrowEvent id="shout">${zeebeIo('<zeebe:input source="=order.id" target="orderId" />')}<bpmn:signalEventDefinition signalRef="sig" /></bpmn:intermediateThrowEvent>`,
      ),
    );
    const waiting = await start(t.api, 'em_zwait', { variables: { mine: 1 } });
    await waitForActiveStep(t.api, waiting, 'wait');
    const throwing = await start(t.api, 'em_zthrow', { variables: { order: { id: 'o-7' }, secret: 's' } });
    const thrown = await waitForStatus(t.api, throwing, 'completed');
    expect(thrown.variables).toEqual({ order: { id: 'o-7' }, secret: 's' });

    const after = await fetchOne(t.api, 'w', 'em_zwait-after');
    expect(after.instanceId).toBe(waiting);
    expect(after.variables).toEqual({ mine: 1, orderId: 'o-7' });
    const started = await fetchOne(t.api, 'w', 'em_zstarted-work');
    expect(started.variables).toEqual({ orderId: 'o-7' });
    for (const task of [after, started]) expect((await complete(t.api, task, 'w')).status).toBe(204);
    await waitForStatus(t.api, waiting, 'completed');
  });

  it('given a Camunda 7 signal end event with camunda:in variables="all" and a sourceExpression, then the receiver gets every variable the thrower sees and the computed one', async () => {
    await deployMappingsRun(t.api, signalWaiterXml('em_cwait', 'em-c'));
    await deployMappingsRun(
      t.api,
      definitions(
        CAMUNDA,
        'em_cthrow',
        `<bpmn:startEvent id="start" />
    <bpmn:endEvent id="shout"><bpmn:signalEventDefinition signalRef="sig"><bpmn:extensionElements>
      <camunda:in variables="all" /><camunda:in sourceExpression="\${amount * 2}" target="doubled" />
    </bpmn:extensionElements></bpmn:signalEventDefinition></bpmn:endEvent>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="shout" />`,
        'em-c',
      ),
    );
    const waiting = await start(t.api, 'em_cwait');
    await waitForActiveStep(t.api, waiting, 'wait');
    await waitForStatus(t.api, await start(t.api, 'em_cthrow', { variables: { amount: 21, note: 'n' } }), 'completed');
    const after = await fetchOne(t.api, 'w', 'em_cwait-after');
    expect(after.instanceId).toBe(waiting);
    expect(after.variables).toEqual({ amount: 21, note: 'n', doubled: 42 });
    await complete(t.api, after, 'w');
    await waitForStatus(t.api, waiting, 'completed');
  });

  it('given a signal throw whose input cannot be evaluated, then it holds an io_mapping incident and sends nothing, and the retry sends the signal once with the input', async () => {
    await deployMappingsRun(t.api, signalWaiterXml('em_fwait', 'em-f'));
    await deployMappingsRun(
      t.api,
      thrower(
        ZEEBE,
        'em_fthrow',
        'em-f',
        `<bpmn:intermediateThrowEvent id="shout">${zeebeIo('<zeebe:input source="=2 in (1..max)" target="fits" />')}<bpmn:signalEventDefinition signalRef="sig" /></bpmn:intermediateThrowEvent>`,
      ),
    );
    const waiting = await start(t.api, 'em_fwait');
    await waitForActiveStep(t.api, waiting, 'wait');
    const throwing = await start(t.api, 'em_fthrow', { variables: { max: 'x' } });
    const incident = await waitForIncident(t.api, throwing);
    expect(incident).toMatchObject({ stepId: 'shout', kind: 'io_mapping' });
    expect(incident.message).toMatch(/Input mapping of event shout to fits/);
    const broadcasts = await t.db.pool.query(`select count(*)::int as n from signal_broadcasts where instance_id = $1`, [
      throwing,
    ]);
    expect(broadcasts.rows[0].n).toBe(0);
    expect(((await instanceOf(t.api, waiting)).steps as any[]).find((s) => s.stepId === 'wait')?.status).toBe('active');

    const retried = await t.api.post(`/api/incidents/${incident.id}/retry`, { variables: { max: 5 } });
    expect(retried.status, JSON.stringify(retried.body)).toBeLessThan(300);
    await waitForStatus(t.api, throwing, 'completed');
    const after = await fetchOne(t.api, 'w', 'em_fwait-after');
    expect(after.instanceId).toBe(waiting);
    expect(after.variables).toEqual({ fits: true });
    await complete(t.api, after, 'w');
    await waitForStatus(t.api, waiting, 'completed');
  });

  it('given camunda:in settings a signal cannot carry, then deploy answers 400 naming the event and changes nothing', async () => {
    const xml = thrower(
      CAMUNDA,
      'em_refused',
      'em-r',
      `<bpmn:intermediateThrowEvent id="shout"><bpmn:signalEventDefinition signalRef="sig"><bpmn:extensionElements>
      <camunda:in source="a" target="b" local="true" /><camunda:out source="c" target="d" />
    </bpmn:extensionElements></bpmn:signalEventDefinition></bpmn:intermediateThrowEvent>`,
    );
    const res = await t.api.post('/api/definitions', { xml });
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body)).toMatch(/shout/);
    expect(JSON.stringify(res.body)).toMatch(/local=\\"true\\"/);
    expect(JSON.stringify(res.body)).toMatch(/camunda:Out/);
    expect((await t.api.get('/api/definitions/em_refused')).status).toBe(404);
  });
});
