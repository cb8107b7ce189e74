// User tasks against a real PostgreSQL through the HTTP API: candidates evaluated when the task is
// created, one winner when two people claim at once, no claim for someone who is not a candidate,
// no completion without the claim, a form that refuses wrong input and changes nothing, and
// boundary timers on the task (a reminder beside it, an escalation that takes it away).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deploy, deployMappingsRun, fetchOne, complete, instanceOf, start, waitForStatus } from '../../support/flows.ts';
import { inlineDefinitions, inlineFlow as flow, inlineTask as task } from '../../support/bpmn.ts';
import { startTestServer, waitFor, type TestServer } from '../../support/server.ts';

let t: TestServer;

beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t?.close();
});

const APPROVE = `<bpmn:userTask id="approve" name="Approve order" camunda:candidateUsers="alice, bob" camunda:candidateGroups="\${team}" camunda:dueDate="P2D" camunda:priority="\${urgency}">
  <bpmn:extensionElements>
    <camunda:formData>
      <camunda:formField id="approved" label="Approved" type="boolean">
        <camunda:validation><camunda:constraint name="required" /></camunda:validation>
      </camunda:formField>
      <camunda:formField id="amount" type="long">
        <camunda:validation><camunda:constraint name="min" config="0" /><camunda:constraint name="max" config="1000" /></camunda:validation>
      </camunda:formField>
      <camunda:formField id="channel" type="enum"><camunda:value id="mail" name="Mail" /><camunda:value id="phone" name="Phone" /></camunda:formField>
    </camunda:formData>
  </bpmn:extensionElements>
</bpmn:userTask>`;

/** start -> approve (user task, `boundaries` on it) -> ship (service task) -> end */
function approval(id: string, boundaries: string[] = []): string {
  return inlineDefinitions(id, [
    '<bpmn:startEvent id="start" />',
    APPROVE,
    task('ship', id),
    '<bpmn:endEvent id="end" />',
    flow('f1', 'start', 'approve'),
    flow('f2', 'approve', 'ship'),
    flow('f3', 'ship', 'end'),
    ...boundaries,
  ]);
}

async function openTask(instanceId: string): Promise<any> {
  return waitFor(
    async () => (await t.api.get(`/api/user-tasks?instanceId=${instanceId}`)).body.items[0],
    10_000,
    `a user task of ${instanceId}`,
  );
}

const claim = (id: string, userId: string, groups?: string[]) =>
  t.api.post(`/api/user-tasks/${id}/claim`, { userId, ...(groups ? { groups } : {}) });

describe('user tasks', () => {
  it('given a user task, then its candidates, due date and priority are evaluated when it is created, and it shows its form', async () => {
    await deploy(t.api, approval('ut_created'));
    const instanceId = await start(t.api, 'ut_created', { variables: { team: 'sales', urgency: 80 } });
    const listed = await openTask(instanceId);
    expect(listed).toMatchObject({
      instanceId,
      stepId: 'approve',
      name: 'Approve order',
      assignee: null,
      candidateUsers: ['alice', 'bob'],
      candidateGroups: ['sales'],
      priority: 80,
    });
    const due = Date.parse(listed.dueAt) - Date.parse(listed.createdAt);
    expect(Math.abs(due - 2 * 86_400_000)).toBeLessThan(60_000);

    const one = await t.api.get(`/api/user-tasks/${listed.id}`);
    expect(one.status).toBe(200);
    expect(one.body.name).toBe('Approve order');
    expect(one.body.form.fields.map((f: { id: string }) => f.id)).toEqual(['approved', 'amount', 'channel']);
    const mine = await t.api.get(`/api/user-tasks?candidateUser=carol&candidateGroups=sales,ops&instanceId=${instanceId}`);
    expect(mine.body.items.map((x: { id: string }) => x.id)).toEqual([listed.id]);
    const notMine = await t.api.get(`/api/user-tasks?candidateUser=carol&candidateGroups=ops&instanceId=${instanceId}`);
    expect(notMine.body.items).toEqual([]);
  });

  it('given two candidates claiming at once, then one wins and the other gets 409; an outsider cannot claim; nobody completes without the claim', async () => {
    await deploy(t.api, approval('ut_claims'));
    const instanceId = await start(t.api, 'ut_claims', { variables: { team: 'sales', urgency: 50 } });
    const { id } = await openTask(instanceId);

    const outsider = await claim(id, 'mallory', ['ops']);
    expect(outsider.status, JSON.stringify(outsider.body)).toBe(403);
    expect(outsider.body.message).toContain('"mallory" is not a candidate');

    const unclaimed = await t.api.post(`/api/user-tasks/${id}/complete`, { userId: 'alice', variables: { approved: true } });
    expect(unclaimed.status).toBe(409);
    expect(unclaimed.body.message).toContain('is not claimed');

    const [a, b] = await Promise.all([claim(id, 'alice'), claim(id, 'bob')]);
    expect([a.status, b.status].sort()).toEqual([200, 409]);
    const winner = a.status === 200 ? 'alice' : 'bob';
    const loser = winner === 'alice' ? 'bob' : 'alice';
    expect((await t.api.get(`/api/user-tasks/${id}`)).body.assignee).toBe(winner);

    const byLoser = await t.api.post(`/api/user-tasks/${id}/complete`, { userId: loser, variables: { approved: true } });
    expect(byLoser.status).toBe(409);
    // A member of a candidate group may claim once the task is free again.
    expect((await t.api.post(`/api/user-tasks/${id}/unclaim`, { userId: winner })).status).toBe(200);
    const byGroup = await claim(id, 'carol', ['sales']);
    expect(byGroup.status, JSON.stringify(byGroup.body)).toBe(200);
    expect(byGroup.body.assignee).toBe('carol');

    const history = (await t.api.get(`/api/instances/${instanceId}/history`)).body.items as any[];
    const actions = history.filter((e) => e.kind.startsWith('userTask:')).map((e) => [e.kind, e.data.userId]);
    expect(actions).toEqual([
      ['userTask:claimed', winner],
      ['userTask:unclaimed', winner],
      ['userTask:claimed', 'carol'],
    ]);
  });

  it('given wrong form input, then the completion is refused naming the field and nothing changes; right input moves the instance on', async () => {
    await deploy(t.api, approval('ut_form'));
    const instanceId = await start(t.api, 'ut_form', { variables: { team: 'sales', urgency: 50 } });
    const { id } = await openTask(instanceId);
    expect((await claim(id, 'alice')).status).toBe(200);
    const before = await instanceOf(t.api, instanceId);

    for (const [variables, field, says] of [
      [{ amount: 10 }, 'approved', 'is required'],
      [{ approved: 'yes' }, 'approved', 'must be true or false'],
      [{ approved: true, amount: 5000 }, 'amount', 'must be at most 1000'],
      [{ approved: true, amount: 1.5 }, 'amount', 'must be a whole number'],
      [{ approved: true, channel: 'fax' }, 'channel', 'must be one of mail, phone'],
    ] as const) {
      const refused = await t.api.post(`/api/user-tasks/${id}/complete`, { userId: 'alice', variables });
      expect(refused.status, JSON.stringify(variables)).toBe(400);
      expect(refused.body.type).toBe('ValidationError');
      expect(refused.body.details.fields[0].field).toBe(field);
      expect(refused.body.message).toContain(says);
    }
    const unchanged = await instanceOf(t.api, instanceId);
    expect(unchanged.variables).toEqual(before.variables);
    expect(unchanged.revision).toBe(before.revision);
    expect((await t.api.get(`/api/user-tasks/${id}`)).status).toBe(200);

    const done = await t.api.post(`/api/user-tasks/${id}/complete`, {
      userId: 'alice',
      variables: { approved: true, amount: 250, channel: 'phone' },
    });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    const shipping = await fetchOne(t.api, 'w1', 'ut_form-ship');
    expect(shipping.variables).toMatchObject({ approved: true, amount: 250, channel: 'phone' });
    await complete(t.api, shipping, 'w1');
    await waitForStatus(t.api, instanceId, 'completed');
    expect((await t.api.get(`/api/user-tasks/${id}`)).status).toBe(404);
    const history = (await t.api.get(`/api/instances/${instanceId}/history`)).body.items as any[];
    expect(history.find((e) => e.kind === 'step:completed' && e.stepId === 'approve')?.data).toMatchObject({
      trigger: 'user',
      taskId: id,
      completedBy: 'alice',
    });
  });

  it('given boundary timers on a user task, then a non-interrupting reminder runs beside it and an interrupting escalation takes it away', async () => {
    await deploy(
      t.api,
      approval('ut_timers', [
        '<bpmn:boundaryEvent id="remind" attachedToRef="approve" cancelActivity="false"><bpmn:timerEventDefinition><bpmn:timeDuration>PT0.2S</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:boundaryEvent>',
        task('sendReminder', 'ut_timers'),
        '<bpmn:endEvent id="reminded" />',
        flow('f4', 'remind', 'sendReminder'),
        flow('f5', 'sendReminder', 'reminded'),
        '<bpmn:boundaryEvent id="escalate" attachedToRef="approve"><bpmn:timerEventDefinition><bpmn:timeDuration>PT1.5S</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:boundaryEvent>',
        task('tellManager', 'ut_timers'),
        '<bpmn:endEvent id="escalated" />',
        flow('f6', 'escalate', 'tellManager'),
        flow('f7', 'tellManager', 'escalated'),
      ]),
    );
    const instanceId = await start(t.api, 'ut_timers', { variables: { team: 'sales', urgency: 50 } });
    const { id } = await openTask(instanceId);
    expect((await claim(id, 'bob')).status).toBe(200);

    const reminder = await fetchOne(t.api, 'w2', 'ut_timers-sendReminder');
    expect((await t.api.get(`/api/user-tasks/${id}`)).body.assignee).toBe('bob');
    await complete(t.api, reminder, 'w2');

    const manager = await fetchOne(t.api, 'w2', 'ut_timers-tellManager');
    const late = await t.api.post(`/api/user-tasks/${id}/complete`, { userId: 'bob', variables: { approved: true } });
    expect(late.status).toBe(404);
    await complete(t.api, manager, 'w2');
    await waitForStatus(t.api, instanceId, 'completed');
    const steps = Object.fromEntries(
      ((await instanceOf(t.api, instanceId)).steps as { stepId: string; status: string }[]).map((s) => [s.stepId, s.status]),
    );
    expect(steps).toMatchObject({ approve: 'canceled', remind: 'completed', escalate: 'completed', sendReminder: 'completed' });
    expect(steps.ship).toBe('skipped');
  });

  it('given an error boundary on a user task, then the holder reports the error, the boundary path runs and the task ends; an uncaught code changes nothing', async () => {
    await deploy(
      t.api,
      approval('ut_error', [
        '<bpmn:boundaryEvent id="rejected" attachedToRef="approve"><bpmn:errorEventDefinition errorRef="err_rejected" camunda:errorMessageVariable="why" /></bpmn:boundaryEvent>',
        '<bpmn:endEvent id="closed" />',
        flow('f4', 'rejected', 'closed'),
      ]).replace('</bpmn:definitions>', '<bpmn:error id="err_rejected" errorCode="REJECTED" /></bpmn:definitions>'),
    );
    const instanceId = await start(t.api, 'ut_error', { variables: { team: 'sales', urgency: 50 } });
    const { id } = await openTask(instanceId);
    const notHeld = await t.api.post(`/api/user-tasks/${id}/bpmn-error`, { userId: 'bob', errorCode: 'REJECTED' });
    expect(notHeld.status).toBe(409);
    expect((await claim(id, 'bob')).status).toBe(200);
    const uncaught = await t.api.post(`/api/user-tasks/${id}/bpmn-error`, { userId: 'bob', errorCode: 'OTHER' });
    expect(uncaught.status).toBe(409);
    expect(uncaught.body.message).toContain('No error boundary');
    expect((await t.api.get(`/api/user-tasks/${id}`)).body.assignee).toBe('bob');

    const thrown = await t.api.post(`/api/user-tasks/${id}/bpmn-error`, {
      userId: 'bob',
      errorCode: 'REJECTED',
      errorMessage: 'price too high',
      variables: { note: 'call the customer' },
    });
    expect(thrown.status, JSON.stringify(thrown.body)).toBe(200);
    const done = await waitForStatus(t.api, instanceId, 'completed');
    expect(done.variables).toMatchObject({ why: 'price too high', note: 'call the customer' });
    expect((await t.api.get(`/api/user-tasks/${id}`)).status).toBe(404);
    const steps = Object.fromEntries((done.steps as { stepId: string; status: string }[]).map((x) => [x.stepId, x.status]));
    expect(steps).toMatchObject({ approve: 'canceled', rejected: 'completed', closed: 'completed' });
    const history = (await t.api.get(`/api/instances/${instanceId}/history`)).body.items as any[];
    expect(history.find((e) => e.kind === 'userTask:bpmn_error')?.data).toMatchObject({
      taskId: id,
      errorCode: 'REJECTED',
      userId: 'bob',
    });
  });

  it('given an operator, then assignee gives the task to anyone and null frees it', async () => {
    await deploy(t.api, approval('ut_assign'));
    const instanceId = await start(t.api, 'ut_assign', { variables: { team: 'sales', urgency: 50 } });
    const { id } = await openTask(instanceId);
    expect((await claim(id, 'alice')).status).toBe(200);
    const given = await t.api.post(`/api/user-tasks/${id}/assignee`, { assignee: 'zoe' });
    expect(given.status).toBe(200);
    expect(given.body.assignee).toBe('zoe');
    expect((await t.api.get(`/api/user-tasks?assignee=zoe&instanceId=${instanceId}`)).body.items).toHaveLength(1);
    const freed = await t.api.post(`/api/user-tasks/${id}/assignee`, { assignee: null });
    expect(freed.body.assignee).toBeNull();
    expect((await t.api.get(`/api/user-tasks?unassigned=true&instanceId=${instanceId}`)).body.items).toHaveLength(1);
  });

  it('given input and output mappings on a Camunda 8 user task, then its attributes and the person see the inputs, only the outputs reach the process, and a failing output refuses the completion', async () => {
    const xml = `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="D_ut_io" targetNamespace="https://baton.dev/test">
  <bpmn:process id="ut_io" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:userTask id="review">
      <bpmn:extensionElements>
        <zeebe:userTask />
        <zeebe:assignmentDefinition assignee="=reviewer" />
        <zeebe:ioMapping>
          <zeebe:input source="=order.owner" target="reviewer" />
          <zeebe:input source="=order.total * 2" target="limit" />
          <zeebe:output source="=decision = &quot;ok&quot; and 2 in (1..amount)" target="approved" />
        </zeebe:ioMapping>
      </bpmn:extensionElements>
    </bpmn:userTask>
    <bpmn:serviceTask id="ship"><bpmn:extensionElements><zeebe:taskDefinition type="ut_io-ship" /></bpmn:extensionElements></bpmn:serviceTask>
    <bpmn:endEvent id="end" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="review" />
    <bpmn:sequenceFlow id="f2" sourceRef="review" targetRef="ship" />
    <bpmn:sequenceFlow id="f3" sourceRef="ship" targetRef="end" />
  </bpmn:process>
</bpmn:definitions>`;
    await deployMappingsRun(t.api, xml);
    const instanceId = await start(t.api, 'ut_io', { variables: { order: { owner: 'carol', total: 50 } } });
    const task = await openTask(instanceId);
    expect(task).toMatchObject({ assignee: 'carol', localVariables: { reviewer: 'carol', limit: 100 } });
    expect(task).not.toHaveProperty('loopCounter');
    // The task's own view holds what it sees, its locals over the instance's, which its form starts from.
    const detail = (await t.api.get(`/api/user-tasks/${task.id}`)).body;
    expect(detail.variables).toEqual({ order: { owner: 'carol', total: 50 }, reviewer: 'carol', limit: 100 });
    const listed = (await t.api.get(`/api/user-tasks?instanceId=${instanceId}`)).body.items as any[];
    expect(listed[0]).not.toHaveProperty('variables');

    // An output that cannot be evaluated refuses the completion and changes nothing.
    const before = await instanceOf(t.api, instanceId);
    const refused = await t.api.post(`/api/user-tasks/${task.id}/complete`, {
      userId: 'carol',
      variables: { decision: 'ok', amount: 'lots' },
    });
    expect(refused.status).toBe(400);
    expect(refused.body.message).toContain('approved');
    expect((await instanceOf(t.api, instanceId)).revision).toBe(before.revision);

    const done = await t.api.post(`/api/user-tasks/${task.id}/complete`, {
      userId: 'carol',
      variables: { decision: 'ok', amount: 80, note: 'fine' },
    });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    const ship = await fetchOne(t.api, 'w1', 'ut_io-ship');
    expect(ship.variables).toEqual({ order: { owner: 'carol', total: 50 }, approved: true });
    await complete(t.api, ship, 'w1');
    await waitForStatus(t.api, instanceId, 'completed');
  });

  it('given input mappings on a Camunda 7 user task and no outputs, then what the person sends reaches the process, except the names the inputs hold', async () => {
    const review = `<bpmn:userTask id="review" camunda:assignee="\${owner}"><bpmn:extensionElements><camunda:inputOutput>
      <camunda:inputParameter name="owner">\${order.owner}</camunda:inputParameter>
    </camunda:inputOutput></bpmn:extensionElements></bpmn:userTask>`;
    await deploy(
      t.api,
      inlineDefinitions('ut_io_c7', [
        '<bpmn:startEvent id="start" />',
        review,
        task('ship', 'ut_io_c7'),
        '<bpmn:endEvent id="end" />',
        flow('f1', 'start', 'review'),
        flow('f2', 'review', 'ship'),
        flow('f3', 'ship', 'end'),
      ]),
    );
    const instanceId = await start(t.api, 'ut_io_c7', { variables: { order: { owner: 'dave' } } });
    const open = await openTask(instanceId);
    expect(open).toMatchObject({ assignee: 'dave', localVariables: { owner: 'dave' } });
    const done = await t.api.post(`/api/user-tasks/${open.id}/complete`, {
      userId: 'dave',
      variables: { owner: 'erin', checked: true },
    });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    const ship = await fetchOne(t.api, 'w1', 'ut_io_c7-ship');
    expect(ship.variables).toEqual({ order: { owner: 'dave' }, checked: true });
    await complete(t.api, ship, 'w1');
  });
});
