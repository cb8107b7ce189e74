// Conditional start events against a real PostgreSQL through the HTTP API: conditions evaluated
// over given variables start the processes whose condition holds (native and Camunda 7's
// POST /condition); a condition that cannot be evaluated, or nothing to evaluate, refuses the
// call and starts nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inlineDefinitions, inlineFlow as flow, inlineTask as task } from '../../support/bpmn.ts';
import { complete, deploy, fetchOne, instanceOf, waitForStatus } from '../../support/flows.ts';
import { startTestServer, type TestServer } from '../../support/server.ts';
import { engineRest } from '../../camunda/support.ts';

let t: TestServer;

const condition = (feel: string) =>
  `<bpmn:conditionalEventDefinition><bpmn:condition xsi:type="bpmn:tFormalExpression">${feel}</bpmn:condition></bpmn:conditionalEventDefinition>`;

/** when (conditional start on `feel`) -> handle (service task) -> end */
function conditional(key: string, feel: string): string {
  return inlineDefinitions(key, [
    `<bpmn:startEvent id="when">${condition(feel)}</bpmn:startEvent>`,
    task('handle', key),
    '<bpmn:endEvent id="end" />',
    flow('f1', 'when', 'handle'),
    flow('f2', 'handle', 'end'),
  ]);
}

async function digest(): Promise<string> {
  const { rows } = await t.db.pool.query(
    `select (select count(*) from instances)::text || '/' || (select count(*) from events)::text as n`,
  );
  return rows[0].n;
}

beforeAll(async () => {
  t = await startTestServer();
  await deploy(t.api, conditional('cs_big', '= amount > 100'));
  await deploy(t.api, conditional('cs_small', '${amount &lt;= 100}'));
});
afterAll(async () => {
  await t?.close();
});

describe('conditional start events', () => {
  it('given two processes with conditional start events, then an evaluation starts the one whose condition holds, with the variables and business key', async () => {
    const res = await t.api.post('/api/conditions', { variables: { amount: 150 }, businessKey: 'order-150' });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.evaluated).toBe(2);
    expect(res.body.started).toHaveLength(1);
    const [id] = res.body.started;
    const instance = await instanceOf(t.api, id);
    expect(instance).toMatchObject({ definitionKey: 'cs_big', businessKey: 'order-150', variables: { amount: 150 } });
    const handle = await fetchOne(t.api, 'w', 'cs_big-handle');
    expect(handle.instanceId).toBe(id);
    await complete(t.api, handle, 'w');
    await waitForStatus(t.api, id, 'completed');
    const history = (await t.api.get(`/api/instances/${id}/history`)).body.items as { kind: string; stepId?: string }[];
    expect(history.find((e) => e.kind === 'step:completed' && e.stepId === 'when')).toBeDefined();

    const none = await t.api.post('/api/conditions', { variables: { amount: 50 }, definitionKey: 'cs_big' });
    expect(none.body).toEqual({ evaluated: 1, started: [] });
  });

  it('given a condition that cannot be evaluated, or nothing to evaluate, then the call is refused naming it and nothing starts', async () => {
    await deploy(t.api, conditional('cs_broken', '= count(for x in 1..100000000 return x) > amount'));
    const before = await digest();
    const broken = await t.api.post('/api/conditions', { variables: { amount: 150 } });
    expect(broken.status).toBe(400);
    expect(broken.body.message).toContain('start event when of process cs_broken');
    expect(broken.body.message).toContain('nothing was started');
    const unknown = await t.api.post('/api/conditions', { variables: {}, definitionKey: 'cs_nobody' });
    expect(unknown.status).toBe(400);
    expect(unknown.body.message).toContain('Process cs_nobody has no conditional start event');
    const bad = await t.api.post('/api/conditions', { variables: { amount: 1 }, extra: true });
    expect(bad.status).toBe(400);
    expect(bad.body.type).toBe('ValidationError');
    expect(await digest()).toBe(before);
    // A process that starts only on its condition is not started directly.
    const direct = await t.api.post('/api/instances', { definitionKey: 'cs_small', variables: { amount: 1 } });
    expect(direct.status).toBe(409);
    expect(direct.body.message).toContain('when its start condition holds');
  });

  it('given Camunda 7 POST /condition with typed variables, then it answers the started instances and keeps the types', async () => {
    const res = await engineRest(t.url, 'POST', '/condition', {
      variables: { amount: { value: 20, type: 'Long' } },
      businessKey: 'c7-20',
      processDefinitionId: (await t.api.get('/api/definitions/cs_small')).body.id,
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual([
      expect.objectContaining({ businessKey: 'c7-20', ended: false, suspended: false, tenantId: null, caseInstanceId: null }),
    ]);
    const vars = await engineRest(t.url, 'GET', `/process-instance/${res.body[0].id}/variables`);
    expect(vars.body.amount).toMatchObject({ value: 20, type: 'Long' });
    const tenant = await engineRest(t.url, 'POST', '/condition', { variables: {}, tenantId: 'acme' });
    expect(tenant.status).toBe(400);
    expect(tenant.body.type).toBe('InvalidRequestException');
  });
});
