// Frames in Postgres (migration 0008) and what writes them: history events, worker
// progress (coalesced), and an operator replay that starts a new generation.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBpmn, singleTaskBpmn } from '../support/bpmn.ts';
import { complete, deploy, fetchOne, historyKinds, start, waitForStatus, type LockedTask } from '../support/flows.ts';
import { startTestServer, waitFor, type TestServer } from '../support/server.ts';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({ sweepIntervalMs: 200 });
  await deploy(t.api, singleTaskBpmn('frames-one', 'frames-one'));
  await deploy(t.api, singleTaskBpmn('frames-fail', 'frames-fail', { retries: 0 }));
  await deploy(
    t.api,
    buildBpmn(
      'frames-two',
      [
        { id: 'start', type: 'startEvent' },
        { id: 'first', type: 'serviceTask', topic: 'frames-first' },
        { id: 'second', type: 'serviceTask', topic: 'frames-second', retries: 0 },
        { id: 'end', type: 'endEvent' },
      ],
      [
        { from: 'start', to: 'first' },
        { from: 'first', to: 'second' },
        { from: 'second', to: 'end' },
      ],
    ),
  );
  // book (undone by unbook) -> pay, whose exhausted retries compensate the instance
  await deploy(
    t.api,
    buildBpmn(
      'frames-saga',
      [
        { id: 'start', type: 'startEvent' },
        { id: 'book', type: 'serviceTask', topic: 'frames-book' },
        { id: 'comp', type: 'compensationBoundary', attachedTo: 'book', handler: 'unbook' },
        { id: 'unbook', type: 'serviceTask', topic: 'frames-unbook', forCompensation: true },
        { id: 'pay', type: 'serviceTask', topic: 'frames-pay', retries: 0, onExhausted: 'compensate' },
        { id: 'end', type: 'endEvent' },
      ],
      [
        { from: 'start', to: 'book' },
        { from: 'book', to: 'pay' },
        { from: 'pay', to: 'end' },
      ],
    ),
  );
});
afterAll(async () => {
  await t?.close();
});

interface Frame {
  generation: number;
  seq: number;
  kind: string;
  data: any;
}

async function framesOf(instanceId: string, generation?: number): Promise<Frame[]> {
  const { rows } = await t.db.pool.query<Frame>(
    `select generation, seq, kind, data from frames where instance_id = $1 and ($2::int is null or generation = $2) order by generation, seq`,
    [instanceId, generation ?? null],
  );
  return rows;
}

function expectDense(frames: Frame[]): void {
  const byGeneration = new Map<number, number[]>();
  for (const f of frames) byGeneration.set(f.generation, [...(byGeneration.get(f.generation) ?? []), f.seq]);
  for (const seqs of byGeneration.values()) expect(seqs).toEqual(seqs.map((_, i) => i + 1));
}

function progress(task: LockedTask, workerId: string, data: unknown, lockToken = task.lockToken) {
  return t.api.post(`/api/external-tasks/${task.id}/progress`, { workerId, lockToken, data });
}

describe('frames from history', () => {
  it('given a run to its end, then every event is a frame of generation 1, seq dense from 1, in history order, and instance:ended is last', async () => {
    const id = await start(t.api, 'frames-one');
    const task = await fetchOne(t.api, 'w1', 'frames-one');
    expect((await complete(t.api, task, 'w1')).status).toBe(204);
    await waitForStatus(t.api, id, 'completed');

    const frames = await framesOf(id);
    expectDense(frames);
    expect(frames.every((f) => f.generation === 1)).toBe(true);
    expect(frames.map((f) => f.kind)).toEqual([...(await historyKinds(t.api, id)), 'instance:ended']);
    expect(frames.at(-1)?.data).toEqual({ status: 'completed' });
    expect(frames.find((f) => f.kind === 'task:locked')?.data).toMatchObject({
      stepId: 'work',
      taskId: task.id,
      attempt: 1,
      workerId: 'w1',
    });
  });

  it('given a late result after the end, then it is in the history but no frame follows instance:ended', async () => {
    const id = await start(t.api, 'frames-one');
    const task = await fetchOne(t.api, 'w1', 'frames-one');
    expect((await complete(t.api, task, 'w1')).status).toBe(204);
    expect((await complete(t.api, task, 'w-other')).status).toBe(409);
    expect(await historyKinds(t.api, id)).toContain('task:late_result');
    const frames = await framesOf(id);
    expect(frames.at(-1)?.kind).toBe('instance:ended');
    expect(frames.map((f) => f.kind)).not.toContain('task:late_result');
  });
});

describe('worker progress', () => {
  it('given 1,000 progress calls from one task, then they become far fewer task:progress frames holding every report once, in order, before step:completed', async () => {
    const id = await start(t.api, 'frames-one');
    const task = await fetchOne(t.api, 'w1', 'frames-one');
    for (let i = 0; i < 1000; i++) {
      const res = await progress(task, 'w1', { i, text: `chunk ${i} ` });
      expect(res.status).toBe(202);
    }
    expect((await complete(t.api, task, 'w1')).status).toBe(204);
    await waitForStatus(t.api, id, 'completed');

    const frames = await framesOf(id);
    expectDense(frames);
    const progressFrames = frames.filter((f) => f.kind === 'task:progress');
    expect(progressFrames.length).toBeGreaterThan(1);
    // The window is 50 ms: how many calls share a frame depends on the call rate (a loaded CI machine is slower).
    expect(progressFrames.length).toBeLessThan(1000 / 3);
    const reports = progressFrames.flatMap((f) => f.data.reports as { i: number }[]);
    expect(reports.map((r) => r.i)).toEqual([...Array(1000).keys()]);
    expect(progressFrames.every((f) => f.data.taskId === task.id && f.data.stepId === 'work')).toBe(true);
    const lastProgress = frames.lastIndexOf(progressFrames.at(-1) as Frame);
    const completed = frames.findIndex((f) => f.kind === 'step:completed' && f.data.stepId === 'work');
    expect(lastProgress).toBeLessThan(completed);
    expect((await t.db.pool.query('select count(*)::int as n from progress_reports')).rows[0].n).toBe(0);
  });

  it('given reports still inside the coalescing window when the task completes, then the complete flushes them first', async () => {
    const id = await start(t.api, 'frames-one');
    const task = await fetchOne(t.api, 'w1', 'frames-one');
    expect((await progress(task, 'w1', 'half way')).status).toBe(202);
    expect((await complete(t.api, task, 'w1')).status).toBe(204);
    const frames = await framesOf(id);
    const progressAt = frames.findIndex((f) => f.kind === 'task:progress');
    expect(progressAt).toBeGreaterThan(-1);
    expect(frames[progressAt]?.data.reports).toEqual(['half way']);
    expect(progressAt).toBeLessThan(frames.findIndex((f) => f.kind === 'step:completed' && f.data.stepId === 'work'));
  });

  it('given a caller that does not hold the lock, a finished task, an unknown task or a bad body, then 409, 409, 404, 400 and nothing is stored', async () => {
    await start(t.api, 'frames-one');
    const task = await fetchOne(t.api, 'w1', 'frames-one');
    const before = (await t.db.pool.query('select (select count(*) from progress_reports) + (select count(*) from frames) as n'))
      .rows[0].n;
    expect((await progress(task, 'intruder', 1)).body.type).toBe('LockLost');
    expect((await progress(task, 'w1', 1, '00000000-0000-4000-8000-000000000000')).status).toBe(409);
    expect(
      (
        await t.api.post(`/api/external-tasks/00000000-0000-4000-8000-000000000000/progress`, {
          workerId: 'w1',
          lockToken: task.lockToken,
          data: 1,
        })
      ).status,
    ).toBe(404);
    expect(
      (await t.api.post(`/api/external-tasks/${task.id}/progress`, { workerId: 'w1', lockToken: task.lockToken })).status,
    ).toBe(400);
    expect(
      (
        await t.api.post(`/api/external-tasks/${task.id}/progress`, {
          workerId: 'w1',
          lockToken: task.lockToken,
          data: 1,
          extra: true,
        })
      ).status,
    ).toBe(400);
    const after = (await t.db.pool.query('select (select count(*) from progress_reports) + (select count(*) from frames) as n'))
      .rows[0].n;
    expect(after).toBe(before);
    expect((await complete(t.api, task, 'w1')).status).toBe(204);
    expect((await progress(task, 'w1', 'too late')).status).toBe(409);
  });

  it('given reports left pending by a node that never flushed them, then the sweeper turns them into a frame', async () => {
    const id = await start(t.api, 'frames-one');
    const task = await fetchOne(t.api, 'w1', 'frames-one');
    // Written as recordProgress would, without the node's own timer behind it.
    await t.db.pool.query(
      `insert into progress_reports (task_id, instance_id, generation, step_id, data, bytes, at)
       values ($1, $2, 1, 'work', '"orphan"', 8, now() - interval '5 seconds')`,
      [task.id, id],
    );
    await waitFor(
      async () =>
        (await framesOf(id)).some((f) => f.kind === 'task:progress' && f.data.reports[0] === 'orphan') ? true : undefined,
      5000,
      'the orphan report to be flushed',
    );
  });
});

describe('replay (generations)', () => {
  it('given an instance in incident, when replayed, then generation 2 starts at seq 1, generation 1 ends with instance:ended and stays readable, and a late progress report of the old lock gets 409', async () => {
    const id = await start(t.api, 'frames-fail');
    const failing = await fetchOne(t.api, 'w1', 'frames-fail');
    expect((await progress(failing, 'w1', 'trying')).status).toBe(202);
    expect(
      (
        await t.api.post(`/api/external-tasks/${failing.id}/failure`, {
          workerId: 'w1',
          lockToken: failing.lockToken,
          errorMessage: 'boom',
        })
      ).status,
    ).toBe(204);
    await waitForStatus(t.api, id, 'incident');

    const replay = await t.api.post(`/api/instances/${id}/replay`);
    expect(replay.status, JSON.stringify(replay.body)).toBe(200);
    expect(replay.body).toEqual({ instanceId: id, generation: 2, status: 'running' });
    expect((await progress(failing, 'w1', 'late')).status).toBe(409);

    const retried = await fetchOne(t.api, 'w2', 'frames-fail');
    expect(retried.id).not.toBe(failing.id);
    expect(retried.attempt).toBe(1);
    expect((await complete(t.api, retried, 'w2')).status).toBe(204);
    await waitForStatus(t.api, id, 'completed');

    const gen1 = await framesOf(id, 1);
    const gen2 = await framesOf(id, 2);
    expectDense([...gen1, ...gen2]);
    expect(gen1.at(-1)).toMatchObject({ kind: 'instance:ended', data: { status: 'incident', nextGeneration: 2 } });
    expect(gen1.map((f) => f.kind)).toContain('task:progress');
    expect(gen2[0]).toMatchObject({ seq: 1, kind: 'instance:replayed' });
    expect(gen2[0]?.data).toMatchObject({ fromGeneration: 1, fromStatus: 'incident' });
    expect(gen2.at(-1)).toMatchObject({ kind: 'instance:ended', data: { status: 'completed' } });
    expect(gen2.map((f) => f.kind)).not.toContain('task:progress');
  });

  it('given a failure after a completed step, when replayed, then the completed step is kept and only the failed one runs again', async () => {
    const id = await start(t.api, 'frames-two');
    const first = await fetchOne(t.api, 'w1', 'frames-first');
    expect((await complete(t.api, first, 'w1', { fromFirst: 1 })).status).toBe(204);
    const second = await fetchOne(t.api, 'w1', 'frames-second');
    expect(
      (
        await t.api.post(`/api/external-tasks/${second.id}/failure`, {
          workerId: 'w1',
          lockToken: second.lockToken,
          errorMessage: 'down',
        })
      ).status,
    ).toBe(204);
    await waitForStatus(t.api, id, 'incident');

    expect((await t.api.post(`/api/instances/${id}/replay`)).status).toBe(200);
    const again = await fetchOne(t.api, 'w2', 'frames-second');
    expect(again.variables).toMatchObject({ fromFirst: 1 });
    expect((await complete(t.api, again, 'w2')).status).toBe(204);
    await waitForStatus(t.api, id, 'completed');
    const { rows } = await t.db.pool.query<{ n: number }>(
      `select count(*)::int as n from external_tasks where instance_id = $1 and step_id = 'first'`,
      [id],
    );
    expect(rows[0]?.n).toBe(1);
    const gen2 = await framesOf(id, 2);
    expect(gen2.filter((f) => f.kind === 'step:activated').map((f) => f.data.stepId)).toEqual(['second']);
  });

  it('given a canceled instance, when replayed, then it runs again; a running one or an unknown id is refused and nothing changes', async () => {
    const id = await start(t.api, 'frames-one');
    const old = await fetchOne(t.api, 'w1', 'frames-one');
    expect((await t.api.post(`/api/instances/${id}/cancel`)).status).toBe(200);
    expect((await t.api.post(`/api/instances/${id}/replay`)).body.generation).toBe(2);
    expect((await complete(t.api, old, 'w1')).status).toBe(409);
    const refused = await t.api.post(`/api/instances/${id}/replay`);
    expect(refused.status).toBe(409);
    expect(refused.body.type).toBe('Conflict');
    expect((await t.db.pool.query('select generation from instances where id = $1', [id])).rows[0].generation).toBe(2);
    expect((await t.api.post('/api/instances/00000000-0000-4000-8000-000000000000/replay')).status).toBe(404);
    const task = await fetchOne(t.api, 'w1', 'frames-one');
    expect((await complete(t.api, task, 'w1')).status).toBe(204);
    await waitForStatus(t.api, id, 'completed');
  });

  it('given a compensated saga, when replayed, then the undone step runs again before the failed one and the instance can complete', async () => {
    const id = await start(t.api, 'frames-saga');
    expect((await complete(t.api, await fetchOne(t.api, 'w1', 'frames-book'), 'w1')).status).toBe(204);
    const pay = await fetchOne(t.api, 'w1', 'frames-pay');
    expect(
      (
        await t.api.post(`/api/external-tasks/${pay.id}/failure`, {
          workerId: 'w1',
          lockToken: pay.lockToken,
          errorMessage: 'card declined',
        })
      ).status,
    ).toBe(204);
    expect((await complete(t.api, await fetchOne(t.api, 'w1', 'frames-unbook'), 'w1')).status).toBe(204);
    await waitForStatus(t.api, id, 'compensated');

    expect((await t.api.post(`/api/instances/${id}/replay`)).body).toMatchObject({ generation: 2, status: 'running' });
    const book = await fetchOne(t.api, 'w2', 'frames-book');
    expect(book.idempotencyKey).toBe(`${id}/book/2`);
    expect((await complete(t.api, book, 'w2')).status).toBe(204);
    expect((await complete(t.api, await fetchOne(t.api, 'w2', 'frames-pay'), 'w2')).status).toBe(204);
    await waitForStatus(t.api, id, 'completed');
    const gen2 = await framesOf(id, 2);
    const tasksRun = gen2.filter((f) => f.kind === 'step:activated' && f.data.waitsFor === undefined).map((f) => f.data.stepId);
    expect(tasksRun).toEqual(['book', 'pay']);
    expect(gen2.at(-1)).toMatchObject({ kind: 'instance:ended', data: { status: 'completed' } });
    expect((await framesOf(id, 1)).at(-1)).toMatchObject({ kind: 'instance:ended', data: { status: 'compensated' } });
  });
});
