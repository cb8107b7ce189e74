// What a choosing gateway's history says (engine/gateway-decisions.ts): the conditions it
// tested and the variables they read that the instance does not have, on the gateway's
// step:completed event and its progress frame; with no flow left, the incident names them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBpmn } from '../../support/bpmn.ts';
import { complete, deploy, fetchOne, start, waitForStatus } from '../../support/flows.ts';
import { ProgressClient } from '../../support/progress-client.ts';
import { startTestServer, type TestServer } from '../../support/server.ts';

interface HistoryItem {
  seq: number;
  kind: string;
  stepId?: string;
  data: Record<string, unknown> | null;
}

let t: TestServer;
let client: ProgressClient | undefined;
beforeAll(async () => {
  t = await startTestServer();
  // A review task, then: a big order (FEEL) goes to approval, anything else by default to the end.
  await deploy(
    t.api,
    buildBpmn(
      'gd-default',
      [
        { id: 'start', type: 'startEvent' },
        { id: 'review', type: 'serviceTask', topic: 'gd-review' },
        { id: 'gw', type: 'exclusiveGateway', default: 'small' },
        { id: 'approve', type: 'serviceTask', topic: 'gd-approve' },
        { id: 'end', type: 'endEvent' },
      ],
      [
        { from: 'start', to: 'review' },
        { from: 'review', to: 'gw' },
        { id: 'big', from: 'gw', to: 'approve', condition: '= total > 100' },
        { id: 'small', from: 'gw', to: 'end' },
        { from: 'approve', to: 'end' },
      ],
    ),
  );
  // JUEL conditions at the start, no default: nothing holds without `total`.
  await deploy(
    t.api,
    buildBpmn(
      'gd-strict',
      [
        { id: 'start', type: 'startEvent' },
        { id: 'gw', type: 'exclusiveGateway' },
        { id: 'approve', type: 'serviceTask', topic: 'gd-strict-approve' },
        { id: 'end', type: 'endEvent' },
      ],
      [
        { from: 'start', to: 'gw' },
        { id: 'big', from: 'gw', to: 'approve', condition: '${total > 100 && region == "EU"}' },
        { id: 'small', from: 'gw', to: 'end', condition: '${total <= 100}' },
        { from: 'approve', to: 'end' },
      ],
    ),
  );
  // A condition that is a variable: the instance must hold a boolean there.
  await deploy(
    t.api,
    buildBpmn(
      'gd-typed',
      [
        { id: 'start', type: 'startEvent' },
        { id: 'gw', type: 'exclusiveGateway', default: 'no' },
        { id: 'approve', type: 'serviceTask', topic: 'gd-typed-approve' },
        { id: 'end', type: 'endEvent' },
      ],
      [
        { from: 'start', to: 'gw' },
        { id: 'yes', from: 'gw', to: 'approve', condition: '= approved' },
        { id: 'no', from: 'gw', to: 'end' },
        { from: 'approve', to: 'end' },
      ],
    ),
  );
});
afterAll(async () => {
  client?.close();
  await t.close();
});

async function historyOf(id: string): Promise<HistoryItem[]> {
  const res = await t.api.get(`/api/instances/${id}/history`);
  expect(res.status).toBe(200);
  return res.body.items as HistoryItem[];
}

/** The gateway's decisions in the history, oldest first. */
async function decisionsOf(id: string): Promise<HistoryItem[]> {
  return (await historyOf(id)).filter((e) => e.stepId === 'gw' && e.kind === 'step:completed');
}

describe('gateway decisions in the history', () => {
  it('given a condition over a variable the worker did not set, then the gateway takes the default flow and its history event and frame name the missing variable', async () => {
    const id = await start(t.api, 'gd-default', { variables: { customer: 'c-1' } });
    client = new ProgressClient(t.url);
    expect((await client.subscribe({ instanceId: id })).ok).toBe(true);
    const task = await fetchOne(t.api, 'gd-w', 'gd-review');
    expect((await complete(t.api, task, 'gd-w', { reviewed: true })).status).toBe(204);
    await waitForStatus(t.api, id, 'completed');

    const decision = {
      taken: ['small'],
      byDefault: true,
      flows: [{ id: 'big', condition: '= total > 100', result: false }],
      missingVariables: ['total'],
    };
    const decisions = await decisionsOf(id);
    expect(decisions.map((e) => e.data)).toEqual([decision]);
    // The progress frame carries the event's data, with its stepId.
    await client.waitForKind(id);
    const frames = client.frames.filter((f) => f.instanceId === id && f.kind === 'step:completed' && f.data.stepId === 'gw');
    expect(frames.map((f) => f.data)).toEqual([{ stepId: 'gw', ...decision }]);
    const steps = (await t.api.get(`/api/instances/${id}`)).body.steps as { stepId: string; status: string }[];
    expect(steps.find((s) => s.stepId === 'approve')?.status).toBe('skipped');
  });

  it('given the variable set, then the history records the condition that held and no missing variable', async () => {
    const id = await start(t.api, 'gd-default');
    const task = await fetchOne(t.api, 'gd-w', 'gd-review');
    expect((await complete(t.api, task, 'gd-w', { total: 150 })).status).toBe(204);
    await fetchOne(t.api, 'gd-w', 'gd-approve');

    expect((await decisionsOf(id)).map((e) => e.data)).toEqual([
      {
        taken: ['big'],
        byDefault: false,
        flows: [{ id: 'big', condition: '= total > 100', result: true }],
        missingVariables: [],
      },
    ]);
  });

  it('given no default and JUEL conditions over a missing variable, then the incident names it; a retry that sets it decides again with nothing missing', async () => {
    const res = await t.api.post('/api/instances', { definitionKey: 'gd-strict', variables: { region: 'EU' } });
    expect(res.status).toBe(201);
    expect(res.body.status).toBe('incident');
    const id = res.body.id as string;

    const detail = (await t.api.get(`/api/instances/${id}`)).body;
    const flows = [
      { id: 'big', condition: '${total > 100 && region == "EU"}', result: false },
      { id: 'small', condition: '${total <= 100}', result: false },
    ];
    expect(detail.incidents).toEqual([
      expect.objectContaining({
        stepId: 'gw',
        kind: 'no_matching_flow',
        message:
          'Gateway gw: no outgoing flow condition holds and there is no default flow; the conditions read variable "total", which the instance does not have (a missing variable reads as null). Retry the incident with it set, or fix the conditions.',
        details: { outgoing: ['big', 'small'], flows, missingVariables: ['total'] },
      }),
    ]);
    const raised = (await historyOf(id)).find((e) => e.kind === 'incident:created');
    expect(raised?.data).toEqual({
      kind: 'no_matching_flow',
      message: detail.incidents[0].message,
      flows,
      missingVariables: ['total'],
    });
    expect(await decisionsOf(id)).toEqual([]);

    const retry = await t.api.post(`/api/incidents/${detail.incidents[0].id}/retry`, { variables: { total: 500 } });
    expect(retry.status).toBe(200);
    expect(retry.body.instanceStatus).toBe('running');
    await fetchOne(t.api, 'gd-w', 'gd-strict-approve');
    expect((await decisionsOf(id)).map((e) => e.data)).toEqual([
      {
        taken: ['big'],
        byDefault: false,
        flows: [{ id: 'big', condition: '${total > 100 && region == "EU"}', result: true }],
        missingVariables: [],
      },
    ]);
  });

  it('given a condition whose value is neither true, false nor null, then the gateway takes no flow, not even its default, and holds a condition_error incident naming it; the retry with a boolean decides', async () => {
    const res = await t.api.post('/api/instances', { definitionKey: 'gd-typed', variables: { approved: 'yes' } });
    expect(res.status).toBe(201);
    expect(res.body.status).toBe('incident');
    const id = res.body.id as string;
    const detail = (await t.api.get(`/api/instances/${id}`)).body;
    expect(detail.incidents).toEqual([
      expect.objectContaining({
        stepId: 'gw',
        kind: 'condition_error',
        message: expect.stringContaining('Condition "approved" gave string "yes", not true or false'),
      }),
    ]);
    expect(await decisionsOf(id)).toEqual([]);

    const retry = await t.api.post(`/api/incidents/${detail.incidents[0].id}/retry`, { variables: { approved: true } });
    expect(retry.status).toBe(200);
    await fetchOne(t.api, 'gd-w', 'gd-typed-approve');
    expect((await decisionsOf(id)).map((e) => (e.data as { taken: string[] }).taken)).toEqual([['yes']]);
  });
});
