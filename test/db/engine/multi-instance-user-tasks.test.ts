// Multi-instance user tasks against a real PostgreSQL through the HTTP API: one user task per
// element, each assigned by its own element variable, its result gathered in input order and
// its variables kept to itself; a completion condition that takes the open ones away; one
// after another when sequential; Camunda 8's dialect with its loopCounter from 1; an
// interrupting boundary that ends every element.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { complete, deploy, fetchOne, instanceOf, start, waitForStatus } from '../../support/flows.ts';
import { inlineDefinitions, inlineFlow as flow, inlineTask as task } from '../../support/bpmn.ts';
import { startTestServer, waitFor, type TestServer } from '../../support/server.ts';

let t: TestServer;

beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t?.close();
});

/** start -> review (multi-instance user task over `reviewers`) -> ship (service task) -> end */
function reviews(id: string, marker: string, more: string[] = []): string {
  return inlineDefinitions(id, [
    '<bpmn:startEvent id="start" />',
    `<bpmn:userTask id="review" name="Review" camunda:assignee="\${reviewer}">${marker}</bpmn:userTask>`,
    task('ship', id),
    '<bpmn:endEvent id="end" />',
    flow('f1', 'start', 'review'),
    flow('f2', 'review', 'ship'),
    flow('f3', 'ship', 'end'),
    ...more,
  ]);
}

const c7Marker = (sequential: boolean, condition = '') =>
  `<bpmn:multiInstanceLoopCharacteristics isSequential="${sequential}" camunda:collection="reviewers" camunda:elementVariable="reviewer" baton:outputCollection="verdicts" baton:outputElement="= approved">${
    condition ? `<bpmn:completionCondition>${condition}</bpmn:completionCondition>` : ''
  }</bpmn:multiInstanceLoopCharacteristics>`;

const withBaton = (xml: string) =>
  xml.replace('xmlns:camunda=', 'xmlns:baton="https://baton.dev/schema/bpmn/1.0" xmlns:camunda=');

async function openTasks(instanceId: string, count: number): Promise<any[]> {
  return waitFor(
    async () => {
      const items = (await t.api.get(`/api/user-tasks?instanceId=${instanceId}`)).body.items as any[];
      return items.length === count ? items.sort((a, b) => a.loopCounter - b.loopCounter) : undefined;
    },
    10_000,
    `${count} user tasks of ${instanceId}`,
  );
}

const completeTask = (id: string, userId: string, variables: Record<string, unknown>) =>
  t.api.post(`/api/user-tasks/${id}/complete`, { userId, variables });

describe('multi-instance user tasks', () => {
  it('given a parallel multi-instance user task, then each element is its own task assigned by its element, its result lands in input order and its variables stay its own', async () => {
    const res = await deploy(t.api, withBaton(reviews('miut_parallel', c7Marker(false))));
    expect(JSON.stringify((res as { warnings?: unknown[] }).warnings ?? [])).not.toContain('review');
    const instanceId = await start(t.api, 'miut_parallel', { variables: { reviewers: ['ann', 'bob', 'cy'] } });
    const tasks = await openTasks(instanceId, 3);
    expect(tasks.map((x) => [x.assignee, x.loopCounter, x.localVariables])).toEqual([
      ['ann', 0, { reviewer: 'ann', loopCounter: 0 }],
      ['bob', 1, { reviewer: 'bob', loopCounter: 1 }],
      ['cy', 2, { reviewer: 'cy', loopCounter: 2 }],
    ]);
    expect(tasks.every((x) => x.stepId === 'review' && x.name === 'Review')).toBe(true);
    // Someone else's element is not theirs to complete.
    expect((await completeTask(tasks[0].id, 'bob', { approved: true })).status).toBe(409);

    expect((await completeTask(tasks[1].id, 'bob', { approved: false })).status).toBe(200);
    expect((await completeTask(tasks[2].id, 'cy', { approved: true })).status).toBe(200);
    await openTasks(instanceId, 1);
    expect((await completeTask(tasks[0].id, 'ann', { approved: true })).status).toBe(200);
    // Completing an element twice finds it gone.
    expect((await completeTask(tasks[0].id, 'ann', { approved: true })).status).toBe(404);

    const ship = await fetchOne(t.api, 'w', 'miut_parallel-ship');
    expect(ship.variables.verdicts).toEqual([true, false, true]);
    expect(ship.variables).not.toHaveProperty('approved');
    expect(ship.variables).not.toHaveProperty('reviewer');
    await complete(t.api, ship, 'w');
    await waitForStatus(t.api, instanceId, 'completed');
    const history = (await t.api.get(`/api/instances/${instanceId}/history`)).body.items as { kind: string; data: any }[];
    expect(history.filter((e) => e.kind === 'userTask:completed').map((e) => [e.data.completedBy, e.data.loopCounter])).toEqual([
      ['bob', 1],
      ['cy', 2],
      ['ann', 0],
    ]);
  });

  it('given a completion condition, then the step completes after two elements and the third task is taken away', async () => {
    await deploy(t.api, withBaton(reviews('miut_condition', c7Marker(false, '${nrOfCompletedInstances >= 2}'))));
    const instanceId = await start(t.api, 'miut_condition', { variables: { reviewers: ['ann', 'bob', 'cy'] } });
    const tasks = await openTasks(instanceId, 3);
    expect((await completeTask(tasks[2].id, 'cy', { approved: true })).status).toBe(200);
    expect((await completeTask(tasks[0].id, 'ann', { approved: false })).status).toBe(200);
    const ship = await fetchOne(t.api, 'w', 'miut_condition-ship');
    expect(ship.variables.verdicts).toEqual([false, null, true]);
    expect((await t.api.get(`/api/user-tasks?instanceId=${instanceId}`)).body.items).toEqual([]);
    expect((await completeTask(tasks[1].id, 'bob', { approved: true })).status).toBe(404);
    await complete(t.api, ship, 'w');
    await waitForStatus(t.api, instanceId, 'completed');
  });

  it('given a sequential multi-instance user task, then the next element is created only when the one before is done', async () => {
    await deploy(t.api, withBaton(reviews('miut_sequential', c7Marker(true))));
    const instanceId = await start(t.api, 'miut_sequential', { variables: { reviewers: ['ann', 'bob'] } });
    const [first] = await openTasks(instanceId, 1);
    expect(first).toMatchObject({ assignee: 'ann', loopCounter: 0 });
    expect((await completeTask(first.id, 'ann', { approved: true })).status).toBe(200);
    const [second] = await waitFor(
      async () => {
        const items = (await t.api.get(`/api/user-tasks?instanceId=${instanceId}`)).body.items as any[];
        return items.length === 1 && items[0].id !== first.id ? items : undefined;
      },
      10_000,
      'the second element',
    );
    expect(second).toMatchObject({ assignee: 'bob', loopCounter: 1, localVariables: { reviewer: 'bob', loopCounter: 1 } });
    expect((await completeTask(second.id, 'bob', { approved: false })).status).toBe(200);
    const ship = await fetchOne(t.api, 'w', 'miut_sequential-ship');
    expect(ship.variables.verdicts).toEqual([true, false]);
    await complete(t.api, ship, 'w');
    await waitForStatus(t.api, instanceId, 'completed');
  });

  it('given a Camunda 8 file, then each element is assigned by its FEEL assignee and counts its loopCounter from 1', async () => {
    const xml = `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="D_miut_zeebe" targetNamespace="https://baton.dev/test">
  <bpmn:process id="miut_zeebe" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:userTask id="review">
      <bpmn:extensionElements><zeebe:assignmentDefinition assignee="=reviewer" /></bpmn:extensionElements>
      <bpmn:multiInstanceLoopCharacteristics>
        <bpmn:extensionElements>
          <zeebe:loopCharacteristics inputCollection="=reviewers" inputElement="reviewer" outputCollection="verdicts" outputElement="=approved" />
        </bpmn:extensionElements>
      </bpmn:multiInstanceLoopCharacteristics>
    </bpmn:userTask>
    <bpmn:serviceTask id="ship"><bpmn:extensionElements><zeebe:taskDefinition type="miut_zeebe-ship" /></bpmn:extensionElements></bpmn:serviceTask>
    <bpmn:endEvent id="end" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="review" />
    <bpmn:sequenceFlow id="f2" sourceRef="review" targetRef="ship" />
    <bpmn:sequenceFlow id="f3" sourceRef="ship" targetRef="end" />
  </bpmn:process>
</bpmn:definitions>`;
    const res = await deploy(t.api, xml);
    expect(JSON.stringify((res as { warnings?: unknown[] }).warnings ?? [])).not.toContain('loopCounter');
    const instanceId = await start(t.api, 'miut_zeebe', { variables: { reviewers: ['ann', 'bob'] } });
    const tasks = await openTasks(instanceId, 2);
    expect(tasks.map((x) => [x.assignee, x.loopCounter])).toEqual([
      ['ann', 1],
      ['bob', 2],
    ]);
    for (const x of tasks) expect((await completeTask(x.id, x.assignee, { approved: x.assignee === 'bob' })).status).toBe(200);
    const ship = await fetchOne(t.api, 'w', 'miut_zeebe-ship');
    expect(ship.variables.verdicts).toEqual([false, true]);
    await complete(t.api, ship, 'w');
    await waitForStatus(t.api, instanceId, 'completed');
  });

  it('given an interrupting timer boundary on a parallel multi-instance user task, then it ends every open element and the boundary path runs', async () => {
    await deploy(
      t.api,
      withBaton(
        reviews('miut_boundary', c7Marker(false), [
          '<bpmn:boundaryEvent id="late" attachedToRef="review"><bpmn:timerEventDefinition><bpmn:timeDuration>PT1S</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:boundaryEvent>',
          task('chase', 'miut_boundary'),
          '<bpmn:endEvent id="chased" />',
          flow('f4', 'late', 'chase'),
          flow('f5', 'chase', 'chased'),
        ]),
      ),
    );
    const instanceId = await start(t.api, 'miut_boundary', { variables: { reviewers: ['ann', 'bob', 'cy'] } });
    const tasks = await openTasks(instanceId, 3);
    expect((await completeTask(tasks[0].id, 'ann', { approved: true })).status).toBe(200);
    const chase = await fetchOne(t.api, 'w', 'miut_boundary-chase');
    expect((await t.api.get(`/api/user-tasks?instanceId=${instanceId}`)).body.items).toEqual([]);
    expect((await completeTask(tasks[1].id, 'bob', { approved: true })).status).toBe(404);
    await complete(t.api, chase, 'w');
    await waitForStatus(t.api, instanceId, 'completed');
    const steps = Object.fromEntries(
      ((await instanceOf(t.api, instanceId)).steps as { stepId: string; status: string }[]).map((s) => [s.stepId, s.status]),
    );
    expect(steps).toMatchObject({ review: 'canceled', late: 'completed', chase: 'completed', ship: 'skipped' });
  });

  it('given an element whose assignee cannot be evaluated, then the step stops in an incident before any task is created, and its retry creates them', async () => {
    await deploy(t.api, withBaton(reviews('miut_incident', c7Marker(false))));
    const instanceId = await start(t.api, 'miut_incident', { variables: { reviewers: [{ name: 'ann' }, 'bob'] } });
    const stuck = await waitForStatus(t.api, instanceId, 'incident');
    expect(stuck.incidents).toMatchObject([{ stepId: 'review', kind: 'condition_error' }]);
    expect((await t.api.get(`/api/user-tasks?instanceId=${instanceId}`)).body.items).toEqual([]);
    const retry = await t.api.post(`/api/incidents/${stuck.incidents[0].id}/retry`, {
      variables: { reviewers: ['ann', 'bob'] },
    });
    expect(retry.status, JSON.stringify(retry.body)).toBeLessThan(300);
    const tasks = await openTasks(instanceId, 2);
    expect(tasks.map((x) => x.assignee)).toEqual(['ann', 'bob']);
  });
});
