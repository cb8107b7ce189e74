// Input/output mappings through /engine-rest/external-task: a Camunda 7 worker sees a task's
// inputs in fetchAndLock, its complete goes through the outputs, and the locals stay on the task.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBpmn } from '../support/bpmn.ts';
import { deploy, waitForStatus } from '../support/flows.ts';
import { startTestServer, waitFor, type TestServer } from '../support/server.ts';
import { engineRest, startByKey } from './support.ts';

let t: TestServer;

beforeAll(async () => {
  t = await startTestServer();
  await deploy(
    t.api,
    buildBpmn(
      'cio',
      [
        { id: 'start', type: 'startEvent' },
        {
          id: 'work',
          type: 'serviceTask',
          topic: 'cio-work',
          io: {
            inputs: [
              ['amount', '${order.total}'],
              ['currency', 'EUR'],
            ],
            outputs: [['charged', '${amount}']],
          },
        },
        { id: 'end', type: 'endEvent' },
      ],
      [
        { from: 'start', to: 'work' },
        { from: 'work', to: 'end' },
      ],
    ),
  );
});
afterAll(async () => {
  await t.close();
});

async function fetchOneCamunda(topicName: string) {
  return waitFor(
    async () => {
      const res = await engineRest(t.url, 'POST', '/external-task/fetchAndLock', {
        workerId: 'cw',
        maxTasks: 1,
        topics: [{ topicName, lockDuration: 30_000 }],
      });
      expect(res.status).toBe(200);
      return res.body[0];
    },
    10_000,
    `a task on ${topicName}`,
  );
}

describe('input/output mappings through the Camunda 7 worker API', () => {
  it('given a task with inputs and an output, then fetchAndLock shows the inputs and complete writes only the output', async () => {
    const id = await startByKey(t.url, 'cio', { variables: { order: { value: '{"total":5}', type: 'Json' } } });
    const task = await fetchOneCamunda('cio-work');
    expect(task.variables.amount).toMatchObject({ value: 5 });
    expect(task.variables.currency).toMatchObject({ value: 'EUR', type: 'String' });
    const done = await engineRest(t.url, 'POST', `/external-task/${task.id}/complete`, {
      workerId: 'cw',
      variables: { amount: { value: 7 }, note: { value: 'x' } },
    });
    expect(done.status).toBe(204);
    const instance = await waitForStatus(t.api, id, 'completed');
    expect(instance.variables).toEqual({ order: { total: 5 }, charged: 7 });
  });
});
