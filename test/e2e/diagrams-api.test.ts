// The designer's REST routes on a real server: drafts, lint, heatmap, and the app at `/`.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBpmn, singleTaskBpmn } from '../support/bpmn.ts';
import { startTestServer, waitFor, type TestServer } from '../support/server.ts';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t.close();
});

async function countDiagrams(): Promise<number> {
  const { rows } = await t.db.pool.query<{ n: number }>('select count(*)::int as n from diagrams');
  return rows[0]!.n;
}

async function snapshotDiagrams(): Promise<unknown[]> {
  const { rows } = await t.db.pool.query('select id, name, xml, updated_at from diagrams order by id');
  return rows;
}

describe('diagrams API', () => {
  it('given a new draft, when created, renamed, saved, listed and deleted, then each answer shows the change', async () => {
    const xml = singleTaskBpmn('draft-one', 'topic-a');
    const created = await t.api.post('/api/diagrams', { name: 'Order flow', xml });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name: 'Order flow', xml });
    const id = created.body.id as string;

    const renamed = await t.api.call('PATCH', `/api/diagrams/${id}`, { name: '  Order flow v2 ' });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toMatchObject({ id, name: 'Order flow v2', xml });

    const saved = await t.api.call('PATCH', `/api/diagrams/${id}`, { xml: singleTaskBpmn('draft-one', 'topic-b') });
    expect(saved.body.xml).toContain('topic-b');
    expect(Date.parse(saved.body.updatedAt)).toBeGreaterThanOrEqual(Date.parse(created.body.updatedAt));

    const list = await t.api.get('/api/diagrams');
    expect(list.body.items).toEqual([expect.objectContaining({ id, name: 'Order flow v2' })]);
    expect(list.body.items[0].xml).toBeUndefined();

    expect((await t.api.get(`/api/diagrams/${id}`)).body.xml).toContain('topic-b');
    expect((await t.api.call('DELETE', `/api/diagrams/${id}`)).status).toBe(204);
    expect((await t.api.get(`/api/diagrams/${id}`)).status).toBe(404);
    expect((await t.api.call('DELETE', `/api/diagrams/${id}`)).status).toBe(404);
  });

  it('given bad input, then 4xx with {type, message} and nothing changes in the database', async () => {
    const kept = await t.api.post('/api/diagrams', { name: 'Kept', xml: singleTaskBpmn('kept', 'k') });
    const before = await snapshotDiagrams();
    const id = kept.body.id as string;
    const bad: [string, string, unknown, number, string][] = [
      ['POST', '/api/diagrams', { name: 'x' }, 400, 'ValidationError'],
      ['POST', '/api/diagrams', { name: '', xml: '<a/>' }, 400, 'ValidationError'],
      ['POST', '/api/diagrams', { name: '   ', xml: '<a/>' }, 400, 'ValidationError'],
      ['POST', '/api/diagrams', { name: 'x', xml: 'not xml' }, 400, 'ValidationError'],
      ['POST', '/api/diagrams', { name: 'x', xml: '<a/>', extra: 1 }, 400, 'ValidationError'],
      ['POST', '/api/diagrams', { name: 'x'.repeat(256), xml: '<a/>' }, 400, 'ValidationError'],
      ['POST', '/api/diagrams', '[1]', 400, 'ValidationError'],
      ['POST', '/api/diagrams', '{broken', 400, 'ValidationError'],
      ['PATCH', `/api/diagrams/${id}`, {}, 400, 'ValidationError'],
      ['PATCH', `/api/diagrams/${id}`, { name: 7 }, 400, 'ValidationError'],
      ['PATCH', `/api/diagrams/${id}`, { xml: '' }, 400, 'ValidationError'],
      ['PATCH', '/api/diagrams/00000000-0000-4000-8000-000000000000', { name: 'ghost' }, 404, 'NotFound'],
      ['PATCH', '/api/diagrams/not-a-uuid', { name: 'ghost' }, 404, 'NotFound'],
      ['DELETE', '/api/diagrams/not-a-uuid', undefined, 404, 'NotFound'],
      ['POST', '/api/definitions/lint', { xml: '' }, 400, 'ValidationError'],
      ['POST', '/api/definitions/lint', { source: '<a/>' }, 400, 'ValidationError'],
      ['GET', '/api/definitions/kept/heatmap?version=0', undefined, 400, 'ValidationError'],
      ['GET', '/api/definitions/kept/heatmap?limit=0', undefined, 400, 'ValidationError'],
      ['GET', '/api/definitions/kept/heatmap?limit=100001', undefined, 400, 'ValidationError'],
      ['GET', '/api/definitions/kept/heatmap?limit=all', undefined, 400, 'ValidationError'],
      ['GET', '/api/definitions/nope/heatmap', undefined, 404, 'NotFound'],
    ];
    for (const [method, path, body, status, type] of bad) {
      const res = await t.api.call(method, path, body);
      expect(res.status, `${method} ${path} ${JSON.stringify(body)}`).toBe(status);
      expect(res.body).toMatchObject({ type, message: expect.any(String) });
    }
    const tooBig = await t.api.post('/api/diagrams', { name: 'big', xml: `<a>${'x'.repeat(1_100_000)}</a>` });
    expect(tooBig.status).toBe(413);
    expect(await snapshotDiagrams()).toEqual(before);
    expect(await countDiagrams()).toBe(1);
  });
});

describe('diagrams API: XML that does not parse as BPMN', () => {
  it('given a truncated file, a text file or another XML vocabulary, then 400 says what is wrong in plain words; nothing is created or saved', async () => {
    const xml = singleTaskBpmn('whole', 'w');
    const kept = await t.api.post('/api/diagrams', { name: 'Whole', xml });
    const id = kept.body.id as string;
    const before = await snapshotDiagrams();
    const cases: [string, RegExp][] = [
      [xml.slice(0, xml.indexOf('<bpmn:endEvent')), /unexpected end of file: the file stops before its elements are closed/],
      [xml.slice(0, xml.indexOf('</bpmn:outgoing>') + 8), /unclosed tag <\/bpmn:o at line 5, column \d+/],
      [xml.replace('</bpmn:process>', '</bpmn:proc>'), /closing tag mismatch <\/bpmn:proc> at line 10, column 3/],
      ['Expense policy: up to 100 EUR', /missing start tag at line 1, column 1: the file does not start with an XML element/],
      ['<html><body/></html>', /unexpected element <html> at line 1, column 1/],
    ];
    for (const [bad, reason] of cases) {
      for (const res of [
        await t.api.post('/api/diagrams', { name: 'Broken', xml: bad }),
        await t.api.call('PATCH', `/api/diagrams/${id}`, { xml: bad }),
      ]) {
        expect(res.status, bad).toBe(400);
        expect(res.body.type).toBe('ValidationError');
        expect(res.body.message).toMatch(/^The file is not readable BPMN XML: /);
        expect(res.body.message).toMatch(reason);
        expect(res.body.message).not.toMatch(/must match|pattern/);
        expect(res.body.details).toEqual([{ path: '/xml', message: res.body.message }]);
      }
    }
    expect(await snapshotDiagrams()).toEqual(before);
  });
});

describe('lint API', () => {
  it('given a task without a topic, then ok=false with a diagnostic on that task; nothing is deployed', async () => {
    const xml = singleTaskBpmn('lint-me', 'x').replace(' camunda:type="external" camunda:topic="x"', '');
    const res = await t.api.post('/api/definitions/lint', { xml });
    expect(res.status).toBe(200);
    expect(res.body.ok).toBe(false);
    expect(res.body.diagnostics).toEqual(
      expect.arrayContaining([expect.objectContaining({ elementId: 'work', severity: 'error' })]),
    );
    expect((await t.api.get('/api/definitions/lint-me')).status).toBe(404);
  });

  it('given a good diagram, then ok=true with the fingerprint deploy would give, and warnings', async () => {
    const xml = buildBpmn(
      'lint-ok',
      [
        { id: 'start', type: 'startEvent' },
        { id: 'gw', type: 'exclusiveGateway', default: 'f2' },
        { id: 'end', type: 'endEvent' },
      ],
      [
        { from: 'start', to: 'gw' },
        { id: 'f1', from: 'gw', to: 'end', condition: '= x > 1' },
        { id: 'f2', from: 'gw', to: 'end' },
      ],
    );
    const lint = await t.api.post('/api/definitions/lint', { xml });
    expect(lint.body).toMatchObject({ ok: true, processKey: 'lint-ok', diagnostics: [] });
    const deployed = await t.api.post('/api/definitions', { xml });
    expect(deployed.body.fingerprint).toBe(lint.body.fingerprint);
  });

  it('given unreadable XML, then ok=false with a diagnostic rather than an error', async () => {
    const res = await t.api.post('/api/definitions/lint', { xml: '<definitions' });
    expect(res.status).toBe(200);
    expect(res.body.ok).toBe(false);
    expect(res.body.diagnostics.length).toBeGreaterThan(0);
  });
});

describe('heatmap API', () => {
  it('given instances in several states, then counts per element and status, per version', async () => {
    await t.api.post('/api/definitions', { xml: singleTaskBpmn('heat', 'heat-topic') });
    for (const businessKey of ['a', 'b', 'c']) await t.api.post('/api/instances', { definitionKey: 'heat', businessKey });
    const [task] = (
      await t.api.post('/api/external-tasks/fetch-and-lock', {
        workerId: 'w',
        maxTasks: 1,
        topics: [{ name: 'heat-topic', lockDurationMs: 10_000 }],
      })
    ).body as { id: string; lockToken: string }[];
    expect(
      (await t.api.post(`/api/external-tasks/${task!.id}/complete`, { workerId: 'w', lockToken: task!.lockToken })).status,
    ).toBe(204);
    const heat = await waitFor(async () => {
      const res = await t.api.get('/api/definitions/heat/heatmap');
      return res.body.instances.completed === 1 ? res.body : undefined;
    });
    expect(heat.elements.work).toEqual({ active: 2, completed: 1 });
    expect(heat.elements.start).toEqual({ completed: 3 });
    expect(heat.elements.end).toEqual({ completed: 1 });
    expect(heat.instances).toEqual({ running: 2, completed: 1 });
    expect(heat.sample).toMatchObject({ limit: 1000, size: 3 });
    // the newest two only, as the instance list pages them
    const {
      body: { items },
    } = await t.api.get('/api/instances?definitionKey=heat&limit=2');
    const statuses = (items as { status: string }[]).map((i) => i.status);
    const newest = (await t.api.get('/api/definitions/heat/heatmap?limit=2')).body;
    expect(newest.sample).toEqual({ limit: 2, size: 2, since: expect.any(String) });
    expect(new Date(newest.sample.since).getTime()).toBe(new Date(items[1].createdAt).getTime());
    const running = statuses.filter((st) => st === 'running').length;
    expect(newest.instances).toEqual(
      Object.fromEntries(
        [
          ['running', running],
          ['completed', 2 - running],
        ].filter(([, n]) => n),
      ),
    );
    expect(newest.elements.start).toEqual({ completed: 2 });
    expect((await t.api.get('/api/definitions/heat/heatmap?version=1')).body.version).toBe(1);
    expect((await t.api.get('/api/definitions/heat/heatmap?version=2')).status).toBe(404);
  });
});

describe('designer app', () => {
  it('keeps /api and /healthz answering, and unknown API routes still 404 as JSON', async () => {
    expect((await t.api.get('/healthz')).body).toEqual({ status: 'ok' });
    const res = await t.api.get('/api/nothing-here');
    expect(res.status).toBe(404);
    expect(res.body.type).toBe('NotFound');
  });
});
