// POST /engine-rest/external-task/:id/progress: a Camunda worker's progress reaches a
// Socket.IO subscriber as a native worker's does, from a plain HTTP call or the handler of an
// official Camunda client worker; only the worker holding the lock may report.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { singleTaskBpmn } from '../support/bpmn.ts';
import { deploy, waitForStatus } from '../support/flows.ts';
import { ProgressClient } from '../support/progress-client.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { clientPool, engineRest, startByKey } from './support.ts';

let t: TestServer;
const clients: ProgressClient[] = [];
const camundaClients = clientPool();

beforeAll(async () => {
  t = await startTestServer();
  await deploy(t.api, singleTaskBpmn('cp_report', 'cp-report'));
});
afterAll(async () => {
  for (const c of clients) c.close();
  camundaClients.stopAll();
  await t?.close();
});

/** Starts an instance and locks its task for `workerId` through fetchAndLock. */
async function lockedTask(workerId: string): Promise<{ instanceId: string; taskId: string }> {
  const instanceId = await startByKey(t.url, 'cp_report');
  const res = await engineRest(t.url, 'POST', '/external-task/fetchAndLock', {
    workerId,
    maxTasks: 1,
    topics: [{ topicName: 'cp-report', lockDuration: 30_000 }],
  });
  expect(res.status).toBe(200);
  expect(res.body).toHaveLength(1);
  expect(res.body[0].processInstanceId).toBe(instanceId);
  return { instanceId, taskId: res.body[0].id as string };
}

const report = (taskId: string, body: unknown) => engineRest(t.url, 'POST', `/external-task/${taskId}/progress`, body);

async function framesOf(instanceId: string, kind: string): Promise<number> {
  const { rows } = await t.db.pool.query('select count(*)::int as n from frames where instance_id = $1 and kind = $2', [
    instanceId,
    kind,
  ]);
  return rows[0].n as number;
}

describe('Camunda progress', () => {
  it('given a Camunda worker holding a task and a subscriber, when the worker posts progress, then 204 and the subscriber gets a task:progress frame with the report', async () => {
    const { instanceId, taskId } = await lockedTask('cw-1');
    const subscriber = new ProgressClient(t.url);
    clients.push(subscriber);
    expect(await subscriber.subscribe({ instanceId })).toMatchObject({ ok: true, generation: 1 });
    const res = await report(taskId, { workerId: 'cw-1', data: { percent: 40, message: 'halfway' } });
    expect(res.status).toBe(204);
    expect(res.body).toBeUndefined();
    const frame = await subscriber.waitForKind(instanceId, 'task:progress');
    expect(frame.data).toMatchObject({ taskId, stepId: 'work', reports: [{ percent: 40, message: 'halfway' }] });
    expect((await engineRest(t.url, 'POST', `/external-task/${taskId}/complete`, { workerId: 'cw-1' })).status).toBe(204);
    await waitForStatus(t.api, instanceId, 'completed');
  });

  it('given a worker on the official Camunda client, when its handler posts progress as docs/workers.md shows, then a subscriber sees it before the completion', async () => {
    await deploy(t.api, singleTaskBpmn('cp_client', 'cp-client'));
    const instanceId = await startByKey(t.url, 'cp_client');
    const subscriber = new ProgressClient(t.url);
    clients.push(subscriber);
    expect(await subscriber.subscribe({ instanceId })).toMatchObject({ ok: true });
    const client = camundaClients.create(t.url, { workerId: 'camunda-progress' });
    client.subscribe('cp-client', async ({ task, taskService }: any) => {
      const res = await fetch(`${t.url}/engine-rest/external-task/${task.id}/progress`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ workerId: 'camunda-progress', data: { percent: 40 } }),
      });
      if (res.status !== 204) throw new Error(`progress answered ${res.status}`);
      await taskService.complete(task);
    });
    client.start();
    await waitForStatus(t.api, instanceId, 'completed');
    camundaClients.stopAll();
    const progress = await subscriber.waitForKind(instanceId, 'task:progress');
    expect(progress.data).toMatchObject({ stepId: 'work', reports: [{ percent: 40 }] });
    const ended = await subscriber.waitForKind(instanceId, 'instance:ended');
    expect(progress.seq).toBeLessThan(ended.seq);
  });

  it('given a task locked by another worker, then a report is refused in Camunda shape and nothing is stored', async () => {
    const { instanceId, taskId } = await lockedTask('cw-2');
    const res = await report(taskId, { workerId: 'intruder', data: { percent: 1 } });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(res.body).toEqual({
      type: 'RestException',
      message: `External Task ${taskId} cannot be given progress by worker 'intruder'. It is locked by worker 'cw-2'.`,
    });
    const { rows } = await t.db.pool.query('select count(*)::int as n from progress_reports where task_id = $1', [taskId]);
    expect(rows[0].n).toBe(0);
    expect(await framesOf(instanceId, 'task:progress')).toBe(0);
  });

  it('given an unknown or finished task, then 404 RestException', async () => {
    const unknown = '00000000-0000-4000-8000-000000000000';
    const missing = await report(unknown, { workerId: 'cw-3', data: 1 });
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ type: 'RestException', message: `External task with id ${unknown} does not exist` });
    expect((await report('not-a-uuid', { workerId: 'cw-3', data: 1 })).status).toBe(404);

    const { taskId } = await lockedTask('cw-3');
    expect((await engineRest(t.url, 'POST', `/external-task/${taskId}/complete`, { workerId: 'cw-3' })).status).toBe(204);
    expect((await report(taskId, { workerId: 'cw-3', data: 1 })).status).toBe(404);
  });

  it('given a bad body, then 400 InvalidRequestException and nothing is stored', async () => {
    const { taskId } = await lockedTask('cw-4');
    for (const body of [{ data: 1 }, { workerId: 'cw-4' }, { workerId: '', data: 1 }, { workerId: 7, data: 1 }, [1]]) {
      const res = await report(taskId, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body).toMatchObject({ type: 'InvalidRequestException', message: expect.any(String) });
    }
    const { rows } = await t.db.pool.query('select count(*)::int as n from progress_reports where task_id = $1', [taskId]);
    expect(rows[0].n).toBe(0);
  });
});
