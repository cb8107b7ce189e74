import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBpmn, singleTaskBpmn } from '../../support/bpmn.ts';
import { startTestServer, type TestServer } from '../../support/server.ts';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t.close();
});

describe('definitions API', () => {
  it('given new XML, then 201 with version 1; the same XML again gives 200 and the same version; a change gives version 2', async () => {
    const xml = singleTaskBpmn('deploy-me', 'topic-a');
    const first = await t.api.post('/api/definitions', { xml });
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({ key: 'deploy-me', version: 1 });
    expect(first.body.fingerprint).toMatch(/^[0-9a-f]{64}$/);
    const again = await t.api.post('/api/definitions', xml, { contentType: 'application/xml' });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ id: first.body.id, version: 1 });
    // Retries are not part of the step protocol: new version, same fingerprint.
    const retriesChanged = await t.api.post('/api/definitions', { xml: singleTaskBpmn('deploy-me', 'topic-a', { retries: 9 }) });
    expect(retriesChanged.status).toBe(201);
    expect(retriesChanged.body.version).toBe(2);
    expect(retriesChanged.body.fingerprint).toBe(first.body.fingerprint);

    const latest = await t.api.get('/api/definitions/deploy-me');
    expect(latest.status).toBe(200);
    expect(latest.body).toMatchObject({ key: 'deploy-me', version: 2 });
    expect(latest.body.xml).toContain('baton:retries="9"');
    expect(latest.body.plan.steps.map((s: { id: string }) => s.id)).toEqual(['start', 'work', 'end']);
    const v1 = await t.api.get('/api/definitions/deploy-me/versions/1');
    expect(v1.body).toMatchObject({ version: 1, id: first.body.id });
    const list = await t.api.get('/api/definitions');
    expect(list.body.items).toEqual([expect.objectContaining({ key: 'deploy-me', version: 2 })]);
  });

  it('given concurrent deploys of different XML for one key, then each gets its own version', async () => {
    const results = await Promise.all(
      [1, 2, 3, 4].map((n) => t.api.post('/api/definitions', { xml: singleTaskBpmn('concurrent', `topic-${n}`) })),
    );
    expect(results.map((r) => r.status)).toEqual([201, 201, 201, 201]);
    expect(results.map((r) => r.body.version).sort()).toEqual([1, 2, 3, 4]);
  });

  it('given a loop Baton cannot run (entered at two steps, or without a task), then 400 CompileError names its elements and nothing is stored', async () => {
    const entered = buildBpmn(
      'loop',
      [
        { id: 'start', type: 'startEvent' },
        { id: 'x', type: 'exclusiveGateway', default: 'toB' },
        { id: 'a', type: 'serviceTask', topic: 'a' },
        { id: 'b', type: 'serviceTask', topic: 'b' },
        { id: 'gw', type: 'exclusiveGateway', default: 'out' },
        { id: 'end', type: 'endEvent' },
      ],
      [
        { from: 'start', to: 'x' },
        { id: 'toA', from: 'x', to: 'a', condition: '=fast' },
        { id: 'toB', from: 'x', to: 'b' },
        { from: 'a', to: 'b' },
        { from: 'b', to: 'gw' },
        { id: 'back', from: 'gw', to: 'a', condition: '=again' },
        { id: 'out', from: 'gw', to: 'end' },
      ],
    );
    const spinning = buildBpmn(
      'loop',
      [
        { id: 'start', type: 'startEvent' },
        { id: 'm', type: 'exclusiveGateway' },
        { id: 'gw', type: 'exclusiveGateway', default: 'out' },
        { id: 'end', type: 'endEvent' },
      ],
      [
        { from: 'start', to: 'm' },
        { from: 'm', to: 'gw' },
        { id: 'back', from: 'gw', to: 'm', condition: '=again' },
        { id: 'out', from: 'gw', to: 'end' },
      ],
    );
    for (const [xml, elementId, says] of [
      [entered, 'a', 'is entered at 2 steps (a, b)'],
      [spinning, 'm', 'has no step that waits'],
    ] as const) {
      const res = await t.api.post('/api/definitions', { xml });
      expect(res.status).toBe(400);
      expect(res.body.type).toBe('CompileError');
      expect(res.body.details).toEqual([expect.objectContaining({ elementId, message: expect.stringContaining(says) })]);
    }
    expect((await t.api.get('/api/definitions/loop')).status).toBe(404);
  });

  it('given unknown keys or versions, then 404', async () => {
    expect((await t.api.get('/api/definitions/nope')).status).toBe(404);
    expect((await t.api.get('/api/definitions/deploy-me/versions/99')).status).toBe(404);
    expect((await t.api.get('/api/definitions/deploy-me/versions/abc')).status).toBe(404);
  });
});
