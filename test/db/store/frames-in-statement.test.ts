// Migration 0013: the optimistic start and complete (one statement, outside any
// transaction) write the frames of their events themselves and mark the events
// `framed`, so the deferred trigger is not even queued for them. Everything
// docs/progress.md promises must still hold when they race the trigger's writers:
// dense seqs that become visible in order, instance:ended last, and a step's pending
// progress framed before the frame that ends the step.
import pg from 'pg';
import { announceListener, readNotifications } from '../../../runtime/store/notifications.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBpmn, singleTaskBpmn } from '../../support/bpmn.ts';
import { complete, deploy, fetchOne, fetchTasks, start, waitForStatus, type LockedTask } from '../../support/flows.ts';
import { startTestServer, waitFor, type TestServer } from '../../support/server.ts';

let t: TestServer;
let listener: pg.Client;
const bells: string[] = [];
const BRANCHES = ['b1', 'b2', 'b3', 'b4'];

beforeAll(async () => {
  t = await startTestServer();
  await deploy(t.api, singleTaskBpmn('fis-single', 'fis-single'));
  await deploy(
    t.api,
    buildBpmn(
      'fis-fan',
      [
        { id: 'start', type: 'startEvent' },
        { id: 'fork', type: 'parallelGateway' },
        ...BRANCHES.map((id) => ({ id, type: 'serviceTask' as const, topic: 'fis-fan' })),
        { id: 'join', type: 'parallelGateway' },
        { id: 'end', type: 'endEvent' },
      ],
      [
        { from: 'start', to: 'fork' },
        ...BRANCHES.flatMap((id) => [
          { from: 'fork', to: id },
          { from: id, to: 'join' },
        ]),
        { from: 'join', to: 'end' },
      ],
    ),
  );
  listener = new pg.Client({ connectionString: t.db.url });
  await listener.connect();
  listener.on('notification', (m) => bells.push(...readNotifications(m.payload).bells));
  await announceListener(listener, 'test-observer'); // heard as another node: this process's relays send to it
  await listener.query('listen baton_frames');
});
afterAll(async () => {
  await listener.end();
  await t.close();
});

async function frames(instanceId: string): Promise<{ seq: number; kind: string; data: Record<string, unknown> }[]> {
  const { rows } = await t.db.pool.query(
    'select seq, kind, data from frames where instance_id = $1 and generation = 1 order by seq',
    [instanceId],
  );
  return rows;
}

async function events(instanceId: string): Promise<{ kind: string; framed: boolean | null }[]> {
  const { rows } = await t.db.pool.query('select kind, framed from events where instance_id = $1 order by seq', [instanceId]);
  return rows;
}

async function addProgress(taskId: string, instanceId: string, db: pg.ClientBase | pg.Pool = t.db.pool, n = 1): Promise<void> {
  await db.query(
    `insert into progress_reports (task_id, instance_id, generation, step_id, data, bytes) values ($1, $2, 1, 'work', $3, 10)`,
    [taskId, instanceId, { n }],
  );
}

/** Starts two one-task instances and locks both their tasks for `workerId`. */
async function twoLockedSingles(workerId: string): Promise<{ ids: string[]; mine: LockedTask[] }> {
  const ids = [await start(t.api, 'fis-single'), await start(t.api, 'fis-single')];
  const mine: LockedTask[] = [];
  await waitFor(
    async () => {
      mine.push(
        ...(await fetchTasks(t.api, workerId, ['fis-single'], { maxTasks: 10 })).filter((x) => ids.includes(x.instanceId)),
      );
      return mine.length === 2 ? true : undefined;
    },
    5_000,
    'both tasks',
  );
  return { ids, mine };
}

/** Until a batch's completes statement waits for a row lock (pg_stat_activity says so). */
async function batchStatementWaitsForLock(row: string): Promise<void> {
  await waitFor(
    async () => {
      const { rows } = await t.db.pool.query(`select 1 from pg_stat_activity
                                             where datname = current_database() and wait_event_type = 'Lock' and query like '%update external_tasks t set state = ''done''%'`);
      return rows.length > 0 ? true : undefined;
    },
    10_000,
    `the batch's statement to wait for the ${row}`,
  );
}

describe('frames written by the optimistic statements (migration 0013)', () => {
  it('given a start, a fetch and a complete, then each statement frames its own events, and the frames are the history in order with one notification per statement', async () => {
    bells.length = 0;
    const id = await start(t.api, 'fis-single');
    const task = await fetchOne(t.api, 'w', 'fis-single');
    expect((await complete(t.api, task, 'w')).status).toBe(204);
    await waitForStatus(t.api, id, 'completed');
    const history = await events(id);
    expect(history.filter((e) => e.framed !== true).map((e) => e.kind)).toEqual([]);
    const got = await frames(id);
    expect(got.map((f) => f.seq)).toEqual(got.map((_, i) => i + 1));
    expect(got.map((f) => f.kind)).toEqual([...history.map((e) => e.kind), 'instance:ended']);
    expect(got.at(-1)!.data).toEqual({ status: 'completed' });
    expect(got.find((f) => f.kind === 'task:completed')!.data).toMatchObject({ stepId: 'work', taskId: task.id });
    // the fetch's frame is what the trigger made of task:locked: step, task, attempt and the event's data
    const locked = got.find((f) => f.kind === 'task:locked')!.data;
    expect(Object.keys(locked).sort()).toEqual(['attempt', 'lockExpiresAt', 'stepId', 'taskId', 'trafficWaitMs', 'workerId']);
    expect(locked).toMatchObject({ stepId: 'work', taskId: task.id, attempt: 1, workerId: 'w', trafficWaitMs: 0 });
    const {
      rows: [head],
    } = await t.db.pool.query('select last_seq, ended_at is not null as ended from frame_heads where instance_id = $1', [id]);
    expect(head).toEqual({ last_seq: got.length, ended: true });
    const mine = await waitFor(
      async () => {
        const b = bells.filter((x) => x.startsWith(id));
        return b.length >= 3 ? b : undefined;
      },
      5_000,
      'three notifications',
    );
    expect(mine.at(-1)).toBe(`${id} 1 ${got.length}`);
    expect(mine).toHaveLength(3);
  });

  it('given progress pending when the complete runs, then the trigger frames that transition and the progress comes before task:completed', async () => {
    const id = await start(t.api, 'fis-single');
    const task = await fetchOne(t.api, 'w', 'fis-single');
    await addProgress(task.id, id);
    expect((await complete(t.api, task, 'w')).status).toBe(204);
    await waitForStatus(t.api, id, 'completed');
    const kinds = (await frames(id)).map((f) => f.kind);
    expect(kinds.indexOf('task:progress')).toBeGreaterThan(-1);
    expect(kinds.indexOf('task:progress')).toBe(kinds.indexOf('task:completed') - 1);
    expect((await events(id)).filter((e) => e.kind === 'task:completed').map((e) => e.framed)).toEqual([null]);
  });

  it('given a report that commits while the complete waits for the task row, then the complete sees it and its progress frame comes first', async () => {
    const id = await start(t.api, 'fis-single');
    const task = await fetchOne(t.api, 'w', 'fis-single');
    const reporter = await t.db.pool.connect();
    try {
      // What recordProgress does: FOR SHARE on the holder's task row, then the report.
      await reporter.query('begin');
      await reporter.query('select 1 from external_tasks where id = $1 for share', [task.id]);
      await addProgress(task.id, id, reporter, 7);
      const completing = complete(t.api, task, 'w');
      await waitFor(
        async () => {
          // (the statement's text is longer than pg_stat_activity keeps: its start is enough)
          const { rows } = await t.db.pool.query(`select 1 from pg_stat_activity
                                                 where datname = current_database() and wait_event_type = 'Lock' and query like 'with%i as (update instances%'`);
          return rows.length > 0 ? true : undefined;
        },
        10_000,
        'the complete to wait for the task row',
      );
      await reporter.query('commit');
      expect((await completing).status).toBe(204);
    } finally {
      reporter.release();
    }
    await waitForStatus(t.api, id, 'completed');
    const got = await frames(id);
    const progress = got.findIndex((f) => f.kind === 'task:progress');
    expect(progress).toBeGreaterThan(-1);
    expect(got[progress]!.data.reports).toEqual([{ n: 7 }]);
    expect(progress).toBeLessThan(got.findIndex((f) => f.kind === 'task:completed'));
  });

  it('given a transaction holding a step row of the instance that frames an event at commit, when the complete waits for that row, then neither deadlocks: the complete takes the frame head only after its row locks', async () => {
    const id = await start(t.api, 'fis-single');
    const task = await fetchOne(t.api, 'w', 'fis-single');
    const other = await t.db.pool.connect();
    try {
      await other.query('begin');
      await other.query(`select 1 from steps where instance_id = $1 and step_id = 'work' for update`, [id]);
      await other.query(
        `insert into events (seq, instance_id, generation, kind) values (baton_event_seq($1), $1, 1, 'test:marker')`,
        [id],
      );
      const completing = complete(t.api, task, 'w');
      await waitFor(
        async () => {
          const { rows } = await t.db.pool.query(`select 1 from pg_stat_activity
                                                 where datname = current_database() and wait_event_type = 'Lock' and query like 'with%i as (update instances%'`);
          return rows.length > 0 ? true : undefined;
        },
        10_000,
        'the complete to wait for the step row',
      );
      // The trigger takes the head at this commit: had the complete taken it first, each would wait for the other.
      await other.query('commit');
      expect((await completing).status).toBe(204);
    } finally {
      other.release();
    }
    await waitForStatus(t.api, id, 'completed');
    const got = await frames(id);
    expect(got.map((f) => f.seq)).toEqual(got.map((_, i) => i + 1));
    expect(got.map((f) => f.kind).indexOf('test:marker')).toBeLessThan(got.map((f) => f.kind).indexOf('task:completed'));
  });

  it('given a batch of completes (one transaction over several instances), then its last statement frames them: events framed, one notification per instance, frames equal to the history', async () => {
    bells.length = 0;
    const ids = [await start(t.api, 'fis-single'), await start(t.api, 'fis-single'), await start(t.api, 'fis-single')];
    const tasks = await waitFor(
      async () => {
        const got = await fetchTasks(t.api, 'wb', ['fis-single'], { maxTasks: 10 });
        return got.length > 0 ? got : undefined;
      },
      5_000,
      'tasks',
    );
    const mine = tasks.filter((x) => ids.includes(x.instanceId));
    expect(mine.length).toBeGreaterThan(1);
    const res = await t.api.post('/api/external-tasks/complete-batch', {
      workerId: 'wb',
      tasks: tasks.map((x) => ({ id: x.id, lockToken: x.lockToken })),
    });
    expect(res.status).toBe(200);
    expect(res.body.results.map((r: { result: string }) => r.result)).toEqual(tasks.map(() => 'completed'));
    for (const task of mine) {
      await waitForStatus(t.api, task.instanceId, 'completed');
      const history = await events(task.instanceId);
      const completion = history.slice(history.findIndex((e) => e.kind === 'task:completed'));
      expect(completion.map((e) => e.framed)).toEqual(completion.map(() => true));
      const got = await frames(task.instanceId);
      expect(got.map((f) => f.seq)).toEqual(got.map((_, i) => i + 1));
      expect(got.map((f) => f.kind)).toEqual([...history.map((e) => e.kind), 'instance:ended']);
      const rung = await waitFor(
        async () => (bells.includes(`${task.instanceId} 1 ${got.length}`) ? true : undefined),
        5_000,
        "the batch's notification",
      );
      expect(rung).toBe(true);
      expect(bells.filter((b) => b.startsWith(`${task.instanceId} 1 ${got.length}`))).toHaveLength(1);
    }
  });

  it('given progress pending for one instance of a batch, then the batch goes one by one and that progress is framed before its task:completed', async () => {
    const ids = [await start(t.api, 'fis-single'), await start(t.api, 'fis-single')];
    const tasks = await waitFor(
      async () => {
        const got = await fetchTasks(t.api, 'wp', ['fis-single'], { maxTasks: 10 });
        return got.length > 0 ? got : undefined;
      },
      5_000,
      'tasks',
    );
    const mine = tasks.filter((x) => ids.includes(x.instanceId));
    expect(mine.length).toBe(2);
    await addProgress(mine[0]!.id, mine[0]!.instanceId, t.db.pool, 3);
    const res = await t.api.post('/api/external-tasks/complete-batch', {
      workerId: 'wp',
      tasks: tasks.map((x) => ({ id: x.id, lockToken: x.lockToken })),
    });
    expect(res.body.results.map((r: { result: string }) => r.result)).toEqual(tasks.map(() => 'completed'));
    await waitForStatus(t.api, mine[0]!.instanceId, 'completed');
    const kinds = (await frames(mine[0]!.instanceId)).map((f) => f.kind);
    expect(kinds.indexOf('task:progress')).toBeGreaterThan(-1);
    expect(kinds.indexOf('task:progress')).toBe(kinds.indexOf('task:completed') - 1);
  });

  it("given a report that commits while the batch's statement waits for the task row, then the batch sees it and goes one by one, and that progress is framed before its task:completed", async () => {
    const { mine } = await twoLockedSingles('wr');
    const reporter = await t.db.pool.connect();
    try {
      // What recordProgress does: FOR SHARE on the holder's task row, then the report.
      await reporter.query('begin');
      await reporter.query('select 1 from external_tasks where id = $1 for share', [mine[0]!.id]);
      await addProgress(mine[0]!.id, mine[0]!.instanceId, reporter, 9);
      const completing = t.api.post('/api/external-tasks/complete-batch', {
        workerId: 'wr',
        tasks: mine.map((x) => ({ id: x.id, lockToken: x.lockToken })),
      });
      await batchStatementWaitsForLock('task row');
      // The report commits after that statement's snapshot was taken: only a later look sees it.
      await reporter.query('commit');
      expect((await completing).body.results.map((r: { result: string }) => r.result)).toEqual(['completed', 'completed']);
    } finally {
      await reporter.query('rollback').catch(() => undefined);
      reporter.release();
    }
    for (const task of mine) {
      await waitForStatus(t.api, task.instanceId, 'completed');
      const got = await frames(task.instanceId);
      expect(got.map((f) => f.seq)).toEqual(got.map((_, i) => i + 1));
      // (a progress frame is no event of the history)
      expect(got.map((f) => f.kind).filter((k) => k !== 'task:progress')).toEqual([
        ...(await events(task.instanceId)).map((e) => e.kind),
        'instance:ended',
      ]);
    }
    const kinds = (await frames(mine[0]!.instanceId)).map((f) => f.kind);
    expect(kinds.indexOf('task:progress')).toBe(kinds.indexOf('task:completed') - 1);
    expect((await frames(mine[0]!.instanceId))[kinds.indexOf('task:progress')]!.data.reports).toEqual([{ n: 9 }]);
    const {
      rows: [pending],
    } = await t.db.pool.query('select count(*)::int as n from progress_reports where instance_id = $1', [mine[0]!.instanceId]);
    expect(pending!.n).toBe(0);
  });

  it("given a transaction holding a step row of one instance of a batch that frames an event at commit, when the batch's statement waits for that row, then neither deadlocks: the batch takes the frame heads only after its row locks", async () => {
    const { ids, mine } = await twoLockedSingles('wd');
    const other = await t.db.pool.connect();
    try {
      // the instance whose head the batch would take first (heads go in instance order)
      const held = [...ids].sort()[0]!;
      await other.query('begin');
      await other.query(`select 1 from steps where instance_id = $1 and step_id = 'work' for update`, [held]);
      await other.query(
        `insert into events (seq, instance_id, generation, kind) values (baton_event_seq($1), $1, 1, 'test:marker')`,
        [held],
      );
      const completing = t.api.post('/api/external-tasks/complete-batch', {
        workerId: 'wd',
        tasks: mine.map((x) => ({ id: x.id, lockToken: x.lockToken })),
      });
      await batchStatementWaitsForLock('step row');
      // The trigger takes the head at this commit: had the batch taken it first, each would wait for the other.
      await other.query('commit');
      const res = await completing;
      expect(res.body.results.map((r: { result: string }) => r.result)).toEqual(['completed', 'completed']);
    } finally {
      await other.query('rollback').catch(() => undefined);
      other.release();
    }
    // one transaction for both: the batch was neither a deadlock victim nor split
    const {
      rows: [written],
    } = await t.db.pool.query(
      `select count(distinct xmin::text)::int as n from events where kind = 'task:completed' and task_id = any($1::uuid[])`,
      [mine.map((x) => x.id)],
    );
    expect(written!.n).toBe(1);
    for (const id of ids) {
      await waitForStatus(t.api, id, 'completed');
      const got = await frames(id);
      expect(got.map((f) => f.seq)).toEqual(got.map((_, i) => i + 1));
      expect(got.map((f) => f.kind)).toEqual([...(await events(id)).map((e) => e.kind), 'instance:ended']);
    }
  });

  it('given the branches of an instance completed at once while a follower reads its frames, then every read is gap-free and in order, and each event has one frame (15 rounds)', async () => {
    for (let round = 0; round < 15; round++) {
      const id = await start(t.api, 'fis-fan');
      const tasks = await waitFor(
        async () => {
          const got = await fetchTasks(t.api, `w${round}`, ['fis-fan'], { maxTasks: 4 });
          return got.length === 4 ? got : undefined;
        },
        5_000,
        'four tasks',
      );
      let last = 0;
      let ended = false;
      const follower = (async () => {
        while (!ended) {
          const { rows } = await t.db.pool.query(
            'select seq, kind from frames where instance_id = $1 and generation = 1 and seq > $2 order by seq',
            [id, last],
          );
          for (const r of rows) {
            expect(r.seq, `round ${round}: frame after ${last}`).toBe(last + 1);
            last = r.seq;
            if (r.kind === 'instance:ended') ended = true;
          }
        }
      })();
      const results = await Promise.all(tasks.map((task) => complete(t.api, task, `w${round}`)));
      expect(results.map((r) => r.status)).toEqual([204, 204, 204, 204]);
      await waitForStatus(t.api, id, 'completed');
      await follower;
      const history = await events(id);
      const got = await frames(id);
      expect(got.map((f) => f.seq)).toEqual(got.map((_, i) => i + 1));
      expect(
        got
          .filter((f) => f.kind !== 'instance:ended')
          .map((f) => f.kind)
          .sort(),
      ).toEqual(history.map((e) => e.kind).sort());
      expect(got.at(-1)!.kind).toBe('instance:ended');
      expect(history.filter((e) => e.kind === 'instance:completed')).toHaveLength(1);
      expect(last).toBe(got.length);
    }
  }, 60_000);
});

describe('frames written by fetch-and-lock', () => {
  const framedHistory = async (id: string) => {
    const history = await events(id);
    const got = await frames(id);
    expect(got.map((f) => f.seq)).toEqual(got.map((_, i) => i + 1));
    expect(got.map((f) => f.kind)).toEqual(history.map((e) => e.kind));
    return { history, got };
  };

  it('given one fetch that locks tasks of several instances, two of them from one instance, then it frames every task:locked itself, with one notification per instance carrying its last seq', async () => {
    const singles = [await start(t.api, 'fis-single'), await start(t.api, 'fis-single'), await start(t.api, 'fis-single')];
    const fan = await start(t.api, 'fis-fan');
    // A start's notification may reach the listener after its HTTP answer: wait for each before
    // listening for the fetch's (under load the fan's came in after the clear below).
    for (const id of [...singles, fan]) {
      const started = (await frames(id)).length;
      await waitFor(async () => (bells.includes(`${id} 1 ${started}`) ? true : undefined), 5_000, "the start's notification");
    }
    bells.length = 0;
    const tasks = await fetchTasks(t.api, 'wf', ['fis-single', 'fis-fan'], { maxTasks: 20 });
    const mine = tasks.filter((x) => [...singles, fan].includes(x.instanceId));
    expect(mine.filter((x) => x.instanceId === fan)).toHaveLength(BRANCHES.length);
    expect(mine.filter((x) => singles.includes(x.instanceId))).toHaveLength(3);
    for (const id of [...singles, fan]) {
      const { history, got } = await framedHistory(id);
      expect(history.filter((e) => e.kind === 'task:locked').map((e) => e.framed)).toEqual(
        id === fan ? BRANCHES.map(() => true) : [true],
      );
      const rung = await waitFor(
        async () => {
          const b = bells.filter((x) => x.startsWith(`${id} `));
          return b.length > 0 ? b : undefined;
        },
        5_000,
        "the fetch's notification",
      );
      expect(rung).toEqual([`${id} 1 ${got.length}`]);
    }
    const done = await t.api.post('/api/external-tasks/complete-batch', {
      workerId: 'wf',
      tasks: tasks.map((x) => ({ id: x.id, lockToken: x.lockToken })),
    });
    expect(done.body.results.map((r: { result: string }) => r.result)).toEqual(tasks.map(() => 'completed'));
  });

  it('given progress pending for the instance, then the fetch leaves its task:locked to the trigger, which still frames it once', async () => {
    const id = await start(t.api, 'fis-fan');
    const [first] = await fetchTasks(t.api, 'wq', ['fis-fan'], { maxTasks: 1 });
    expect(first!.instanceId).toBe(id);
    await addProgress(first!.id, id, t.db.pool, 5);
    const more = await fetchTasks(t.api, 'wq', ['fis-fan'], { maxTasks: 3 });
    expect(more.filter((x) => x.instanceId === id)).toHaveLength(3);
    const { history } = await framedHistory(id);
    expect(history.filter((e) => e.kind === 'task:locked').map((e) => e.framed)).toEqual([true, null, null, null]);
    // the pending report is left for its own step's next transition, as the trigger does
    const {
      rows: [pending],
    } = await t.db.pool.query('select count(*)::int as n from progress_reports where instance_id = $1', [id]);
    expect(pending!.n).toBe(1);
  });

  it("given eight fetchers racing over the branches of many instances while a follower reads one instance's frames, then no fetch deadlocks or fails, each task is locked once, and every instance's frames are its history without a gap", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) ids.push(await start(t.api, 'fis-fan'));
    let last = 0;
    let stop = false;
    const follower = (async () => {
      while (!stop) {
        const { rows } = await t.db.pool.query(
          'select seq from frames where instance_id = $1 and generation = 1 and seq > $2 order by seq',
          [ids[5], last],
        );
        for (const r of rows) {
          expect(r.seq, `frame after ${last}`).toBe(last + 1);
          last = r.seq;
        }
      }
    })();
    const locked: string[] = [];
    await Promise.all(
      Array.from({ length: 8 }, async (_, w) => {
        for (let k = 0; k < 10; k++) {
          const got = await fetchTasks(t.api, `race-${w}`, ['fis-fan'], { maxTasks: 1 + (w % 3) });
          locked.push(...got.filter((x) => ids.includes(x.instanceId)).map((x) => x.id));
        }
      }),
    );
    stop = true;
    await follower;
    expect(new Set(locked).size).toBe(locked.length);
    expect(locked).toHaveLength(ids.length * BRANCHES.length);
    for (const id of ids) {
      const { history } = await framedHistory(id);
      expect(history.filter((e) => e.kind === 'task:locked')).toHaveLength(BRANCHES.length);
    }
  }, 60_000);
});
