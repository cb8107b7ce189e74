// PUT/GET /api/element-templates: templates workers publish for their topics, checked by our
// schema, by Camunda's element-template schema and for a topic binding; one id and version
// never changes.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseTokens } from '../../../runtime/security/tokens.ts';
import { databaseDigest } from '../../security/digest.ts';
import { apiClient, startTestServer, type TestServer } from '../../support/server.ts';

const fixtures = path.resolve(import.meta.dirname, '../../fixtures/element-templates');
const camunda7 = (): any => JSON.parse(readFileSync(path.join(fixtures, 'camunda7-charge-card.json'), 'utf8'));
const zeebe = (): any => JSON.parse(readFileSync(path.join(fixtures, 'zeebe-ship-parcel.json'), 'utf8'));

/** The Camunda 7 fixture under another id, topic and version. */
function chargeTemplate(id: string, topic: string, version?: number): any {
  const t = camunda7();
  t.id = id;
  if (version === undefined) delete t.version;
  else t.version = version;
  t.properties.find((p: any) => p.binding.name === 'camunda:topic').value = topic;
  return t;
}

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => t?.close());

const put = (body: unknown, api = t.api) => api.call('PUT', '/api/element-templates', body);

describe('publishing element templates', () => {
  it('given a Camunda 7 template, then 201 with its topic, and the list holds the JSON as sent', async () => {
    const template = camunda7();
    const res = await put(template);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toMatchObject({
      id: 'dev.baton.samples.charge-card',
      version: 1,
      name: 'Charge card',
      dialect: 'camunda7',
      topic: 'charge-card',
      publishedBy: null,
      created: true,
    });
    expect(new Date(res.body.publishedAt).getTime()).not.toBeNaN();
    const list = await t.api.get('/api/element-templates?topic=charge-card');
    expect(list.status).toBe(200);
    expect(list.body).toEqual([template]);
  });

  it('given a Zeebe template, then its zeebe:taskDefinition type is its topic', async () => {
    const res = await put(zeebe());
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toMatchObject({ id: 'dev.baton.samples.ship-parcel', version: 2, dialect: 'zeebe', topic: 'ship-parcel' });
    expect((await t.api.get('/api/element-templates?topic=ship-parcel')).body).toEqual([zeebe()]);
  });

  it('given the same id, version and JSON again (keys in another order), then 200, created false, nothing changes', async () => {
    const first = await put(chargeTemplate('again', 'again-topic', 3));
    expect(first.status).toBe(201);
    const before = await databaseDigest(t.db.pool);
    const reordered = Object.fromEntries(Object.entries(chargeTemplate('again', 'again-topic', 3)).reverse());
    const again = await put(reordered);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ id: 'again', version: 3, created: false, publishedAt: first.body.publishedAt });
    expect(await databaseDigest(t.db.pool)).toBe(before);
  });

  it('given other JSON under a published id and version, then 409 saying to bump the version, and the first stays', async () => {
    await put(chargeTemplate('changed', 'changed-topic', 1));
    const edited = chargeTemplate('changed', 'changed-topic', 1);
    edited.name = 'Charge card, renamed';
    const res = await put(edited);
    expect(res.status).toBe(409);
    expect(res.body.type).toBe('Conflict');
    expect(res.body.message).toMatch(/"changed" version 1 is already published with other content/);
    expect(res.body.message).toMatch(/bump "version"/);
    expect((await t.api.get('/api/element-templates?topic=changed-topic')).body).toEqual([
      chargeTemplate('changed', 'changed-topic', 1),
    ]);
    // A template without a version is a key of its own, with the same rule.
    expect((await put(chargeTemplate('changed', 'changed-topic'))).status).toBe(201);
    const unversioned = chargeTemplate('changed', 'changed-topic');
    unversioned.description = 'edited';
    expect((await put(unversioned)).body.message).toMatch(/"changed" \(no version\) is already published/);
  });

  it('given a template the element-template schema refuses, then 400 ValidationError with its complaints in details, nothing stored', async () => {
    const before = await databaseDigest(t.db.pool);
    const broken = chargeTemplate('broken', 'broken-topic', 1);
    broken.properties[2].type = 'Strin';
    const res = await put(broken);
    expect(res.status).toBe(400);
    expect(res.body.type).toBe('ValidationError');
    expect(res.body.message).toMatch(/does not follow the Camunda 7 element-template schema/);
    expect(res.body.details).toEqual([
      { path: '/properties/2/type', message: expect.stringContaining('invalid property type "Strin"') },
    ]);
    const zeebeBroken = zeebe();
    zeebeBroken.properties[1].binding = { type: 'zeebe:input' };
    const z = await put(zeebeBroken);
    expect(z.status).toBe(400);
    expect(z.body.message).toMatch(/Zeebe element-template schema/);
    expect(z.body.details).toEqual(expect.arrayContaining([expect.objectContaining({ path: '/properties/1/binding' })]));
    const manyBroken = zeebe();
    manyBroken.properties.push(
      ...Array.from({ length: 8 }, (_, i) => ({ type: 'String', binding: { type: `zeebe:nothing${i}` } })),
    );
    const many = await put(manyBroken);
    expect(many.body.details.length).toBeGreaterThan(5);
    expect(many.body.message).toMatch(new RegExp(`and ${many.body.details.length - 5} more in details$`));
    expect(await databaseDigest(t.db.pool)).toBe(before);
  });

  it('given a template that binds no topic, then 400 naming the binding to add', async () => {
    const before = await databaseDigest(t.db.pool);
    const noTopic = camunda7();
    noTopic.properties = noTopic.properties.filter((p: any) => p.binding.name !== 'camunda:topic');
    const c7 = await put(noTopic);
    expect(c7.status).toBe(400);
    expect(c7.body.message).toBe(
      'Element template "dev.baton.samples.charge-card" binds no topic: add a property with "binding": {"type":"property","name":"camunda:topic"} and the topic as its "value"',
    );
    const notExternal = camunda7();
    notExternal.properties = notExternal.properties.filter((p: any) => p.binding.name !== 'camunda:type');
    expect((await put(notExternal)).body.message).toMatch(
      /does not make the task external: add a property with "binding": \{"type":"property","name":"camunda:type"\}/,
    );
    const zeebeNoType = zeebe();
    zeebeNoType.properties.shift();
    const z = await put(zeebeNoType);
    expect(z.status).toBe(400);
    expect(z.body.message).toMatch(
      /binds no topic: add a property with "binding": \{"type":"zeebe:taskDefinition","property":"type"\}/,
    );
    const expression = zeebe();
    expression.properties[0].value = '=topicOf(order)';
    expect((await put(expression)).body.message).toMatch(/without a fixed topic/);
    expect(await databaseDigest(t.db.pool)).toBe(before);
  });

  it('given bodies our schema refuses, then 400 before the element-template schema runs', async () => {
    for (const body of [
      [camunda7()],
      { name: 'x', properties: [] },
      { ...camunda7(), version: -1 },
      { ...camunda7(), version: 1.5 },
    ]) {
      const res = await put(body);
      expect(res.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(res.body.type).toBe('ValidationError');
    }
  });

  it('lists the newest version of each template, filtered by the topic the newest binds', async () => {
    await put(chargeTemplate('listed', 'listed-topic', 1));
    await put(chargeTemplate('listed', 'listed-topic', 10));
    await put(chargeTemplate('listed', 'listed-topic', 2));
    await put(chargeTemplate('moved', 'listed-topic', 1));
    await put(chargeTemplate('moved', 'elsewhere-topic', 2));
    const listed = (await t.api.get('/api/element-templates?topic=listed-topic')).body;
    expect(listed.map((x: any) => [x.id, x.version])).toEqual([['listed', 10]]);
    const all = (await t.api.get('/api/element-templates')).body as any[];
    expect(all.filter((x) => ['listed', 'moved'].includes(x.id)).map((x) => [x.id, x.version])).toEqual([
      ['listed', 10],
      ['moved', 2],
    ]);
    expect(new Set(all.map((x) => x.id)).size).toBe(all.length);
    expect((await t.api.get('/api/element-templates?topic=nobody-binds-this')).body).toEqual([]);
    expect((await t.api.get('/api/element-templates?color=red')).status).toBe(400);
  });
});

describe('element templates with tokens', () => {
  const SECRETS = { admin: 'admin-secret-0123456789', worker: 'worker-secret-0123456789', viewer: 'viewer-secret-0123456789' };
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({
      auth: {
        tokens: parseTokens(`admin:ops:${SECRETS.admin},worker:billing:${SECRETS.worker},viewer:dash:${SECRETS.viewer}`),
      },
    });
  });
  afterAll(async () => s?.close());

  it('lets workers and admins publish, records who did, and lets every role list', async () => {
    const worker = apiClient(s.url, SECRETS.worker);
    const viewer = apiClient(s.url, SECRETS.viewer);
    const admin = apiClient(s.url, SECRETS.admin);
    const published = await put(chargeTemplate('by-worker', 'token-topic', 1), worker);
    expect(published.status).toBe(201);
    expect(published.body.publishedBy).toBe('billing');
    expect((await put(chargeTemplate('by-admin', 'token-topic', 1), admin)).body.publishedBy).toBe('ops');
    const refused = await put(chargeTemplate('by-viewer', 'token-topic', 1), viewer);
    expect(refused.status).toBe(403);
    expect((await put(chargeTemplate('anonymous', 'token-topic', 1), apiClient(s.url))).status).toBe(401);
    for (const reader of [worker, viewer, admin]) {
      const list = await reader.get('/api/element-templates?topic=token-topic');
      expect(list.status).toBe(200);
      expect(list.body.map((x: any) => x.id)).toEqual(['by-admin', 'by-worker']);
    }
    expect((await apiClient(s.url).get('/api/element-templates')).status).toBe(401);
  });
});
