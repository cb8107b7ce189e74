// Event subprocesses against a real PostgreSQL, through the HTTP API: armed while their scope
// runs, their trigger (timer, message, error) interrupts that scope in one transition (its open
// task's late complete answers 409) and runs their body; when the scope ends first, they stop
// waiting; a non-interrupting one runs its body once per firing, beside the main flow and beside
// its other firings, each in a child instance. A start
// event's output mappings map its payload; a start whose incident is retried waits again.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  complete,
  deploy,
  deployMappingsRun,
  fetchOne,
  fetchTasks,
  instanceOf,
  start,
  waitForIncident,
  waitForStatus,
} from '../../support/flows.ts';
import { startTestServer, waitFor, type TestServer } from '../../support/server.ts';

let t: TestServer;

const NS = `xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:camunda="http://camunda.org/schema/1.0/bpmn"`;
const task = (id: string, topic: string) => `<bpmn:serviceTask id="${id}" camunda:type="external" camunda:topic="${topic}" />`;
const flow = (id: string, from: string, to: string) => `<bpmn:sequenceFlow id="${id}" sourceRef="${from}" targetRef="${to}" />`;

/** An event subprocess `id`: its start with `trigger`, then a task on `${topic}`, then its end. */
function eventSub(id: string, trigger: string, topic: string, interrupting = true): string {
  return `<bpmn:subProcess id="${id}" triggeredByEvent="true">
    <bpmn:startEvent id="${id}_start"${interrupting ? '' : ' isInterrupting="false"'}>${trigger}</bpmn:startEvent>
    ${task(`${id}_task`, topic)}<bpmn:endEvent id="${id}_end" />
    ${flow(`${id}_f1`, `${id}_start`, `${id}_task`)}${flow(`${id}_f2`, `${id}_task`, `${id}_end`)}
  </bpmn:subProcess>`;
}

const timer = (duration: string) =>
  `<bpmn:timerEventDefinition><bpmn:timeDuration>${duration}</bpmn:timeDuration></bpmn:timerEventDefinition>`;

/** start -> work -> end, with `extra` (event subprocesses) at the process level */
function process(id: string, extra: string, roots = ''): string {
  return `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions ${NS} id="D_${id}" targetNamespace="https://baton.dev/test">${roots}
  <bpmn:process id="${id}" isExecutable="true">
    <bpmn:startEvent id="start" />${task('work', `${id}-work`)}<bpmn:endEvent id="end" />
    ${flow('f1', 'start', 'work')}${flow('f2', 'work', 'end')}
    ${extra}
  </bpmn:process>
</bpmn:definitions>`;
}

const statusOf = (i: any, stepId: string) => (i.steps as any[]).find((s) => s.stepId === stepId)?.status;

beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t?.close();
});

describe('event subprocesses', () => {
  it("given an interrupting timer event subprocess, when it fires, then the main flow's open task is canceled (its late complete answers 409) and the body runs to the end", async () => {
    await deploy(t.api, process('esp_timer', eventSub('late', timer('PT0.3S'), 'esp_timer-late')));
    const id = await start(t.api, 'esp_timer');
    const work = await fetchOne(t.api, 'w', 'esp_timer-work');
    const late = await fetchOne(t.api, 'w', 'esp_timer-late');
    expect(late.instanceId).toBe(id);
    expect((await complete(t.api, work, 'w')).status).toBe(409);
    expect((await complete(t.api, late, 'w')).status).toBe(204);
    const done = await waitForStatus(t.api, id, 'completed');
    expect([statusOf(done, 'work'), statusOf(done, 'late'), statusOf(done, 'end')]).toEqual(['canceled', 'completed', undefined]);
  });

  it('given the main flow ends before the timer, then the event subprocess stops waiting and the instance completes', async () => {
    await deploy(t.api, process('esp_quiet', eventSub('late', timer('PT1H'), 'esp_quiet-late')));
    const id = await start(t.api, 'esp_quiet');
    expect((await complete(t.api, await fetchOne(t.api, 'w', 'esp_quiet-work'), 'w')).status).toBe(204);
    const done = await waitForStatus(t.api, id, 'completed');
    expect(statusOf(done, 'late_start')).toBe('skipped');
    const { rows } = await t.db.pool.query(`select count(*)::int as n from timers where instance_id = $1 and state = 'waiting'`, [
      id,
    ]);
    expect(rows[0].n).toBe(0);
  });

  it('given a message event subprocess inside an embedded subprocess, then the message interrupts only that subprocess, and the flow goes on after it', async () => {
    const body = `<bpmn:startEvent id="start" />
      <bpmn:subProcess id="sub"><bpmn:startEvent id="s_in" />${task('inner', 'esp_sub-inner')}<bpmn:endEvent id="e_in" />
        ${flow('i1', 's_in', 'inner')}${flow('i2', 'inner', 'e_in')}
        ${eventSub('cancelled', '<bpmn:messageEventDefinition messageRef="M" />', 'esp_sub-undo')}
      </bpmn:subProcess>
      ${task('after', 'esp_sub-after')}<bpmn:endEvent id="end" />
      ${flow('f1', 'start', 'sub')}${flow('f2', 'sub', 'after')}${flow('f3', 'after', 'end')}`;
    await deploy(
      t.api,
      `<?xml version="1.0" encoding="UTF-8"?><bpmn:definitions ${NS} id="D_esp_sub" targetNamespace="https://baton.dev/test">
      <bpmn:message id="M" name="order-cancelled" /><bpmn:process id="esp_sub" isExecutable="true">${body}</bpmn:process></bpmn:definitions>`,
    );
    const id = await start(t.api, 'esp_sub', { businessKey: 'order-5' });
    const inner = await fetchOne(t.api, 'w', 'esp_sub-inner');
    const sent = await t.api.post('/api/messages', { name: 'order-cancelled', correlationKey: 'order-5' });
    expect(sent.status, JSON.stringify(sent.body)).toBeLessThan(300);
    const undo = await fetchOne(t.api, 'w', 'esp_sub-undo');
    expect((await complete(t.api, inner, 'w')).status).toBe(409);
    expect((await complete(t.api, undo, 'w')).status).toBe(204);
    const after = await fetchOne(t.api, 'w', 'esp_sub-after');
    expect(after.instanceId).toBe(id);
    expect((await complete(t.api, after, 'w')).status).toBe(204);
    const done = await waitForStatus(t.api, id, 'completed');
    expect([statusOf(done, 'inner'), statusOf(done, 'cancelled'), statusOf(done, 'sub')]).toEqual([
      'canceled',
      'completed',
      'completed',
    ]);
  });

  it("given an error event subprocess, then a worker's BPMN error is caught by it and the code reaches its variable", async () => {
    const error = '<bpmn:error id="E" errorCode="OUT_OF_STOCK" />';
    const trigger = '<bpmn:errorEventDefinition errorRef="E" camunda:errorCodeVariable="code" />';
    await deploy(t.api, process('esp_error', eventSub('oops', trigger, 'esp_error-oops'), error));
    const id = await start(t.api, 'esp_error');
    const work = await fetchOne(t.api, 'w', 'esp_error-work');
    const thrown = await t.api.post(`/api/external-tasks/${work.id}/bpmn-error`, {
      workerId: 'w',
      lockToken: work.lockToken,
      errorCode: 'OUT_OF_STOCK',
    });
    expect(thrown.status).toBeLessThan(300);
    const oops = await fetchOne(t.api, 'w', 'esp_error-oops');
    expect(oops.variables.code).toBe('OUT_OF_STOCK');
    expect((await complete(t.api, oops, 'w')).status).toBe(204);
    await waitForStatus(t.api, id, 'completed');
  });

  it('given a non-interrupting message event subprocess, when the message comes twice while the main flow waits, then its body runs twice at once, each firing in a child instance of its own, and the instance ends after both', async () => {
    const message = '<bpmn:messageEventDefinition messageRef="Ping" />';
    await deploy(
      t.api,
      process('esp_nonint', eventSub('watch', message, 'esp_nonint-watch', false), '<bpmn:message id="Ping" name="esp-ping" />'),
    );
    const id = await start(t.api, 'esp_nonint', { businessKey: 'esp-1', variables: { seen: 0 } });
    const work = await fetchOne(t.api, 'w', 'esp_nonint-work');
    for (let i = 0; i < 2; i++) {
      const res = await t.api.post('/api/messages', { name: 'esp-ping', correlationKey: 'esp-1', variables: { note: i + 1 } });
      expect(res.body, `message ${i + 1}`).toMatchObject({ status: 'matched', instanceId: id });
    }
    // Both firings run side by side: two tasks at once, in two child instances of the body.
    const both = await waitFor(
      async () => {
        const got = await fetchTasks(t.api, 'w', ['esp_nonint-watch']);
        return got.length === 2 ? got : undefined;
      },
      10_000,
      'two firings at once',
    );
    expect(new Set(both.map((x) => x.instanceId)).size).toBe(2);
    expect(both.every((x) => x.instanceId !== id)).toBe(true);
    // Their tasks carry the process's business key, as the process's own tasks do.
    expect(both.map((x) => x.businessKey)).toEqual(['esp-1', 'esp-1']);
    const running = await instanceOf(t.api, id);
    expect(running.calledInstances.map((c: any) => [c.stepId, c.definitionKey, c.loopCounter]).sort()).toEqual([
      ['watch', 'esp_nonint:watch', 1],
      ['watch', 'esp_nonint:watch', 2],
    ]);
    // The main flow goes on beside them; its end does not end the instance while a body runs.
    expect((await complete(t.api, work, 'w')).status).toBe(204);
    // The second firing ends first; what each body writes reaches the process.
    const [firstFiring, secondFiring] = [...both].sort((a, b) => Number(a.variables.note) - Number(b.variables.note));
    expect((await complete(t.api, secondFiring!, 'w', { last: 'second' })).status).toBe(204);
    await waitFor(
      async () => ((await instanceOf(t.api, id)).variables.last === 'second' ? true : undefined),
      10_000,
      'the second firing to return',
    );
    expect((await instanceOf(t.api, id)).status).toBe('running');
    expect((await complete(t.api, firstFiring!, 'w', { last: 'first', seen: 1 })).status).toBe(204);
    const done = await waitForStatus(t.api, id, 'completed');
    expect(done.variables).toMatchObject({ last: 'first', seen: 1 });
    expect([statusOf(done, 'work'), statusOf(done, 'end'), statusOf(done, 'watch'), statusOf(done, 'watch_start')]).toEqual([
      'completed',
      'completed',
      'completed',
      'skipped',
    ]);
    const history = (await t.api.get(`/api/instances/${id}/history`)).body.items as {
      kind: string;
      stepId?: string;
      data: any;
    }[];
    expect(history.filter((e) => e.kind === 'step:activated' && e.stepId === 'watch').map((e) => e.data.firing)).toEqual([1, 2]);
    expect(history.filter((e) => e.kind === 'eventSubProcess:firing_completed').map((e) => e.data.firing)).toEqual([2, 1]);
  });

  it('given a non-interrupting event subprocess whose body runs, when an interrupting one fires, then both the main flow and the running body are canceled', async () => {
    const message = '<bpmn:messageEventDefinition messageRef="Ping2" />';
    await deploy(
      t.api,
      process(
        'esp_both',
        eventSub('watch', message, 'esp_both-watch', false) + eventSub('late', timer('PT1S'), 'esp_both-late'),
        '<bpmn:message id="Ping2" name="esp-ping2" />',
      ),
    );
    const id = await start(t.api, 'esp_both', { businessKey: 'esp-2' });
    const work = await fetchOne(t.api, 'w', 'esp_both-work');
    expect((await t.api.post('/api/messages', { name: 'esp-ping2', correlationKey: 'esp-2' })).body.status).toBe('matched');
    const watching = await fetchOne(t.api, 'w', 'esp_both-watch');
    const late = await fetchOne(t.api, 'w', 'esp_both-late');
    expect((await complete(t.api, work, 'w')).status).toBe(409);
    expect((await complete(t.api, watching, 'w')).status).toBe(409);
    expect((await complete(t.api, late, 'w')).status).toBe(204);
    const done = await waitForStatus(t.api, id, 'completed');
    expect([statusOf(done, 'watch'), statusOf(done, 'watch_start')]).toEqual(['canceled', 'canceled']);
    // The firing's body ran in a child instance: canceled with it.
    expect(done.calledInstances.map((c: any) => [c.stepId, c.status])).toEqual([['watch', 'canceled']]);
  });

  it('given an event subprocess start whose correlation key cannot be computed, then it holds a condition_error incident while the main flow runs, and the retry with the variable set makes it wait without firing it', async () => {
    await deploy(
      t.api,
      `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="D_esp_badkey" targetNamespace="https://baton.dev/test">
  <bpmn:message id="M" name="esp_badkey-stop"><bpmn:extensionElements><zeebe:subscription correlationKey="=order.id" /></bpmn:extensionElements></bpmn:message>
  <bpmn:process id="esp_badkey" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:serviceTask id="work"><bpmn:extensionElements><zeebe:taskDefinition type="esp_badkey-work" /></bpmn:extensionElements></bpmn:serviceTask>
    <bpmn:endEvent id="end" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="work" />
    <bpmn:sequenceFlow id="f2" sourceRef="work" targetRef="end" />
    <bpmn:subProcess id="stop" triggeredByEvent="true">
      <bpmn:startEvent id="stop_start"><bpmn:messageEventDefinition messageRef="M" /></bpmn:startEvent>
      <bpmn:serviceTask id="stop_task"><bpmn:extensionElements><zeebe:taskDefinition type="esp_badkey-stop" /></bpmn:extensionElements></bpmn:serviceTask>
      <bpmn:endEvent id="stop_end" />
      <bpmn:sequenceFlow id="s1" sourceRef="stop_start" targetRef="stop_task" />
      <bpmn:sequenceFlow id="s2" sourceRef="stop_task" targetRef="stop_end" />
    </bpmn:subProcess>
  </bpmn:process>
</bpmn:definitions>`,
    );
    const id = await start(t.api, 'esp_badkey', { variables: { order: 'no id here' } });
    const incident = await waitForIncident(t.api, id);
    expect(incident).toMatchObject({ stepId: 'stop_start', kind: 'condition_error' });
    const retried = await t.api.post(`/api/incidents/${incident.id}/retry`, { variables: { order: { id: 'k-1' } } });
    expect(retried.status, JSON.stringify(retried.body)).toBeLessThan(300);
    const waiting = await instanceOf(t.api, id);
    expect(waiting.status).toBe('running');
    expect([statusOf(waiting, 'work'), statusOf(waiting, 'stop_start'), statusOf(waiting, 'stop')]).toEqual([
      'active',
      'active',
      undefined,
    ]);
    expect(await fetchTasks(t.api, 'w', ['esp_badkey-stop'])).toEqual([]);
    // It waits for its message under the key now computed.
    const sent = await t.api.post('/api/messages', { name: 'esp_badkey-stop', correlationKey: 'k-1' });
    expect(sent.body).toMatchObject({ status: 'matched', instanceId: id });
    const stopTask = await fetchOne(t.api, 'w', 'esp_badkey-stop');
    expect(stopTask.instanceId).toBe(id);
    expect((await complete(t.api, stopTask, 'w')).status).toBe(204);
    const done = await waitForStatus(t.api, id, 'completed');
    expect([statusOf(done, 'work'), statusOf(done, 'stop')]).toEqual(['canceled', 'completed']);
  });

  it('given an operator replay of an instance whose event subprocess waits, then the replayed generation waits for it again', async () => {
    await deploy(
      t.api,
      process('esp_replay', eventSub('late', timer('PT1H'), 'esp_replay-late')).replace(
        'camunda:topic="esp_replay-work"',
        'camunda:topic="esp_replay-work" baton:retries="0" xmlns:baton="https://baton.dev/schema/bpmn/1.0"',
      ),
    );
    const id = await start(t.api, 'esp_replay');
    const work = await fetchOne(t.api, 'w', 'esp_replay-work');
    await t.api.post(`/api/external-tasks/${work.id}/failure`, {
      workerId: 'w',
      lockToken: work.lockToken,
      errorMessage: 'down',
    });
    await waitForStatus(t.api, id, 'incident');
    expect((await t.api.post(`/api/instances/${id}/replay`, {})).status).toBe(200);
    const replayed = await waitForStatus(t.api, id, 'running');
    expect(statusOf(replayed, 'late_start')).toBe('active');
    const { rows } = await t.db.pool.query(`select generation from timers where instance_id = $1 and state = 'waiting'`, [id]);
    expect(rows).toEqual([{ generation: 2 }]);
  });

  it('given input and output mappings on an interrupting event subprocess (Camunda 8), then its body reads the inputs, they never reach the process, the outputs do; inputs that fail hold it in an incident whose retry runs the body', async () => {
    const xml = (id: string) => `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="D_${id}" targetNamespace="https://baton.dev/test">
  <bpmn:message id="M" name="${id}-cancel"><bpmn:extensionElements><zeebe:subscription correlationKey="=orderId" /></bpmn:extensionElements></bpmn:message>
  <bpmn:process id="${id}" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:serviceTask id="work"><bpmn:extensionElements><zeebe:taskDefinition type="${id}-work" /></bpmn:extensionElements></bpmn:serviceTask>
    <bpmn:endEvent id="end" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="work" />
    <bpmn:sequenceFlow id="f2" sourceRef="work" targetRef="end" />
    <bpmn:subProcess id="canceling" triggeredByEvent="true">
      <bpmn:extensionElements><zeebe:ioMapping>
        <zeebe:input source="=upper case(reason)" target="why" />
        <zeebe:input source="=2 in (1..level)" target="serious" />
        <zeebe:output source="=why + &quot;!&quot;" target="canceledBecause" />
      </zeebe:ioMapping></bpmn:extensionElements>
      <bpmn:startEvent id="c_start"><bpmn:messageEventDefinition messageRef="M" /></bpmn:startEvent>
      <bpmn:serviceTask id="refund"><bpmn:extensionElements><zeebe:taskDefinition type="${id}-refund" /></bpmn:extensionElements></bpmn:serviceTask>
      <bpmn:endEvent id="c_end" />
      <bpmn:sequenceFlow id="c1" sourceRef="c_start" targetRef="refund" />
      <bpmn:sequenceFlow id="c2" sourceRef="refund" targetRef="c_end" />
    </bpmn:subProcess>
  </bpmn:process>
</bpmn:definitions>`;
    await deployMappingsRun(t.api, xml('esp_io'));
    const id = await start(t.api, 'esp_io', { variables: { orderId: 'e-1' } });
    const work = await fetchOne(t.api, 'w', 'esp_io-work');
    const sent = await t.api.post('/api/messages', {
      name: 'esp_io-cancel',
      correlationKey: 'e-1',
      variables: { reason: 'late', level: 5 },
    });
    expect(sent.body).toMatchObject({ status: 'matched', instanceId: id });
    const refund = await fetchOne(t.api, 'w', 'esp_io-refund');
    expect(refund.variables).toMatchObject({ why: 'LATE', serious: true, reason: 'late' });
    expect((await instanceOf(t.api, id)).variables).not.toHaveProperty('why');
    expect((await complete(t.api, work, 'w')).status).toBe(409);
    expect((await complete(t.api, refund, 'w')).status).toBe(204);
    const done = await waitForStatus(t.api, id, 'completed');
    expect(done.variables).toEqual({ orderId: 'e-1', reason: 'late', level: 5, canceledBecause: 'LATE!' });

    // A level that is no number: its range fails, so nothing of the body runs until the retry.
    const bad = await start(t.api, 'esp_io', { variables: { orderId: 'e-2' } });
    const badWork = await fetchOne(t.api, 'w', 'esp_io-work');
    await t.api.post('/api/messages', {
      name: 'esp_io-cancel',
      correlationKey: 'e-2',
      variables: { reason: 'lost', level: 'x' },
    });
    const incident = await waitForIncident(t.api, bad);
    expect(incident).toMatchObject({ stepId: 'canceling', kind: 'io_mapping' });
    expect(await fetchTasks(t.api, 'w', ['esp_io-refund'])).toEqual([]);
    expect((await complete(t.api, badWork, 'w')).status).toBe(409);
    const retried = await t.api.post(`/api/incidents/${incident.id}/retry`, { variables: { level: 1 } });
    expect(retried.status, JSON.stringify(retried.body)).toBeLessThan(300);
    const badRefund = await fetchOne(t.api, 'w', 'esp_io-refund');
    expect(badRefund.variables).toMatchObject({ why: 'LOST', serious: false });
    expect((await complete(t.api, badRefund, 'w')).status).toBe(204);
    const ended = await waitForStatus(t.api, bad, 'completed');
    expect(ended.variables).toMatchObject({ canceledBecause: 'LOST!' });
  });

  it('given input and output mappings on a non-interrupting event subprocess (Camunda 8), then each firing evaluates its inputs as it starts, its body reads them, and its outputs reach the process as it ends; inputs that fail hold it in an incident whose retry runs the body', async () => {
    const xml = `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="D_esp_nio" targetNamespace="https://baton.dev/test">
  <bpmn:message id="M" name="esp_nio-note"><bpmn:extensionElements><zeebe:subscription correlationKey="=orderId" /></bpmn:extensionElements></bpmn:message>
  <bpmn:process id="esp_nio" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:serviceTask id="work"><bpmn:extensionElements><zeebe:taskDefinition type="esp_nio-work" /></bpmn:extensionElements></bpmn:serviceTask>
    <bpmn:endEvent id="end" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="work" />
    <bpmn:sequenceFlow id="f2" sourceRef="work" targetRef="end" />
    <bpmn:subProcess id="watching" triggeredByEvent="true">
      <bpmn:extensionElements><zeebe:ioMapping>
        <zeebe:input source="=upper case(note)" target="loud" />
        <zeebe:input source="=2 in (1..level)" target="serious" />
        <zeebe:output source="=loud" target="lastNote" />
      </zeebe:ioMapping></bpmn:extensionElements>
      <bpmn:startEvent id="w_start" isInterrupting="false"><bpmn:messageEventDefinition messageRef="M" /></bpmn:startEvent>
      <bpmn:serviceTask id="tell"><bpmn:extensionElements><zeebe:taskDefinition type="esp_nio-tell" /></bpmn:extensionElements></bpmn:serviceTask>
      <bpmn:endEvent id="w_end" />
      <bpmn:sequenceFlow id="w1" sourceRef="w_start" targetRef="tell" />
      <bpmn:sequenceFlow id="w2" sourceRef="tell" targetRef="w_end" />
    </bpmn:subProcess>
  </bpmn:process>
</bpmn:definitions>`;
    await deployMappingsRun(t.api, xml);
    const id = await start(t.api, 'esp_nio', { variables: { orderId: 'n-1' } });
    const work = await fetchOne(t.api, 'w', 'esp_nio-work');
    const send = (key: string, variables: Record<string, unknown>) =>
      t.api.post('/api/messages', { name: 'esp_nio-note', correlationKey: key, variables });
    expect((await send('n-1', { note: 'a', level: 5 })).body).toMatchObject({ status: 'matched', instanceId: id });
    const first = await fetchOne(t.api, 'w', 'esp_nio-tell');
    expect(first.variables).toMatchObject({ loud: 'A', serious: true });
    // The second firing runs beside the first, with its own inputs.
    expect((await send('n-1', { note: 'b', level: 5 })).body).toMatchObject({ status: 'matched', instanceId: id });
    const second = await fetchOne(t.api, 'w', 'esp_nio-tell');
    expect(second.variables).toMatchObject({ loud: 'B', serious: true });
    expect((await instanceOf(t.api, id)).variables).not.toHaveProperty('loud');
    expect((await complete(t.api, first, 'w')).status).toBe(204);
    await waitFor(
      async () => ((await instanceOf(t.api, id)).variables.lastNote === 'A' ? true : undefined),
      10_000,
      "the first firing's outputs",
    );
    expect((await complete(t.api, second, 'w')).status).toBe(204);
    expect((await complete(t.api, work, 'w')).status).toBe(204);
    const done = await waitForStatus(t.api, id, 'completed');
    expect(done.variables).toEqual({ orderId: 'n-1', note: 'b', level: 5, lastNote: 'B' });

    const bad = await start(t.api, 'esp_nio', { variables: { orderId: 'n-2' } });
    const badWork = await fetchOne(t.api, 'w', 'esp_nio-work');
    await send('n-2', { note: 'c', level: 'x' });
    const incident = await waitForIncident(t.api, bad);
    expect(incident).toMatchObject({ stepId: 'watching', kind: 'io_mapping' });
    expect(incident.message).toMatch(/^Input mapping of subprocess watching to serious/);
    expect(await fetchTasks(t.api, 'w', ['esp_nio-tell'])).toEqual([]);
    // It does not interrupt: the main flow goes on, and the instance waits for the firing.
    expect((await complete(t.api, badWork, 'w')).status).toBe(204);
    expect((await instanceOf(t.api, bad)).status).toBe('incident');
    const retried = await t.api.post(`/api/incidents/${incident.id}/retry`, { variables: { level: 1 } });
    expect(retried.status, JSON.stringify(retried.body)).toBeLessThan(300);
    const tell = await fetchOne(t.api, 'w', 'esp_nio-tell');
    expect(tell.variables).toMatchObject({ loud: 'C', serious: false });
    expect((await complete(t.api, tell, 'w')).status).toBe(204);
    const ended = await waitForStatus(t.api, bad, 'completed');
    expect(ended.variables).toEqual({ orderId: 'n-2', note: 'c', level: 1, lastNote: 'C' });
  });
  it('given output mappings on event subprocess starts (Camunda 8), then only their targets of the message reach the process; one that fails has interrupted the scope all the same (or, not interrupting, lets the main flow go on) and its retry runs the body', async () => {
    /** start -> work -> end; an event subprocess on message `${id}-note` (interrupting or not) whose start maps the payload -> tell -> its end */
    const xml = (id: string, output: string, interrupting: boolean) => `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="D_${id}" targetNamespace="https://baton.dev/test">
  <bpmn:message id="M" name="${id}-note"><bpmn:extensionElements><zeebe:subscription correlationKey="=orderId" /></bpmn:extensionElements></bpmn:message>
  <bpmn:process id="${id}" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:serviceTask id="work"><bpmn:extensionElements><zeebe:taskDefinition type="${id}-work" /></bpmn:extensionElements></bpmn:serviceTask>
    <bpmn:endEvent id="end" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="work" />
    <bpmn:sequenceFlow id="f2" sourceRef="work" targetRef="end" />
    <bpmn:subProcess id="noting" triggeredByEvent="true">
      <bpmn:startEvent id="n_start"${interrupting ? '' : ' isInterrupting="false"'}>
        <bpmn:extensionElements><zeebe:ioMapping>${output}</zeebe:ioMapping></bpmn:extensionElements>
        <bpmn:messageEventDefinition messageRef="M" />
      </bpmn:startEvent>
      <bpmn:serviceTask id="tell"><bpmn:extensionElements><zeebe:taskDefinition type="${id}-tell" /></bpmn:extensionElements></bpmn:serviceTask>
      <bpmn:endEvent id="n_end" />
      <bpmn:sequenceFlow id="n1" sourceRef="n_start" targetRef="tell" />
      <bpmn:sequenceFlow id="n2" sourceRef="tell" targetRef="n_end" />
    </bpmn:subProcess>
  </bpmn:process>
</bpmn:definitions>`;
    const note = (id: string, orderId: string, variables: Record<string, unknown>) =>
      t.api.post('/api/messages', { name: `${id}-note`, correlationKey: orderId, variables });

    // Interrupting: the payload goes through the mapping.
    await deployMappingsRun(t.api, xml('esp_so', '<zeebe:output source="=text" target="lastNote" />', true));
    const id = await start(t.api, 'esp_so', { variables: { orderId: 's-1' } });
    const work = await fetchOne(t.api, 'w', 'esp_so-work');
    expect((await note('esp_so', 's-1', { text: 'hi', noise: 1 })).body).toMatchObject({ status: 'matched', instanceId: id });
    const tell = await fetchOne(t.api, 'w', 'esp_so-tell');
    expect(tell.variables).toEqual({ orderId: 's-1', lastNote: 'hi' });
    expect((await complete(t.api, work, 'w')).status).toBe(409);
    expect((await complete(t.api, tell, 'w')).status).toBe(204);
    await waitForStatus(t.api, id, 'completed');

    // Interrupting, failing: the main flow is interrupted at once; the retry runs the body.
    await deployMappingsRun(t.api, xml('esp_sobad', '<zeebe:output source="=2 in (1..max)" target="fits" />', true));
    const bad = await start(t.api, 'esp_sobad', { variables: { orderId: 's-2', max: 'x' } });
    const badWork = await fetchOne(t.api, 'w', 'esp_sobad-work');
    expect((await note('esp_sobad', 's-2', { text: 'x' })).body).toMatchObject({ status: 'matched', instanceId: bad });
    const incident = await waitForIncident(t.api, bad);
    expect(incident).toMatchObject({ stepId: 'n_start', kind: 'io_mapping' });
    expect(incident.message).toMatch(/^Output mapping of event n_start to fits/);
    expect((await complete(t.api, badWork, 'w')).status).toBe(409);
    expect(await fetchTasks(t.api, 'w', ['esp_sobad-tell'])).toEqual([]);
    expect((await t.api.post(`/api/incidents/${incident.id}/retry`, { variables: { max: 5 } })).status).toBeLessThan(300);
    const badTell = await fetchOne(t.api, 'w', 'esp_sobad-tell');
    expect(badTell.variables).toEqual({ orderId: 's-2', max: 5, fits: true });
    expect((await complete(t.api, badTell, 'w')).status).toBe(204);
    const badDone = await waitForStatus(t.api, bad, 'completed');
    expect([statusOf(badDone, 'work'), statusOf(badDone, 'noting')]).toEqual(['canceled', 'completed']);

    // Not interrupting, failing: the main flow goes on and ends; the incident keeps the instance open until the retry runs the body.
    await deployMappingsRun(t.api, xml('esp_snbad', '<zeebe:output source="=2 in (1..max)" target="fits" />', false));
    const side = await start(t.api, 'esp_snbad', { variables: { orderId: 's-3', max: 'x' } });
    const sideWork = await fetchOne(t.api, 'w', 'esp_snbad-work');
    expect((await note('esp_snbad', 's-3', { text: 'x' })).body).toMatchObject({ status: 'matched', instanceId: side });
    const sideIncident = await waitForIncident(t.api, side);
    expect(sideIncident).toMatchObject({ stepId: 'n_start', kind: 'io_mapping' });
    expect((await complete(t.api, sideWork, 'w')).status).toBe(204);
    await waitFor(
      async () => statusOf(await instanceOf(t.api, side), 'end') === 'completed' || undefined,
      10_000,
      'the main flow ended',
    );
    expect((await instanceOf(t.api, side)).status).toBe('incident');
    expect((await t.api.post(`/api/incidents/${sideIncident.id}/retry`, { variables: { max: 5 } })).status).toBeLessThan(300);
    const sideTell = await fetchOne(t.api, 'w', 'esp_snbad-tell');
    expect(sideTell.variables).toEqual({ orderId: 's-3', max: 5, fits: true });
    expect((await complete(t.api, sideTell, 'w')).status).toBe(204);
    // Its scope had ended: it waits for nothing more, and the instance completes.
    await waitForStatus(t.api, side, 'completed');
  });
});
