import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBpmn, singleTaskBpmn } from '../../support/bpmn.ts';
import { complete, deploy, fetchOne, instanceOf, start, waitForStatus } from '../../support/flows.ts';
import { startTestServer, type TestServer } from '../../support/server.ts';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
  await deploy(t.api, singleTaskBpmn('listed', 'listed-task'));
  await deploy(t.api, singleTaskBpmn('traced', 'traced-task'));
});
afterAll(async () => {
  await t.close();
});

describe('instances API', () => {
  it('given a start, then the answer names status, business key, definition key and version', async () => {
    const res = await t.api.post('/api/instances', { definitionKey: 'listed', businessKey: 'bk-1', variables: { n: 1 } });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ status: 'running', businessKey: 'bk-1', definitionKey: 'listed', version: 1 });
    const again = await t.api.post('/api/instances', { definitionKey: 'listed', businessKey: 'bk-1', variables: { n: 2 } });
    expect(again.status).toBe(200);
    expect(again.body.id).toBe(res.body.id);
    const detail = await t.api.get(`/api/instances/${res.body.id}`);
    expect(detail.body.variables).toEqual({ n: 1 });
    expect(detail.body.tasks).toEqual([expect.objectContaining({ stepId: 'work', topic: 'listed-task', state: 'ready' })]);
  });

  it('given many instances, then the list pages newest first with a cursor and filters by status', async () => {
    for (let i = 0; i < 7; i++) await start(t.api, 'listed', { businessKey: `page-${i}` });
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: any = await t.api.get(`/api/instances?definitionKey=listed&limit=3${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.status).toBe(200);
      seen.push(...page.body.items.map((i: { businessKey: string }) => i.businessKey));
      cursor = page.body.nextCursor;
    } while (cursor);
    expect(seen.filter((k) => k.startsWith('page-'))).toEqual([
      'page-6',
      'page-5',
      'page-4',
      'page-3',
      'page-2',
      'page-1',
      'page-0',
    ]);
    expect(new Set(seen).size).toBe(seen.length);
    const completedNone = await t.api.get('/api/instances?status=completed&definitionKey=listed');
    expect(completedNone.body.items).toEqual([]);
  });

  it('given a finished instance, then its history lists every transition in seq order', async () => {
    const id = await start(t.api, 'traced');
    const task = await fetchOne(t.api, 'w', 'traced-task');
    await complete(t.api, task, 'w');
    await waitForStatus(t.api, id, 'completed');
    const history = await t.api.get(`/api/instances/${id}/history`);
    const items = history.body.items as { seq: number; kind: string; stepId?: string; generation: number }[];
    expect(items.map((e) => `${e.kind}${e.stepId ? `@${e.stepId}` : ''}`)).toEqual([
      'instance:started',
      'step:completed@start',
      'step:activated@work',
      'task:locked@work',
      'task:completed@work',
      'step:completed@work',
      'step:completed@end',
      'instance:completed',
    ]);
    expect(items.map((e) => e.seq)).toEqual([...items.map((e) => e.seq)].sort((a, b) => a - b));
    expect(items.every((e) => e.generation === 1)).toBe(true);
  });

  it('given a process that ends at once, then the start answers completed', async () => {
    await deploy(
      t.api,
      buildBpmn(
        'instant',
        [
          { id: 's', type: 'startEvent' },
          { id: 'e', type: 'endEvent' },
        ],
        [{ from: 's', to: 'e' }],
      ),
    );
    const res = await t.api.post('/api/instances', { definitionKey: 'instant' });
    expect(res.body.status).toBe('completed');
  });

  it('given a terminate end event on one branch, then the instance completes and the other branch task is canceled', async () => {
    await deploy(
      t.api,
      buildBpmn(
        'terminating',
        [
          { id: 's', type: 'startEvent' },
          { id: 'fork', type: 'parallelGateway' },
          { id: 'slow', type: 'serviceTask', topic: 'slow-task' },
          { id: 'quick', type: 'serviceTask', topic: 'quick-task' },
          { id: 'stop', type: 'terminateEndEvent' },
          { id: 'e', type: 'endEvent' },
        ],
        [
          { from: 's', to: 'fork' },
          { from: 'fork', to: 'slow' },
          { from: 'fork', to: 'quick' },
          { from: 'quick', to: 'stop' },
          { from: 'slow', to: 'e' },
        ],
      ),
    );
    const id = await start(t.api, 'terminating');
    const slow = await fetchOne(t.api, 'w', 'slow-task');
    const quick = await fetchOne(t.api, 'w', 'quick-task');
    expect((await complete(t.api, quick, 'w')).status).toBe(204);
    const done = await waitForStatus(t.api, id, 'completed');
    expect(done.steps.find((s: { stepId: string }) => s.stepId === 'slow').status).toBe('canceled');
    expect((await complete(t.api, slow, 'w')).status).toBe(409);
  });

  it('given an exclusive gateway with no true condition and no default, then an incident; a retry with new variables continues', async () => {
    await deploy(
      t.api,
      buildBpmn(
        'picky',
        [
          { id: 's', type: 'startEvent' },
          { id: 'gw', type: 'exclusiveGateway' },
          { id: 'big', type: 'serviceTask', topic: 'big-task' },
          { id: 'e', type: 'endEvent' },
        ],
        [
          { from: 's', to: 'gw' },
          { from: 'gw', to: 'big', condition: '${amount > 100}' },
          { from: 'big', to: 'e' },
        ],
      ),
    );
    const res = await t.api.post('/api/instances', { definitionKey: 'picky', variables: { amount: 5 } });
    expect(res.body.status).toBe('incident');
    const detail = await t.api.get(`/api/instances/${res.body.id}`);
    expect(detail.body.incidents).toEqual([expect.objectContaining({ stepId: 'gw', kind: 'no_matching_flow' })]);
    const incidents = await t.api.get('/api/incidents');
    expect(incidents.body.items.map((x: { id: string }) => x.id)).toContain(detail.body.incidents[0].id);
    const retry = await t.api.post(`/api/incidents/${detail.body.incidents[0].id}/retry`, { variables: { amount: 500 } });
    expect(retry.body.instanceStatus).toBe('running');
    const task = await fetchOne(t.api, 'w', 'big-task');
    expect(task.variables).toEqual({ amount: 500 });
  });

  it('given an exclusive gateway, then the detail lists each resolved flow as taken or skipped, and leaves pending ones out', async () => {
    await deploy(
      t.api,
      buildBpmn(
        'branching',
        [
          { id: 's', type: 'startEvent' },
          { id: 'gw', type: 'exclusiveGateway', default: 'low' },
          { id: 'approve', type: 'serviceTask', topic: 'approve-task' },
          { id: 'file', type: 'serviceTask', topic: 'file-task' },
          { id: 'done', type: 'endEvent' },
          { id: 'filed', type: 'endEvent' },
        ],
        [
          { id: 'in', from: 's', to: 'gw' },
          { id: 'high', from: 'gw', to: 'approve', condition: '= amount > 100' },
          { id: 'low', from: 'gw', to: 'file' },
          { id: 'approved', from: 'approve', to: 'done' },
          { id: 'archived', from: 'file', to: 'filed' },
        ],
      ),
    );
    const id = await start(t.api, 'branching', { variables: { amount: 500 } });
    const running = await instanceOf(t.api, id);
    expect(Object.fromEntries(running.flows.map((f: { flowId: string; state: string }) => [f.flowId, f.state]))).toEqual({
      in: 'taken',
      high: 'taken',
      low: 'skipped',
      archived: 'skipped',
    });
    expect(running.steps.find((s: { stepId: string }) => s.stepId === 'file').status).toBe('skipped');

    await complete(t.api, await fetchOne(t.api, 'w', 'approve-task'), 'w');
    const done = await waitForStatus(t.api, id, 'completed');
    expect(done.flows).toContainEqual({ flowId: 'approved', state: 'taken' });
    expect(done.flows).toHaveLength(5);
  });

  it('given starts one after another, by the native API and the Camunda one, then each id is a version 7 uuid and they sort as they started', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      ids.push((await t.api.post('/api/instances', { definitionKey: 'listed' })).body.id);
      ids.push((await t.api.post('/engine-rest/process-definition/key/listed/start', {})).body.id);
      ids.push((await t.api.post('/api/instances', { definitionKey: 'listed', businessKey: `v7-${i}` })).body.id);
    }
    expect(
      ids.every((id) => /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(id)),
      ids.join(' '),
    ).toBe(true);
    expect([...ids].sort()).toEqual(ids);
  });
});
