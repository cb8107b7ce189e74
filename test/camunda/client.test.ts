// Acceptance: the unmodified official Camunda 7 JS client against a real Baton server.
import { BasicAuthInterceptor, File, Variables } from 'camunda-external-task-client-js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildBpmn, parallelBpmn, singleTaskBpmn } from '../support/bpmn.ts';
import { deploy, waitForStatus } from '../support/flows.ts';
import { startTestServer, waitFor, type TestServer } from '../support/server.ts';
import { clientPool, deferred, engineRest, startByKey } from './support.ts';

let t: TestServer;
const clients = clientPool();

beforeAll(async () => {
  t = await startTestServer({ sweepIntervalMs: 50 });
  await deploy(t.api, parallelBpmn('cam_parallel', 'cam-a', 'cam-b'));
  await deploy(t.api, singleTaskBpmn('cam_single', 'cam-single'));
  await deploy(t.api, singleTaskBpmn('cam_fail', 'cam-fail'));
  await deploy(t.api, singleTaskBpmn('cam_incident', 'cam-incident'));
  await deploy(t.api, singleTaskBpmn('cam_error', 'cam-error'));
  await deploy(t.api, singleTaskBpmn('cam_extend', 'cam-extend'));
  await deploy(t.api, singleTaskBpmn('cam_unlock', 'cam-unlock'));
  await deploy(t.api, singleTaskBpmn('cam_takeover', 'cam-takeover'));
  await deploy(t.api, singleTaskBpmn('cam_poll', 'cam-poll'));
  await deploy(t.api, singleTaskBpmn('cam_many', 'cam-many'));
  await deploy(
    t.api,
    buildBpmn(
      'cam_types',
      [
        { id: 'start', type: 'startEvent' },
        { id: 'write', type: 'serviceTask', topic: 'cam-write' },
        { id: 'read', type: 'serviceTask', topic: 'cam-read' },
        { id: 'end', type: 'endEvent' },
      ],
      [
        { from: 'start', to: 'write' },
        { from: 'write', to: 'read' },
        { from: 'read', to: 'end' },
      ],
    ),
  );
  await deploy(
    t.api,
    buildBpmn(
      'cam_route',
      [
        { id: 'start', type: 'startEvent' },
        { id: 'price', type: 'serviceTask', topic: 'cam-price' },
        { id: 'gw', type: 'exclusiveGateway', default: 'cheap' },
        { id: 'review', type: 'serviceTask', topic: 'cam-review' },
        { id: 'end', type: 'endEvent' },
      ],
      [
        { from: 'start', to: 'price' },
        { from: 'price', to: 'gw' },
        { id: 'big', from: 'gw', to: 'review', condition: '${amount > 100}' },
        { id: 'cheap', from: 'gw', to: 'end' },
        { from: 'review', to: 'end' },
      ],
    ),
  );
});
afterEach(() => clients.stopAll());
afterAll(async () => {
  clients.stopAll();
  await t.close();
});

async function dbTask(instanceId: string) {
  const { rows } = await t.db.pool.query('select * from external_tasks where instance_id = $1', [instanceId]);
  return rows[0];
}

describe('camunda-external-task-client-js against Baton', () => {
  it('works two topics of one subscription and completes the instance', async () => {
    const client = clients.create(t.url, { interceptors: new BasicAuthInterceptor({ username: 'demo', password: 'demo' }) });
    const seen: string[] = [];
    for (const topic of ['cam-a', 'cam-b']) {
      client.subscribe(topic, async ({ task, taskService }: any) => {
        seen.push(task.topicName);
        await taskService.complete(task);
      });
    }
    client.start();
    const id = await startByKey(t.url, 'cam_parallel');
    await waitForStatus(t.api, id, 'completed');
    expect(seen.sort()).toEqual(['cam-a', 'cam-b']);
  });

  it('three clients sharing a topic never get the same task; every task completes once', async () => {
    const handled: string[] = [];
    const errors: unknown[] = [];
    for (const workerId of ['c1', 'c2', 'c3']) {
      const client = clients.create(t.url, { workerId, maxTasks: 3 });
      client.subscribe('cam-many', async ({ task, taskService }: any) => {
        handled.push(task.id);
        await taskService.complete(task).catch((e: unknown) => errors.push(e));
      });
      client.start();
    }
    const ids = await Promise.all(Array.from({ length: 20 }, () => startByKey(t.url, 'cam_many')));
    for (const id of ids) await waitForStatus(t.api, id, 'completed');
    expect(errors).toEqual([]);
    expect(new Set(handled).size).toBe(20);
    expect(handled).toHaveLength(20);
  });

  it('answers a parked long poll with a task that arrives mid-wait', async () => {
    const client = clients.create(t.url, { asyncResponseTimeout: 20_000 });
    const got = deferred<{ at: number; processInstanceId: string }>();
    client.subscribe('cam-poll', async ({ task, taskService }: any) => {
      got.resolve({ at: Date.now(), processInstanceId: task.processInstanceId });
      await taskService.complete(task);
    });
    // Polls of the clients stopped after earlier tests end within their 1 s timeout; then the only parked poll is this client's.
    await waitFor(async () => (t.server.parkedPolls.parked === 0 ? true : undefined), 10_000, 'earlier polls to end');
    client.start();
    await waitFor(async () => (t.server.parkedPolls.parked > 0 ? true : undefined), 10_000, 'a parked poll');
    const startedAt = Date.now();
    const id = await startByKey(t.url, 'cam_poll');
    const { at, processInstanceId } = await got.promise;
    expect(processInstanceId).toBe(id);
    expect(at - startedAt).toBeLessThan(10_000); // well inside the 20 s poll: the notification woke it
    await waitForStatus(t.api, id, 'completed');
  });

  it('round-trips every variable type, including Json, Date, Long and a File download', async () => {
    const when = new Date('2024-05-01T12:34:56.789Z');
    const read = deferred<Record<string, any>>();
    const client = clients.create(t.url);
    client.subscribe('cam-write', async ({ task, taskService }: any) => {
      const vars = new Variables();
      const file = new File({ typedValue: { valueInfo: { filename: 'hello.txt', mimetype: 'text/plain' } } });
      file.content = Buffer.from('hello, baton');
      vars
        .set('text', 'plain')
        .set('count', 42)
        .set('big', 2 ** 40)
        .set('ratio', 0.25)
        .set('flag', true)
        .set('when', when)
        .set('order', { items: [1, 2], note: 'x' })
        .set('nothing', null)
        .set('doc', file)
        .setTyped('bytes', { type: 'bytes', value: Buffer.from([1, 2, 3]).toString('base64'), valueInfo: {} })
        .setTransient('scratch', 'not kept');
      await taskService.complete(task, vars);
    });
    client.subscribe('cam-read', async ({ task, taskService }: any) => {
      const typed = task.variables.getAllTyped();
      const doc = task.variables.get('doc');
      await doc.load();
      read.resolve({ typed, all: task.variables.getAll(), docContent: doc.content, docFile: doc });
      await taskService.complete(task);
    });
    client.start();
    const id = await startByKey(t.url, 'cam_types');
    const { typed, all, docContent, docFile } = await read.promise;
    expect(Object.fromEntries(Object.entries(typed).map(([k, v]: [string, any]) => [k, v.type]))).toEqual({
      text: 'string',
      count: 'integer',
      big: 'long',
      ratio: 'double',
      flag: 'boolean',
      when: 'date',
      order: 'json',
      nothing: 'null',
      doc: 'file',
      bytes: 'bytes',
    });
    expect(all.when).toBeInstanceOf(Date);
    expect(all.when.getTime()).toBe(when.getTime());
    expect(all.order).toEqual({ items: [1, 2], note: 'x' });
    expect(all.big).toBe(2 ** 40);
    expect(all).not.toHaveProperty('scratch');
    expect(Buffer.from(docContent).toString()).toBe('hello, baton');
    expect(docFile.filename).toBe('hello.txt');
    expect(docFile.mimeType).toBe('text/plain');
    await waitForStatus(t.api, id, 'completed');
    // Camunda's capitalised names and formats on the wire.
    const res = await engineRest(t.url, 'GET', `/execution/${id}/localVariables/doc/data`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain');
    expect(res.headers.get('content-disposition')).toBe('attachment; filename="hello.txt"');
  });

  it('completes with variables that steer the gateway after the task', async () => {
    const client = clients.create(t.url);
    const reviewed = deferred<number>();
    client.subscribe('cam-price', async ({ task, taskService }: any) => {
      await taskService.complete(task, new Variables().set('amount', 150));
    });
    client.subscribe('cam-review', async ({ task, taskService }: any) => {
      reviewed.resolve(task.variables.get('amount'));
      await taskService.complete(task);
    });
    client.start();
    const id = await startByKey(t.url, 'cam_route');
    expect(await reviewed.promise).toBe(150);
    await waitForStatus(t.api, id, 'completed');
  });

  it('handleFailure with retries and retryTimeout delays the next attempt; the retry completes', async () => {
    const client = clients.create(t.url);
    const attempts: { at: number; retries: number | null; errorMessage: string | null }[] = [];
    client.subscribe('cam-fail', async ({ task, taskService }: any) => {
      attempts.push({ at: Date.now(), retries: task.retries, errorMessage: task.errorMessage });
      if (attempts.length === 1)
        await taskService.handleFailure(task, { errorMessage: 'flaky', errorDetails: 'stack', retries: 1, retryTimeout: 1000 });
      else await taskService.complete(task);
    });
    client.start();
    const id = await startByKey(t.url, 'cam_fail');
    await waitForStatus(t.api, id, 'completed');
    expect(attempts).toHaveLength(2);
    expect(attempts[0]).toMatchObject({ retries: null, errorMessage: null });
    expect(attempts[1]).toMatchObject({ retries: 1, errorMessage: 'flaky' });
    expect((attempts[1]?.at ?? 0) - (attempts[0]?.at ?? 0)).toBeGreaterThanOrEqual(900);
  });

  it('handleFailure without options raises an incident (retries 0)', async () => {
    const client = clients.create(t.url);
    client.subscribe('cam-incident', async ({ task, taskService }: any) => {
      await taskService.handleFailure(task);
    });
    client.start();
    const id = await startByKey(t.url, 'cam_incident');
    const instance = await waitForStatus(t.api, id, 'incident');
    expect(instance.incidents).toHaveLength(1);
    expect(instance.incidents[0].kind).toBe('task_failed');
    expect((await dbTask(id)).state).toBe('failed');
  });

  it('handleBpmnError with no error boundary raises a bpmn_error incident (documented difference)', async () => {
    const client = clients.create(t.url);
    client.subscribe('cam-error', async ({ task, taskService }: any) => {
      await taskService.handleBpmnError(task, 'OUT_OF_STOCK', 'none left', new Variables().set('reason', 'stock'));
    });
    client.start();
    const id = await startByKey(t.url, 'cam_error');
    const instance = await waitForStatus(t.api, id, 'incident');
    expect(instance.incidents[0].kind).toBe('bpmn_error');
    expect(instance.variables.reason).toBe('stock');
  });

  it('extendLock keeps the lease past its first expiry', async () => {
    const client = clients.create(t.url, { lockDuration: 600 });
    const done = deferred();
    client.subscribe('cam-extend', async ({ task, taskService }: any) => {
      await taskService.extendLock(task, 10_000);
      const { rows } = await t.db.pool.query(
        `select lock_expires_at > now() + interval '5 seconds' as far from external_tasks where id = $1`,
        [task.id],
      );
      expect(rows[0].far).toBe(true);
      // Past the first expiry (600 ms) with the sweeper running every 50 ms, the lease still holds.
      await new Promise((r) => setTimeout(r, 1000));
      await taskService.complete(task);
      done.resolve();
    });
    client.start();
    const id = await startByKey(t.url, 'cam_extend');
    await done.promise;
    await waitForStatus(t.api, id, 'completed');
  });

  it('unlock gives the task back; it is fetched again and completed', async () => {
    const client = clients.create(t.url);
    let calls = 0;
    client.subscribe('cam-unlock', async ({ task, taskService }: any) => {
      calls += 1;
      if (calls === 1) await taskService.unlock(task);
      else await taskService.complete(task);
    });
    client.start();
    const id = await startByKey(t.url, 'cam_unlock');
    await waitForStatus(t.api, id, 'completed');
    expect(calls).toBe(2);
    expect((await dbTask(id)).attempt).toBe(2);
  });

  it('a second client takes over after the first one lets the lock expire; the late complete gets 404', async () => {
    const first = clients.create(t.url, { workerId: 'slow', lockDuration: 300 });
    const second = clients.create(t.url, { workerId: 'fast' });
    const held = deferred<{ task: any; taskService: any }>();
    first.subscribe('cam-takeover', async ({ task, taskService }: any) => {
      held.resolve({ task, taskService });
      first.stop();
    });
    first.start();
    const id = await startByKey(t.url, 'cam_takeover');
    const stale = await held.promise;
    second.subscribe('cam-takeover', async ({ task, taskService }: any) => {
      await taskService.complete(task);
    });
    second.start();
    await waitForStatus(t.api, id, 'completed');
    const err: any = await stale.taskService.complete(stale.task).catch((e: unknown) => e);
    expect(err.httpStatusCode).toBe(404); // the task is gone for Camunda once completed by the other worker
  });
});
