// Routes and success statuses the rest of the suite does not reach, called here so that their
// real answers are checked against the OpenAPI documents too: apiClient and engineRest check
// every answer (test/support/response-check.ts); multipart and binary calls check theirs here.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { engineRest, startByKey } from '../camunda/support.ts';
import { inlineDefinitions, inlineFlow as flow } from '../support/bpmn.ts';
import { deploy } from '../support/flows.ts';
import { checkResponse } from '../support/response-check.ts';
import { startTestServer, waitFor, type TestServer } from '../support/server.ts';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
  await deploy(t.api, approval('oa_approval'));
});
afterAll(async () => t?.close());

/** start -> approve (a user task with a form) -> end */
function approval(id: string): string {
  return inlineDefinitions(id, [
    '<bpmn:startEvent id="start" />',
    `<bpmn:userTask id="approve" name="Approve" camunda:formKey="embedded:app:approve.html" camunda:candidateUsers="alice">
      <bpmn:extensionElements>
        <camunda:formData><camunda:formField id="approved" type="boolean" /></camunda:formData>
      </bpmn:extensionElements>
    </bpmn:userTask>`,
    '<bpmn:endEvent id="end" />',
    flow('f1', 'start', 'approve'),
    flow('f2', 'approve', 'end'),
  ]);
}

async function openTask(instanceId: string): Promise<string> {
  const found = await waitFor(
    async () => (await engineRest(t.url, 'GET', `/task?processInstanceId=${instanceId}`)).body[0],
    10_000,
  );
  return found.id as string;
}

describe('answers the suite checks nowhere else', () => {
  it('given flow limits, then put (201, then 200), get, list and delete answer as documented', async () => {
    const put = (max: number) => t.api.call('PUT', '/api/flow-limits/oa-billing', { maxConcurrent: max, maxStartsPerSecond: 0 });
    expect((await put(2)).status).toBe(201);
    expect((await put(3)).status).toBe(200);
    expect((await t.api.get('/api/flow-limits/oa-billing')).body.maxConcurrent).toBe(3);
    expect((await t.api.get('/api/flow-limits')).body.items).toHaveLength(1);
    expect((await t.api.call('DELETE', '/api/flow-limits/oa-billing')).status).toBe(204);
    expect((await t.api.get('/api/flow-limits/oa-billing')).status).toBe(404);
  });

  it('given a Camunda tasklist, then count by body, form, variables, assignee, complete and submit-form answer as documented', async () => {
    const first = await startByKey(t.url, 'oa_approval', { variables: { note: { value: 'hi', type: 'String' } } });
    const task = await openTask(first);
    expect((await engineRest(t.url, 'POST', '/task/count', { processInstanceId: first })).body).toEqual({ count: 1 });
    expect((await engineRest(t.url, 'GET', `/task/${task}/form`)).body.key).toBe('embedded:app:approve.html');
    expect((await engineRest(t.url, 'GET', `/task/${task}/variables`)).body.note).toMatchObject({ type: 'String', value: 'hi' });
    expect((await engineRest(t.url, 'GET', `/execution/${first}/localVariables`)).body.note.value).toBe('hi');
    expect((await engineRest(t.url, 'POST', `/task/${task}/assignee`, { userId: 'alice' })).status).toBe(204);
    expect((await engineRest(t.url, 'POST', `/task/${task}/complete`, {})).status).toBe(204);

    const second = await startByKey(t.url, 'oa_approval');
    const form = await openTask(second);
    const submitted = await engineRest(t.url, 'POST', `/task/${form}/submit-form`, {
      variables: { approved: { value: true, type: 'Boolean' } },
    });
    expect(submitted.status).toBe(204);
  });

  it('given a Bytes variable, then its data answers as documented', async () => {
    const id = await startByKey(t.url, 'oa_approval', {
      variables: { blob: { value: Buffer.from('raw').toString('base64'), type: 'Bytes' } },
    });
    const res = await fetch(`${t.url}/engine-rest/process-instance/${id}/variables/blob/data`);
    const body = Buffer.from(await res.arrayBuffer());
    const contentType = res.headers.get('content-type');
    const path = `/engine-rest/process-instance/${id}/variables/blob/data`;
    checkResponse({
      method: 'GET',
      path,
      status: res.status,
      contentType,
      body: body.length ? body.toString('base64') : undefined,
    });
    expect(body.toString()).toBe('raw');
  });
});
