// Finding instances: by version, start and end time, status, business key, active step, open
// incident and a variable's value; counted in all and per status.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { singleTaskBpmn } from '../../support/bpmn.ts';
import { complete, deploy, fetchOne, start, waitForStatus } from '../../support/flows.ts';
import { startTestServer, type TestServer } from '../../support/server.ts';

let t: TestServer;

beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t?.close();
});

const ids = async (query: string): Promise<string[]> =>
  ((await t.api.get(`/api/instances?${query}`)).body.items as { id: string }[]).map((i) => i.id).sort();

describe('instance search', () => {
  it('given instances of two versions in every state, then each filter finds exactly its own and the count splits by status', async () => {
    await deploy(t.api, singleTaskBpmn('search', 'search-v1'));
    const v1 = await start(t.api, 'search', { variables: { region: 'north', amount: 5 } });
    const beforeV2 = new Date().toISOString();
    await deploy(t.api, singleTaskBpmn('search', 'search-v2'));
    const v2a = await start(t.api, 'search', { businessKey: 'search-b', variables: { region: 'south', amount: 7 } });
    const v2b = await start(t.api, 'search', { variables: { region: 'south', amount: 9 } });
    await complete(t.api, await fetchOne(t.api, 'w', 'search-v2'), 'w');
    const failing = await fetchOne(t.api, 'w', 'search-v2');
    expect(
      (
        await t.api.post(`/api/external-tasks/${failing.id}/failure`, {
          workerId: 'w',
          lockToken: failing.lockToken,
          errorMessage: 'no',
          retries: 0,
        })
      ).status,
    ).toBe(204);
    // Whichever of the two the worker completed first is done; the other fails into an incident.
    const done = failing.instanceId === v2a ? v2b : v2a;
    await waitForStatus(t.api, done, 'completed');
    await waitForStatus(t.api, failing.instanceId, 'incident');

    expect(await ids('definitionKey=search&version=1')).toEqual([v1]);
    expect(await ids('definitionKey=search&version=2')).toEqual([v2a, v2b].sort());
    expect(await ids(`definitionKey=search&startedAfter=${encodeURIComponent(beforeV2)}`)).toEqual([v2a, v2b].sort());
    expect(await ids(`definitionKey=search&startedBefore=${encodeURIComponent(beforeV2)}`)).toEqual([v1]);
    expect(await ids(`definitionKey=search&endedAfter=${encodeURIComponent(beforeV2)}`)).toEqual([done]);
    expect(await ids('definitionKey=search&activeStep=work')).toEqual([v1]);
    expect(await ids('definitionKey=search&withIncident=true')).toEqual([failing.instanceId]);
    expect(await ids('definitionKey=search&variableName=region&variableValue=south')).toEqual([v2a, v2b].sort());
    expect(await ids('definitionKey=search&variableName=amount&variableValue=5')).toEqual([v1]);
    expect(await ids('definitionKey=search&variableName=amount&variableValue=%225%22')).toEqual([]);
    expect(await ids('businessKey=search-b')).toEqual([v2a]);

    const count = (await t.api.get('/api/instances/count?definitionKey=search')).body;
    expect(count).toEqual({ count: 3, byStatus: { running: 1, completed: 1, incident: 1 } });
    expect(
      (await t.api.get('/api/instances/count?definitionKey=search&variableName=region&variableValue=south')).body.count,
    ).toBe(2);
  });

  it('given bad filters, then 400 naming them', async () => {
    for (const query of ['version=2', 'variableName=a', 'startedAfter=yesterday', 'withIncident=maybe', 'activeStep=']) {
      const res = await t.api.get(`/api/instances?${query}`);
      expect({ query, status: res.status, type: res.body.type }).toEqual({ query, status: 400, type: 'ValidationError' });
    }
    expect((await t.api.get('/api/instances/count?status=nope')).status).toBe(400);
  });
});
