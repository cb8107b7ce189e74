// Escalations a person raises from a user task (Camunda 7's handleEscalation), against a real
// PostgreSQL through the HTTP API: an interrupting boundary takes the task away, a
// non-interrupting one runs its path beside it (every time), an escalation event subprocess
// catches what no boundary does, and a code nothing catches is refused with nothing changed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { engineRest } from '../../camunda/support.ts';
import { inlineDefinitions, inlineFlow as flow, inlineTask as task } from '../../support/bpmn.ts';
import { complete, deploy, fetchOne, start, waitForStatus } from '../../support/flows.ts';
import { startTestServer, waitFor, type TestServer } from '../../support/server.ts';

let t: TestServer;

beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t?.close();
});

const ESCALATIONS = '<bpmn:escalation id="Late" escalationCode="late" /><bpmn:escalation id="Any" name="any" />';

/** start -> pay (user task, `boundaries` on it) -> end; `more` adds elements (a boundary's path). */
function payment(id: string, more: string[], after = ESCALATIONS): string {
  return inlineDefinitions(
    id,
    [
      '<bpmn:startEvent id="start" />',
      '<bpmn:userTask id="pay" name="Pay invoice" camunda:candidateUsers="ann" />',
      '<bpmn:endEvent id="end" />',
      flow('f1', 'start', 'pay'),
      flow('f2', 'pay', 'end'),
      ...more,
    ],
    after,
  );
}

async function heldTask(instanceId: string, userId = 'ann'): Promise<string> {
  const listed = await waitFor(
    async () => (await t.api.get(`/api/user-tasks?instanceId=${instanceId}`)).body.items[0] as { id: string } | undefined,
    10_000,
    `a user task of ${instanceId}`,
  );
  expect((await t.api.post(`/api/user-tasks/${listed.id}/claim`, { userId })).status).toBe(200);
  return listed.id;
}

async function historyOf(instanceId: string): Promise<{ kind: string; stepId?: string; data: any }[]> {
  return (await t.api.get(`/api/instances/${instanceId}/history`)).body.items;
}

describe('escalations raised from user tasks', () => {
  it('given an interrupting escalation boundary, when the holder raises its code, then the task ends and the boundary path runs with the variables and the code', async () => {
    await deploy(
      t.api,
      payment('esc_interrupt', [
        '<bpmn:boundaryEvent id="late" attachedToRef="pay"><bpmn:escalationEventDefinition escalationRef="Late" camunda:escalationCodeVariable="raised" /></bpmn:boundaryEvent>',
        task('remind', 'esc_interrupt'),
        '<bpmn:endEvent id="reminded" />',
        flow('b1', 'late', 'remind'),
        flow('b2', 'remind', 'reminded'),
      ]),
    );
    const instanceId = await start(t.api, 'esc_interrupt');
    const id = await heldTask(instanceId);
    expect((await t.api.get(`/api/user-tasks/${id}`)).body.raises).toEqual([
      { kind: 'escalation', boundaryId: 'late', code: 'late', interrupting: true },
    ]);
    const raised = await t.api.post(`/api/user-tasks/${id}/bpmn-escalation`, {
      userId: 'ann',
      escalationCode: 'late',
      variables: { reason: 'supplier silent' },
    });
    expect(raised.status, JSON.stringify(raised.body)).toBe(200);
    expect(raised.body).toEqual({ id, status: 'escalated', instanceId, caughtBy: 'late', taskOpen: false });
    expect((await t.api.get(`/api/user-tasks/${id}`)).status).toBe(404);
    const remind = await fetchOne(t.api, 'w', 'esc_interrupt-remind');
    expect(remind.variables).toMatchObject({ reason: 'supplier silent', raised: 'late' });
    await complete(t.api, remind, 'w');
    const done = await waitForStatus(t.api, instanceId, 'completed');
    const steps = Object.fromEntries((done.steps as { stepId: string; status: string }[]).map((x) => [x.stepId, x.status]));
    expect(steps).toMatchObject({
      pay: 'canceled',
      late: 'completed',
      remind: 'completed',
      reminded: 'completed',
      end: 'skipped',
    });
    const escalated = (await historyOf(instanceId)).find((e) => e.kind === 'userTask:escalated');
    expect(escalated).toMatchObject({
      stepId: 'pay',
      data: { taskId: id, escalationCode: 'late', caughtBy: 'late', userId: 'ann' },
    });
  });

  it('given a non-interrupting catch-all boundary, when the holder raises twice, then its path runs each time, the task stays held, and the instance ends after both', async () => {
    await deploy(
      t.api,
      payment('esc_beside', [
        '<bpmn:boundaryEvent id="noted" attachedToRef="pay" cancelActivity="false"><bpmn:escalationEventDefinition escalationRef="Any" /></bpmn:boundaryEvent>',
        task('inform', 'esc_beside'),
        '<bpmn:endEvent id="informed" />',
        flow('b1', 'noted', 'inform'),
        flow('b2', 'inform', 'informed'),
      ]),
    );
    const instanceId = await start(t.api, 'esc_beside');
    const id = await heldTask(instanceId);
    expect((await t.api.get(`/api/user-tasks/${id}`)).body.raises).toEqual([
      { kind: 'escalation', boundaryId: 'noted', code: null, interrupting: false },
    ]);
    for (const code of ['late', 'suspicious-sender']) {
      const raised = await t.api.post(`/api/user-tasks/${id}/bpmn-escalation`, { userId: 'ann', escalationCode: code });
      expect(raised.status, JSON.stringify(raised.body)).toBe(200);
      expect(raised.body).toMatchObject({ caughtBy: 'noted', taskOpen: true });
      await complete(t.api, await fetchOne(t.api, 'w', 'esc_beside-inform'), 'w');
    }
    expect((await t.api.get(`/api/user-tasks/${id}`)).body.assignee).toBe('ann');
    expect((await t.api.post(`/api/user-tasks/${id}/complete`, { userId: 'ann' })).status).toBe(200);
    await waitForStatus(t.api, instanceId, 'completed');
    const history = await historyOf(instanceId);
    expect(history.filter((e) => e.kind === 'userTask:escalated').map((e) => e.data.escalationCode)).toEqual([
      'late',
      'suspicious-sender',
    ]);
    expect(history.filter((e) => e.kind === 'step:completed' && e.stepId === 'inform')).toHaveLength(2);
  });

  it('given no boundary but an escalation event subprocess, then it catches the code; a code nothing catches is refused and nothing changes', async () => {
    await deploy(
      t.api,
      payment('esc_sub', [
        `<bpmn:subProcess id="onLate" triggeredByEvent="true">
           <bpmn:startEvent id="lateStart"><bpmn:escalationEventDefinition escalationRef="Late" /></bpmn:startEvent>
           ${task('handle', 'esc_sub')}
           <bpmn:endEvent id="handled" />
           ${flow('s1', 'lateStart', 'handle')}
           ${flow('s2', 'handle', 'handled')}
         </bpmn:subProcess>`,
      ]),
    );
    const instanceId = await start(t.api, 'esc_sub');
    const id = await heldTask(instanceId);
    const before = await historyOf(instanceId);
    const notHeld = await t.api.post(`/api/user-tasks/${id}/bpmn-escalation`, { userId: 'bob', escalationCode: 'late' });
    expect(notHeld.status).toBe(409);
    const uncaught = await t.api.post(`/api/user-tasks/${id}/bpmn-escalation`, {
      userId: 'ann',
      escalationCode: 'other',
      variables: { reason: 'never stored' },
    });
    expect(uncaught.status).toBe(409);
    expect(uncaught.body).toMatchObject({ type: 'Conflict', details: { escalationCode: 'other' } });
    expect(uncaught.body.message).toContain('pay');
    expect(await historyOf(instanceId)).toEqual(before);
    expect((await t.api.get(`/api/instances/${instanceId}`)).body.variables).not.toHaveProperty('reason');

    const caught = await t.api.post(`/api/user-tasks/${id}/bpmn-escalation`, { userId: 'ann', escalationCode: 'late' });
    expect(caught.body).toMatchObject({ caughtBy: 'lateStart', taskOpen: false });
    await complete(t.api, await fetchOne(t.api, 'w', 'esc_sub-handle'), 'w');
    await waitForStatus(t.api, instanceId, 'completed');
  });

  it("given Camunda's POST /task/{id}/bpmnEscalation, then the boundary fires (204); no code answers 400, nothing catching the code 409, and neither changes anything", async () => {
    await deploy(
      t.api,
      payment('esc_camunda', [
        '<bpmn:boundaryEvent id="late" attachedToRef="pay"><bpmn:escalationEventDefinition escalationRef="Late" /></bpmn:boundaryEvent>',
        '<bpmn:endEvent id="escalated" />',
        flow('b1', 'late', 'escalated'),
      ]),
    );
    const instanceId = await start(t.api, 'esc_camunda');
    const id = await heldTask(instanceId);
    const noCode = await engineRest(t.url, 'POST', `/task/${id}/bpmnEscalation`, { variables: {} });
    expect(noCode.status).toBe(400);
    expect(noCode.body.type).toBe('InvalidRequestException');
    const missed = await engineRest(t.url, 'POST', `/task/${id}/bpmnEscalation`, { escalationCode: 'other' });
    expect(missed.status).toBe(409);
    expect(missed.body.type).toBe('RestException');
    expect((await t.api.get(`/api/user-tasks/${id}`)).body.assignee).toBe('ann');
    const raised = await engineRest(t.url, 'POST', `/task/${id}/bpmnEscalation`, {
      escalationCode: 'late',
      variables: { reason: { value: 'late', type: 'String' } },
    });
    expect(raised.status).toBe(204);
    const done = await waitForStatus(t.api, instanceId, 'completed');
    expect(done.variables).toMatchObject({ reason: 'late' });
  });
});
