// /engine-rest/history/activity-instance, /history/variable-instance and the process-definition
// statistics as Cockpit-like tools read them: activity instances from the steps (skipped ones left
// out), typed current variables, running instances and incidents per definition and per activity;
// filters Baton cannot answer are refused with a reason.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBpmn, singleTaskBpmn } from '../support/bpmn.ts';
import { deploy, waitForStatus } from '../support/flows.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { engineRest, startByKey } from './support.ts';

let t: TestServer;
let ordersId: string;

beforeAll(async () => {
  t = await startTestServer();
  // start -> check -> sub { sub_start -> inner -> sub_end } -> gw -> big (total > 100) -> big_end | small_end
  ordersId = (
    await deploy(
      t.api,
      buildBpmn(
        'hq_orders',
        [
          { id: 'start', type: 'startEvent' },
          { id: 'check', type: 'serviceTask', topic: 'hq-check' },
          {
            id: 'sub',
            type: 'subProcess',
            nodes: [
              { id: 'sub_start', type: 'startEvent' },
              { id: 'inner', type: 'serviceTask', topic: 'hq-inner' },
              { id: 'sub_end', type: 'endEvent' },
            ],
            flows: [
              { from: 'sub_start', to: 'inner' },
              { from: 'inner', to: 'sub_end' },
            ],
          },
          { id: 'gw', type: 'exclusiveGateway', default: 'to_small' },
          { id: 'big', type: 'serviceTask', topic: 'hq-big' },
          { id: 'big_end', type: 'endEvent' },
          { id: 'small_end', type: 'endEvent' },
        ],
        [
          { from: 'start', to: 'check' },
          { from: 'check', to: 'sub' },
          { from: 'sub', to: 'gw' },
          { id: 'to_big', from: 'gw', to: 'big', condition: '${total > 100}' },
          { id: 'to_small', from: 'gw', to: 'small_end' },
          { from: 'big', to: 'big_end' },
        ],
      ),
    )
  ).id;
  await deploy(t.api, singleTaskBpmn('hq_fail', 'hq-fail'));
  await deploy(t.api, singleTaskBpmn('hq_vars', 'hq-vars'));
  await deploy(t.api, singleTaskBpmn('hq_log', 'hq-log'));
  // start -> task (timer boundary -> late_end) -> wait (message) -> end
  await deploy(
    t.api,
    buildBpmn(
      'hq_waits',
      [
        { id: 'start', type: 'startEvent' },
        { id: 'task', type: 'serviceTask', topic: 'hq-waits' },
        { id: 'timeout', type: 'boundaryEvent', attachedTo: 'task', timer: { duration: 'PT1H' } },
        { id: 'late_end', type: 'endEvent' },
        { id: 'wait', type: 'catchEvent', message: 'hq-go' },
        { id: 'end', type: 'endEvent' },
      ],
      [
        { from: 'start', to: 'task' },
        { from: 'timeout', to: 'late_end' },
        { from: 'task', to: 'wait' },
        { from: 'wait', to: 'end' },
      ],
    ),
  );
});
afterAll(async () => {
  await t?.close();
});

const rest = (method: string, path: string, body?: unknown) => engineRest(t.url, method, path, body);

/** Locks the one task of a topic for worker w and completes it; answers its id. */
async function completeOne(topic: string): Promise<string> {
  const locked = await rest('POST', '/external-task/fetchAndLock', {
    workerId: 'w',
    maxTasks: 1,
    topics: [{ topicName: topic, lockDuration: 10_000 }],
  });
  const id = locked.body[0]?.id as string;
  expect((await rest('POST', `/external-task/${id}/complete`, { workerId: 'w' })).status).toBe(204);
  return id;
}

type Activity = Record<string, any>;
const byActivity = (list: Activity[]) => Object.fromEntries(list.map((a) => [a.activityId as string, a]));

describe('history/activity-instance', () => {
  it('given an instance inside a subprocess, then its steps are activity instances with types, parents and open ends', async () => {
    const id = await startByKey(t.url, 'hq_orders', { variables: { total: { value: 5, type: 'Long' } } });
    const checkTask = await completeOne('hq-check');

    const open = await rest('GET', `/history/activity-instance?processInstanceId=${id}&sortBy=startTime&sortOrder=asc`);
    expect(open.status).toBe(200);
    const a = byActivity(open.body);
    expect(Object.keys(a).sort()).toEqual(['check', 'inner', 'start', 'sub', 'sub_start']);
    expect(a.start).toMatchObject({ activityType: 'startEvent', parentActivityInstanceId: id, endTime: expect.any(String) });
    expect(a.check).toMatchObject({
      id: `check:${checkTask}`,
      activityType: 'serviceTask',
      processDefinitionKey: 'hq_orders',
      processDefinitionId: ordersId,
      processInstanceId: id,
      executionId: id,
      canceled: false,
      completeScope: false,
      tenantId: null,
    });
    expect(a.check?.durationInMillis).toBeGreaterThanOrEqual(0);
    expect(a.sub).toMatchObject({ id: `sub:${id}`, activityType: 'subProcess', endTime: null, durationInMillis: null });
    expect(a.inner).toMatchObject({ activityType: 'serviceTask', parentActivityInstanceId: `sub:${id}`, endTime: null });
    expect((await rest('GET', `/history/activity-instance/count?processInstanceId=${id}&unfinished=true`)).body).toEqual({
      count: 2,
    });
    expect((await rest('GET', `/history/activity-instance/${encodeURIComponent(`check:${checkTask}`)}`)).body.id).toBe(
      `check:${checkTask}`,
    );
    expect((await rest('GET', `/history/activity-instance/${encodeURIComponent('nope:x')}`)).status).toBe(404);

    // the per-activity statistics see the two open steps
    const stats = await rest('GET', `/process-definition/${ordersId}/statistics`);
    expect(stats.body).toEqual([
      {
        '@class': 'org.camunda.bpm.engine.rest.dto.repository.ActivityStatisticsResultDto',
        id: 'inner',
        instances: 1,
        failedJobs: 0,
        incidents: [],
      },
      expect.objectContaining({ id: 'sub', instances: 1 }),
    ]);

    await completeOne('hq-inner');
    await waitForStatus(t.api, id, 'completed');
    const done = byActivity((await rest('GET', `/history/activity-instance?processInstanceId=${id}`)).body);
    // big and big_end were skipped by the gateway (a dead path): Camunda has no activity instance for them
    expect(Object.keys(done).sort()).toEqual(['check', 'gw', 'inner', 'small_end', 'start', 'sub', 'sub_end', 'sub_start']);
    expect(done.gw).toMatchObject({ activityType: 'exclusiveGateway', completeScope: false });
    expect(done.small_end).toMatchObject({ activityType: 'noneEndEvent', completeScope: true });
    expect(done.sub_end).toMatchObject({ parentActivityInstanceId: `sub:${id}`, completeScope: true });
    expect(Object.values(done).every((x) => x.endTime !== null && x.durationInMillis >= 0)).toBe(true);

    const ends = await rest(
      'GET',
      `/history/activity-instance?processInstanceId=${id}&activityType=noneEndEvent&sortBy=activityId&sortOrder=desc`,
    );
    expect(ends.body.map((x: Activity) => x.activityId)).toEqual(['sub_end', 'small_end']);
    const paged = await rest('POST', '/history/activity-instance?firstResult=1&maxResults=2', {
      processInstanceId: id,
      finished: true,
      sorting: [{ sortBy: 'activityId', sortOrder: 'asc' }],
    });
    expect(paged.body.map((x: Activity) => x.activityId)).toEqual(['gw', 'inner']);
    expect((await rest('POST', '/history/activity-instance/count', { processInstanceId: id, activityId: 'check' })).body).toEqual(
      { count: 1 },
    );
    expect((await rest('GET', `/history/activity-instance/count?processInstanceId=${id}&unfinished=true`)).body).toEqual({
      count: 0,
    });
    expect((await rest('GET', `/process-definition/${ordersId}/statistics`)).body).toEqual([]);
  });

  it('given a boundary waiting on its task, then it is no activity instance (nor counted) until it fires; a message catch is one while it waits', async () => {
    const id = await startByKey(t.url, 'hq_waits');
    const types = async () =>
      (await rest('GET', `/history/activity-instance?processInstanceId=${id}&sortBy=activityId&sortOrder=asc`)).body.map(
        (a: Activity) => `${a.activityId}:${a.activityType}:${a.endTime === null ? 'open' : 'ended'}`,
      );
    expect(await types()).toEqual(['start:startEvent:ended', 'task:serviceTask:open']);
    expect((await rest('GET', '/process-definition/key/hq_waits/statistics')).body.map((a: Activity) => a.id)).toEqual(['task']);
    // the complete's transition moves the token to the catch event before it answers
    await completeOne('hq-waits');
    expect(await types()).toEqual(['start:startEvent:ended', 'task:serviceTask:ended', 'wait:intermediateMessageCatch:open']);
  });

  it('given a canceled instance, then its open step is a canceled activity instance', async () => {
    const id = await startByKey(t.url, 'hq_orders', { variables: { total: { value: 500, type: 'Long' } } });
    expect((await rest('DELETE', `/process-instance/${id}`)).status).toBe(204);
    await waitForStatus(t.api, id, 'canceled');
    const list = await rest('GET', `/history/activity-instance?processInstanceId=${id}&canceled=true`);
    expect(list.body).toEqual([expect.objectContaining({ activityId: 'check', canceled: true, endTime: expect.any(String) })]);
  });
});

describe('history/variable-instance', () => {
  it("given typed and native variables, then each is listed with the instance's type, also after the instance ended", async () => {
    const id = await startByKey(t.url, 'hq_vars', {
      variables: {
        amount: { value: 7, type: 'Long' },
        due: { value: '2026-12-24T17:00:00.000+0000', type: 'Date' },
        order: { value: '{"lines":2}', type: 'Json' },
        note: { value: 'x' },
      },
    });
    const list = await rest('GET', `/history/variable-instance?processInstanceId=${id}&sortBy=variableName&sortOrder=asc`);
    expect(list.status).toBe(200);
    expect(list.body.map((v: Activity) => [v.name, v.type, v.value])).toEqual([
      ['amount', 'Long', 7],
      ['due', 'Date', '2026-12-24T17:00:00.000+0000'],
      ['note', 'String', 'x'],
      ['order', 'Json', '{"lines":2}'],
    ]);
    expect(list.body[0]).toMatchObject({
      id: `${id}:amount`,
      processInstanceId: id,
      executionId: id,
      activityInstanceId: id,
      processDefinitionKey: 'hq_vars',
      state: 'CREATED',
      valueInfo: {},
      tenantId: null,
    });
    expect(
      (await rest('GET', `/history/variable-instance/count?processInstanceIdIn=${id}&variableNameLike=%25o%25e%25`)).body,
    ).toEqual({
      count: 2,
    });
    expect(
      (
        await rest('POST', '/history/variable-instance', { processInstanceIdIn: [id], variableNameIn: ['note', 'nope'] })
      ).body.map((v: Activity) => v.name),
    ).toEqual(['note']);

    expect((await rest('DELETE', `/process-instance/${id}`)).status).toBe(204);
    await waitForStatus(t.api, id, 'canceled');
    expect((await rest('POST', '/history/variable-instance/count', { executionIdIn: [id] })).body).toEqual({ count: 4 });
  });
});

describe('process-definition statistics', () => {
  it('given running instances and a failed task, then instances and incidents are counted per definition and per activity', async () => {
    const failing = await startByKey(t.url, 'hq_fail', { businessKey: 'hq-f1' });
    await startByKey(t.url, 'hq_fail', { businessKey: 'hq-f2' });
    const locked = await rest('POST', '/external-task/fetchAndLock', {
      workerId: 'w',
      maxTasks: 1,
      topics: [{ topicName: 'hq-fail', lockDuration: 10_000, businessKey: 'hq-f1' }],
    });
    const taskId = locked.body[0].id as string;
    expect(
      (await rest('POST', `/external-task/${taskId}/failure`, { workerId: 'w', errorMessage: 'down', retries: 0 })).status,
    ).toBe(204);
    await waitForStatus(t.api, failing, 'incident');

    const fail = (res: { body: Activity[] }) => res.body.find((s) => s.definition.key === 'hq_fail');
    expect(fail(await rest('GET', '/process-definition/statistics?incidents=true'))).toMatchObject({
      '@class': 'org.camunda.bpm.engine.rest.dto.repository.ProcessDefinitionStatisticsResultDto',
      instances: 2,
      failedJobs: 0,
      incidents: [{ incidentType: 'failedExternalTask', incidentCount: 1 }],
      definition: { key: 'hq_fail', version: 1 },
    });
    expect(fail(await rest('GET', '/process-definition/statistics?failedJobs=true'))).toMatchObject({ incidents: [] });
    expect(fail(await rest('GET', '/process-definition/statistics?incidentsForType=failedExternalTask'))?.incidents).toHaveLength(
      1,
    );
    expect(fail(await rest('GET', '/process-definition/statistics?rootIncidents=true'))?.incidents).toHaveLength(1);
    expect(fail(await rest('GET', '/process-definition/statistics?incidentsForType=bpmn_error'))?.incidents).toEqual([]);
    // a definition without running instances is listed with 0
    const all = (await rest('GET', '/process-definition/statistics')).body as Activity[];
    expect(all.find((s) => s.definition.key === 'hq_orders')).toMatchObject({ id: ordersId, instances: 0 });

    expect((await rest('GET', '/process-definition/key/hq_fail/statistics?incidents=true')).body).toEqual([
      {
        '@class': 'org.camunda.bpm.engine.rest.dto.repository.ActivityStatisticsResultDto',
        id: 'work',
        instances: 2,
        failedJobs: 0,
        incidents: [{ incidentType: 'failedExternalTask', incidentCount: 1 }],
      },
    ]);
    expect((await rest('GET', '/process-definition/key/nope/statistics')).status).toBe(404);
    expect((await rest('GET', '/process-definition/not-an-id/statistics')).body).toEqual([]);
  });
});

describe('history/external-task-log', () => {
  it('given a task that failed once then completed, and a canceled one, then the log has their creation, failure, success and deletion', async () => {
    const a = await startByKey(t.url, 'hq_log', { businessKey: 'hq-log-a' });
    const lock = async () =>
      (
        await rest('POST', '/external-task/fetchAndLock', {
          workerId: 'w',
          maxTasks: 1,
          topics: [{ topicName: 'hq-log', lockDuration: 10_000 }],
        })
      ).body[0]?.id as string;
    const taskId = await lock();
    expect(
      (
        await rest('POST', `/external-task/${taskId}/failure`, {
          workerId: 'w',
          errorMessage: 'flaky',
          retries: 1,
          retryTimeout: 0,
        })
      ).status,
    ).toBe(204);
    expect(await lock()).toBe(taskId);
    expect((await rest('POST', `/external-task/${taskId}/complete`, { workerId: 'w' })).status).toBe(204);
    await waitForStatus(t.api, a, 'completed');

    const log = await rest('GET', `/history/external-task-log?processInstanceId=${a}&sortBy=timestamp&sortOrder=asc`);
    expect(log.status).toBe(200);
    expect(log.body.map((l: Activity) => [l.creationLog, l.failureLog, l.successLog, l.deletionLog])).toEqual([
      [true, false, false, false],
      [false, true, false, false],
      [false, false, true, false],
    ]);
    expect(log.body[0]).toMatchObject({
      id: `${taskId}:created`,
      externalTaskId: taskId,
      topicName: 'hq-log',
      workerId: null,
      retries: null,
      activityId: 'work',
      activityInstanceId: `work:${taskId}`,
      executionId: a,
      processDefinitionKey: 'hq_log',
      tenantId: null,
    });
    expect(log.body[1]).toMatchObject({ workerId: 'w', errorMessage: 'flaky', retries: 1 });
    expect(log.body[2]).toMatchObject({ workerId: 'w', errorMessage: null });
    expect((await rest('GET', `/history/external-task-log/${log.body[1].id}`)).body).toEqual(log.body[1]);
    expect((await rest('GET', '/history/external-task-log/nope')).status).toBe(404);
    expect((await rest('GET', `/history/external-task-log/count?externalTaskId=${taskId}&failureLog=true`)).body).toEqual({
      count: 1,
    });

    const b = await startByKey(t.url, 'hq_log', { businessKey: 'hq-log-b' });
    expect((await rest('DELETE', `/process-instance/${b}`)).status).toBe(204);
    await waitForStatus(t.api, b, 'canceled');
    const deleted = await rest('POST', '/history/external-task-log', { executionIdIn: [b], deletionLog: true });
    expect(deleted.body).toEqual([expect.objectContaining({ processInstanceId: b, deletionLog: true, activityId: 'work' })]);
    expect(
      (await rest('POST', '/history/external-task-log/count', { processDefinitionKey: 'hq_log', topicName: 'hq-log' })).body,
    ).toEqual({
      count: 5,
    });
  });
});

describe('refusals', () => {
  it('given filters Baton cannot answer or bad values, then 400 InvalidRequestException names them', async () => {
    const cases: [string, string, string, unknown?][] = [
      ['GET', '/history/activity-instance?tenantIdIn=t1', 'tenantIdIn'],
      ['GET', '/history/activity-instance?sortBy=occurrence&sortOrder=asc', 'occurrence'],
      ['GET', '/history/activity-instance/count?finished=maybe', 'finished'],
      ['GET', '/history/activity-instance?startedAfter=yesterday', 'startedAfter'],
      ['POST', '/history/activity-instance', 'tenantIdIn', { tenantIdIn: ['t1'] }],
      ['GET', '/history/variable-instance?variableValue=5', 'variableValue'],
      ['GET', '/history/variable-instance?variableTypeIn=String', 'variableTypeIn'],
      ['GET', '/history/variable-instance?includeDeleted=true', 'includeDeleted'],
      ['POST', '/history/variable-instance/count', 'taskIdIn', { taskIdIn: ['x'] }],
      ['GET', '/history/variable-instance?sortBy=tenantId&sortOrder=asc', 'tenantId'],
      ['GET', '/process-definition/statistics?failedJobs=maybe', 'failedJobs'],
      ['GET', '/history/external-task-log?tenantIdIn=t1', 'tenantIdIn'],
      ['GET', '/history/external-task-log?creationLog=true&successLog=true', 'successLog'],
      ['GET', '/history/external-task-log?sortBy=tenantId&sortOrder=asc', 'tenantId'],
      ['GET', '/history/external-task-log/count?priorityLowerThanOrEquals=high', 'priorityLowerThanOrEquals'],
      ['GET', '/process-definition/statistics?incidents=true&incidentsForType=x', 'incidentsForType'],
      [
        'GET',
        `/process-definition/${'0'.repeat(8)}-0000-4000-8000-000000000000/statistics?incidents=true&incidentsForType=x`,
        'incidentsForType',
      ],
    ];
    for (const [method, path, named, body] of cases) {
      const res = await rest(method, path, body);
      expect({ path, status: res.status, type: res.body.type }).toEqual({ path, status: 400, type: 'InvalidRequestException' });
      expect(res.body.message, path).toContain(named);
    }
    // accepted and without effect: no tenants, values answered as stored, nothing deleted asked for
    for (const path of [
      '/history/activity-instance/count?withoutTenantId=true',
      '/history/variable-instance/count?deserializeValues=false&includeDeleted=false&withoutTenantId=true',
    ])
      expect((await rest('GET', path)).status, path).toBe(200);
  });
});
