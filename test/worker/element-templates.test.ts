// subscribe(topic, handler, { template }): the worker publishes its templates when it starts,
// before it fetches; a lost call is sent again, a refused template stops the start.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createWorker, TemplateRefusedError, type Worker, type WorkerOptions } from '../../runtime/worker/index.ts';
import { singleTaskBpmn } from '../support/bpmn.ts';
import { trackConnections } from '../support/connections.ts';
import { startFaultProxy, type FaultProxy } from '../support/fault-proxy.ts';
import { deploy, start, waitForStatus } from '../support/flows.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { recordingLogger } from '../support/worker-log.ts';

const fixtures = path.resolve(import.meta.dirname, '../fixtures/element-templates');
const camunda7 = (): any => JSON.parse(readFileSync(path.join(fixtures, 'camunda7-charge-card.json'), 'utf8'));
const zeebe = (): any => JSON.parse(readFileSync(path.join(fixtures, 'zeebe-ship-parcel.json'), 'utf8'));

let t: TestServer;
let connections: ReturnType<typeof trackConnections>;
let proxy: FaultProxy;
const workers: Worker[] = [];

beforeAll(async () => {
  t = await startTestServer();
  connections = trackConnections(t.server.http);
  proxy = await startFaultProxy(t.url);
});
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.stop()));
});
afterAll(async () => {
  await proxy.close();
  connections.destroyAll();
  await t.close();
});

function newWorker(opts: Partial<WorkerOptions> = {}): Worker {
  const w = createWorker({
    baseUrl: t.url,
    workerId: `tpl-${workers.length}-${Date.now()}`,
    pollWaitMs: 1_000,
    stopGraceMs: 500,
    backoff: { minMs: 20, maxMs: 200 },
    log: recordingLogger(),
    ...opts,
  });
  workers.push(w);
  return w;
}

const listed = async (topic: string) => (await t.api.get(`/api/element-templates?topic=${topic}`)).body as any[];

describe('worker element templates', () => {
  it('given a worker with a Camunda 7 and a Zeebe template, then both are listed once it is ready, and it works the topic', async () => {
    await deploy(t.api, singleTaskBpmn('tpl-charge', 'charge-card'));
    const log = recordingLogger();
    const worker = newWorker({ log })
      .subscribe('charge-card', async () => ({ chargeId: 'ch_1' }), { template: camunda7() })
      .subscribe('ship-parcel', async () => ({}), { template: zeebe() })
      .start();
    await worker.ready();
    expect(await listed('charge-card')).toEqual([camunda7()]);
    expect(await listed('ship-parcel')).toEqual([zeebe()]);
    expect(log.records.filter((r) => r.event === 'template:published').map((r) => r.fields.topic)).toEqual([
      'charge-card',
      'ship-parcel',
    ]);
    const id = await start(t.api, 'tpl-charge');
    expect((await waitForStatus(t.api, id, 'completed')).variables).toEqual({ chargeId: 'ch_1' });
    const activity = (await t.api.get('/api/topics/activity?topic=charge-card')).body.items;
    expect(activity[0].workers.map((w: any) => w.workerId)).toContain(worker.workerId);
  });

  it('given a second worker with the same template, then it starts too (the same JSON is published again without change)', async () => {
    const first = newWorker()
      .subscribe('charge-card', async () => ({}), { template: camunda7() })
      .start();
    const second = newWorker()
      .subscribe('charge-card', async () => ({}), { template: camunda7() })
      .start();
    await Promise.all([first.ready(), second.ready()]);
    expect(await listed('charge-card')).toEqual([camunda7()]);
  });

  it('given a template call lost on the way, then it is sent again and the worker becomes ready', async () => {
    const template = { ...camunda7(), id: 'tpl.lost-once' };
    template.properties = template.properties.map((p: any) =>
      p.binding.name === 'camunda:topic' ? { ...p, value: 'tpl-lost-once' } : p,
    );
    proxy.addFault({ path: /\/api\/element-templates$/, when: 'before', times: 2 });
    const log = recordingLogger();
    const worker = newWorker({ baseUrl: proxy.url, log })
      .subscribe('tpl-lost-once', async () => ({}), { template })
      .start();
    await worker.ready();
    expect(log.count('template:publish_failed')).toBe(2);
    const puts = proxy.calls.filter((c) => c.method === 'PUT' && c.path === '/api/element-templates');
    expect(puts.map((c) => c.fate)).toEqual(['dropped_before', 'dropped_before', 'forwarded']);
    expect((await listed('tpl-lost-once')).map((x) => x.id)).toEqual(['tpl.lost-once']);
  });

  it('given a template the server refuses, then ready() rejects with its reasons, the worker fetched nothing and is stopped', async () => {
    const broken = camunda7();
    broken.id = 'tpl.broken';
    broken.properties[2].type = 'Strin';
    const log = recordingLogger();
    const worker = newWorker({ baseUrl: proxy.url, log })
      .subscribe('charge-card', async () => ({}), { template: broken })
      .start();
    const refused = await worker.ready().catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(TemplateRefusedError);
    expect(refused).toMatchObject({ topic: 'charge-card', templateId: 'tpl.broken', status: 400, type: 'ValidationError' });
    expect((refused as TemplateRefusedError).details).toEqual([
      { path: '/properties/2/type', message: expect.stringContaining('"Strin"') },
    ]);
    expect((refused as Error).message).toMatch(
      /refused the element template "tpl.broken" of topic "charge-card" \(400 ValidationError\)/,
    );
    await expect.poll(() => log.count('worker:stopped')).toBe(1);
    expect(log.count('template:refused')).toBe(1);
    const fetches = proxy.calls.filter((c) => c.path.endsWith('/fetch-and-lock') && c.body?.workerId === worker.workerId);
    expect(fetches).toEqual([]);
    expect(() => worker.start()).toThrow(/stopped/);
  });

  it('given templates that do not fit the subscription, then subscribe throws naming the problem', () => {
    expect(() => newWorker().subscribe('other-topic', async () => ({}), { template: camunda7() })).toThrow(
      /binds topic "charge-card" but is subscribed to topic "other-topic"/,
    );
    const noTopic = camunda7();
    noTopic.properties = noTopic.properties.filter((p: any) => p.binding.name !== 'camunda:topic');
    expect(() => newWorker().subscribe('charge-card', async () => ({}), { template: noTopic })).toThrow(TypeError);
    const started = newWorker()
      .subscribe('a-topic', async () => ({}))
      .start();
    expect(() => started.subscribe('charge-card', async () => ({}), { template: camunda7() })).toThrow(/before start\(\)/);
  });
});
