// Boundary events without outgoing sequence flows, against a real PostgreSQL through the HTTP
// API. BPMN reads such a boundary as the end of the path it starts, as Camunda 7 runs it: an
// interrupting one cancels its host and the path ends there, so the scope completes when nothing
// else in it runs; a non-interrupting one fires and its host goes on.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBpmn, type EventTrigger } from '../../support/bpmn.ts';
import { complete, deploy, fetchOne, fetchTasks, instanceOf, start, waitForStatus } from '../../support/flows.ts';
import { startTestServer, type TestServer } from '../../support/server.ts';

let t: TestServer;

beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t?.close();
});

/** start -> work (service task) -> after (service task) -> end, with boundary b on work and no flow out of b */
function endingBoundary(key: string, trigger: EventTrigger, interrupting = true): string {
  return buildBpmn(
    key,
    [
      { id: 'start', type: 'startEvent' },
      { id: 'work', type: 'serviceTask', topic: `${key}-work` },
      { id: 'b', type: 'boundaryEvent', attachedTo: 'work', interrupting, ...trigger },
      { id: 'after', type: 'serviceTask', topic: `${key}-after` },
      { id: 'end', type: 'endEvent' },
    ],
    [
      { from: 'start', to: 'work' },
      { from: 'work', to: 'after' },
      { from: 'after', to: 'end' },
    ],
  );
}

async function statuses(id: string): Promise<Record<string, string>> {
  const view = await instanceOf(t.api, id);
  return Object.fromEntries((view.steps as { stepId: string; status: string }[]).map((s) => [s.stepId, s.status]));
}

describe('boundary events without outgoing flows', () => {
  it('given an interrupting message boundary, when the message comes, then the task is canceled, its late complete answers 409, and the instance completes without the steps after the task', async () => {
    await deploy(t.api, endingBoundary('bpe_message', { message: 'bpe-stop' }));
    const id = await start(t.api, 'bpe_message', { businessKey: 'bpe-1' });
    const work = await fetchOne(t.api, 'w', 'bpe_message-work');
    const res = await t.api.post('/api/messages', { name: 'bpe-stop', correlationKey: 'bpe-1' });
    expect(res.body).toMatchObject({ status: 'matched', instanceId: id });
    await waitForStatus(t.api, id, 'completed');
    expect((await complete(t.api, work, 'w')).status).toBe(409);
    expect(await fetchTasks(t.api, 'w', ['bpe_message-after'])).toEqual([]);
    const steps = await statuses(id);
    expect(steps).toMatchObject({ work: 'canceled', b: 'completed' });
    expect(steps.after === undefined || steps.after === 'skipped').toBe(true);
  });

  it('given an error boundary, when the worker throws its error, then the path ends at the boundary and the instance completes', async () => {
    await deploy(t.api, endingBoundary('bpe_error', { error: { code: 'GONE' } }));
    const id = await start(t.api, 'bpe_error');
    const work = await fetchOne(t.api, 'w', 'bpe_error-work');
    const thrown = await t.api.post(`/api/external-tasks/${work.id}/bpmn-error`, {
      workerId: 'w',
      lockToken: work.lockToken,
      errorCode: 'GONE',
    });
    expect(thrown.status).toBe(204);
    await waitForStatus(t.api, id, 'completed');
    expect(await statuses(id)).toMatchObject({ b: 'completed' });
    expect(await fetchTasks(t.api, 'w', ['bpe_error-after'])).toEqual([]);
  });

  it('given a non-interrupting message boundary, when the message comes twice, then it fires twice and the task goes on to the steps after it', async () => {
    await deploy(t.api, endingBoundary('bpe_notify', { message: 'bpe-ping' }, false));
    const id = await start(t.api, 'bpe_notify', { businessKey: 'bpe-2' });
    const work = await fetchOne(t.api, 'w', 'bpe_notify-work');
    for (let i = 1; i <= 2; i++) {
      const res = await t.api.post('/api/messages', { name: 'bpe-ping', correlationKey: 'bpe-2', variables: { round: i } });
      expect(res.body, `message ${i}`).toMatchObject({ status: 'matched', instanceId: id });
    }
    expect((await instanceOf(t.api, id)).variables).toMatchObject({ round: 2 });
    expect((await complete(t.api, work, 'w')).status).toBe(204);
    expect((await complete(t.api, await fetchOne(t.api, 'w', 'bpe_notify-after'), 'w')).status).toBe(204);
    await waitForStatus(t.api, id, 'completed');
    const events = (await t.api.get(`/api/instances/${id}/history`)).body.items as { kind: string; stepId?: string }[];
    expect(events.filter((e) => e.kind === 'step:completed' && e.stepId === 'b')).toHaveLength(2);
  });

  it('given an interrupting timer boundary inside a subprocess, when it fires, then the subprocess completes and the process goes on after it', async () => {
    const key = 'bpe_sub';
    await deploy(
      t.api,
      buildBpmn(
        key,
        [
          { id: 'start', type: 'startEvent' },
          {
            id: 'sub',
            type: 'subProcess',
            nodes: [
              { id: 'sub_start', type: 'startEvent' },
              { id: 'work', type: 'serviceTask', topic: `${key}-work` },
              { id: 'b', type: 'boundaryEvent', attachedTo: 'work', timer: { duration: 'PT0.2S' } },
              { id: 'sub_end', type: 'endEvent' },
            ],
            flows: [
              { from: 'sub_start', to: 'work' },
              { from: 'work', to: 'sub_end' },
            ],
          },
          { id: 'after', type: 'serviceTask', topic: `${key}-after` },
          { id: 'end', type: 'endEvent' },
        ],
        [
          { from: 'start', to: 'sub' },
          { from: 'sub', to: 'after' },
          { from: 'after', to: 'end' },
        ],
      ),
    );
    const id = await start(t.api, key);
    const work = await fetchOne(t.api, 'w', `${key}-work`);
    const after = await fetchOne(t.api, 'w', `${key}-after`);
    expect((await complete(t.api, work, 'w')).status).toBe(409);
    expect(await statuses(id)).toMatchObject({ work: 'canceled', b: 'completed', sub: 'completed' });
    expect((await complete(t.api, after, 'w')).status).toBe(204);
    await waitForStatus(t.api, id, 'completed');
  });
});
