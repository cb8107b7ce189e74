import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBpmn } from '../../support/bpmn.ts';
import { complete, deploy, fetchOne, fetchTasks, historyKinds, instanceOf, start, waitForStatus } from '../../support/flows.ts';
import { startTestServer, waitFor, type TestServer } from '../../support/server.ts';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
  await deploy(
    t.api,
    buildBpmn(
      'pause',
      [
        { id: 's', type: 'startEvent' },
        { id: 'wait', type: 'catchEvent', timer: { duration: 'PT0.2S' } },
        { id: 'after', type: 'serviceTask', topic: 'after-pause' },
        { id: 'e', type: 'endEvent' },
      ],
      [
        { from: 's', to: 'wait' },
        { from: 'wait', to: 'after' },
        { from: 'after', to: 'e' },
      ],
    ),
  );
  // A task with an interrupting timeout and a non-interrupting reminder; 'approval-slow'
  // has the same shape with timers far enough away for a worker on a loaded machine.
  for (const [key, timeout, remind] of [
    ['approval', 'PT0.6S', 'PT0.15S'],
    ['approval-slow', 'PT60S', 'PT30S'],
  ] as const)
    await deploy(
      t.api,
      buildBpmn(
        key,
        [
          { id: 's', type: 'startEvent' },
          { id: 'approve', type: 'serviceTask', topic: key === 'approval' ? 'approve' : 'approve-slow' },
          { id: 'timeout', type: 'boundaryEvent', attachedTo: 'approve', timer: { duration: timeout } },
          { id: 'remind', type: 'boundaryEvent', attachedTo: 'approve', interrupting: false, timer: { duration: remind } },
          { id: 'reminder', type: 'serviceTask', topic: 'send-reminder' },
          { id: 'escalate', type: 'serviceTask', topic: 'escalate' },
          { id: 'done', type: 'endEvent' },
          { id: 'reminded', type: 'endEvent' },
          { id: 'escalated', type: 'endEvent' },
        ],
        [
          { from: 's', to: 'approve' },
          { from: 'approve', to: 'done' },
          { from: 'remind', to: 'reminder' },
          { from: 'reminder', to: 'reminded' },
          { from: 'timeout', to: 'escalate' },
          { from: 'escalate', to: 'escalated' },
        ],
      ),
    );
  // Retries run out at once: the task fails into an incident well before its 2 s timeout.
  await deploy(
    t.api,
    buildBpmn(
      'stuck',
      [
        { id: 's', type: 'startEvent' },
        { id: 'work', type: 'serviceTask', topic: 'stuck-work', retries: 0 },
        { id: 'timeout', type: 'boundaryEvent', attachedTo: 'work', timer: { duration: 'PT2S' } },
        { id: 'e', type: 'endEvent' },
        { id: 'gave-up', type: 'endEvent' },
      ],
      [
        { from: 's', to: 'work' },
        { from: 'work', to: 'e' },
        { from: 'timeout', to: 'gave-up' },
      ],
    ),
  );
  await deploy(
    t.api,
    buildBpmn(
      'race-timer',
      [
        { id: 's', type: 'startEvent' },
        { id: 'work', type: 'serviceTask', topic: 'race-work' },
        { id: 'timeout', type: 'boundaryEvent', attachedTo: 'work', timer: { duration: 'PT0.3S' } },
        { id: 'merge', type: 'exclusiveGateway' },
        { id: 'e', type: 'endEvent' },
      ],
      [
        { from: 's', to: 'work' },
        { from: 'work', to: 'merge' },
        { from: 'timeout', to: 'merge' },
        { from: 'merge', to: 'e' },
      ],
    ),
  );
});
afterAll(async () => {
  await t.close();
});

async function timerRows(instanceId: string) {
  const { rows } = await t.db.pool.query(
    `select step_id, state, due_at, fired_at, created_at from timers where instance_id = $1 order by created_at`,
    [instanceId],
  );
  return rows as { step_id: string; state: string; due_at: Date; fired_at: Date | null; created_at: Date }[];
}

describe('timers', () => {
  it('given an intermediate timer, then the token waits in a timer row and continues after it, never before its due time', async () => {
    const id = await start(t.api, 'pause');
    const task = await fetchOne(t.api, 'w', 'after-pause');
    const [row] = await timerRows(id);
    expect(row?.state).toBe('fired');
    expect(row!.due_at.getTime() - row!.created_at.getTime()).toBeGreaterThanOrEqual(199);
    expect(row!.fired_at!.getTime()).toBeGreaterThanOrEqual(row!.due_at.getTime());
    // The next task exists only from the firing on (database clock), never before the due time.
    const created = await t.db.pool.query(`select created_at from external_tasks where id = $1`, [task.id]);
    expect(created.rows[0].created_at.getTime()).toBeGreaterThanOrEqual(row!.due_at.getTime());
    const history = await t.api.get(`/api/instances/${id}/history`);
    expect(history.body.items.map((e: { kind: string; stepId?: string }) => `${e.kind}@${e.stepId ?? ''}`)).toEqual(
      expect.arrayContaining(['step:activated@wait', 'step:completed@wait']),
    );
    await complete(t.api, task, 'w');
    await waitForStatus(t.api, id, 'completed');
  });

  it('given a task that is not done in time, then the reminder runs alongside it, and the timeout cancels it; the late worker gets 409', async () => {
    const id = await start(t.api, 'approval');
    const approve = await fetchOne(t.api, 'slow-approver', 'approve');
    const reminder = await fetchOne(t.api, 'mailer', 'send-reminder');
    expect(reminder.instanceId).toBe(id);
    expect((await instanceOf(t.api, id)).steps.find((s: { stepId: string }) => s.stepId === 'approve').status).toBe('active');
    expect((await complete(t.api, reminder, 'mailer')).status).toBe(204);
    const escalate = await fetchOne(t.api, 'boss', 'escalate');
    const late = await complete(t.api, approve, 'slow-approver');
    expect(late.status).toBe(409);
    expect(late.body.type).toBe('LockLost');
    expect((await complete(t.api, escalate, 'boss')).status).toBe(204);
    const done = await waitForStatus(t.api, id, 'completed');
    const status = Object.fromEntries(done.steps.map((s: { stepId: string; status: string }) => [s.stepId, s.status]));
    expect(status).toMatchObject({
      approve: 'canceled',
      timeout: 'completed',
      remind: 'completed',
      done: 'skipped',
      escalated: 'completed',
      reminded: 'completed',
    });
  });

  it('given the task completes before its timers, then the timers are canceled and never fire', async () => {
    const id = await start(t.api, 'approval-slow');
    const approve = await fetchOne(t.api, 'quick', 'approve-slow');
    expect((await complete(t.api, approve, 'quick')).status).toBe(204);
    const done = await waitForStatus(t.api, id, 'completed');
    expect(done.steps.find((s: { stepId: string }) => s.stepId === 'timeout').status).toBe('skipped');
    expect((await timerRows(id)).map((r) => r.state)).toEqual(['canceled', 'canceled']);
    await t.server.timers.tick();
    expect(await fetchTasks(t.api, 'w', ['send-reminder', 'escalate'])).toEqual([]);
  });

  it('given a task in an incident when its interrupting timer falls due, then the timer cancels it, resolves the incident and takes its path', async () => {
    const id = await start(t.api, 'stuck');
    const task = await fetchOne(t.api, 'w', 'stuck-work');
    expect(
      (
        await t.api.post(`/api/external-tasks/${task.id}/failure`, {
          workerId: 'w',
          lockToken: task.lockToken,
          errorMessage: 'down',
        })
      ).status,
    ).toBe(204);
    await waitForStatus(t.api, id, 'incident');
    const done = await waitForStatus(t.api, id, 'completed');
    const status = Object.fromEntries(done.steps.map((s: { stepId: string; status: string }) => [s.stepId, s.status]));
    expect(status).toMatchObject({ work: 'canceled', timeout: 'completed', 'gave-up': 'completed', e: 'skipped' });
    expect((await timerRows(id)).map((r) => r.state)).toEqual(['fired']);
    const {
      rows: [row],
    } = await t.db.pool.query(`select state from external_tasks where id = $1`, [task.id]);
    expect(row.state).toBe('canceled');
    expect((await t.api.get(`/api/incidents?instanceId=${id}&status=open`)).body.items).toEqual([]);
    expect((await t.api.get(`/api/incidents?instanceId=${id}&status=resolved`)).body.items).toHaveLength(1);
    // Canceled, the task is no longer Camunda's to show or to retry.
    expect((await t.api.get(`/engine-rest/external-task/${task.id}`)).status).toBe(404);
  });

  it('given a boundary timer due while the worker completes the task, then exactly one wins (50 rounds)', async () => {
    let timerWon = 0;
    let taskWon = 0;
    let uncontested = 0;
    // On a loaded machine the 0.3 s timer can fire before the worker fetches: such a round is no
    // race, so it is checked, not counted, and another round runs in its place.
    while (timerWon + taskWon < 50) {
      expect(uncontested, 'rounds where the timer fired before the fetch').toBeLessThan(50);
      const id = await start(t.api, 'race-timer');
      const task = await waitFor(
        async () => {
          const [locked] = await fetchTasks(t.api, 'racer', ['race-work'], { maxTasks: 1, lockDurationMs: 30_000 });
          if (locked) return locked;
          return (await instanceOf(t.api, id)).status === 'completed' ? null : undefined;
        },
        10_000,
        'a task on race-work or the timer to win first',
      );
      if (task === null) {
        uncontested++;
        const early = await instanceOf(t.api, id);
        const status = Object.fromEntries(early.steps.map((s: { stepId: string; status: string }) => [s.stepId, s.status]));
        expect(status).toMatchObject({ work: 'canceled', timeout: 'completed', merge: 'completed' });
        continue;
      }
      await waitFor(
        async () => {
          const [row] = await timerRows(id);
          return row && row.due_at.getTime() <= Date.now() + 5 ? true : undefined;
        },
        5000,
        'the timer to be due',
      );
      const [res] = await Promise.all([complete(t.api, task, 'racer'), t.server.timers.tick()]);
      const done = await waitForStatus(t.api, id, 'completed');
      const status = Object.fromEntries(done.steps.map((s: { stepId: string; status: string }) => [s.stepId, s.status]));
      const kinds = await historyKinds(t.api, id);
      expect(kinds.filter((k) => k === 'instance:completed')).toHaveLength(1);
      if (res.status === 204) {
        taskWon++;
        expect(status).toMatchObject({ work: 'completed', timeout: 'skipped' });
      } else {
        timerWon++;
        expect(res.status).toBe(409);
        expect(status).toMatchObject({ work: 'canceled', timeout: 'completed' });
      }
      expect(status.merge).toBe('completed');
    }
    expect(timerWon + taskWon).toBe(50);
  });

  it('given two schedulers on a due timer, then it fires once (50 rounds)', async () => {
    for (let round = 0; round < 50; round++) {
      const id = await start(t.api, 'pause');
      await waitFor(
        async () => {
          const [row] = await timerRows(id);
          // due_at has microseconds a JS Date drops: leave a few ms so the database agrees it is due.
          return row && row.due_at.getTime() + 5 <= Date.now() ? row : undefined;
        },
        5000,
        'the timer to be due',
      );
      const { fireDueTimers } = await import('../../../runtime/engine/waits.ts');
      await Promise.all([fireDueTimers(t.server.engine, 100), fireDueTimers(t.server.engine, 100), t.server.timers.tick()]);
      const kinds = (await t.api.get(`/api/instances/${id}/history`)).body.items.filter(
        (e: { kind: string; stepId?: string }) => e.kind === 'step:completed' && e.stepId === 'wait',
      );
      expect(kinds, `round ${round}`).toHaveLength(1);
      const task = await fetchOne(t.api, 'w', 'after-pause');
      expect(task.instanceId).toBe(id);
      await complete(t.api, task, 'w');
    }
  });
});
