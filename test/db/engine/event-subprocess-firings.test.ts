// Firings of non-interrupting event subprocesses against a real PostgreSQL, through the HTTP API:
// each runs its body in a child instance, beside the others; a BPMN error or an escalation thrown
// in a body reaches the catchers around the event subprocess; an error nothing catches holds the
// firing in an incident whose retry runs it again; canceling the instance cancels every firing;
// an instance of a definition deployed before firings ran in child instances runs them as its
// stored plan says.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  complete,
  deploy,
  fetchOne,
  fetchTasks,
  instanceOf,
  start,
  waitForIncident,
  waitForStatus,
  type LockedTask,
} from '../../support/flows.ts';
import { startTestServer, waitFor, type TestServer } from '../../support/server.ts';

let t: TestServer;

const NS = `xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:camunda="http://camunda.org/schema/1.0/bpmn"`;
const task = (id: string, topic: string) => `<bpmn:serviceTask id="${id}" camunda:type="external" camunda:topic="${topic}" />`;
const flow = (id: string, from: string, to: string) => `<bpmn:sequenceFlow id="${id}" sourceRef="${from}" targetRef="${to}" />`;

/**
 * start -> work -> end; a non-interrupting event subprocess "watch" on message `${id}-ping`:
 * its start -> watch_task -> watch_end, where `end` is the end event's inner XML (a throw).
 */
function process(id: string, opts: { end?: string; extra?: string; roots?: string } = {}): string {
  return `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions ${NS} id="D_${id}" targetNamespace="https://baton.dev/test">
  <bpmn:message id="Ping" name="${id}-ping" />${opts.roots ?? ''}
  <bpmn:process id="${id}" isExecutable="true">
    <bpmn:startEvent id="start" />${task('work', `${id}-work`)}<bpmn:endEvent id="end" />
    ${flow('f1', 'start', 'work')}${flow('f2', 'work', 'end')}
    <bpmn:subProcess id="watch" triggeredByEvent="true">
      <bpmn:startEvent id="watch_start" isInterrupting="false"><bpmn:messageEventDefinition messageRef="Ping" /></bpmn:startEvent>
      ${task('watch_task', `${id}-watch`)}<bpmn:endEvent id="watch_end">${opts.end ?? ''}</bpmn:endEvent>
      ${flow('w1', 'watch_start', 'watch_task')}${flow('w2', 'watch_task', 'watch_end')}
    </bpmn:subProcess>
    ${opts.extra ?? ''}
  </bpmn:process>
</bpmn:definitions>`;
}

const statusOf = (i: any, stepId: string) => (i.steps as any[]).find((s) => s.stepId === stepId)?.status;

async function ping(key: string, businessKey: string): Promise<void> {
  const res = await t.api.post('/api/messages', { name: `${key}-ping`, correlationKey: businessKey });
  expect(res.body).toMatchObject({ status: 'matched' });
}

async function tasksOf(topic: string, n: number): Promise<LockedTask[]> {
  const got: LockedTask[] = [];
  await waitFor(
    async () => {
      got.push(...(await fetchTasks(t.api, 'w', [topic])));
      return got.length >= n ? true : undefined;
    },
    10_000,
    `${n} task(s) on ${topic}`,
  );
  return got;
}

beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t?.close();
});

describe('firings of non-interrupting event subprocesses', () => {
  it('given a BPMN error thrown in a firing, then an interrupting error event subprocess beside it catches it: the main flow and the other firing are canceled', async () => {
    const id = 'fire_err';
    await deploy(
      t.api,
      process(id, {
        end: '<bpmn:errorEventDefinition errorRef="Stop" />',
        roots: '<bpmn:error id="Stop" errorCode="stop" />',
        extra: `<bpmn:subProcess id="stopped" triggeredByEvent="true">
          <bpmn:startEvent id="stopped_start"><bpmn:errorEventDefinition errorRef="Stop" /></bpmn:startEvent>
          ${task('stopped_task', `${id}-stopped`)}<bpmn:endEvent id="stopped_end" />
          ${flow('s1', 'stopped_start', 'stopped_task')}${flow('s2', 'stopped_task', 'stopped_end')}
        </bpmn:subProcess>`,
      }),
    );
    const instance = await start(t.api, id, { businessKey: 'err-1' });
    const work = await fetchOne(t.api, 'w', `${id}-work`);
    await ping(id, 'err-1');
    await ping(id, 'err-1');
    const [a, b] = await tasksOf(`${id}-watch`, 2);
    // The first body reaches its error end event: the error leaves its child for the process.
    expect((await complete(t.api, a!, 'w')).status).toBe(204);
    const stopped = await fetchOne(t.api, 'w', `${id}-stopped`);
    expect(stopped.instanceId).toBe(instance);
    expect((await complete(t.api, work, 'w')).status).toBe(409);
    expect((await complete(t.api, b!, 'w')).status).toBe(409);
    expect((await complete(t.api, stopped, 'w')).status).toBe(204);
    const done = await waitForStatus(t.api, instance, 'completed');
    expect([statusOf(done, 'work'), statusOf(done, 'watch'), statusOf(done, 'stopped')]).toEqual([
      'canceled',
      'canceled',
      'completed',
    ]);
    expect(done.calledInstances.map((c: any) => c.status).sort()).toEqual(['canceled', 'canceled']);
  });

  it('given a BPMN error nothing catches in a firing, then the event subprocess holds it in an incident while the main flow and another firing go on; the retry runs that firing again', async () => {
    const id = 'fire_uncaught';
    await deploy(
      t.api,
      process(id, {
        end: '<bpmn:errorEventDefinition errorRef="Oops" />',
        roots: '<bpmn:error id="Oops" errorCode="oops" />',
      }),
    );
    const instance = await start(t.api, id, { businessKey: 'unc-1', variables: { failing: true } });
    const work = await fetchOne(t.api, 'w', `${id}-work`);
    await ping(id, 'unc-1');
    const [first] = await tasksOf(`${id}-watch`, 1);
    expect((await complete(t.api, first!, 'w')).status).toBe(204);
    const incident = await waitForIncident(t.api, instance);
    expect(incident).toMatchObject({ stepId: 'watch', kind: 'bpmn_error', details: { errorCode: 'oops', firing: 1 } });
    // The main flow and a second firing go on beside the incident; the second throws too, and joins it.
    await ping(id, 'unc-1');
    const [second] = await tasksOf(`${id}-watch`, 1);
    expect((await complete(t.api, work, 'w')).status).toBe(204);
    expect((await complete(t.api, second!, 'w')).status).toBe(204);
    const history = async () =>
      ((await t.api.get(`/api/instances/${instance}/history?limit=1000`)).body.items as { kind: string; data: any }[]).filter(
        (e) => e.kind === 'eventSubProcess:firing_held',
      );
    expect(
      (await waitFor(async () => ((await history()).length > 0 ? await history() : undefined), 10_000, 'held'))[0]!.data,
    ).toMatchObject({
      kind: 'bpmn_error',
      firing: 2,
    });
    const held = await instanceOf(t.api, instance);
    expect(held.status).toBe('incident');
    expect(held.incidents.map((i: any) => i.id)).toEqual([incident.id]);
    expect(statusOf(held, 'end')).toBe('completed');
    // The retry runs both firings again, each in a new child.
    expect((await t.api.post(`/api/incidents/${incident.id}/retry`, {})).status).toBeLessThan(300);
    const again = await tasksOf(`${id}-watch`, 2);
    expect((await instanceOf(t.api, instance)).calledInstances.map((c: any) => c.loopCounter).sort()).toEqual([1, 1, 2, 2]);
    expect(again.map((x) => x.variables.failing)).toEqual([true, true]);
    for (const x of again) expect((await complete(t.api, x, 'w')).status).toBe(204);
    // They throw again: one new incident holds them.
    const next = await waitForIncident(t.api, instance);
    expect(next.id).not.toBe(incident.id);
    expect(next.details).toMatchObject({ errorCode: 'oops' });
  });

  it("given output mappings that fail for one firing, then its return is kept in the incident while another firing runs on; the retry maps it with the retry's variables and the event subprocess waits for the other", async () => {
    const xml = `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="D_fire_out" targetNamespace="https://baton.dev/test">
  <bpmn:message id="M" name="fire_out-ping"><bpmn:extensionElements><zeebe:subscription correlationKey="=orderId" /></bpmn:extensionElements></bpmn:message>
  <bpmn:process id="fire_out" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:serviceTask id="work"><bpmn:extensionElements><zeebe:taskDefinition type="fire_out-work" /></bpmn:extensionElements></bpmn:serviceTask>
    <bpmn:endEvent id="end" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="work" />
    <bpmn:sequenceFlow id="f2" sourceRef="work" targetRef="end" />
    <bpmn:subProcess id="watch" triggeredByEvent="true">
      <bpmn:extensionElements><zeebe:ioMapping><zeebe:output source="=size in (1..max)" target="fits" /></zeebe:ioMapping></bpmn:extensionElements>
      <bpmn:startEvent id="watch_start" isInterrupting="false"><bpmn:messageEventDefinition messageRef="M" /></bpmn:startEvent>
      <bpmn:serviceTask id="tell"><bpmn:extensionElements><zeebe:taskDefinition type="fire_out-tell" /></bpmn:extensionElements></bpmn:serviceTask>
      <bpmn:endEvent id="watch_end" />
      <bpmn:sequenceFlow id="w1" sourceRef="watch_start" targetRef="tell" />
      <bpmn:sequenceFlow id="w2" sourceRef="tell" targetRef="watch_end" />
    </bpmn:subProcess>
  </bpmn:process>
</bpmn:definitions>`;
    await deploy(t.api, xml);
    const instance = await start(t.api, 'fire_out', { variables: { orderId: 'o-1', max: 'x' } });
    const work = await fetchOne(t.api, 'w', 'fire_out-work');
    const send = async () => {
      const res = await t.api.post('/api/messages', { name: 'fire_out-ping', correlationKey: 'o-1' });
      expect(res.body).toMatchObject({ status: 'matched', instanceId: instance });
    };
    await send();
    await send();
    const [a, b] = await tasksOf('fire_out-tell', 2);
    expect((await complete(t.api, a!, 'w', { size: 2 })).status).toBe(204);
    const incident = await waitForIncident(t.api, instance);
    expect(incident).toMatchObject({ stepId: 'watch', kind: 'io_mapping' });
    // The retry fixes max: the kept return maps, and the event subprocess still waits for b.
    expect((await t.api.post(`/api/incidents/${incident.id}/retry`, { variables: { max: 5 } })).status).toBeLessThan(300);
    const after = await instanceOf(t.api, instance);
    expect(after.variables).toMatchObject({ fits: true, size: 2, max: 5 });
    expect(statusOf(after, 'watch')).toBe('active');
    expect((await complete(t.api, work, 'w')).status).toBe(204);
    await waitFor(
      async () => (statusOf(await instanceOf(t.api, instance), 'end') === 'completed' ? true : undefined),
      10_000,
      'the main flow to end',
    );
    expect((await instanceOf(t.api, instance)).status).toBe('running');
    expect((await complete(t.api, b!, 'w', { size: 9 })).status).toBe(204);
    const done = await waitForStatus(t.api, instance, 'completed');
    expect(done.variables).toMatchObject({ fits: false, size: 9 });
    expect(statusOf(done, 'watch')).toBe('completed');
  });

  it('given an escalation thrown in a firing, then a non-interrupting escalation event subprocess beside it runs while the firing goes on', async () => {
    const id = 'fire_esc';
    await deploy(
      t.api,
      process(id, {
        roots: '<bpmn:escalation id="Late" escalationCode="late" />',
        extra: `<bpmn:subProcess id="escalated" triggeredByEvent="true">
          <bpmn:startEvent id="escalated_start" isInterrupting="false"><bpmn:escalationEventDefinition escalationRef="Late" /></bpmn:startEvent>
          ${task('escalated_task', `${id}-escalated`)}<bpmn:endEvent id="escalated_end" />
          ${flow('e1', 'escalated_start', 'escalated_task')}${flow('e2', 'escalated_task', 'escalated_end')}
        </bpmn:subProcess>`,
      })
        .replace(
          `${task('watch_task', `${id}-watch`)}`,
          `<bpmn:intermediateThrowEvent id="raise"><bpmn:escalationEventDefinition escalationRef="Late" /></bpmn:intermediateThrowEvent>
         ${task('watch_task', `${id}-watch`)}`,
        )
        .replace(flow('w1', 'watch_start', 'watch_task'), flow('w0', 'watch_start', 'raise') + flow('w1', 'raise', 'watch_task')),
    );
    const instance = await start(t.api, id, { businessKey: 'esc-1' });
    const work = await fetchOne(t.api, 'w', `${id}-work`);
    await ping(id, 'esc-1');
    const escalated = await fetchOne(t.api, 'w', `${id}-escalated`);
    const watching = await fetchOne(t.api, 'w', `${id}-watch`);
    expect(escalated.instanceId).not.toBe(watching.instanceId);
    for (const x of [watching, escalated, work]) expect((await complete(t.api, x, 'w')).status).toBe(204);
    const done = await waitForStatus(t.api, instance, 'completed');
    expect([statusOf(done, 'watch'), statusOf(done, 'escalated')]).toEqual(['completed', 'completed']);
  });

  it("given a message catch in a firing's body, then it waits under the process's business key, as one in the process does", async () => {
    const id = 'fire_bk';
    await deploy(
      t.api,
      process(id, { roots: '<bpmn:message id="Answer" name="fire_bk-answer" />' })
        .replace(
          `${task('watch_task', `${id}-watch`)}`,
          '<bpmn:intermediateCatchEvent id="answered"><bpmn:messageEventDefinition messageRef="Answer" /></bpmn:intermediateCatchEvent>',
        )
        .replace(flow('w1', 'watch_start', 'watch_task'), flow('w1', 'watch_start', 'answered'))
        .replace(flow('w2', 'watch_task', 'watch_end'), flow('w2', 'answered', 'watch_end')),
    );
    const instance = await start(t.api, id, { businessKey: 'bk-9' });
    const work = await fetchOne(t.api, 'w', `${id}-work`);
    await ping(id, 'bk-9');
    const firing = await waitFor(async () => (await instanceOf(t.api, instance)).calledInstances[0], 10_000, 'the firing');
    await waitFor(
      async () => (statusOf(await instanceOf(t.api, firing.instanceId), 'answered') === 'active' ? true : undefined),
      10_000,
      'the catch to wait',
    );
    const answered = await t.api.post('/api/messages', { name: 'fire_bk-answer', correlationKey: 'bk-9' });
    expect(answered.body).toMatchObject({ status: 'matched', instanceId: firing.instanceId });
    expect((await complete(t.api, work, 'w')).status).toBe(204);
    await waitForStatus(t.api, instance, 'completed');
  });

  it('given firings that run, when the instance is canceled, then every firing is canceled and its task answers 409', async () => {
    const id = 'fire_cancel';
    await deploy(t.api, process(id));
    const instance = await start(t.api, id, { businessKey: 'can-1' });
    await fetchOne(t.api, 'w', `${id}-work`);
    await ping(id, 'can-1');
    await ping(id, 'can-1');
    const running = await tasksOf(`${id}-watch`, 2);
    expect((await t.api.post(`/api/instances/${instance}/cancel`, {})).status).toBeLessThan(300);
    const canceled = await waitForStatus(t.api, instance, 'canceled');
    expect(canceled.calledInstances.map((c: any) => c.status)).toEqual(['canceled', 'canceled']);
    for (const x of running) expect((await complete(t.api, x, 'w')).status).toBe(409);
  });

  it('given an instance of a definition deployed before firings ran in child instances, then its stored plan runs them in the instance, one after another', async () => {
    const xml = readFileSync(new URL('../../fixtures/plans/esp-upgrade.bpmn', import.meta.url), 'utf8');
    const stored = readFileSync(new URL('../../fixtures/plans/esp-upgrade-plan.json', import.meta.url), 'utf8');
    const deployed = await deploy(t.api, xml);
    // The plan such a deploy stored: the body's steps in the process, run as passes of the event subprocess.
    await t.db.pool.query('update definitions set plan = $1 where id = $2', [stored, deployed.id]);
    t.server.engine.plans.delete(deployed.id);
    const instance = await start(t.api, 'esp_upgrade', { businessKey: 'up-1' });
    const work = await fetchOne(t.api, 'w', 'esp_upgrade-work');
    for (let i = 0; i < 2; i++) {
      const res = await t.api.post('/api/messages', { name: 'esp-upgrade-ping', correlationKey: 'up-1' });
      expect(res.body).toMatchObject({ status: 'matched', instanceId: instance });
    }
    const first = await fetchOne(t.api, 'w', 'esp_upgrade-watch');
    expect(first.instanceId).toBe(instance);
    expect(await fetchTasks(t.api, 'w', ['esp_upgrade-watch'])).toEqual([]);
    expect((await complete(t.api, work, 'w')).status).toBe(204);
    expect((await complete(t.api, first, 'w')).status).toBe(204);
    const second = await fetchOne(t.api, 'w', 'esp_upgrade-watch');
    expect(second.instanceId).toBe(instance);
    expect((await complete(t.api, second, 'w')).status).toBe(204);
    const done = await waitForStatus(t.api, instance, 'completed');
    expect(done.calledInstances).toEqual([]);
    expect(statusOf(done, 'watch_task')).toBe('completed');
  });
});
