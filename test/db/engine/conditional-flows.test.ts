// Conditional sequence flows out of a task (Camunda 7) against a real PostgreSQL: the task takes
// its unconditional flows, each conditional one whose condition holds, and its default flow when
// none does; with only conditional flows and none holding, its path ends and the instance
// completes. The split drawn after the task records what it tested.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { complete, deploy, fetchOne, fetchTasks, start, waitForStatus } from '../../support/flows.ts';
import { startTestServer, type TestServer } from '../../support/server.ts';

let t: TestServer;

function task(id: string, topic: string, attributes = ''): string {
  return `<bpmn:serviceTask id="${id}" camunda:type="external" camunda:topic="${topic}" ${attributes} />`;
}

function flow(id: string, from: string, to: string, condition?: string): string {
  return condition === undefined
    ? `<bpmn:sequenceFlow id="${id}" sourceRef="${from}" targetRef="${to}" />`
    : `<bpmn:sequenceFlow id="${id}" sourceRef="${from}" targetRef="${to}"><bpmn:conditionExpression xsi:type="bpmn:tFormalExpression">${condition}</bpmn:conditionExpression></bpmn:sequenceFlow>`;
}

function processXml(id: string, body: string[]): string {
  return `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="D_${id}" targetNamespace="https://baton.dev/test">
  <bpmn:process id="${id}" isExecutable="true">
    ${body.join('\n    ')}
  </bpmn:process>
</bpmn:definitions>`;
}

beforeAll(async () => {
  t = await startTestServer();
  // check -> (big: amount > 10) notify, (always) book, (default) fallback
  await deploy(
    t.api,
    processXml('cf_mixed', [
      '<bpmn:startEvent id="start" />',
      task('check', 'cf-check', 'default="toFallback"'),
      task('notify', 'cf-notify'),
      task('book', 'cf-book'),
      task('fallback', 'cf-fallback'),
      '<bpmn:endEvent id="endNotify" /><bpmn:endEvent id="endBook" /><bpmn:endEvent id="endFallback" />',
      flow('f0', 'start', 'check'),
      flow('toNotify', 'check', 'notify', '${amount > 10}'),
      flow('toBook', 'check', 'book'),
      flow('toFallback', 'check', 'fallback'),
      flow('f1', 'notify', 'endNotify'),
      flow('f2', 'book', 'endBook'),
      flow('f3', 'fallback', 'endFallback'),
    ]),
  );
  // check -> (amount > 10) big, (amount <= 0) refund; nothing else
  await deploy(
    t.api,
    processXml('cf_only', [
      '<bpmn:startEvent id="start" />',
      task('check', 'cf-only-check'),
      task('big', 'cf-only-big'),
      task('refund', 'cf-only-refund'),
      '<bpmn:endEvent id="endBig" /><bpmn:endEvent id="endRefund" />',
      flow('f0', 'start', 'check'),
      flow('toBig', 'check', 'big', '${amount > 10}'),
      flow('toRefund', 'check', 'refund', '${amount &lt;= 0}'),
      flow('f1', 'big', 'endBig'),
      flow('f2', 'refund', 'endRefund'),
    ]),
  );
});
afterAll(async () => {
  await t.close();
});

async function run(key: string, topic: string, amount: number): Promise<string> {
  const id = await start(t.api, key, { variables: { amount } });
  const check = await fetchOne(t.api, 'w', topic);
  expect(check.instanceId).toBe(id);
  expect((await complete(t.api, check, 'w')).status).toBe(204);
  return id;
}

async function openTopics(topics: string[]): Promise<string[]> {
  const tasks = await fetchTasks(t.api, 'w', topics);
  for (const task of tasks) await complete(t.api, task, 'w');
  return tasks.map((task) => task.topic).sort();
}

describe('conditional flows out of a task', () => {
  it('given a condition that holds beside an unconditional flow, then both are taken and the default is not', async () => {
    const id = await run('cf_mixed', 'cf-check', 20);
    await waitForStatus(t.api, id, 'running');
    expect(await openTopics(['cf-notify', 'cf-book', 'cf-fallback'])).toEqual(['cf-book', 'cf-notify']);
    await waitForStatus(t.api, id, 'completed');
    const history = (await t.api.get(`/api/instances/${id}/history`)).body.items as {
      kind: string;
      stepId?: string;
      data?: any;
    }[];
    const split = history.find((e) => e.kind === 'step:completed' && e.stepId === 'split:check');
    expect(split?.data).toMatchObject({ taken: ['toNotify', 'toBook'], byDefault: false });
    expect(history.filter((e) => e.stepId === 'fallback').map((e) => e.kind)).toEqual(['step:skipped']);
  });

  it('given a condition that does not hold, then the unconditional flow is taken and still not the default', async () => {
    const id = await run('cf_mixed', 'cf-check', 5);
    expect(await openTopics(['cf-notify', 'cf-book', 'cf-fallback'])).toEqual(['cf-book']);
    await waitForStatus(t.api, id, 'completed');
  });

  it('given only conditional flows, then the one that holds is taken, and when none holds the path ends and the instance completes', async () => {
    const refund = await run('cf_only', 'cf-only-check', -1);
    expect(await openTopics(['cf-only-big', 'cf-only-refund'])).toEqual(['cf-only-refund']);
    await waitForStatus(t.api, refund, 'completed');

    const none = await run('cf_only', 'cf-only-check', 5);
    const done = await waitForStatus(t.api, none, 'completed');
    expect(done.incidents ?? []).toEqual([]);
    expect(await fetchTasks(t.api, 'w', ['cf-only-big', 'cf-only-refund'])).toEqual([]);
  });
});
