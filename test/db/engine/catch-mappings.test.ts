// Output mappings on message and signal catch events, receive tasks and boundary events, against a real
// PostgreSQL through the HTTP API, in both dialects: the payload goes through them (only their
// targets reach the process), whether the message comes while the event waits or waited in the
// inbox (also while its instance was suspended); a mapping that fails consumes the message, stops the event in an io_mapping incident
// and keeps the payload, and the retry after fixing the variables maps it again and moves on. An
// interrupting boundary event maps its message the same way, and interrupts its host either way;
// a non-interrupting one maps each firing, and one that fails holds its firing while the host goes on;
// a timer or conditional catch event runs its output mappings over the variables when it fires,
// and an error boundary maps the variables a worker reports with the error. A catch event's input
// mappings are its locals while it waits: its correlation key and outputs read them. An escalation
// boundary runs its outputs when it catches.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  complete,
  deployMappingsRun,
  fetchOne,
  instanceOf,
  start,
  waitForIncident,
  waitForStatus,
  waitForActiveStep,
} from '../../support/flows.ts';
import { startTestServer, waitFor, type TestServer } from '../../support/server.ts';

let t: TestServer;

/** start -> paid (message catch, correlation by =order.id, output mappings) -> ship -> end */
const zeebe = (id: string, outputs: string) => `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="D_${id}" targetNamespace="https://baton.dev/test">
  <bpmn:message id="M" name="${id}-paid"><bpmn:extensionElements><zeebe:subscription correlationKey="=order.id" /></bpmn:extensionElements></bpmn:message>
  <bpmn:process id="${id}" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:intermediateCatchEvent id="paid">
      <bpmn:extensionElements><zeebe:ioMapping>${outputs}</zeebe:ioMapping></bpmn:extensionElements>
      <bpmn:messageEventDefinition messageRef="M" />
    </bpmn:intermediateCatchEvent>
    <bpmn:serviceTask id="ship"><bpmn:extensionElements><zeebe:taskDefinition type="${id}-ship" /></bpmn:extensionElements></bpmn:serviceTask>
    <bpmn:endEvent id="end" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="paid" />
    <bpmn:sequenceFlow id="f2" sourceRef="paid" targetRef="ship" />
    <bpmn:sequenceFlow id="f3" sourceRef="ship" targetRef="end" />
  </bpmn:process>
</bpmn:definitions>`;

const deployClean = (xml: string) => deployMappingsRun(t.api, xml);

beforeAll(async () => {
  t = await startTestServer();
  await deployClean(zeebe('cm_paid', '<zeebe:output source="=payment.amount" target="paidAmount" />'));
  await deployClean(zeebe('cm_bad', '<zeebe:output source="=2 in (1..max)" target="fits" />'));
});
afterAll(async () => {
  await t?.close();
});

describe('output mappings on catch events', () => {
  it('given a Camunda 8 message catch with an output mapping, then only its target reaches the process, whether the message comes while it waits, waited in the inbox, or waited while the instance was suspended', async () => {
    const waiting = await start(t.api, 'cm_paid', { variables: { order: { id: 'o-1' } } });
    await waitForActiveStep(t.api, waiting, 'paid');
    const sent = await t.api.post('/api/messages', {
      name: 'cm_paid-paid',
      correlationKey: 'o-1',
      variables: { payment: { amount: 30 }, note: 'thanks' },
    });
    expect(sent.body).toMatchObject({ status: 'matched', instanceId: waiting });
    const ship = await fetchOne(t.api, 'w', 'cm_paid-ship');
    expect(ship.variables).toEqual({ order: { id: 'o-1' }, paidAmount: 30 });
    await complete(t.api, ship, 'w');

    const early = await t.api.post('/api/messages', {
      name: 'cm_paid-paid',
      correlationKey: 'o-2',
      variables: { payment: { amount: 12 }, note: 'early' },
    });
    expect(early.body.status).not.toBe('matched');
    const later = await start(t.api, 'cm_paid', { variables: { order: { id: 'o-2' } } });
    const shipLater = await fetchOne(t.api, 'w', 'cm_paid-ship');
    expect(shipLater.instanceId).toBe(later);
    expect(shipLater.variables).toEqual({ order: { id: 'o-2' }, paidAmount: 12 });
    await complete(t.api, shipLater, 'w');
    await waitForStatus(t.api, later, 'completed');

    // A message kept in the inbox while the instance was suspended is taken on the resume, through the mapping too.
    const suspended = await start(t.api, 'cm_paid', { variables: { order: { id: 'o-3' } } });
    await waitForActiveStep(t.api, suspended, 'paid');
    expect((await t.api.post(`/api/instances/${suspended}/suspend`, {})).status).toBe(200);
    const kept = await t.api.post('/api/messages', {
      name: 'cm_paid-paid',
      correlationKey: 'o-3',
      variables: { payment: { amount: 4 }, note: 'kept' },
    });
    expect(kept.body.status).toBe('buffered');
    expect((await t.api.post(`/api/instances/${suspended}/resume`, {})).status).toBe(200);
    const shipResumed = await fetchOne(t.api, 'w', 'cm_paid-ship');
    expect(shipResumed.instanceId).toBe(suspended);
    expect(shipResumed.variables).toEqual({ order: { id: 'o-3' }, paidAmount: 4 });
    await complete(t.api, shipResumed, 'w');
    await waitForStatus(t.api, suspended, 'completed');
  });

  it('given an output mapping that fails, then the message is consumed, the catch holds an io_mapping incident with nothing written, and the retry with the variable fixed maps the kept payload and moves on', async () => {
    const id = await start(t.api, 'cm_bad', { variables: { order: { id: 'b-1' }, max: 'x' } });
    await waitForActiveStep(t.api, id, 'paid');
    const sent = await t.api.post('/api/messages', { name: 'cm_bad-paid', correlationKey: 'b-1', variables: { amount: 5 } });
    expect(sent.body).toMatchObject({ status: 'matched', instanceId: id });
    const incident = await waitForIncident(t.api, id);
    expect(incident).toMatchObject({ stepId: 'paid', kind: 'io_mapping' });
    const stuck = await instanceOf(t.api, id);
    expect(stuck.status).toBe('incident');
    expect(stuck.variables).toEqual({ order: { id: 'b-1' }, max: 'x' });
    // The message was taken: another one for the key finds no waiting catch.
    const second = await t.api.post('/api/messages', { name: 'cm_bad-paid', correlationKey: 'b-1', ttlMs: 0 });
    expect(second.body.status).not.toBe('matched');

    const retried = await t.api.post(`/api/incidents/${incident.id}/retry`, { variables: { max: 5 } });
    expect(retried.status, JSON.stringify(retried.body)).toBeLessThan(300);
    const ship = await fetchOne(t.api, 'w', 'cm_bad-ship');
    expect(ship.variables).toEqual({ order: { id: 'b-1' }, max: 5, fits: true });
    await complete(t.api, ship, 'w');
    await waitForStatus(t.api, id, 'completed');
    const history = (await t.api.get(`/api/instances/${id}/history`)).body.items as { kind: string; stepId?: string }[];
    expect(history.filter((e) => e.kind === 'step:completed' && e.stepId === 'paid')).toHaveLength(1);
  });

  it('given a Camunda 7 receive task with an output parameter, then the message payload goes through it', async () => {
    await deployClean(`<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="D_cm_rt" targetNamespace="https://baton.dev/test">
  <bpmn:message id="M" name="cm_rt-paid" />
  <bpmn:process id="cm_rt" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:receiveTask id="paid" messageRef="M">
      <bpmn:extensionElements><camunda:inputOutput><camunda:outputParameter name="paidAmount">\${payment.amount}</camunda:outputParameter></camunda:inputOutput></bpmn:extensionElements>
    </bpmn:receiveTask>
    <bpmn:serviceTask id="ship" camunda:type="external" camunda:topic="cm_rt-ship" />
    <bpmn:endEvent id="end" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="paid" />
    <bpmn:sequenceFlow id="f2" sourceRef="paid" targetRef="ship" />
    <bpmn:sequenceFlow id="f3" sourceRef="ship" targetRef="end" />
  </bpmn:process>
</bpmn:definitions>`);
    const id = await start(t.api, 'cm_rt', { businessKey: 'rt-1' });
    await waitForActiveStep(t.api, id, 'paid');
    const sent = await t.api.post('/api/messages', {
      name: 'cm_rt-paid',
      correlationKey: 'rt-1',
      variables: { payment: { amount: 9 } },
    });
    expect(sent.body).toMatchObject({ status: 'matched', instanceId: id });
    const ship = await fetchOne(t.api, 'w', 'cm_rt-ship');
    expect(ship.variables).toEqual({ paidAmount: 9 });
    await complete(t.api, ship, 'w');
    await waitForStatus(t.api, id, 'completed');
  });

  it('given an interrupting message boundary with an output mapping, then its host is canceled and only the target reaches the process; when the mapping fails, the host is still interrupted and the retry moves on', async () => {
    const boundary = (id: string, outputs: string, nonInterrupting = '') => `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="D_${id}" targetNamespace="https://baton.dev/test">
  <bpmn:message id="M" name="${id}-cancel"><bpmn:extensionElements><zeebe:subscription correlationKey="=order.id" /></bpmn:extensionElements></bpmn:message>
  <bpmn:process id="${id}" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:serviceTask id="pack"><bpmn:extensionElements><zeebe:taskDefinition type="${id}-pack" /></bpmn:extensionElements></bpmn:serviceTask>
    <bpmn:boundaryEvent id="canceled" attachedToRef="pack"${nonInterrupting}>
      <bpmn:extensionElements><zeebe:ioMapping>${outputs}</zeebe:ioMapping></bpmn:extensionElements>
      <bpmn:messageEventDefinition messageRef="M" />
    </bpmn:boundaryEvent>
    <bpmn:serviceTask id="refund"><bpmn:extensionElements><zeebe:taskDefinition type="${id}-refund" /></bpmn:extensionElements></bpmn:serviceTask>
    <bpmn:endEvent id="end" />
    <bpmn:endEvent id="refunded" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="pack" />
    <bpmn:sequenceFlow id="f2" sourceRef="pack" targetRef="end" />
    <bpmn:sequenceFlow id="f3" sourceRef="canceled" targetRef="refund" />
    <bpmn:sequenceFlow id="f4" sourceRef="refund" targetRef="refunded" />
  </bpmn:process>
</bpmn:definitions>`;
    await deployClean(boundary('cm_bnd', '<zeebe:output source="=reason" target="cancelReason" />'));
    const id = await start(t.api, 'cm_bnd', { variables: { order: { id: 'c-1' } } });
    const pack = await fetchOne(t.api, 'w', 'cm_bnd-pack');
    const sent = await t.api.post('/api/messages', {
      name: 'cm_bnd-cancel',
      correlationKey: 'c-1',
      variables: { reason: 'changed mind', extra: 1 },
    });
    expect(sent.body).toMatchObject({ status: 'matched', instanceId: id });
    expect((await complete(t.api, pack, 'w')).status).toBe(409);
    const refund = await fetchOne(t.api, 'w', 'cm_bnd-refund');
    expect(refund.variables).toEqual({ order: { id: 'c-1' }, cancelReason: 'changed mind' });
    await complete(t.api, refund, 'w');
    await waitForStatus(t.api, id, 'completed');

    await deployClean(boundary('cm_bndbad', '<zeebe:output source="=2 in (1..max)" target="fits" />'));
    const bad = await start(t.api, 'cm_bndbad', { variables: { order: { id: 'c-2' }, max: 'x' } });
    const packBad = await fetchOne(t.api, 'w', 'cm_bndbad-pack');
    const taken = await t.api.post('/api/messages', { name: 'cm_bndbad-cancel', correlationKey: 'c-2', variables: { n: 1 } });
    expect(taken.body).toMatchObject({ status: 'matched', instanceId: bad });
    const incident = await waitForIncident(t.api, bad);
    expect(incident).toMatchObject({ stepId: 'canceled', kind: 'io_mapping' });
    expect(incident.message).toMatch(/^Output mapping of event canceled to fits/);
    // The message interrupted the host all the same: its task is gone, its path will not be taken.
    expect((await complete(t.api, packBad, 'w')).status).toBe(409);
    const stuck = await instanceOf(t.api, bad);
    expect(stuck.status).toBe('incident');
    expect((stuck.steps as any[]).find((s) => s.stepId === 'pack')?.status).toBe('canceled');
    expect(stuck.variables).toEqual({ order: { id: 'c-2' }, max: 'x' });

    const retried = await t.api.post(`/api/incidents/${incident.id}/retry`, { variables: { max: 5 } });
    expect(retried.status, JSON.stringify(retried.body)).toBeLessThan(300);
    const refundBad = await fetchOne(t.api, 'w', 'cm_bndbad-refund');
    expect(refundBad.variables).toEqual({ order: { id: 'c-2' }, max: 5, fits: true });
    await complete(t.api, refundBad, 'w');
    const done = await waitForStatus(t.api, bad, 'completed');
    expect((done.steps as any[]).find((s) => s.stepId === 'end')?.status).not.toBe('completed');
  });

  it('given output mappings on a timer catch event and a conditional one, then they run when it fires, over the variables; one that fails holds the event in an io_mapping incident and the retry moves on', async () => {
    const timerXml = (id: string, output: string) => `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="D_${id}" targetNamespace="https://baton.dev/test">
  <bpmn:process id="${id}" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:intermediateCatchEvent id="later">
      <bpmn:extensionElements><zeebe:ioMapping>${output}</zeebe:ioMapping></bpmn:extensionElements>
      <bpmn:timerEventDefinition><bpmn:timeDuration>PT0.2S</bpmn:timeDuration></bpmn:timerEventDefinition>
    </bpmn:intermediateCatchEvent>
    <bpmn:serviceTask id="next"><bpmn:extensionElements><zeebe:taskDefinition type="${id}-next" /></bpmn:extensionElements></bpmn:serviceTask>
    <bpmn:endEvent id="end" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="later" />
    <bpmn:sequenceFlow id="f2" sourceRef="later" targetRef="next" />
    <bpmn:sequenceFlow id="f3" sourceRef="next" targetRef="end" />
  </bpmn:process>
</bpmn:definitions>`;
    await deployClean(timerXml('cm_timer', '<zeebe:output source="=reminders + 1" target="reminders" />'));
    const id = await start(t.api, 'cm_timer', { variables: { reminders: 1 } });
    const next = await fetchOne(t.api, 'w', 'cm_timer-next');
    expect(next.instanceId).toBe(id);
    expect(next.variables).toEqual({ reminders: 2 });
    await complete(t.api, next, 'w');
    await waitForStatus(t.api, id, 'completed');

    await deployClean(timerXml('cm_timerbad', '<zeebe:output source="=2 in (1..max)" target="fits" />'));
    const bad = await start(t.api, 'cm_timerbad', { variables: { max: 'x' } });
    const incident = await waitForIncident(t.api, bad);
    expect(incident).toMatchObject({ stepId: 'later', kind: 'io_mapping' });
    expect(incident.message).toMatch(/^Output mapping of event later to fits/);
    expect((await instanceOf(t.api, bad)).variables).toEqual({ max: 'x' });
    const retried = await t.api.post(`/api/incidents/${incident.id}/retry`, { variables: { max: 5 } });
    expect(retried.status, JSON.stringify(retried.body)).toBeLessThan(300);
    const nextBad = await fetchOne(t.api, 'w', 'cm_timerbad-next');
    expect(nextBad.variables).toEqual({ max: 5, fits: true });
    await complete(t.api, nextBad, 'w');
    await waitForStatus(t.api, bad, 'completed');
    const history = (await t.api.get(`/api/instances/${bad}/history`)).body.items as { kind: string; stepId?: string }[];
    expect(history.filter((e) => e.kind === 'step:completed' && e.stepId === 'later')).toHaveLength(1);

    await deployClean(`<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:camunda="http://camunda.org/schema/1.0/bpmn" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" id="D_cm_cond" targetNamespace="https://baton.dev/test">
  <bpmn:process id="cm_cond" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:intermediateCatchEvent id="approved">
      <bpmn:extensionElements><camunda:inputOutput><camunda:outputParameter name="approvedBy">\${decision.by}</camunda:outputParameter></camunda:inputOutput></bpmn:extensionElements>
      <bpmn:conditionalEventDefinition><bpmn:condition xsi:type="bpmn:tFormalExpression">\${decision.ok}</bpmn:condition></bpmn:conditionalEventDefinition>
    </bpmn:intermediateCatchEvent>
    <bpmn:serviceTask id="next" camunda:type="external" camunda:topic="cm_cond-next" />
    <bpmn:endEvent id="end" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="approved" />
    <bpmn:sequenceFlow id="f2" sourceRef="approved" targetRef="next" />
    <bpmn:sequenceFlow id="f3" sourceRef="next" targetRef="end" />
  </bpmn:process>
</bpmn:definitions>`);
    const waiting = await start(t.api, 'cm_cond', { variables: { decision: { ok: false } } });
    await waitForActiveStep(t.api, waiting, 'approved');
    const { revision } = await instanceOf(t.api, waiting);
    const edited = await t.api.patch(`/api/instances/${waiting}/variables`, {
      revision,
      set: { decision: { ok: true, by: 'ann' } },
    });
    expect(edited.status, JSON.stringify(edited.body)).toBe(200);
    const nextCond = await fetchOne(t.api, 'w', 'cm_cond-next');
    expect(nextCond.instanceId).toBe(waiting);
    expect(nextCond.variables).toEqual({ decision: { ok: true, by: 'ann' }, approvedBy: 'ann' });
    await complete(t.api, nextCond, 'w');
    await waitForStatus(t.api, waiting, 'completed');
  });
  it('given output mappings on the events an event-based gateway races, then the winner maps its payload; one whose mapping fails still wins, its timer rival never fires, and the retry moves on', async () => {
    /** start -> race -> paid (message, mapped) -> ship -> end; race -> late (timer, mapped) -> remind -> end */
    const raceXml = (id: string, paidOutput: string, due: string) => `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="D_${id}" targetNamespace="https://baton.dev/test">
  <bpmn:message id="M" name="${id}-paid"><bpmn:extensionElements><zeebe:subscription correlationKey="=order" /></bpmn:extensionElements></bpmn:message>
  <bpmn:process id="${id}" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:eventBasedGateway id="race" />
    <bpmn:intermediateCatchEvent id="paid">
      <bpmn:extensionElements><zeebe:ioMapping>${paidOutput}</zeebe:ioMapping></bpmn:extensionElements>
      <bpmn:messageEventDefinition messageRef="M" />
    </bpmn:intermediateCatchEvent>
    <bpmn:intermediateCatchEvent id="late">
      <bpmn:extensionElements><zeebe:ioMapping><zeebe:output source="=&quot;late&quot;" target="outcome" /></zeebe:ioMapping></bpmn:extensionElements>
      <bpmn:timerEventDefinition><bpmn:timeDuration>${due}</bpmn:timeDuration></bpmn:timerEventDefinition>
    </bpmn:intermediateCatchEvent>
    <bpmn:serviceTask id="ship"><bpmn:extensionElements><zeebe:taskDefinition type="${id}-ship" /></bpmn:extensionElements></bpmn:serviceTask>
    <bpmn:serviceTask id="remind"><bpmn:extensionElements><zeebe:taskDefinition type="${id}-remind" /></bpmn:extensionElements></bpmn:serviceTask>
    <bpmn:endEvent id="shipped" />
    <bpmn:endEvent id="reminded" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="race" />
    <bpmn:sequenceFlow id="f2" sourceRef="race" targetRef="paid" />
    <bpmn:sequenceFlow id="f3" sourceRef="race" targetRef="late" />
    <bpmn:sequenceFlow id="f4" sourceRef="paid" targetRef="ship" />
    <bpmn:sequenceFlow id="f5" sourceRef="late" targetRef="remind" />
    <bpmn:sequenceFlow id="f6" sourceRef="ship" targetRef="shipped" />
    <bpmn:sequenceFlow id="f7" sourceRef="remind" targetRef="reminded" />
  </bpmn:process>
</bpmn:definitions>`;
    const statusOf = async (id: string, stepId: string) =>
      ((await instanceOf(t.api, id)).steps as { stepId: string; status: string }[]).find((s) => s.stepId === stepId)?.status;

    // The message comes first: only the mapping's target is written.
    await deployClean(raceXml('cm_race', '<zeebe:output source="=payment.amount" target="paidAmount" />', 'PT30S'));
    const won = await start(t.api, 'cm_race', { variables: { order: 'r-1' } });
    await waitForActiveStep(t.api, won, 'paid');
    const sent = await t.api.post('/api/messages', {
      name: 'cm_race-paid',
      correlationKey: 'r-1',
      variables: { payment: { amount: 7 } },
    });
    expect(sent.body).toMatchObject({ status: 'matched', instanceId: won });
    const ship = await fetchOne(t.api, 'w', 'cm_race-ship');
    expect(ship.variables).toEqual({ order: 'r-1', paidAmount: 7 });
    expect(await statusOf(won, 'late')).toBe('skipped');
    await complete(t.api, ship, 'w');
    await waitForStatus(t.api, won, 'completed');

    // The timer comes first: its mapping runs over the variables; the message then finds nothing waiting.
    await deployClean(raceXml('cm_racetimer', '<zeebe:output source="=payment.amount" target="paidAmount" />', 'PT0.2S'));
    const timedOut = await start(t.api, 'cm_racetimer', { variables: { order: 'r-2' } });
    const remind = await fetchOne(t.api, 'w', 'cm_racetimer-remind');
    expect(remind.instanceId).toBe(timedOut);
    expect(remind.variables).toEqual({ order: 'r-2', outcome: 'late' });
    expect(await statusOf(timedOut, 'paid')).toBe('skipped');
    const tooLate = await t.api.post('/api/messages', { name: 'cm_racetimer-paid', correlationKey: 'r-2', ttlMs: 0 });
    expect(tooLate.body.status).not.toBe('matched');
    await complete(t.api, remind, 'w');
    await waitForStatus(t.api, timedOut, 'completed');

    // The message comes first but cannot be mapped: it has won all the same, and the timer due meanwhile never fires.
    await deployClean(raceXml('cm_racebad', '<zeebe:output source="=2 in (1..max)" target="fits" />', 'PT0.5S'));
    const bad = await start(t.api, 'cm_racebad', { variables: { order: 'r-3', max: 'x' } });
    await waitForActiveStep(t.api, bad, 'paid');
    const startedAt = Date.now();
    const taken = await t.api.post('/api/messages', { name: 'cm_racebad-paid', correlationKey: 'r-3', variables: { amount: 1 } });
    expect(taken.body).toMatchObject({ status: 'matched', instanceId: bad });
    const incident = await waitForIncident(t.api, bad);
    expect(incident).toMatchObject({ stepId: 'paid', kind: 'io_mapping' });
    expect(await statusOf(bad, 'late')).toBe('skipped');
    // Past the timer's due time (and a sweep of the timer scheduler), nothing has fired it.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, startedAt + 1_500 - Date.now())));
    expect(await statusOf(bad, 'late')).toBe('skipped');
    expect((await instanceOf(t.api, bad)).variables).toEqual({ order: 'r-3', max: 'x' });
    const retried = await t.api.post(`/api/incidents/${incident.id}/retry`, { variables: { max: 5 } });
    expect(retried.status, JSON.stringify(retried.body)).toBeLessThan(300);
    const shipBad = await fetchOne(t.api, 'w', 'cm_racebad-ship');
    expect(shipBad.variables).toEqual({ order: 'r-3', max: 5, fits: true });
    await complete(t.api, shipBad, 'w');
    await waitForStatus(t.api, bad, 'completed');
    const history = (await t.api.get(`/api/instances/${bad}/history`)).body.items as { kind: string; stepId?: string }[];
    expect(history.filter((e) => e.stepId === 'late').map((e) => e.kind)).toEqual(['step:activated', 'step:skipped']);
    expect(history.filter((e) => e.stepId === 'remind').map((e) => e.kind)).toEqual(['step:skipped']);
  });
  it('given output mappings on non-interrupting boundaries, then each firing maps its payload before its path runs; one that fails waits in its incident, the host goes on, and the retry runs its path after the host ended', async () => {
    /** start -> work (service task) -> end; work's non-interrupting message boundary "noted" -> record -> recorded */
    const notedXml = (id: string, output: string) => `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="D_${id}" targetNamespace="https://baton.dev/test">
  <bpmn:message id="M" name="${id}-note"><bpmn:extensionElements><zeebe:subscription correlationKey="=order" /></bpmn:extensionElements></bpmn:message>
  <bpmn:process id="${id}" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:serviceTask id="work"><bpmn:extensionElements><zeebe:taskDefinition type="${id}-work" /></bpmn:extensionElements></bpmn:serviceTask>
    <bpmn:boundaryEvent id="noted" attachedToRef="work" cancelActivity="false">
      <bpmn:extensionElements><zeebe:ioMapping>${output}</zeebe:ioMapping></bpmn:extensionElements>
      <bpmn:messageEventDefinition messageRef="M" />
    </bpmn:boundaryEvent>
    <bpmn:serviceTask id="record"><bpmn:extensionElements><zeebe:taskDefinition type="${id}-record" /></bpmn:extensionElements></bpmn:serviceTask>
    <bpmn:endEvent id="end" />
    <bpmn:endEvent id="recorded" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="work" />
    <bpmn:sequenceFlow id="f2" sourceRef="work" targetRef="end" />
    <bpmn:sequenceFlow id="f3" sourceRef="noted" targetRef="record" />
    <bpmn:sequenceFlow id="f4" sourceRef="record" targetRef="recorded" />
  </bpmn:process>
</bpmn:definitions>`;
    const note = (id: string, order: string, variables: Record<string, unknown>) =>
      t.api.post('/api/messages', { name: `${id}-note`, correlationKey: order, variables });

    await deployClean(notedXml('cm_noted', '<zeebe:output source="=update.text" target="lastNote" />'));
    const id = await start(t.api, 'cm_noted', { variables: { order: 'n-1' } });
    await waitForActiveStep(t.api, id, 'noted');
    expect((await note('cm_noted', 'n-1', { update: { text: 'first' } })).body).toMatchObject({
      status: 'matched',
      instanceId: id,
    });
    const first = await fetchOne(t.api, 'w', 'cm_noted-record');
    expect(first.variables).toEqual({ order: 'n-1', lastNote: 'first' });
    await complete(t.api, first, 'w');
    // It fires again while the host runs, each payload through the mapping.
    await waitForActiveStep(t.api, id, 'noted');
    expect((await note('cm_noted', 'n-1', { update: { text: 'second' } })).body).toMatchObject({
      status: 'matched',
      instanceId: id,
    });
    const second = await fetchOne(t.api, 'w', 'cm_noted-record');
    expect(second.variables).toEqual({ order: 'n-1', lastNote: 'second' });
    await complete(t.api, second, 'w');
    await complete(t.api, await fetchOne(t.api, 'w', 'cm_noted-work'), 'w');
    await waitForStatus(t.api, id, 'completed');

    await deployClean(notedXml('cm_notedbad', '<zeebe:output source="=2 in (1..max)" target="fits" />'));
    const bad = await start(t.api, 'cm_notedbad', { variables: { order: 'n-2', max: 'x' } });
    await waitForActiveStep(t.api, bad, 'noted');
    expect((await note('cm_notedbad', 'n-2', { text: 'lost?' })).body).toMatchObject({ status: 'matched', instanceId: bad });
    const incident = await waitForIncident(t.api, bad);
    expect(incident).toMatchObject({ stepId: 'noted', kind: 'io_mapping' });
    expect(incident.message).toMatch(/^Output mapping of event noted to fits/);
    // The host goes on and completes; the firing held in the incident keeps the instance open.
    await complete(t.api, await fetchOne(t.api, 'w', 'cm_notedbad-work'), 'w');
    await waitFor(
      async () => {
        const steps = (await instanceOf(t.api, bad)).steps as { stepId: string; status: string }[];
        return steps.some((s) => s.stepId === 'end' && s.status === 'completed') || undefined;
      },
      10_000,
      'the host path ended',
    );
    const held = await instanceOf(t.api, bad);
    expect(held.status).toBe('incident');
    expect(held.variables).toEqual({ order: 'n-2', max: 'x' });
    const retried = await t.api.post(`/api/incidents/${incident.id}/retry`, { variables: { max: 5 } });
    expect(retried.status, JSON.stringify(retried.body)).toBeLessThan(300);
    const record = await fetchOne(t.api, 'w', 'cm_notedbad-record');
    expect(record.variables).toEqual({ order: 'n-2', max: 5, fits: true });
    await complete(t.api, record, 'w');
    await waitForStatus(t.api, bad, 'completed');
    // The boundary waits for nothing more once its host has ended: a later message finds no waiting event.
    const late = await note('cm_notedbad', 'n-2', { text: 'late' });
    expect(late.body.status).not.toBe('matched');
  });

  it('given an output mapping on a non-interrupting timer cycle boundary, then it runs at every firing', async () => {
    await deployClean(`<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="D_cm_cycle" targetNamespace="https://baton.dev/test">
  <bpmn:process id="cm_cycle" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:serviceTask id="work"><bpmn:extensionElements><zeebe:taskDefinition type="cm_cycle-work" /></bpmn:extensionElements></bpmn:serviceTask>
    <bpmn:boundaryEvent id="tick" attachedToRef="work" cancelActivity="false">
      <bpmn:extensionElements><zeebe:ioMapping><zeebe:output source="=reminders + 1" target="reminders" /></zeebe:ioMapping></bpmn:extensionElements>
      <bpmn:timerEventDefinition><bpmn:timeCycle>R2/PT0.2S</bpmn:timeCycle></bpmn:timerEventDefinition>
    </bpmn:boundaryEvent>
    <bpmn:endEvent id="end" />
    <bpmn:endEvent id="ticked" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="work" />
    <bpmn:sequenceFlow id="f2" sourceRef="work" targetRef="end" />
    <bpmn:sequenceFlow id="f3" sourceRef="tick" targetRef="ticked" />
  </bpmn:process>
</bpmn:definitions>`);
    const id = await start(t.api, 'cm_cycle', { variables: { reminders: 0 } });
    await waitFor(
      async () => {
        const history = (await t.api.get(`/api/instances/${id}/history`)).body.items as { kind: string; stepId?: string }[];
        return history.filter((e) => e.kind === 'step:completed' && e.stepId === 'tick').length === 2 || undefined;
      },
      10_000,
      'two firings',
    );
    expect((await instanceOf(t.api, id)).variables).toEqual({ reminders: 2 });
    await complete(t.api, await fetchOne(t.api, 'w', 'cm_cycle-work'), 'w');
    await waitForStatus(t.api, id, 'completed');
  });
  it('given output mappings on an error boundary, then only their targets of the variables a worker reports with the error are written; one that fails holds them in its incident with the task ended, and the retry moves on', async () => {
    /** start -> charge (service task) -> end; charge's error boundary "declined" (CARD_DECLINED) -> notify -> notified */
    const errorXml = (id: string, output: string) => `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="D_${id}" targetNamespace="https://baton.dev/test">
  <bpmn:error id="E" errorCode="CARD_DECLINED" />
  <bpmn:process id="${id}" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:serviceTask id="charge"><bpmn:extensionElements><zeebe:taskDefinition type="${id}-charge" /></bpmn:extensionElements></bpmn:serviceTask>
    <bpmn:boundaryEvent id="declined" attachedToRef="charge">
      <bpmn:extensionElements><zeebe:ioMapping>${output}</zeebe:ioMapping></bpmn:extensionElements>
      <bpmn:errorEventDefinition errorRef="E" />
    </bpmn:boundaryEvent>
    <bpmn:serviceTask id="notify"><bpmn:extensionElements><zeebe:taskDefinition type="${id}-notify" /></bpmn:extensionElements></bpmn:serviceTask>
    <bpmn:endEvent id="end" />
    <bpmn:endEvent id="notified" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="charge" />
    <bpmn:sequenceFlow id="f2" sourceRef="charge" targetRef="end" />
    <bpmn:sequenceFlow id="f3" sourceRef="declined" targetRef="notify" />
    <bpmn:sequenceFlow id="f4" sourceRef="notify" targetRef="notified" />
  </bpmn:process>
</bpmn:definitions>`;
    const decline = (task: { id: string; lockToken: string }, variables: Record<string, unknown>) =>
      t.api.post(`/api/external-tasks/${task.id}/bpmn-error`, {
        workerId: 'w',
        lockToken: task.lockToken,
        errorCode: 'CARD_DECLINED',
        variables,
      });

    await deployClean(errorXml('cm_err', '<zeebe:output source="=reason" target="declineReason" />'));
    const id = await start(t.api, 'cm_err', { variables: { order: 'e-1' } });
    const charge = await fetchOne(t.api, 'w', 'cm_err-charge');
    expect((await decline(charge, { reason: 'no funds', trace: 'x' })).status).toBe(204);
    const notify = await fetchOne(t.api, 'w', 'cm_err-notify');
    expect(notify.variables).toEqual({ order: 'e-1', declineReason: 'no funds' });
    await complete(t.api, notify, 'w');
    await waitForStatus(t.api, id, 'completed');

    await deployClean(errorXml('cm_errbad', '<zeebe:output source="=2 in (1..max)" target="fits" />'));
    const bad = await start(t.api, 'cm_errbad', { variables: { max: 'x' } });
    const chargeBad = await fetchOne(t.api, 'w', 'cm_errbad-charge');
    expect((await decline(chargeBad, { reason: 'no funds' })).status).toBe(204);
    const incident = await waitForIncident(t.api, bad);
    expect(incident).toMatchObject({ stepId: 'declined', kind: 'io_mapping' });
    // The error ended the task: a late complete is refused, and nothing of the error was written.
    expect((await complete(t.api, chargeBad, 'w')).status).toBe(409);
    const stuck = await instanceOf(t.api, bad);
    expect((stuck.steps as any[]).find((s) => s.stepId === 'charge')?.status).toBe('canceled');
    expect(stuck.variables).toEqual({ max: 'x' });
    const retried = await t.api.post(`/api/incidents/${incident.id}/retry`, { variables: { max: 5 } });
    expect(retried.status, JSON.stringify(retried.body)).toBeLessThan(300);
    const notifyBad = await fetchOne(t.api, 'w', 'cm_errbad-notify');
    expect(notifyBad.variables).toEqual({ max: 5, fits: true });
    await complete(t.api, notifyBad, 'w');
    const done = await waitForStatus(t.api, bad, 'completed');
    expect((done.steps as any[]).find((s) => s.stepId === 'end')?.status).not.toBe('completed');
  });
  it('given input mappings on a message catch event, then its correlation key and outputs read them, they never reach the process, and one that fails holds the event in an io_mapping incident until the retry', async () => {
    await deployClean(
      zeebe(
        'cm_in',
        '<zeebe:input source="=order.id" target="key" /><zeebe:input source="=10" target="bonus" /><zeebe:output source="=payment.amount + bonus" target="total" />',
      ).replace('correlationKey="=order.id"', 'correlationKey="=key"'),
    );
    const id = await start(t.api, 'cm_in', { variables: { order: { id: 'i-1' } } });
    await waitForActiveStep(t.api, id, 'paid');
    const sent = await t.api.post('/api/messages', {
      name: 'cm_in-paid',
      correlationKey: 'i-1',
      variables: { payment: { amount: 5 } },
    });
    expect(sent.body).toMatchObject({ status: 'matched', instanceId: id });
    const ship = await fetchOne(t.api, 'w', 'cm_in-ship');
    expect(ship.variables).toEqual({ order: { id: 'i-1' }, total: 15 });
    await complete(t.api, ship, 'w');
    expect((await waitForStatus(t.api, id, 'completed')).variables).toEqual({ order: { id: 'i-1' }, total: 15 });

    await deployClean(zeebe('cm_inbad', '<zeebe:input source="=2 in (1..max)" target="fits" />'));
    const bad = await start(t.api, 'cm_inbad', { variables: { order: { id: 'i-2' }, max: 'x' } });
    const incident = await waitForIncident(t.api, bad);
    expect(incident).toMatchObject({ stepId: 'paid', kind: 'io_mapping' });
    expect(incident.message).toMatch(/^Input mapping of event paid to fits/);
    // Not waiting: the message is kept in the inbox, and taken once the retry starts the wait.
    const early = await t.api.post('/api/messages', { name: 'cm_inbad-paid', correlationKey: 'i-2', variables: { paid: true } });
    expect(early.body.status).toBe('buffered');
    const retried = await t.api.post(`/api/incidents/${incident.id}/retry`, { variables: { max: 5 } });
    expect(retried.status, JSON.stringify(retried.body)).toBeLessThan(300);
    const shipBad = await fetchOne(t.api, 'w', 'cm_inbad-ship');
    expect(shipBad.variables).toEqual({ order: { id: 'i-2' }, max: 5, paid: true });
    await complete(t.api, shipBad, 'w');
    await waitForStatus(t.api, bad, 'completed');
  });
  it("given output mappings on a non-interrupting escalation boundary, then they run when it catches; one that fails holds the catch in its incident while the throw's path goes on, and the retry runs its path", async () => {
    /** start -> sub (raise: escalation LATE -> inner) -> after -> end; sub's non-interrupting boundary "late" (LATE) -> notify -> notified */
    const escalationXml = (id: string, output: string) => `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="D_${id}" targetNamespace="https://baton.dev/test">
  <bpmn:escalation id="L" escalationCode="LATE" />
  <bpmn:process id="${id}" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:subProcess id="sub">
      <bpmn:startEvent id="s_start" />
      <bpmn:intermediateThrowEvent id="raise"><bpmn:escalationEventDefinition escalationRef="L" /></bpmn:intermediateThrowEvent>
      <bpmn:serviceTask id="inner"><bpmn:extensionElements><zeebe:taskDefinition type="${id}-inner" /></bpmn:extensionElements></bpmn:serviceTask>
      <bpmn:endEvent id="s_end" />
      <bpmn:sequenceFlow id="s1" sourceRef="s_start" targetRef="raise" />
      <bpmn:sequenceFlow id="s2" sourceRef="raise" targetRef="inner" />
      <bpmn:sequenceFlow id="s3" sourceRef="inner" targetRef="s_end" />
    </bpmn:subProcess>
    <bpmn:boundaryEvent id="late" attachedToRef="sub" cancelActivity="false">
      <bpmn:extensionElements><zeebe:ioMapping>${output}</zeebe:ioMapping></bpmn:extensionElements>
      <bpmn:escalationEventDefinition escalationRef="L" />
    </bpmn:boundaryEvent>
    <bpmn:serviceTask id="notify"><bpmn:extensionElements><zeebe:taskDefinition type="${id}-notify" /></bpmn:extensionElements></bpmn:serviceTask>
    <bpmn:serviceTask id="after"><bpmn:extensionElements><zeebe:taskDefinition type="${id}-after" /></bpmn:extensionElements></bpmn:serviceTask>
    <bpmn:endEvent id="end" />
    <bpmn:endEvent id="notified" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="sub" />
    <bpmn:sequenceFlow id="f2" sourceRef="sub" targetRef="after" />
    <bpmn:sequenceFlow id="f3" sourceRef="after" targetRef="end" />
    <bpmn:sequenceFlow id="f4" sourceRef="late" targetRef="notify" />
    <bpmn:sequenceFlow id="f5" sourceRef="notify" targetRef="notified" />
  </bpmn:process>
</bpmn:definitions>`;

    await deployClean(escalationXml('cm_esc', '<zeebe:output source="=&quot;late: &quot; + reason" target="note" />'));
    const id = await start(t.api, 'cm_esc', { variables: { reason: 'slow' } });
    const notify = await fetchOne(t.api, 'w', 'cm_esc-notify');
    expect(notify.variables).toEqual({ reason: 'slow', note: 'late: slow' });
    await complete(t.api, notify, 'w');
    await complete(t.api, await fetchOne(t.api, 'w', 'cm_esc-inner'), 'w');
    await complete(t.api, await fetchOne(t.api, 'w', 'cm_esc-after'), 'w');
    await waitForStatus(t.api, id, 'completed');

    await deployClean(escalationXml('cm_escbad', '<zeebe:output source="=2 in (1..max)" target="fits" />'));
    const bad = await start(t.api, 'cm_escbad', { variables: { max: 'x' } });
    const incident = await waitForIncident(t.api, bad);
    expect(incident).toMatchObject({ stepId: 'late', kind: 'io_mapping' });
    // The throw's path went on; the subprocess and the flow after it end while the catch waits in its incident.
    await complete(t.api, await fetchOne(t.api, 'w', 'cm_escbad-inner'), 'w');
    await complete(t.api, await fetchOne(t.api, 'w', 'cm_escbad-after'), 'w');
    await waitFor(
      async () =>
        ((await instanceOf(t.api, bad)).steps as any[]).some((s) => s.stepId === 'end' && s.status === 'completed') || undefined,
      10_000,
      'the main flow ended',
    );
    expect((await instanceOf(t.api, bad)).status).toBe('incident');
    expect((await t.api.post(`/api/incidents/${incident.id}/retry`, { variables: { max: 5 } })).status).toBeLessThan(300);
    const notifyBad = await fetchOne(t.api, 'w', 'cm_escbad-notify');
    expect(notifyBad.variables).toEqual({ max: 5, fits: true });
    await complete(t.api, notifyBad, 'w');
    await waitForStatus(t.api, bad, 'completed');
  });
});
