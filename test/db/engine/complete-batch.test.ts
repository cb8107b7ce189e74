// POST /api/external-tasks/complete-batch: many completes of one worker with one commit
// (engine/tasks.ts completeTasks). Each task comes to what its single complete would:
// completed once, repeated, lock lost (kept as a late result) or not found; a batch that
// cannot commit falls back to one complete per task; bad input changes nothing.
import { randomUUID } from 'node:crypto';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine } from '../../../runtime/engine/context.ts';
import { completeTasks } from '../../../runtime/engine/tasks.ts';
import { buildBpmn, parallelBpmn, singleTaskBpmn } from '../../support/bpmn.ts';
import { complete, deploy, fetchTasks, historyKinds, start, waitForStatus, type LockedTask } from '../../support/flows.ts';
import { countingPool } from '../../support/counting-pool.ts';
import { startTestServer, waitFor, type TestServer } from '../../support/server.ts';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({ limits: { maxVariablesBytes: 2_000 } });
  await deploy(t.api, singleTaskBpmn('batch-single', 'batch-single'));
  await deploy(t.api, parallelBpmn('batch-join', 'batch-a', 'batch-b'));
  // x > 10 goes on; anything else matches no flow: an incident on the gateway
  await deploy(
    t.api,
    buildBpmn(
      'batch-gate',
      [
        { id: 'start', type: 'startEvent' },
        { id: 'work', type: 'serviceTask', topic: 'batch-gate' },
        { id: 'gw', type: 'exclusiveGateway' },
        { id: 'end', type: 'endEvent' },
      ],
      [
        { from: 'start', to: 'work' },
        { from: 'work', to: 'gw' },
        { from: 'gw', to: 'end', condition: '=x > 10' },
      ],
    ),
  );
  await deploy(
    t.api,
    buildBpmn(
      'batch-fan',
      [
        { id: 'start', type: 'startEvent' },
        { id: 'fork', type: 'parallelGateway' },
        ...FAN.map((id) => ({ id, type: 'serviceTask' as const, topic: 'batch-fan' })),
        { id: 'join', type: 'parallelGateway' },
        { id: 'end', type: 'endEvent' },
      ],
      [
        { from: 'start', to: 'fork' },
        ...FAN.flatMap((id) => [
          { from: 'fork', to: id },
          { from: id, to: 'join' },
        ]),
        { from: 'join', to: 'end' },
      ],
    ),
  );
});
const FAN = ['f1', 'f2', 'f3', 'f4'];
afterAll(async () => {
  await t.close();
});

const batch = (workerId: string, tasks: { id: string; lockToken: string; variables?: Record<string, unknown> }[]) =>
  t.api.post('/api/external-tasks/complete-batch', { workerId, tasks });
const item = (task: LockedTask, variables?: Record<string, unknown>) => ({
  id: task.id,
  lockToken: task.lockToken,
  ...(variables ? { variables } : {}),
});

async function startSingles(n: number, variables?: Record<string, unknown>): Promise<string[]> {
  return Promise.all(Array.from({ length: n }, () => start(t.api, 'batch-single', variables ? { variables } : {})));
}

/** Tasks locked for `workerId`, waiting until `n` came. */
async function lockAll(workerId: string, topics: string[], n: number): Promise<LockedTask[]> {
  const got: LockedTask[] = [];
  while (got.length < n) got.push(...(await fetchTasks(t.api, workerId, topics, { maxTasks: n - got.length, waitMs: 2_000 })));
  return got;
}

async function completedEvents(taskIds: string[]): Promise<{ tasks: number; events: number; transactions: number }> {
  const {
    rows: [r],
  } = await t.db.pool.query(
    `select count(distinct task_id)::int as tasks, count(*)::int as events, count(distinct xmin::text)::int as transactions
       from events where kind = 'task:completed' and task_id = any($1::uuid[])`,
    [taskIds],
  );
  return r;
}

describe('batch complete', () => {
  it('given tasks of ten instances, then one transaction completes them all, each once, with its variables', async () => {
    const ids = await startSingles(10);
    const tasks = await lockAll('bw-1', ['batch-single'], 10);
    const res = await batch(
      'bw-1',
      tasks.map((task, i) => item(task, { n: i })),
    );
    expect(res.status).toBe(200);
    expect(res.body.results).toEqual(tasks.map((task) => ({ id: task.id, result: 'completed' })));
    for (const id of ids) await waitForStatus(t.api, id, 'completed');
    expect(await completedEvents(tasks.map((x) => x.id))).toEqual({ tasks: 10, events: 10, transactions: 1 });
    const { rows } = await t.db.pool.query(
      `select t.id, i.variables from external_tasks t join instances i on i.id = t.instance_id where t.id = any($1::uuid[])`,
      [tasks.map((x) => x.id)],
    );
    for (const [i, task] of tasks.entries()) expect(rows.find((r) => r.id === task.id)!.variables).toEqual({ n: i });
    // The progress stream of each: its history in order, seqs dense from 1, instance:ended last.
    for (const id of ids) {
      const { rows: frames } = await t.db.pool.query(
        'select seq, kind from frames where instance_id = $1 and generation = 1 order by seq',
        [id],
      );
      expect(frames.map((f) => f.seq)).toEqual(frames.map((_, i) => i + 1));
      expect(frames.map((f) => f.kind)).toEqual([...(await historyKinds(t.api, id)), 'instance:ended']);
    }
  });

  it('given a repeat, a lost lock, an unknown id and two tasks of one instance in one batch, then each answers like its single complete', async () => {
    const [repeatedId, lostId] = await startSingles(2);
    const joinId = await start(t.api, 'batch-join');
    const singles = await lockAll('bw-2', ['batch-single'], 2);
    const repeated = singles.find((x) => x.instanceId === repeatedId)!;
    const lost = singles.find((x) => x.instanceId === lostId)!;
    const [a, b] = [...(await lockAll('bw-2', ['batch-a'], 1)), ...(await lockAll('bw-2', ['batch-b'], 1))];
    expect((await complete(t.api, repeated, 'bw-2')).status).toBe(204);
    const unknown = randomUUID();
    const res = await batch('bw-2', [
      item(repeated),
      { id: lost.id, lockToken: randomUUID() },
      { id: unknown, lockToken: randomUUID() },
      item(a!, { a: 1 }),
      item(b!, { b: 2 }),
    ]);
    expect(res.status).toBe(200);
    expect(res.body.results).toEqual([
      { id: repeated.id, result: 'repeated' },
      { id: lost.id, result: 'lock_lost' },
      { id: unknown, result: 'not_found' },
      { id: a!.id, result: 'completed' },
      { id: b!.id, result: 'completed' },
    ]);
    expect(await historyKinds(t.api, lostId!)).toContain('task:late_result');
    const join = await waitForStatus(t.api, joinId, 'completed');
    expect(join.variables).toEqual({ a: 1, b: 2 });
    expect((await historyKinds(t.api, joinId)).filter((k) => k === 'task:completed')).toHaveLength(2);
    // The lost one is still the holder's to complete with the right token.
    expect((await complete(t.api, lost, 'bw-2')).status).toBe(204);
  });

  it("given the four branches of each of three parallel splits in one batch, then one transaction completes all twelve in rounds, each join fires once, and each instance's frames are its history", async () => {
    const ids = await Promise.all([0, 1, 2].map((n) => start(t.api, 'batch-fan', { variables: { n } })));
    const tasks = await lockAll('bw-fan', ['batch-fan'], 12);
    // shuffled, so that an instance's branches are spread over the batch
    const order = [...tasks].sort((x, y) => (x.id < y.id ? -1 : 1));
    const res = await batch(
      'bw-fan',
      order.map((task) => item(task, { [task.stepId]: true })),
    );
    expect(res.body.results).toEqual(order.map((task) => ({ id: task.id, result: 'completed' })));
    expect(await completedEvents(tasks.map((x) => x.id))).toEqual({ tasks: 12, events: 12, transactions: 1 });
    for (const id of ids) {
      const done = await waitForStatus(t.api, id, 'completed');
      // every branch's variables merged: each round read the instance with the earlier rounds' writes
      expect(done.variables).toEqual({ n: ids.indexOf(id), f1: true, f2: true, f3: true, f4: true });
      const kinds = await historyKinds(t.api, id);
      expect(kinds.filter((k) => k === 'instance:completed')).toHaveLength(1);
      expect(kinds.filter((k) => k === 'task:completed')).toHaveLength(FAN.length);
      const { rows: frames } = await t.db.pool.query(
        'select seq, kind from frames where instance_id = $1 and generation = 1 order by seq',
        [id],
      );
      expect(frames.map((f) => f.seq)).toEqual(frames.map((_, i) => i + 1));
      expect(frames.map((f) => f.kind)).toEqual([...kinds, 'instance:ended']);
    }
  });

  it('given a batch of ten tasks of ten instances, then its transaction is two round trips of five statements (begin, lock and read; the writes with their framing, and the commit), and two tasks of one instance add a round of one', async () => {
    const counting = countingPool(t.db.url);
    try {
      const engine = createEngine(counting.pool, pino({ level: 'silent' }));
      const completeCounting = async (workerId: string, tasks: LockedTask[]) => {
        const [before, sent] = [counting.roundTrips(), counting.statements()];
        const results = await completeTasks(
          engine,
          workerId,
          tasks.map((x) => ({ taskId: x.id, lockToken: x.lockToken })),
        );
        return { results, roundTrips: counting.roundTrips() - before, statements: counting.statements() - sent };
      };
      const joinTasks = async (workerId: string) => [
        ...(await lockAll(workerId, ['batch-a'], 1)),
        ...(await lockAll(workerId, ['batch-b'], 1)),
      ];
      // First a batch of both definitions: their plans are read once into this engine's cache.
      const joinIds = [await start(t.api, 'batch-join')];
      await startSingles(1);
      const warm = await completeCounting('bw-rt', [
        ...(await lockAll('bw-rt', ['batch-single'], 1)),
        ...(await joinTasks('bw-rt')),
      ]);
      expect(warm.results).toEqual(['completed', 'completed', 'completed']);

      const ids = await startSingles(10);
      const ten = await completeCounting('bw-rt', await lockAll('bw-rt', ['batch-single'], 10));
      expect(ten.results).toEqual(Array(10).fill('completed'));
      expect(ten.roundTrips).toBe(2); // fifteen before pipelining: begin, lock, read, ten writes one by one, framing, commit
      expect(ten.statements).toBe(5); // the ten writes and their framing are one statement now
      for (const id of ids) await waitForStatus(t.api, id, 'completed');

      // The join's second task goes in a second round, which reads the instance again after the first's write (in its write).
      joinIds.push(await start(t.api, 'batch-join'));
      const both = await joinTasks('bw-rt');
      expect(both.map((x) => x.instanceId)).toEqual([joinIds[1], joinIds[1]]);
      const rounds = await completeCounting('bw-rt', both);
      expect(rounds.results).toEqual(['completed', 'completed']);
      expect(rounds.roundTrips).toBe(3);
      expect(rounds.statements).toBe(7); // begin, lock, read; the first write, the second read; the second write with the framing of both, commit
      for (const id of joinIds) {
        const kinds = await historyKinds(t.api, id);
        expect(kinds.filter((k) => k === 'instance:completed')).toHaveLength(1);
        const { rows: frames } = await t.db.pool.query(
          'select seq, kind from frames where instance_id = $1 and generation = 1 order by seq',
          [id],
        );
        expect(frames.map((f) => f.kind)).toEqual([...kinds, 'instance:ended']);
      }
    } finally {
      await counting.pool.end();
    }
  });

  it("given a batch in which one completion raises an incident, then the batch still commits once, framed by a statement of its own after the writes, and each instance's frames are its history", async () => {
    const counting = countingPool(t.db.url);
    try {
      const engine = createEngine(counting.pool, pino({ level: 'silent' }));
      // first one on its own: the definition's plan is read once into this engine's cache
      await start(t.api, 'batch-gate', { variables: { x: 11 } });
      const [warm] = await lockAll('bw-gate', ['batch-gate'], 1);
      expect(await completeTasks(engine, 'bw-gate', [{ taskId: warm!.id, lockToken: warm!.lockToken }])).toEqual(['completed']);
      const ids = await Promise.all([1, 20, 30].map((x) => start(t.api, 'batch-gate', { variables: { x } })));
      const tasks = await lockAll('bw-gate', ['batch-gate'], 3);
      const sent = counting.statements();
      const results = await completeTasks(
        engine,
        'bw-gate',
        tasks.map((x) => ({ taskId: x.id, lockToken: x.lockToken })),
      );
      expect(results).toEqual(['completed', 'completed', 'completed']);
      // begin, lock, read, the three writes, frame_transitions, commit
      expect(counting.statements() - sent).toBe(6);
      expect(await completedEvents(tasks.map((x) => x.id))).toEqual({ tasks: 3, events: 3, transactions: 1 });
      for (const [k, id] of ids.entries()) {
        const detail = (await t.api.get(`/api/instances/${id}`)).body;
        if (k === 0) expect(detail.incidents).toEqual([expect.objectContaining({ stepId: 'gw', kind: 'no_matching_flow' })]);
        else expect(detail.status).toBe('completed');
        const kinds = await historyKinds(t.api, id);
        const { rows: frames } = await t.db.pool.query(
          'select seq, kind from frames where instance_id = $1 and generation = 1 order by seq',
          [id],
        );
        expect(frames.map((f) => f.seq)).toEqual(frames.map((_, i) => i + 1));
        expect(frames.map((f) => f.kind)).toEqual(k === 0 ? kinds : [...kinds, 'instance:ended']);
      }
    } finally {
      await counting.pool.end();
    }
  });

  it('given a batch of one, then it is completed, and the same batch again is answered repeated', async () => {
    const [id] = await startSingles(1);
    const [task] = await lockAll('bw-5', ['batch-single'], 1);
    expect((await batch('bw-5', [item(task!)])).body.results).toEqual([{ id: task!.id, result: 'completed' }]);
    expect((await batch('bw-5', [item(task!)])).body.results).toEqual([{ id: task!.id, result: 'repeated' }]);
    await waitForStatus(t.api, id!, 'completed');
    expect(await completedEvents([task!.id])).toEqual({ tasks: 1, events: 1, transactions: 1 });
  });

  it('given ids in capitals, then they are the same tasks and the answer keeps them as sent', async () => {
    const ids = await startSingles(2);
    const tasks = await lockAll('bw-6', ['batch-single'], 2);
    const res = await batch(
      'bw-6',
      tasks.map((task) => ({ id: task.id.toUpperCase(), lockToken: task.lockToken })),
    );
    expect(res.body.results).toEqual(tasks.map((task) => ({ id: task.id.toUpperCase(), result: 'completed' })));
    for (const id of ids) await waitForStatus(t.api, id, 'completed');
    expect(await completedEvents(tasks.map((x) => x.id))).toEqual({ tasks: 2, events: 2, transactions: 1 });
  });

  it('given a batch whose transaction fails, then each task is completed on its own, once', async () => {
    const ids = await startSingles(4);
    const tasks = await lockAll('bw-3', ['batch-single'], 4);
    // The first task:completed insert after this raises once (a sequence is not rolled back).
    await t.db.pool.query(`create sequence batch_fail_once;
      create function batch_fail_once() returns trigger language plpgsql as $$
      begin
        if new.kind = 'task:completed' and nextval('batch_fail_once') = 1 then raise exception 'injected failure'; end if;
        return new;
      end $$;
      create trigger batch_fail_once before insert on events for each row execute function batch_fail_once()`);
    try {
      const res = await batch(
        'bw-3',
        tasks.map((task) => item(task)),
      );
      expect(res.body.results).toEqual(tasks.map((task) => ({ id: task.id, result: 'completed' })));
    } finally {
      await t.db.pool.query(
        'drop trigger batch_fail_once on events; drop function batch_fail_once(); drop sequence batch_fail_once',
      );
    }
    for (const id of ids) await waitForStatus(t.api, id, 'completed');
    // One per task: the batch's own transaction left nothing.
    expect(await completedEvents(tasks.map((x) => x.id))).toMatchObject({ tasks: 4, events: 4, transactions: 4 });
  });

  it('given a task taken by another worker after the batch read it and before its statement wrote it, then that statement writes nothing and each task is answered alone', async () => {
    const ids = await startSingles(3);
    const tasks = await lockAll('bw-4', ['batch-single'], 3);
    const stolen = tasks[1]!;
    // Another transaction re-locks one task (its lease expired, another worker fetched it) and holds the row until told.
    const thief = await t.db.pool.connect();
    try {
      await thief.query('begin');
      await thief.query(
        `update external_tasks set worker_id = 'thief', lock_token = gen_random_uuid(), attempt = attempt + 1 where id = $1`,
        [stolen.id],
      );
      const pending = batch(
        'bw-4',
        tasks.map((task) => item(task)),
      );
      // the batch read the task as bw-4's and its one statement for the three waits for the row
      await waitFor(
        async () => {
          const { rows } = await t.db.pool.query(
            `select 1 from pg_stat_activity where wait_event_type = 'Lock' and query like '%update external_tasks t set state = ''done''%'`,
          );
          return rows.length > 0 ? true : undefined;
        },
        5_000,
        'the batch statement waiting for the re-locked task',
      );
      await thief.query('commit');
      const res = await pending;
      expect(res.body.results).toEqual(
        tasks.map((task) => ({ id: task.id, result: task === stolen ? 'lock_lost' : 'completed' })),
      );
    } finally {
      await thief.query('rollback').catch(() => undefined);
      thief.release();
    }
    const mine = tasks.filter((x) => x !== stolen);
    // the others completed once each, by their own transactions (the batch's wrote nothing); the stolen one not at all
    expect(await completedEvents(mine.map((x) => x.id))).toMatchObject({ tasks: 2, events: 2, transactions: 2 });
    expect(await completedEvents([stolen.id])).toMatchObject({ tasks: 0, events: 0 });
    for (const id of ids.filter((id) => id !== stolen.instanceId)) await waitForStatus(t.api, id, 'completed');
    const {
      rows: [task],
    } = await t.db.pool.query('select state, worker_id from external_tasks where id = $1', [stolen.id]);
    expect(task).toEqual({ state: 'locked', worker_id: 'thief' });
  });

  it('given two workers batch-completing branches of the same instances in opposite orders at once, then every join fires once', async () => {
    const ids = await Promise.all(Array.from({ length: 8 }, () => start(t.api, 'batch-join')));
    const as = await lockAll('bw-a', ['batch-a'], 8);
    const bs = await lockAll('bw-b', ['batch-b'], 8);
    const [ra, rb] = await Promise.all([
      batch(
        'bw-a',
        as.map((x) => item(x)),
      ),
      batch(
        'bw-b',
        bs.reverse().map((x) => item(x)),
      ),
    ]);
    expect([ra.status, rb.status]).toEqual([200, 200]);
    expect([...ra.body.results, ...rb.body.results].every((r: { result: string }) => r.result === 'completed')).toBe(true);
    for (const id of ids) {
      await waitForStatus(t.api, id, 'completed');
      const kinds = await historyKinds(t.api, id);
      expect(kinds.filter((k) => k === 'task:completed')).toHaveLength(2);
      expect(kinds.filter((k) => k === 'instance:completed')).toHaveLength(1);
    }
  });

  it('given bad input, then 400 or 413 names the problem and nothing changes', async () => {
    const ids = await startSingles(2, { seed: 'y'.repeat(1_500) });
    const tasks = await lockAll('bw-4', ['batch-single'], 2);
    const cases: [unknown, number, RegExp][] = [
      [{ workerId: 'bw-4', tasks: [] }, 400, /tasks/],
      [{ workerId: 'bw-4', tasks: [item(tasks[0]!), item(tasks[0]!)] }, 400, /appears more than once/],
      [{ workerId: 'bw-4', tasks: [{ id: 'nope', lockToken: tasks[0]!.lockToken }] }, 400, /id/],
      [{ workerId: 'bw-4', tasks: Array.from({ length: 101 }, () => item(tasks[0]!)) }, 400, /tasks/],
      // the instance's 1,500 bytes and these 600 pass the limit (2,000) together
      [
        { workerId: 'bw-4', tasks: [item(tasks[0]!), item(tasks[1]!, { big: 'x'.repeat(600) })] },
        413,
        new RegExp(`the variables of task ${tasks[1]!.id} the instance would hold`),
      ],
      // each fits, the request does not
      [
        { workerId: 'bw-4', tasks: [item(tasks[0]!, { big: 'x'.repeat(1_000) }), item(tasks[1]!, { big: 'x'.repeat(1_000) })] },
        413,
        /variables of this request are/,
      ],
    ];
    for (const [body, status, message] of cases) {
      const res = await t.api.post('/api/external-tasks/complete-batch', body);
      expect(res.status, JSON.stringify(res.body)).toBe(status);
      expect(res.body.message).toMatch(message);
    }
    const { rows } = await t.db.pool.query(`select state from external_tasks where id = any($1::uuid[])`, [
      tasks.map((x) => x.id),
    ]);
    expect(rows.map((r) => r.state)).toEqual(['locked', 'locked']);
    for (const id of ids) expect((await t.api.get(`/api/instances/${id}`)).body.status).toBe('running');
  });
});
