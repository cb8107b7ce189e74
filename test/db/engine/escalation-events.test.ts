// Escalation events against a real PostgreSQL through the HTTP API: a throw inside a subprocess
// fires the innermost catcher (a boundary on the subprocess or an escalation event subprocess);
// a non-interrupting catcher lets the throwing path go on, an interrupting one cancels the
// subprocess; an escalation nothing catches lets the path go on and says so in the history.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { complete, deploy, fetchOne, fetchTasks, instanceOf, start, waitForStatus } from '../../support/flows.ts';
import { inlineDefinitions, inlineFlow as flow, inlineTask as task } from '../../support/bpmn.ts';
import { startTestServer, type TestServer } from '../../support/server.ts';

let t: TestServer;

const ESCALATIONS = `<bpmn:escalation id="Late" escalationCode="LATE" />
  <bpmn:escalation id="Big" escalationCode="BIG" />`;
const escalationDefinitions = (id: string, body: string[]) => inlineDefinitions(id, body, ESCALATIONS);

const escalation = (ref?: string, extra = '') =>
  `<bpmn:escalationEventDefinition ${ref ? `escalationRef="${ref}"` : ''} ${extra} />`;
const throwEvent = (id: string, ref: string) =>
  `<bpmn:intermediateThrowEvent id="${id}">${escalation(ref)}</bpmn:intermediateThrowEvent>`;

/** start -> sub [ work -> escalate (LATE) -> finish -> end ] -> done, with `boundary` on sub */
function subWithThrow(id: string, boundary: string, after: string[] = []): string {
  return escalationDefinitions(id, [
    '<bpmn:startEvent id="start" />',
    `<bpmn:subProcess id="sub">
      <bpmn:startEvent id="subStart" />
      ${task('work', id)}
      ${throwEvent('escalate', 'Late')}
      ${task('finish', id)}
      <bpmn:endEvent id="subEnd" />
      ${flow('s1', 'subStart', 'work')}
      ${flow('s2', 'work', 'escalate')}
      ${flow('s3', 'escalate', 'finish')}
      ${flow('s4', 'finish', 'subEnd')}
    </bpmn:subProcess>`,
    '<bpmn:endEvent id="done" />',
    flow('f1', 'start', 'sub'),
    flow('f2', 'sub', 'done'),
    boundary,
    ...after,
  ]);
}

async function statuses(id: string): Promise<Record<string, string>> {
  const steps = (await instanceOf(t.api, id)).steps as { stepId: string; status: string }[];
  return Object.fromEntries(steps.map((s) => [s.stepId, s.status]));
}

async function history(id: string): Promise<any[]> {
  return (await t.api.get(`/api/instances/${id}/history`)).body.items as any[];
}

beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t?.close();
});

describe('escalation events', () => {
  it('given a non-interrupting escalation boundary on a subprocess, when an event inside throws, then the boundary path and the throwing path both run', async () => {
    await deploy(
      t.api,
      subWithThrow(
        'esc_nonint',
        `<bpmn:boundaryEvent id="notify" attachedToRef="sub" cancelActivity="false">${escalation('Late', 'camunda:escalationCodeVariable="code"')}</bpmn:boundaryEvent>`,
        [
          task('tellManager', 'esc_nonint'),
          '<bpmn:endEvent id="told" />',
          flow('f3', 'notify', 'tellManager'),
          flow('f4', 'tellManager', 'told'),
        ],
      ),
    );
    const id = await start(t.api, 'esc_nonint');
    expect((await complete(t.api, await fetchOne(t.api, 'w', 'esc_nonint-work'), 'w')).status).toBe(204);
    const tell = await fetchOne(t.api, 'w', 'esc_nonint-tellManager');
    const finish = await fetchOne(t.api, 'w', 'esc_nonint-finish');
    expect([tell.instanceId, finish.instanceId]).toEqual([id, id]);
    expect((await instanceOf(t.api, id)).variables).toMatchObject({ code: 'LATE' });
    const events = await history(id);
    expect(events.find((e) => e.kind === 'step:completed' && e.stepId === 'escalate')?.data).toEqual({
      escalationCode: 'LATE',
      caughtBy: 'notify',
    });
    expect(events.find((e) => e.kind === 'step:completed' && e.stepId === 'notify')?.data).toMatchObject({
      trigger: 'escalation',
      escalationCode: 'LATE',
      thrownBy: 'escalate',
    });
    expect((await complete(t.api, finish, 'w')).status).toBe(204);
    expect((await instanceOf(t.api, id)).status).toBe('running'); // the boundary's path still runs
    expect((await complete(t.api, tell, 'w')).status).toBe(204);
    await waitForStatus(t.api, id, 'completed');
  });

  it('given an interrupting escalation boundary, when an escalation end event throws, then the subprocess and its parallel task are canceled and only the boundary path runs', async () => {
    await deploy(
      t.api,
      escalationDefinitions('esc_int', [
        '<bpmn:startEvent id="start" />',
        `<bpmn:subProcess id="sub">
          <bpmn:startEvent id="subStart" />
          <bpmn:parallelGateway id="fork" />
          ${task('slow', 'esc_int')}
          ${task('check', 'esc_int')}
          <bpmn:endEvent id="tooBig">${escalation('Big')}</bpmn:endEvent>
          <bpmn:endEvent id="subEnd" />
          ${flow('s1', 'subStart', 'fork')}
          ${flow('s2', 'fork', 'slow')}
          ${flow('s3', 'fork', 'check')}
          ${flow('s4', 'check', 'tooBig')}
          ${flow('s5', 'slow', 'subEnd')}
        </bpmn:subProcess>`,
        task('after', 'esc_int'),
        '<bpmn:endEvent id="done" />',
        `<bpmn:boundaryEvent id="escalated" attachedToRef="sub">${escalation('Big')}</bpmn:boundaryEvent>`,
        task('approve', 'esc_int'),
        '<bpmn:endEvent id="approved" />',
        flow('f1', 'start', 'sub'),
        flow('f2', 'sub', 'after'),
        flow('f3', 'after', 'done'),
        flow('f4', 'escalated', 'approve'),
        flow('f5', 'approve', 'approved'),
      ]),
    );
    const id = await start(t.api, 'esc_int');
    const slow = await fetchOne(t.api, 'w', 'esc_int-slow');
    expect((await complete(t.api, await fetchOne(t.api, 'w', 'esc_int-check'), 'w')).status).toBe(204);
    const approve = await fetchOne(t.api, 'w', 'esc_int-approve');
    expect(approve.instanceId).toBe(id);
    expect((await complete(t.api, slow, 'w')).status).toBe(409); // canceled with its subprocess
    expect((await complete(t.api, approve, 'w')).status).toBe(204);
    await waitForStatus(t.api, id, 'completed');
    expect(await fetchTasks(t.api, 'w', ['esc_int-after'])).toEqual([]);
    expect(await statuses(id)).toMatchObject({ sub: 'canceled', slow: 'canceled', tooBig: 'completed', escalated: 'completed' });
  });

  it('given an escalation event subprocess inside the subprocess and a catch-all boundary outside, then the inner one catches first', async () => {
    await deploy(
      t.api,
      subWithThrow(
        'esc_esp',
        `<bpmn:boundaryEvent id="outer" attachedToRef="sub" cancelActivity="false">${escalation()}</bpmn:boundaryEvent>`,
        [
          task('outerWork', 'esc_esp'),
          '<bpmn:endEvent id="outerEnd" />',
          flow('f3', 'outer', 'outerWork'),
          flow('f4', 'outerWork', 'outerEnd'),
        ],
      ).replace(
        '<bpmn:endEvent id="subEnd" />',
        `<bpmn:endEvent id="subEnd" />
      <bpmn:subProcess id="onLate" triggeredByEvent="true">
        <bpmn:startEvent id="lateStart">${escalation('Late')}</bpmn:startEvent>
        ${task('handleLate', 'esc_esp')}
        <bpmn:endEvent id="lateEnd" />
        ${flow('e1', 'lateStart', 'handleLate')}
        ${flow('e2', 'handleLate', 'lateEnd')}
      </bpmn:subProcess>`,
      ),
    );
    const id = await start(t.api, 'esc_esp');
    expect((await complete(t.api, await fetchOne(t.api, 'w', 'esc_esp-work'), 'w')).status).toBe(204);
    const handle = await fetchOne(t.api, 'w', 'esc_esp-handleLate');
    expect(handle.instanceId).toBe(id);
    // The event subprocess interrupts its scope: the throw's path stops, the outer boundary never fires.
    expect(await fetchTasks(t.api, 'w', ['esc_esp-finish', 'esc_esp-outerWork'])).toEqual([]);
    expect((await complete(t.api, handle, 'w')).status).toBe(204);
    await waitForStatus(t.api, id, 'completed');
    const after = await statuses(id);
    expect(after).toMatchObject({ onLate: 'completed', outer: 'skipped' });
    expect(after.finish).toBeUndefined();
  });

  it('given no catcher, then the path goes on and the history records the escalation as uncaught', async () => {
    await deploy(
      t.api,
      escalationDefinitions('esc_none', [
        '<bpmn:startEvent id="start" />',
        throwEvent('escalate', 'Late'),
        task('next', 'esc_none'),
        '<bpmn:endEvent id="end" />',
        flow('f1', 'start', 'escalate'),
        flow('f2', 'escalate', 'next'),
        flow('f3', 'next', 'end'),
      ]),
    );
    const id = await start(t.api, 'esc_none');
    expect((await complete(t.api, await fetchOne(t.api, 'w', 'esc_none-next'), 'w')).status).toBe(204);
    await waitForStatus(t.api, id, 'completed');
    expect((await history(id)).find((e) => e.kind === 'escalation:uncaught')).toMatchObject({
      stepId: 'escalate',
      data: { escalationCode: 'LATE' },
    });
  });

  it('given a non-interrupting boundary whose path is its own, when two escalations are thrown in its subprocess, then it catches both and its path runs once per escalation, one after another', async () => {
    await deploy(
      t.api,
      subWithThrow(
        'esc_twice',
        `<bpmn:boundaryEvent id="notify" attachedToRef="sub" cancelActivity="false">${escalation('Late')}</bpmn:boundaryEvent>`,
        [
          task('tellManager', 'esc_twice'),
          '<bpmn:endEvent id="told" />',
          flow('f3', 'notify', 'tellManager'),
          flow('f4', 'tellManager', 'told'),
        ],
      ).replace(
        `${flow('s3', 'escalate', 'finish')}`,
        `${throwEvent('again', 'Late')}${flow('s3', 'escalate', 'again')}${flow('s3b', 'again', 'finish')}`,
      ),
    );
    const id = await start(t.api, 'esc_twice');
    expect((await complete(t.api, await fetchOne(t.api, 'w', 'esc_twice-work'), 'w')).status).toBe(204);
    // The second firing waits for the first one's path: one tellManager task at a time.
    const first = await fetchOne(t.api, 'w', 'esc_twice-tellManager');
    expect(await fetchTasks(t.api, 'w', ['esc_twice-tellManager'])).toEqual([]);
    expect((await complete(t.api, await fetchOne(t.api, 'w', 'esc_twice-finish'), 'w')).status).toBe(204);
    expect((await complete(t.api, first, 'w')).status).toBe(204);
    const second = await fetchOne(t.api, 'w', 'esc_twice-tellManager');
    expect(second.id).not.toBe(first.id);
    expect((await instanceOf(t.api, id)).status).toBe('running');
    expect((await complete(t.api, second, 'w')).status).toBe(204);
    await waitForStatus(t.api, id, 'completed');
    const events = await history(id);
    expect(events.filter((e) => e.kind === 'step:completed' && e.stepId === 'notify').map((e) => e.data.firing)).toEqual([1, 2]);
    expect(events.filter((e) => e.kind === 'step:completed' && e.stepId === 'tellManager').map((e) => e.data.scopePath)).toEqual([
      '/notify#1',
      '/notify#2',
    ]);
    expect(events.some((e) => e.kind === 'escalation:uncaught')).toBe(false);
  });

  it('given a non-interrupting boundary whose path joins the flow after its subprocess, when a second escalation is thrown, then the path goes on and the history names the spent boundary', async () => {
    const xml = subWithThrow(
      'esc_spent',
      `<bpmn:boundaryEvent id="notify" attachedToRef="sub" cancelActivity="false">${escalation('Late')}</bpmn:boundaryEvent>`,
      ['<bpmn:parallelGateway id="both" />', flow('f3', 'notify', 'both')],
    )
      .replace(
        `${flow('s3', 'escalate', 'finish')}`,
        `${throwEvent('again', 'Late')}${flow('s3', 'escalate', 'again')}${flow('s3b', 'again', 'finish')}`,
      )
      .replace(`${flow('f2', 'sub', 'done')}`, `${flow('f2', 'sub', 'both')}${flow('f5', 'both', 'done')}`);
    const deployed = await t.api.post('/api/definitions', { xml });
    expect(deployed.status, JSON.stringify(deployed.body)).toBe(201);
    expect(deployed.body.warnings).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ elementId: 'notify', message: expect.stringContaining('fires once per activation') }),
      ]),
    );
    const id = await start(t.api, 'esc_spent');
    expect((await complete(t.api, await fetchOne(t.api, 'w', 'esc_spent-work'), 'w')).status).toBe(204);
    expect((await complete(t.api, await fetchOne(t.api, 'w', 'esc_spent-finish'), 'w')).status).toBe(204);
    await waitForStatus(t.api, id, 'completed');
    const events = await history(id);
    expect(events.filter((e) => e.kind === 'step:completed' && e.stepId === 'notify')).toHaveLength(1);
    expect(events.find((e) => e.kind === 'escalation:uncaught')).toMatchObject({
      stepId: 'again',
      data: { escalationCode: 'LATE', firedBefore: 'notify' },
    });
  });
});
