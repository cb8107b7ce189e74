// Conditional events against a real PostgreSQL through the HTTP API: a conditional catch event, an
// interrupting conditional boundary and a conditional event subprocess start fire in the
// transition that makes their condition hold (here a parallel worker's result), or at once when it
// already holds when they start waiting.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { complete, deploy, fetchOne, fetchTasks, start, waitForStatus } from '../../support/flows.ts';
import { inlineDefinitions, inlineFlow as flow, inlineTask as task } from '../../support/bpmn.ts';
import { startTestServer, type TestServer } from '../../support/server.ts';

let t: TestServer;

const condition = (feel: string) =>
  `<bpmn:conditionalEventDefinition><bpmn:condition xsi:type="bpmn:tFormalExpression">${feel}</bpmn:condition></bpmn:conditionalEventDefinition>`;

beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t?.close();
});

describe('conditional events', () => {
  it('given a conditional catch event beside a task, then it waits until the task sets the variable, and passes at once when it already holds', async () => {
    await deploy(
      t.api,
      inlineDefinitions('cd_catch', [
        '<bpmn:startEvent id="start" />',
        '<bpmn:parallelGateway id="fork" />',
        `<bpmn:intermediateCatchEvent id="approved">${condition('= approved = true')}</bpmn:intermediateCatchEvent>`,
        task('approve', 'cd_catch'),
        task('ship', 'cd_catch'),
        '<bpmn:endEvent id="end1" />',
        '<bpmn:endEvent id="end2" />',
        flow('f1', 'start', 'fork'),
        flow('f2', 'fork', 'approved'),
        flow('f3', 'fork', 'approve'),
        flow('f4', 'approved', 'ship'),
        flow('f5', 'ship', 'end1'),
        flow('f6', 'approve', 'end2'),
      ]),
    );
    const id = await start(t.api, 'cd_catch', { variables: { approved: false } });
    const approve = await fetchOne(t.api, 'w', 'cd_catch-approve');
    expect(await fetchTasks(t.api, 'w', ['cd_catch-ship'])).toEqual([]);
    expect((await complete(t.api, approve, 'w', { approved: true })).status).toBe(204);
    const ship = await fetchOne(t.api, 'w', 'cd_catch-ship');
    expect(ship.instanceId).toBe(id);
    const history = (await t.api.get(`/api/instances/${id}/history`)).body.items as any[];
    expect(history.find((e) => e.kind === 'step:completed' && e.stepId === 'approved')?.data).toMatchObject({
      trigger: 'conditional',
      condition: '= approved = true',
    });
    expect((await complete(t.api, ship, 'w')).status).toBe(204);
    await waitForStatus(t.api, id, 'completed');

    const already = await start(t.api, 'cd_catch', { variables: { approved: true } });
    expect((await fetchOne(t.api, 'w', 'cd_catch-ship')).instanceId).toBe(already);
  });

  it("given a conditional catch event, when an operator edits the variables, then it fires in the edit's transition; on a suspended instance it fires at the resume", async () => {
    const ids = [
      await start(t.api, 'cd_catch', { variables: { approved: false } }),
      await start(t.api, 'cd_catch', { variables: { approved: false } }),
    ];
    const [live, held] = ids as [string, string];
    expect((await t.api.post(`/api/instances/${held}/suspend`, {})).status).toBe(200);
    for (const id of ids) {
      const { revision } = (await t.api.get(`/api/instances/${id}`)).body;
      expect((await t.api.patch(`/api/instances/${id}/variables`, { revision, set: { approved: true } })).status).toBe(200);
    }
    const shipped = await fetchOne(t.api, 'w', 'cd_catch-ship');
    expect(shipped.instanceId).toBe(live);
    const steps = (await t.api.get(`/api/instances/${held}`)).body.steps as { stepId: string; status: string }[];
    expect(steps.find((x) => x.stepId === 'approved')?.status).toBe('active');
    expect((await t.api.post(`/api/instances/${held}/resume`, {})).status).toBe(200);
    const after = (await t.api.get(`/api/instances/${held}`)).body.steps as { stepId: string; status: string }[];
    expect(after.find((x) => x.stepId === 'approved')?.status).toBe('completed');
    expect((await fetchOne(t.api, 'w', 'cd_catch-ship')).instanceId).toBe(held);
  });

  it('given an interrupting conditional boundary on a task, when a parallel task sets the variable, then the task is canceled in that transition and the boundary path runs', async () => {
    await deploy(
      t.api,
      inlineDefinitions('cd_bound', [
        '<bpmn:startEvent id="start" />',
        '<bpmn:parallelGateway id="fork" />',
        task('review', 'cd_bound'),
        `<bpmn:boundaryEvent id="withdrawn" attachedToRef="review">${condition('${withdrawn}')}</bpmn:boundaryEvent>`,
        task('monitor', 'cd_bound'),
        task('archive', 'cd_bound'),
        '<bpmn:endEvent id="end1" />',
        '<bpmn:endEvent id="end2" />',
        '<bpmn:endEvent id="end3" />',
        flow('f1', 'start', 'fork'),
        flow('f2', 'fork', 'review'),
        flow('f3', 'fork', 'monitor'),
        flow('f4', 'review', 'end1'),
        flow('f5', 'monitor', 'end2'),
        flow('f6', 'withdrawn', 'archive'),
        flow('f7', 'archive', 'end3'),
      ]),
    );
    const id = await start(t.api, 'cd_bound', { variables: { withdrawn: false } });
    const review = await fetchOne(t.api, 'w', 'cd_bound-review');
    const monitor = await fetchOne(t.api, 'w', 'cd_bound-monitor');
    expect((await complete(t.api, monitor, 'w', { withdrawn: true })).status).toBe(204);
    const archive = await fetchOne(t.api, 'w', 'cd_bound-archive');
    expect(archive.instanceId).toBe(id);
    expect((await complete(t.api, review, 'w')).status).toBe(409);
    expect((await complete(t.api, archive, 'w')).status).toBe(204);
    const done = await waitForStatus(t.api, id, 'completed');
    expect(done.steps.find((s: any) => s.stepId === 'review').status).toBe('canceled');
  });

  it('given a conditional event subprocess, when a worker sets the variable, then it interrupts the process and its body runs', async () => {
    await deploy(
      t.api,
      inlineDefinitions('cd_esp', [
        '<bpmn:startEvent id="start" />',
        '<bpmn:parallelGateway id="fork" />',
        task('work', 'cd_esp'),
        task('monitor', 'cd_esp'),
        '<bpmn:endEvent id="end1" />',
        '<bpmn:endEvent id="end2" />',
        flow('f1', 'start', 'fork'),
        flow('f2', 'fork', 'work'),
        flow('f3', 'fork', 'monitor'),
        flow('f4', 'work', 'end1'),
        flow('f5', 'monitor', 'end2'),
        `<bpmn:subProcess id="abort" triggeredByEvent="true">
      <bpmn:startEvent id="on_abort">${condition('= abort')}</bpmn:startEvent>
      ${task('cleanup', 'cd_esp')}
      <bpmn:endEvent id="aborted" />
      ${flow('a1', 'on_abort', 'cleanup')}
      ${flow('a2', 'cleanup', 'aborted')}
    </bpmn:subProcess>`,
      ]),
    );
    const id = await start(t.api, 'cd_esp');
    const work = await fetchOne(t.api, 'w', 'cd_esp-work');
    expect((await complete(t.api, await fetchOne(t.api, 'w', 'cd_esp-monitor'), 'w', { abort: true })).status).toBe(204);
    const cleanup = await fetchOne(t.api, 'w', 'cd_esp-cleanup');
    expect(cleanup.instanceId).toBe(id);
    expect((await complete(t.api, work, 'w')).status).toBe(409);
    expect((await complete(t.api, cleanup, 'w')).status).toBe(204);
    await waitForStatus(t.api, id, 'completed');
  });

  it('given a non-interrupting conditional boundary, then it fires each time its condition turns true, not while it stays true, each firing running its path', async () => {
    await deploy(
      t.api,
      inlineDefinitions('cd_nonint', [
        '<bpmn:startEvent id="start" />',
        '<bpmn:parallelGateway id="fork" />',
        task('work', 'cd_nonint'),
        `<bpmn:boundaryEvent id="late" attachedToRef="work" cancelActivity="false">${condition('= late = true')}</bpmn:boundaryEvent>`,
        task('nudge', 'cd_nonint'),
        '<bpmn:endEvent id="nudged" />',
        task('s1', 'cd_nonint'),
        task('s2', 'cd_nonint'),
        task('s3', 'cd_nonint'),
        '<bpmn:parallelGateway id="join" />',
        '<bpmn:endEvent id="end" />',
        flow('f1', 'start', 'fork'),
        flow('f2', 'fork', 'work'),
        flow('f3', 'fork', 's1'),
        flow('f4', 's1', 's2'),
        flow('f5', 's2', 's3'),
        flow('f6', 's3', 'join'),
        flow('f7', 'work', 'join'),
        flow('f8', 'join', 'end'),
        flow('f9', 'late', 'nudge'),
        flow('f10', 'nudge', 'nudged'),
      ]),
    );
    const id = await start(t.api, 'cd_nonint', { variables: { late: false } });
    const work = await fetchOne(t.api, 'w', 'cd_nonint-work');
    expect((await complete(t.api, await fetchOne(t.api, 'w', 'cd_nonint-s1'), 'w', { late: true })).status).toBe(204);
    const first = await fetchOne(t.api, 'w', 'cd_nonint-nudge');
    expect((await complete(t.api, await fetchOne(t.api, 'w', 'cd_nonint-s2'), 'w', { late: false })).status).toBe(204);
    expect((await complete(t.api, await fetchOne(t.api, 'w', 'cd_nonint-s3'), 'w', { late: true })).status).toBe(204);
    // Turned true again while the first firing's path runs: the second waits for it.
    expect(await fetchTasks(t.api, 'w', ['cd_nonint-nudge'])).toEqual([]);
    expect((await complete(t.api, first, 'w', { note: 'still late' })).status).toBe(204);
    const second = await fetchOne(t.api, 'w', 'cd_nonint-nudge');
    expect((await complete(t.api, second, 'w')).status).toBe(204);
    // Still true after every later transition: no third firing.
    expect((await complete(t.api, work, 'w')).status).toBe(204);
    await waitForStatus(t.api, id, 'completed');
    const history = (await t.api.get(`/api/instances/${id}/history`)).body.items as {
      kind: string;
      stepId?: string;
      data: any;
    }[];
    expect(history.filter((e) => e.kind === 'step:completed' && e.stepId === 'late').map((e) => e.data.firing)).toEqual([1, 2]);
    expect(history.filter((e) => e.kind === 'step:completed' && e.stepId === 'nudge')).toHaveLength(2);
  });
});
