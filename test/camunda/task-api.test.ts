// /engine-rest/task driven as a Camunda 7 tasklist client drives it (Basic auth, the password
// being the token): query the tasks of my groups, claim, read the form variables, submit the
// form (once wrong, which changes nothing), and the process completes with the values typed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseGroups } from '../../runtime/security/people.ts';
import { parseTokens } from '../../runtime/security/tokens.ts';
import { inlineDefinitions, inlineFlow as flow } from '../support/bpmn.ts';
import { deploy, start, waitForStatus } from '../support/flows.ts';
import { checkResponse } from '../support/response-check.ts';
import { startTestServer, waitFor, type TestServer } from '../support/server.ts';

const SECRETS = {
  admin: 'admin-secret-0123456789',
  alice: 'alice-secret-0123456789',
  bob: 'bob-secret-012345678901',
  carol: 'carol-secret-0123456789',
};
type Who = keyof typeof SECRETS;

let t: TestServer;

beforeAll(async () => {
  t = await startTestServer({
    token: SECRETS.admin,
    auth: {
      tokens: parseTokens(
        `admin:ops:${SECRETS.admin},person:alice:${SECRETS.alice},person:bob:${SECRETS.bob},person:carol:${SECRETS.carol}`,
      ),
      groups: parseGroups('sales=alice|bob'),
    },
  });
  await deploy(t.api, review('c7_review'));
});
afterAll(async () => {
  await t?.close();
});

/** start -> review (sales, camunda:formData) -> end */
function review(id: string): string {
  return inlineDefinitions(id, [
    '<bpmn:startEvent id="start" />',
    `<bpmn:userTask id="review" name="Review order" camunda:candidateGroups="sales" camunda:priority="70">
      <bpmn:extensionElements>
        <camunda:formData>
          <camunda:formField id="amount" label="Amount" type="long">
            <camunda:validation><camunda:constraint name="required" /><camunda:constraint name="max" config="1000" /></camunda:validation>
          </camunda:formField>
          <camunda:formField id="approved" label="Approved" type="boolean">
            <camunda:validation><camunda:constraint name="required" /></camunda:validation>
          </camunda:formField>
          <camunda:formField id="channel" type="enum" defaultValue="mail">
            <camunda:value id="mail" name="Mail" /><camunda:value id="phone" name="Phone" />
          </camunda:formField>
        </camunda:formData>
      </bpmn:extensionElements>
    </bpmn:userTask>`,
    '<bpmn:endEvent id="end" />',
    flow('f1', 'start', 'review'),
    flow('f2', 'review', 'end'),
  ]);
}

/** A call as a Camunda client sends it: Basic auth with the token as password, JSON in and out. */
async function rest(who: Who, method: string, path: string, body?: unknown) {
  const res = await fetch(`${t.url}/engine-rest${path}`, {
    method,
    headers: {
      authorization: `Basic ${Buffer.from(`${who}:${SECRETS[who]}`).toString('base64')}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  const parsed = text ? JSON.parse(text) : undefined;
  checkResponse({
    method,
    path: `/engine-rest${path}`,
    status: res.status,
    contentType: res.headers.get('content-type'),
    body: parsed,
  });
  return { status: res.status, body: parsed };
}

async function openTask(instanceId: string): Promise<any> {
  return waitFor(async () => (await rest('admin', 'GET', `/task?processInstanceId=${instanceId}`)).body[0], 10_000, 'a task');
}

describe('Camunda 7 task API', () => {
  it('given a tasklist client, then query, claim, form-variables and submit-form complete the process', async () => {
    const instanceId = await start(t.api, 'c7_review', { variables: { amount: 10 } });
    const task = await openTask(instanceId);
    expect(task).toMatchObject({
      name: 'Review order',
      assignee: null,
      priority: 70,
      processInstanceId: instanceId,
      executionId: instanceId,
      taskDefinitionKey: 'review',
      suspended: false,
      tenantId: null,
    });
    expect(task.created).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}\+0000$/);

    // The tasklist's "my groups" filter, as a query string and as Camunda Tasklist's POST body.
    const mine = await rest('alice', 'GET', `/task?candidateUser=alice&processInstanceId=${instanceId}`);
    expect(mine.body.map((x: { id: string }) => x.id)).toEqual([task.id]);
    const posted = await rest('alice', 'POST', '/task?firstResult=0&maxResults=15', {
      candidateUser: 'alice',
      processInstanceId: instanceId,
      sorting: [{ sortBy: 'created', sortOrder: 'desc' }],
      processVariables: [],
      orQueries: [],
    });
    expect(posted.body.map((x: { id: string }) => x.id)).toEqual([task.id]);
    expect((await rest('alice', 'GET', `/task/count?candidateGroup=sales&processInstanceId=${instanceId}`)).body).toEqual({
      count: 1,
    });
    expect((await rest('carol', 'GET', `/task/count?candidateUser=carol&processInstanceId=${instanceId}`)).body).toEqual({
      count: 0,
    });

    const form = await rest('alice', 'GET', `/task/${task.id}/form-variables`);
    expect(form.body).toEqual({
      amount: { type: 'Long', value: 10, valueInfo: {} },
      approved: { type: 'Boolean', value: null, valueInfo: {} },
      channel: { type: 'String', value: 'mail', valueInfo: {} },
    });

    // bob claims first; alice's claim loses; carol is no candidate; alice may not claim for bob
    expect((await rest('bob', 'POST', `/task/${task.id}/claim`, { userId: 'bob' })).status).toBe(204);
    const lost = await rest('alice', 'POST', `/task/${task.id}/claim`, { userId: 'alice' });
    expect(lost.status).toBe(409);
    expect(lost.body.type).toBe('TaskAlreadyClaimedException');
    expect((await rest('bob', 'POST', `/task/${task.id}/unclaim`)).status).toBe(204);
    expect((await rest('carol', 'POST', `/task/${task.id}/claim`, { userId: 'carol' })).status).toBe(403);
    const forBob = await rest('alice', 'POST', `/task/${task.id}/claim`, { userId: 'bob' });
    expect(forBob).toMatchObject({ status: 403, body: { type: 'AuthorizationException' } });
    expect((await rest('alice', 'POST', `/task/${task.id}/claim`, { userId: 'alice' })).status).toBe(204);
    expect((await rest('alice', 'GET', `/task/${task.id}`)).body.assignee).toBe('alice');
    expect((await rest('alice', 'GET', '/task?assignee=alice')).body.map((x: { id: string }) => x.id)).toContain(task.id);

    // A wrong form changes nothing: the field is named, the task stays, amount stays 10.
    const wrong = await rest('alice', 'POST', `/task/${task.id}/submit-form`, {
      variables: { amount: { value: 5000, type: 'Long' }, approved: { value: true, type: 'Boolean' } },
    });
    expect(wrong.status).toBe(400);
    expect(wrong.body.message).toContain('Amount: must be at most 1000');
    expect(wrong.body.details.fields[0].field).toBe('amount');
    expect((await rest('alice', 'GET', `/task/${task.id}`)).status).toBe(200);
    expect((await rest('admin', 'GET', `/process-instance/${instanceId}/variables`)).body.amount.value).toBe(10);

    const done = await rest('alice', 'POST', `/task/${task.id}/submit-form`, {
      variables: { amount: { value: 500, type: 'Long' }, approved: { value: true, type: 'Boolean' } },
      withVariablesInReturn: true,
    });
    expect(done.status).toBe(200);
    expect(done.body.amount).toEqual({ type: 'Long', value: 500, valueInfo: {} });
    expect(done.body.approved).toMatchObject({ type: 'Boolean', value: true });
    const ended = await waitForStatus(t.api, instanceId, 'completed');
    expect(ended.variables).toMatchObject({ amount: 500, approved: true });
    const gone = await rest('alice', 'GET', `/task/${task.id}`);
    expect(gone).toMatchObject({ status: 404, body: { type: 'InvalidRequestException' } });
  });

  it('given an operator, then they claim for anyone and complete without a claim, as Camunda does; a person completes only what they hold', async () => {
    const instanceId = await start(t.api, 'c7_review');
    const task = await openTask(instanceId);
    expect((await rest('bob', 'POST', `/task/${task.id}/complete`, {})).status).toBe(409);
    expect((await rest('admin', 'POST', `/task/${task.id}/claim`, { userId: 'dave' })).status).toBe(204);
    expect((await rest('alice', 'POST', `/task/${task.id}/assignee`, { userId: 'alice' })).status).toBe(403);
    const done = await rest('admin', 'POST', `/task/${task.id}/complete`, {
      variables: { note: { value: 'done by ops', type: 'String' } },
      withVariablesInReturn: true,
    });
    expect(done.status).toBe(200);
    expect(done.body.note).toEqual({ type: 'String', value: 'done by ops', valueInfo: {} });
    await waitForStatus(t.api, instanceId, 'completed');
  });

  it('given an error boundary on the task, then bpmnError from the holder takes the boundary path with its variables typed', async () => {
    await deploy(
      t.api,
      inlineDefinitions('c7_reject', [
        '<bpmn:startEvent id="start" />',
        '<bpmn:userTask id="review" camunda:candidateGroups="sales" />',
        '<bpmn:boundaryEvent id="rejected" attachedToRef="review"><bpmn:errorEventDefinition errorRef="e1" /></bpmn:boundaryEvent>',
        '<bpmn:endEvent id="end" />',
        '<bpmn:endEvent id="closed" />',
        flow('f1', 'start', 'review'),
        flow('f2', 'review', 'end'),
        flow('f3', 'rejected', 'closed'),
      ]).replace('</bpmn:definitions>', '<bpmn:error id="e1" errorCode="REJECTED" /></bpmn:definitions>'),
    );
    const instanceId = await start(t.api, 'c7_reject');
    const task = await openTask(instanceId);
    const unheld = await rest('alice', 'POST', `/task/${task.id}/bpmnError`, { errorCode: 'REJECTED' });
    expect(unheld).toMatchObject({ status: 409, body: { type: 'RestException' } });
    expect((await rest('alice', 'POST', `/task/${task.id}/claim`, { userId: 'alice' })).status).toBe(204);
    const thrown = await rest('alice', 'POST', `/task/${task.id}/bpmnError`, {
      errorCode: 'REJECTED',
      variables: { reason: { value: 'too expensive', type: 'String' } },
    });
    expect(thrown.status).toBe(204);
    const done = await waitForStatus(t.api, instanceId, 'completed');
    expect(done.variables).toMatchObject({ reason: 'too expensive' });
    expect((done.steps as { stepId: string; status: string }[]).find((x) => x.stepId === 'closed')?.status).toBe('completed');
  });

  it('given a query Baton cannot answer or bad input, then it is refused with a reason and nothing changes', async () => {
    const instanceId = await start(t.api, 'c7_review');
    const task = await openTask(instanceId);
    const cases: [string, string, unknown?][] = [
      ['GET', '/task?processVariables=amount_eq_10'],
      ['GET', '/task?sortBy=description&sortOrder=asc'],
      ['GET', '/task?sortBy=created'],
      ['GET', '/task?dueBefore=tomorrow'],
      ['GET', '/task?unassigned=yes'],
      ['POST', '/task', { candidateGroups: 'sales', sorting: 'created' }],
      ['POST', `/task/${task.id}/claim`, {}],
      ['POST', `/task/${task.id}/claim`, { userId: 42 }],
      ['POST', `/task/${task.id}/complete`, { variables: { amount: { value: 'many', type: 'Long' } } }],
      [
        'POST',
        `/task/${task.id}/complete`,
        { variables: { temp: { value: 1, type: 'Integer', valueInfo: { transient: true } } } },
      ],
    ];
    for (const [method, path, body] of cases) {
      const res = await rest('admin', method, path, body);
      expect({ path, status: res.status }).toEqual({ path, status: 400 });
      expect(res.body.type).toMatch(/Exception$/);
      expect(res.body.message.length).toBeGreaterThan(10);
    }
    expect((await rest('admin', 'GET', '/task/not-a-task')).status).toBe(404);
    expect((await rest('admin', 'GET', `/task/${task.id}`)).body.assignee).toBeNull();
    expect((await rest('admin', 'GET', `/process-instance/${instanceId}/variables`)).body).toEqual({});
    expect((await rest('admin', 'GET', '/task?suspended=true')).body).toEqual([]);
  });
});
