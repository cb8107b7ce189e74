import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBpmn } from '../../support/bpmn.ts';
import { complete, deploy, fetchOne, start, waitForStatus } from '../../support/flows.ts';
import { startTestServer, type TestServer } from '../../support/server.ts';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
  await deploy(
    t.api,
    buildBpmn(
      'charging',
      [
        { id: 's', type: 'startEvent' },
        { id: 'charge', type: 'serviceTask', topic: 'charge' },
        {
          id: 'declined',
          type: 'boundaryEvent',
          attachedTo: 'charge',
          error: { code: 'CARD_DECLINED', codeVariable: 'errorCode', messageVariable: 'errorText' },
        },
        { id: 'anyError', type: 'boundaryEvent', attachedTo: 'charge', error: {} },
        { id: 'notify', type: 'serviceTask', topic: 'notify-customer' },
        { id: 'review', type: 'serviceTask', topic: 'manual-review' },
        { id: 'ok', type: 'endEvent' },
        { id: 'e1', type: 'endEvent' },
        { id: 'e2', type: 'endEvent' },
      ],
      [
        { from: 's', to: 'charge' },
        { from: 'charge', to: 'ok' },
        { from: 'declined', to: 'notify' },
        { from: 'notify', to: 'e1' },
        { from: 'anyError', to: 'review' },
        { from: 'review', to: 'e2' },
      ],
    ),
  );
});
afterAll(async () => {
  await t.close();
});

function bpmnError(task: { id: string; lockToken: string }, errorCode: string, errorMessage?: string) {
  return t.api.post(`/api/external-tasks/${task.id}/bpmn-error`, {
    workerId: 'w',
    lockToken: task.lockToken,
    errorCode,
    ...(errorMessage ? { errorMessage } : {}),
  });
}

describe('error boundary events', () => {
  it('given a BPMN error whose code a boundary names, then that boundary path runs with the code and message in variables', async () => {
    const id = await start(t.api, 'charging');
    const task = await fetchOne(t.api, 'w', 'charge');
    expect((await bpmnError(task, 'CARD_DECLINED', 'insufficient funds')).status).toBe(204);
    const notify = await fetchOne(t.api, 'w', 'notify-customer');
    expect(notify.variables).toMatchObject({ errorCode: 'CARD_DECLINED', errorText: 'insufficient funds' });
    expect((await bpmnError(task, 'CARD_DECLINED', 'insufficient funds')).status).toBe(204); // repeat: no-op
    await complete(t.api, notify, 'w');
    const done = await waitForStatus(t.api, id, 'completed');
    const status = Object.fromEntries(done.steps.map((s: { stepId: string; status: string }) => [s.stepId, s.status]));
    expect(status).toMatchObject({
      charge: 'canceled',
      declined: 'completed',
      anyError: 'skipped',
      ok: 'skipped',
      review: 'skipped',
      e1: 'completed',
    });
    expect(done.incidents).toEqual([]);
  });

  it('given a code no boundary names, then the catch-all boundary takes it', async () => {
    const id = await start(t.api, 'charging');
    const task = await fetchOne(t.api, 'w', 'charge');
    await bpmnError(task, 'FRAUD_SUSPECTED');
    const review = await fetchOne(t.api, 'w', 'manual-review');
    expect(review.instanceId).toBe(id);
    await complete(t.api, review, 'w');
    const done = await waitForStatus(t.api, id, 'completed');
    expect(done.steps.find((s: { stepId: string }) => s.stepId === 'declined').status).toBe('skipped');
  });

  it('given a task completed normally, then its error boundaries are skipped', async () => {
    const id = await start(t.api, 'charging');
    const task = await fetchOne(t.api, 'w', 'charge');
    await complete(t.api, task, 'w');
    const done = await waitForStatus(t.api, id, 'completed');
    const status = Object.fromEntries(done.steps.map((s: { stepId: string; status: string }) => [s.stepId, s.status]));
    expect(status).toMatchObject({ charge: 'completed', declined: 'skipped', anyError: 'skipped', ok: 'completed' });
  });
});
