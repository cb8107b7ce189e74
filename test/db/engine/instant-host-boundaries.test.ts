// Boundary events on hosts that complete in the transition that reaches them (plain, manual and
// engine-run script tasks), against a real PostgreSQL through the HTTP API. Camunda 7 and Zeebe
// arm and end such a boundary at once, so it never fires: Baton deploys it with a warning that
// says so, writes no timer or subscription for it, and skips it (and its path) with its host.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { complete, fetchOne, fetchTasks, instanceOf, start, waitForStatus } from '../../support/flows.ts';
import { startTestServer, type TestServer } from '../../support/server.ts';

let t: TestServer;

const NS = [
  'xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"',
  'xmlns:camunda="http://camunda.org/schema/1.0/bpmn"',
  'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"',
].join(' ');

/** start -> `host` -> service task `<key>-next` -> end; each boundary on the host leads to a service task `<key>-<boundary id>`. */
function hostProcess(key: string, host: string, boundaries: string[], roots = ''): string {
  const paths = boundaries
    .map((b) => {
      const id = /id="([^"]+)"/.exec(b)?.[1] ?? '';
      return [
        b,
        `<bpmn:serviceTask id="${id}_task" camunda:type="external" camunda:topic="${key}-${id}" />`,
        `<bpmn:endEvent id="${id}_end" />`,
        `<bpmn:sequenceFlow id="${id}_f1" sourceRef="${id}" targetRef="${id}_task" />`,
        `<bpmn:sequenceFlow id="${id}_f2" sourceRef="${id}_task" targetRef="${id}_end" />`,
      ].join('\n    ');
    })
    .join('\n    ');
  return `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions ${NS} id="D_${key}" targetNamespace="https://baton.dev/test">
  <bpmn:message id="Poke" name="${key}-poke" />
  <bpmn:signal id="Stop" name="${key}-stop" />
  <bpmn:error id="Bad" errorCode="BAD" />
  ${roots}
  <bpmn:process id="${key}" isExecutable="true">
    <bpmn:startEvent id="start" />
    ${host}
    <bpmn:serviceTask id="next" camunda:type="external" camunda:topic="${key}-next" />
    <bpmn:endEvent id="end" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="host" />
    <bpmn:sequenceFlow id="f2" sourceRef="host" targetRef="next" />
    <bpmn:sequenceFlow id="f3" sourceRef="next" targetRef="end" />
    ${paths}
  </bpmn:process>
</bpmn:definitions>`;
}

const timer = (id: string, attrs = '') =>
  `<bpmn:boundaryEvent id="${id}" attachedToRef="host" ${attrs}><bpmn:timerEventDefinition><bpmn:timeDuration xsi:type="bpmn:tFormalExpression">PT0S</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:boundaryEvent>`;
const message = (id: string) =>
  `<bpmn:boundaryEvent id="${id}" attachedToRef="host" cancelActivity="false"><bpmn:messageEventDefinition messageRef="Poke" /></bpmn:boundaryEvent>`;
const signal = (id: string) =>
  `<bpmn:boundaryEvent id="${id}" attachedToRef="host"><bpmn:signalEventDefinition signalRef="Stop" /></bpmn:boundaryEvent>`;
const error = (id: string) =>
  `<bpmn:boundaryEvent id="${id}" attachedToRef="host"><bpmn:errorEventDefinition errorRef="Bad" /></bpmn:boundaryEvent>`;

async function stepStatuses(id: string): Promise<Record<string, string>> {
  const view = await instanceOf(t.api, id);
  return Object.fromEntries((view.steps as { stepId: string; status: string }[]).map((s) => [s.stepId, s.status]));
}

async function waitRows(id: string): Promise<number> {
  const rows = await t.db.pool.query<{ n: number }>(
    `select (select count(*) from timers where instance_id = $1)::int + (select count(*) from subscriptions where instance_id = $1)::int as n`,
    [id],
  );
  return rows.rows[0]!.n;
}

beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t?.close();
});

describe('boundary events on hosts that complete at once', () => {
  it('given a manual task with a due timer, a message and a signal boundary, then deploy warns that each never fires, and the token passes with all three skipped', async () => {
    const res = await t.api.post('/api/definitions', {
      xml: hostProcess('ih_manual', '<bpmn:manualTask id="host" name="Sign the form" />', [
        timer('late'),
        message('poke'),
        signal('stop'),
      ]),
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const warned = (res.body.warnings as { elementId: string; message: string }[]).filter((w) => /never fires/.test(w.message));
    expect(warned.map((w) => w.elementId).sort()).toEqual(['late', 'poke', 'stop']);
    expect(warned.find((w) => w.elementId === 'late')?.message).toContain('on task that does nothing host never fires');

    const id = await start(t.api, 'ih_manual');
    const next = await fetchOne(t.api, 'w', 'ih_manual-next');
    expect(next.instanceId).toBe(id);
    expect(await stepStatuses(id)).toMatchObject({
      host: 'completed',
      late: 'skipped',
      poke: 'skipped',
      stop: 'skipped',
      late_task: 'skipped',
      poke_task: 'skipped',
      stop_task: 'skipped',
      next: 'active',
    });
    expect(await waitRows(id)).toBe(0);
    const broadcast = await t.api.post('/api/signals', { name: 'ih_manual-stop' });
    expect(broadcast.status, JSON.stringify(broadcast.body)).toBeLessThan(300);
    expect(await fetchTasks(t.api, 'w', ['ih_manual-late', 'ih_manual-poke', 'ih_manual-stop'])).toEqual([]);
    expect((await complete(t.api, next, 'w')).status).toBe(204);
    await waitForStatus(t.api, id, 'completed');
  });

  it('given a script task in an incident with a timer and an error boundary, then neither is armed; after the retry with fixed variables both are skipped and the token goes on', async () => {
    const script =
      '<bpmn:scriptTask id="host" scriptFormat="javascript"><bpmn:script>if (typeof amount !== "number") throw new TypeError("amount is missing"); total = amount * 2;</bpmn:script></bpmn:scriptTask>';
    const res = await t.api.post('/api/definitions', { xml: hostProcess('ih_script', script, [timer('late'), error('bad')]) });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.warnings).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          elementId: 'bad',
          message: expect.stringContaining('a script that throws raises an incident'),
        }),
        expect.objectContaining({ elementId: 'late', message: expect.stringContaining('no time for it to fire') }),
      ]),
    );

    const id = await start(t.api, 'ih_script');
    const stuck = await waitForStatus(t.api, id, 'incident');
    expect(stuck.incidents).toEqual([expect.objectContaining({ stepId: 'host', kind: 'script_error' })]);
    expect(await waitRows(id)).toBe(0);
    const statuses = await stepStatuses(id);
    expect(statuses.late).toBeUndefined();
    expect(statuses.bad).toBeUndefined();

    const retried = await t.api.post(`/api/incidents/${stuck.incidents[0].id}/retry`, { variables: { amount: 21 } });
    expect(retried.status, JSON.stringify(retried.body)).toBe(200);
    const next = await fetchOne(t.api, 'w', 'ih_script-next');
    expect(next).toMatchObject({ instanceId: id, variables: { amount: 21 } });
    expect(await stepStatuses(id)).toMatchObject({ host: 'completed', late: 'skipped', bad: 'skipped', late_task: 'skipped' });
    expect((await complete(t.api, next, 'w')).status).toBe(204);
    await waitForStatus(t.api, id, 'completed');
  });

  it('given a compensation boundary on a script task or an escalation boundary on a plain task, then deploy refuses naming the boundary and deploys nothing', async () => {
    const compensation = hostProcess(
      'ih_refused',
      '<bpmn:scriptTask id="host" scriptFormat="feel"><bpmn:script>= 1</bpmn:script></bpmn:scriptTask>',
      [],
    ).replace(
      '<bpmn:endEvent id="end" />',
      `<bpmn:endEvent id="end" />
    <bpmn:boundaryEvent id="undo" attachedToRef="host"><bpmn:compensateEventDefinition /></bpmn:boundaryEvent>
    <bpmn:serviceTask id="undo_task" isForCompensation="true" camunda:type="external" camunda:topic="ih-undo" />
    <bpmn:association id="a1" associationDirection="One" sourceRef="undo" targetRef="undo_task" />`,
    );
    const escalation = hostProcess('ih_refused', '<bpmn:task id="host" />', [
      '<bpmn:boundaryEvent id="esc" attachedToRef="host"><bpmn:escalationEventDefinition /></bpmn:boundaryEvent>',
    ]);
    for (const [xml, elementId, says] of [
      [compensation, 'undo', 'Compensation boundary'],
      [escalation, 'esc', 'throws no escalations'],
    ] as const) {
      const res = await t.api.post('/api/definitions', { xml });
      expect(res.status).toBe(400);
      expect(res.body.details).toEqual(
        expect.arrayContaining([expect.objectContaining({ elementId, message: expect.stringContaining(says) })]),
      );
    }
    expect((await t.api.get('/api/definitions/ih_refused')).status).toBe(404);
  });
});
