// Escalations thrown in a called process that nothing in it catches go on to the call activity
// that started it, against a real PostgreSQL through the HTTP API: the parent's escalation
// boundary on the call activity (or an escalation event subprocess around it) fires, the child
// runs on meanwhile; an interrupting catcher cancels the child; nothing catching it in the parent
// either, the history says so and both run on. A child's escalation reaches its parent before
// the child's own end does.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { complete, deploy, fetchOne, fetchTasks, start, waitForStatus } from '../../support/flows.ts';
import { startTestServer, waitFor, type TestServer } from '../../support/server.ts';
import { takeCallDelivery } from '../../../runtime/store/calls.ts';
import { withTransaction } from '../../../runtime/store/db.ts';

let t: TestServer;

const NS = `xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:camunda="http://camunda.org/schema/1.0/bpmn"`;

function definitions(id: string, body: string, roots = ''): string {
  return `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions ${NS} id="D_${id}" targetNamespace="https://baton.dev/test">
  ${roots}
  <bpmn:process id="${id}" isExecutable="true">${body}</bpmn:process>
</bpmn:definitions>`;
}

/** start -> throw escalation `code` -> work (topic `<id>-work`) -> end; `endThrows`: the escalation is the end event instead. */
function child(id: string, code: string, endThrows = false): string {
  const escalation = `<bpmn:escalationEventDefinition escalationRef="Esc" />`;
  const body = endThrows
    ? `<bpmn:startEvent id="start" /><bpmn:endEvent id="raise">${escalation}</bpmn:endEvent>
       <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="raise" />`
    : `<bpmn:startEvent id="start" />
       <bpmn:intermediateThrowEvent id="raise">${escalation}</bpmn:intermediateThrowEvent>
       <bpmn:serviceTask id="work" camunda:type="external" camunda:topic="${id}-work" />
       <bpmn:endEvent id="end" />
       <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="raise" />
       <bpmn:sequenceFlow id="f2" sourceRef="raise" targetRef="work" />
       <bpmn:sequenceFlow id="f3" sourceRef="work" targetRef="end" />`;
  return definitions(id, body, `<bpmn:escalation id="Esc" escalationCode="${code}" />`);
}

/** start -> fork: task `<id>-work` -> end, and a catch of the signal "ce-stop-now" -> escalation STOP -> end */
function stoppableChild(id: string): string {
  return definitions(
    id,
    `<bpmn:startEvent id="start" />
     <bpmn:parallelGateway id="fork" />
     <bpmn:serviceTask id="work" camunda:type="external" camunda:topic="${id}-work" />
     <bpmn:endEvent id="worked" />
     <bpmn:intermediateCatchEvent id="stopNow"><bpmn:signalEventDefinition signalRef="Stop" /></bpmn:intermediateCatchEvent>
     <bpmn:intermediateThrowEvent id="raise"><bpmn:escalationEventDefinition escalationRef="Esc" /></bpmn:intermediateThrowEvent>
     <bpmn:endEvent id="raised" />
     <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="fork" />
     <bpmn:sequenceFlow id="f2" sourceRef="fork" targetRef="work" />
     <bpmn:sequenceFlow id="f3" sourceRef="work" targetRef="worked" />
     <bpmn:sequenceFlow id="f4" sourceRef="fork" targetRef="stopNow" />
     <bpmn:sequenceFlow id="f5" sourceRef="stopNow" targetRef="raise" />
     <bpmn:sequenceFlow id="f6" sourceRef="raise" targetRef="raised" />`,
    '<bpmn:escalation id="Esc" escalationCode="STOP" /><bpmn:signal id="Stop" name="ce-stop-now" />',
  );
}

/**
 * start -> call (`calls`) -> after (topic `<id>-after`) -> end; `boundary` (attributes of the
 * escalation boundary on the call, undefined for none) leads to notify (topic `<id>-notify`).
 */
function parent(id: string, calls: string, boundary?: string): string {
  const caught =
    boundary === undefined
      ? ''
      : `<bpmn:boundaryEvent id="caught" attachedToRef="call" ${boundary}><bpmn:escalationEventDefinition camunda:escalationCodeVariable="why" /></bpmn:boundaryEvent>
       <bpmn:serviceTask id="notify" camunda:type="external" camunda:topic="${id}-notify" />
       <bpmn:endEvent id="notified" />
       <bpmn:sequenceFlow id="b1" sourceRef="caught" targetRef="notify" />
       <bpmn:sequenceFlow id="b2" sourceRef="notify" targetRef="notified" />`;
  return definitions(
    id,
    `<bpmn:startEvent id="start" />
     <bpmn:callActivity id="call" calledElement="${calls}" />
     <bpmn:serviceTask id="after" camunda:type="external" camunda:topic="${id}-after" />
     <bpmn:endEvent id="end" />
     <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="call" />
     <bpmn:sequenceFlow id="f2" sourceRef="call" targetRef="after" />
     <bpmn:sequenceFlow id="f3" sourceRef="after" targetRef="end" />
     ${caught}`,
  );
}

async function childOf(parentId: string): Promise<string> {
  return waitFor(async () => {
    const rows = await t.db.pool.query<{ id: string }>('select id from instances where parent_instance_id = $1', [parentId]);
    return rows.rows[0]?.id;
  });
}

async function history(id: string): Promise<{ kind: string; stepId?: string; data: Record<string, unknown> }[]> {
  return (await t.api.get(`/api/instances/${id}/history`)).body.items;
}

async function finish(topic: string, instanceId: string): Promise<void> {
  const task = await fetchOne(t.api, 'w', topic);
  expect(task.instanceId).toBe(instanceId);
  expect((await complete(t.api, task, 'w')).status).toBe(204);
}

beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t?.close();
});

describe('escalations from a called process', () => {
  it('given a non-interrupting escalation boundary on the call activity, then it runs its path with the code while the child runs on, and both complete', async () => {
    await deploy(t.api, child('ce_child_late', 'LATE'));
    await deploy(t.api, parent('ce_parent_late', 'ce_child_late', 'cancelActivity="false"'));
    const id = await start(t.api, 'ce_parent_late');
    const childId = await childOf(id);
    const notify = await fetchOne(t.api, 'w', 'ce_parent_late-notify');
    expect(notify).toMatchObject({ instanceId: id, variables: { why: 'LATE' } });
    expect((await history(childId)).find((e) => e.kind === 'escalation:toParent')).toMatchObject({
      stepId: 'raise',
      data: { escalationCode: 'LATE', parentInstanceId: id },
    });
    expect((await history(id)).find((e) => e.kind === 'step:completed' && e.stepId === 'caught')?.data).toMatchObject({
      escalationCode: 'LATE',
      childInstanceId: childId,
      thrownBy: 'raise',
    });
    expect((await complete(t.api, notify, 'w')).status).toBe(204);
    await finish('ce_child_late-work', childId);
    await waitForStatus(t.api, childId, 'completed');
    await finish('ce_parent_late-after', id);
    await waitForStatus(t.api, id, 'completed');
  });

  it("given an interrupting escalation boundary, then the call activity and its child are canceled (the child's late complete answers 409) and the boundary path runs", async () => {
    // The child escalates only when a signal comes, so its worker holds its task first.
    await deploy(t.api, stoppableChild('ce_child_stop'));
    await deploy(t.api, parent('ce_parent_stop', 'ce_child_stop', ''));
    const id = await start(t.api, 'ce_parent_stop');
    const childId = await childOf(id);
    const work = await fetchOne(t.api, 'w', 'ce_child_stop-work');
    expect(work.instanceId).toBe(childId);
    expect(await fetchTasks(t.api, 'w', ['ce_parent_stop-notify'])).toEqual([]);
    expect((await t.api.post('/api/signals', { name: 'ce-stop-now' })).status).toBe(200);
    await finish('ce_parent_stop-notify', id);
    await waitForStatus(t.api, childId, 'canceled');
    expect((await complete(t.api, work, 'w')).status).toBe(409);
    await waitForStatus(t.api, id, 'completed');
    const steps = (await t.api.get(`/api/instances/${id}`)).body.steps as { stepId: string; status: string }[];
    expect(steps.find((s) => s.stepId === 'call')?.status).toBe('canceled');
    expect(steps.find((s) => s.stepId === 'after')?.status).toBe('skipped');
  });

  it('given no catcher in the parent, then its history says the escalation was not caught, and both run on', async () => {
    await deploy(t.api, child('ce_child_free', 'FREE'));
    await deploy(t.api, parent('ce_parent_free', 'ce_child_free'));
    const id = await start(t.api, 'ce_parent_free');
    const childId = await childOf(id);
    const uncaught = await waitFor(async () => (await history(id)).find((e) => e.kind === 'escalation:uncaught'));
    expect(uncaught).toMatchObject({ stepId: 'call', data: { escalationCode: 'FREE', childInstanceId: childId } });
    await finish('ce_child_free-work', childId);
    await finish('ce_parent_free-after', id);
    await waitForStatus(t.api, id, 'completed');
  });

  it("given a child that escalates in its last step, then the parent's boundary fires before the call activity completes", async () => {
    await deploy(t.api, child('ce_child_end', 'ENDED', true));
    await deploy(t.api, parent('ce_parent_end', 'ce_child_end', 'cancelActivity="false"'));
    const id = await start(t.api, 'ce_parent_end');
    const notify = await fetchOne(t.api, 'w', 'ce_parent_end-notify');
    expect(notify).toMatchObject({ instanceId: id, variables: { why: 'ENDED' } });
    await finish('ce_parent_end-after', id);
    expect((await complete(t.api, notify, 'w')).status).toBe(204);
    await waitForStatus(t.api, id, 'completed');
  });

  it("given a grandchild's escalation that its parent does not catch, then it goes on up to the grandparent's boundary", async () => {
    await deploy(t.api, child('ce_grandchild', 'UP'));
    await deploy(t.api, parent('ce_middle', 'ce_grandchild'));
    await deploy(t.api, parent('ce_top', 'ce_middle', 'cancelActivity="false"'));
    const id = await start(t.api, 'ce_top');
    const notify = await fetchOne(t.api, 'w', 'ce_top-notify');
    expect(notify).toMatchObject({ instanceId: id, variables: { why: 'UP' } });
    const middle = await childOf(id);
    expect((await history(middle)).find((e) => e.kind === 'escalation:toParent')).toMatchObject({
      stepId: 'call',
      data: { escalationCode: 'UP', parentInstanceId: id },
    });
    expect(await fetchTasks(t.api, 'w', ['ce_top-after'])).toEqual([]);
  });

  it("given a child's escalation still waiting, even one no deliverer can take now, then the child's return is not taken before it", async () => {
    await deploy(t.api, child('ce_holder', 'UNUSED'));
    const parentId = await start(t.api, 'ce_holder');
    const childId = '00000000-0000-4000-8000-00000000c0de';
    // The escalation names a parent no deliverer can take it for now (here: none), as when another
    // deliverer holds it; the return must wait all the same. Written and read in one transaction
    // (no other connection sees them), then rolled back.
    const seen: { held?: string; after?: string } = {};
    const rolledBack = await withTransaction(t.db.pool, async (tx) => {
      await tx.query(
        `insert into call_escalations (child_instance_id, parent_instance_id, parent_step_id, parent_scope_path, parent_generation, escalation_code, thrown_by)
         values ($1, '00000000-0000-4000-8000-00000000dead', 'call', '/', 0, 'FIRST', 'raise')`,
        [childId],
      );
      await tx.query(
        `insert into call_returns (child_instance_id, parent_instance_id, parent_step_id, parent_scope_path, parent_generation, outcome)
         values ($1, $2, 'call', '/', 0, 'completed')`,
        [childId, parentId],
      );
      const held = await takeCallDelivery(tx);
      seen.held = held && 'return' in held ? held.return.child_instance_id : undefined;
      await tx.query('delete from call_escalations where child_instance_id = $1', [childId]);
      const after = await takeCallDelivery(tx);
      seen.after = after && 'return' in after ? after.return.child_instance_id : undefined;
      throw new Error('roll back');
    }).catch((e: Error) => e.message);
    expect(rolledBack).toBe('roll back');
    expect(seen.held).not.toBe(childId);
    expect(seen.after).toBe(childId);
  });
});
