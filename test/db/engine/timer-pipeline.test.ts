// A batch of timer firings sends its transitions pipelined (one write, answered in
// order) instead of one round trip each; firings that must read first, and a second
// timer of one instance, still see what the firings before them wrote. The scheduler,
// woken at a due time, looks for due timers at once. The batch frames its firings in its
// last statement (frameTransitions) instead of a trigger call per event at commit: frames
// equal the history, one notification per instance, progress pending for an instance sends
// the batch one by one (the trigger flushes it first), and a follower never sees a gap.
import pg from 'pg';
import { announceListener, flushNotifications, readNotifications } from '../../../runtime/store/notifications.ts';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, type Engine } from '../../../runtime/engine/context.ts';
import { deployDefinition } from '../../../runtime/engine/definitions.ts';
import { startInstance } from '../../../runtime/engine/instances.ts';
import { completeTask } from '../../../runtime/engine/tasks.ts';
import { fireDueTimers, publishMessage } from '../../../runtime/engine/waits.ts';
import { startTimerScheduler } from '../../../runtime/scheduler/timer-scheduler.ts';
import { createPool, withTransaction } from '../../../runtime/store/db.ts';
import { runPipelined } from '../../../runtime/store/pipeline.ts';
import { recordProgress } from '../../../runtime/store/progress.ts';
import { fetchAndLock, type LockedTaskRow } from '../../../runtime/store/tasks.ts';
import { buildBpmn } from '../../support/bpmn.ts';
import { countingPool } from '../../support/counting-pool.ts';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';
import { waitFor } from '../../support/server.ts';

const log = pino({ level: 'silent' });
let db: TestDatabase;
let engine: Engine;
let listener: pg.Client;
const bells: string[] = [];

const wait = (id: string, duration = 'PT1H') => ({ id, type: 'catchEvent' as const, timer: { duration } });

beforeAll(async () => {
  db = await createTestDatabase();
  engine = createEngine(db.pool, log);
  await deployDefinition(
    engine,
    buildBpmn(
      'plain',
      [{ id: 's', type: 'startEvent' }, wait('wait'), { id: 'e', type: 'endEvent' }],
      [
        { from: 's', to: 'wait' },
        { from: 'wait', to: 'e' },
      ],
    ),
  );
  // After the timer a message wait begins: its commit looks in the inbox first.
  await deployDefinition(
    engine,
    buildBpmn(
      'then-message',
      [
        { id: 's', type: 'startEvent' },
        wait('wait'),
        { id: 'paid', type: 'catchEvent', message: 'pipeline-paid' },
        { id: 'e', type: 'endEvent' },
      ],
      [
        { from: 's', to: 'wait' },
        { from: 'wait', to: 'paid' },
        { from: 'paid', to: 'e' },
      ],
    ),
  );
  // Two timers of one instance: the second firing must see the first one's writes.
  await deployDefinition(
    engine,
    buildBpmn(
      'two-timers',
      [
        { id: 's', type: 'startEvent' },
        { id: 'fork', type: 'parallelGateway' },
        wait('w1'),
        wait('w2'),
        { id: 'join', type: 'parallelGateway' },
        { id: 'e', type: 'endEvent' },
      ],
      [
        { from: 's', to: 'fork' },
        { from: 'fork', to: 'w1' },
        { from: 'fork', to: 'w2' },
        { from: 'w1', to: 'join' },
        { from: 'w2', to: 'join' },
        { from: 'join', to: 'e' },
      ],
    ),
  );
  // A terminate end after the timer: its commit cancels the open task after its statement.
  await deployDefinition(
    engine,
    buildBpmn(
      'terminate',
      [
        { id: 's', type: 'startEvent' },
        { id: 'fork', type: 'parallelGateway' },
        wait('wait'),
        { id: 'stop', type: 'terminateEndEvent' },
        { id: 'work', type: 'serviceTask', topic: 'pipeline-work' },
        { id: 'e', type: 'endEvent' },
      ],
      [
        { from: 's', to: 'fork' },
        { from: 'fork', to: 'wait' },
        { from: 'wait', to: 'stop' },
        { from: 'fork', to: 'work' },
        { from: 'work', to: 'e' },
      ],
    ),
  );
  // A task with an interrupting timeout: the firing cancels the task, so the task's pending
  // progress must be framed before the frames of that firing.
  await deployDefinition(
    engine,
    buildBpmn(
      'timeout',
      [
        { id: 's', type: 'startEvent' },
        { id: 'work', type: 'serviceTask', topic: 'pipeline-timeout' },
        { id: 'late', type: 'boundaryEvent', attachedTo: 'work', timer: { duration: 'PT1H' } },
        { id: 'e', type: 'endEvent' },
        { id: 'e2', type: 'endEvent' },
      ],
      [
        { from: 's', to: 'work' },
        { from: 'work', to: 'e' },
        { from: 'late', to: 'e2' },
      ],
    ),
  );
  // A timer and a task side by side: the firing and the complete frame one instance at once.
  await deployDefinition(
    engine,
    buildBpmn(
      'race',
      [
        { id: 's', type: 'startEvent' },
        { id: 'fork', type: 'parallelGateway' },
        wait('wait'),
        { id: 'work', type: 'serviceTask', topic: 'pipeline-race' },
        { id: 'join', type: 'parallelGateway' },
        { id: 'e', type: 'endEvent' },
      ],
      [
        { from: 's', to: 'fork' },
        { from: 'fork', to: 'wait' },
        { from: 'fork', to: 'work' },
        { from: 'wait', to: 'join' },
        { from: 'work', to: 'join' },
        { from: 'join', to: 'e' },
      ],
    ),
  );
  listener = new pg.Client({ connectionString: db.url });
  await listener.connect();
  listener.on('notification', (m) => bells.push(...readNotifications(m.payload).bells));
  await announceListener(listener, 'test-observer'); // heard as another node: this process's relays send to it
  await listener.query('listen baton_frames');
});
afterAll(async () => {
  await listener?.end();
  await db?.drop();
});

async function start(key: string): Promise<string> {
  const started = await startInstance(engine, { definitionKey: key });
  if (!started.ok) throw new Error(`no definition ${key}`);
  return started.instance.id;
}

/** Makes the instances' timers due, in this order (1 ms apart), so that they fall into known chunks. */
async function makeDueInOrder(ids: string[]): Promise<void> {
  await db.pool.query(
    `update timers t set due_at = now() - interval '1 minute' + (x.n * interval '1 millisecond')
      from (select i.id, i.n from unnest($1::uuid[]) with ordinality as i(id, n)) x
     where t.instance_id = x.id and t.state = 'waiting'`,
    [ids],
  );
}

async function frames(instanceId: string): Promise<{ seq: number; kind: string; data: Record<string, unknown> }[]> {
  const { rows } = await db.pool.query(
    'select seq, kind, data from frames where instance_id = $1 and generation = 1 order by seq',
    [instanceId],
  );
  return rows;
}

async function history(instanceId: string): Promise<{ kind: string; step_id: string | null; framed: boolean | null }[]> {
  const { rows } = await db.pool.query('select kind, step_id, framed from events where instance_id = $1 order by seq', [
    instanceId,
  ]);
  return rows;
}

/** Every notification committed so far has arrived: relayed, a NOTIFY sent now comes after them (a listener gets them in commit order). */
async function bellsSoFar(): Promise<string[]> {
  await flushNotifications(db.pool);
  const mark = `mark-${crypto.randomUUID()}`;
  await db.pool.query('select pg_notify($1, $2)', ['baton_frames', mark]);
  await waitFor(async () => (bells.includes(mark) ? true : undefined), 5_000, 'the marker notification');
  return bells.filter((b) => !b.startsWith('mark-'));
}

/** Frames are the history in order (seqs 1..n), and a completed instance ends with instance:ended. */
async function expectFramesEqualHistory(instanceId: string): Promise<void> {
  const got = await frames(instanceId);
  const kinds = (await history(instanceId)).map((e) => e.kind);
  expect(
    got.map((f) => f.seq),
    instanceId,
  ).toEqual(got.map((_, i) => i + 1));
  expect(
    got.map((f) => f.kind).filter((k) => k !== 'task:progress'),
    instanceId,
  ).toEqual([...kinds, 'instance:ended']);
}

async function lockTasks(topic: string, n: number): Promise<LockedTaskRow[]> {
  return waitFor(
    async () => {
      const { tasks } = await fetchAndLock(db.pool, {
        workerId: 'pw',
        maxTasks: n,
        topics: [{ name: topic, lockDurationMs: 60_000 }],
      });
      return tasks.length > 0 ? tasks : undefined;
    },
    5_000,
    `tasks of ${topic}`,
  );
}

describe('pipelined timer firing', () => {
  it('given 24 due timers of 24 instances, then each batch sends its firings as one statement with the rest of its transaction, and every timer fires once', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 24; i++) ids.push(await start('plain'));
    await makeDueInOrder(ids);
    const counting = countingPool(db.url);
    try {
      // 24 timers in 4 lanes: 4 transactions of 6 firings each.
      expect(await fireDueTimers(createEngine(counting.pool, log), 100)).toBe(24);
      // One statement per round trip before pipelining (at most 1 in flight), then the six
      // firings pipelined (6 and more); now the six and their framing are one statement, sent
      // with the stamp and the commit: 3 in flight.
      expect(counting.maxInFlight()).toBe(3);
      // Every client is back in its ordinary mode.
      for (const client of counting.clients) expect((client as unknown as { pipeline: boolean }).pipeline).toBe(false);
    } finally {
      await counting.pool.end();
    }
    const { rows } = await db.pool.query(
      `select count(*)::int as completed,
        (select count(*)::int from events where instance_id = any($1::uuid[]) and kind = 'step:completed' and step_id = 'wait') as fired,
        (select count(*)::int from timers where instance_id = any($1::uuid[]) and state = 'fired' and fired_at >= due_at) as stamped
      from instances where id = any($1::uuid[]) and status = 'completed'`,
      [ids],
    );
    expect(rows[0]).toEqual({ completed: 24, fired: 24, stamped: 24 });
  });

  it('given 8 due timers of 8 instances, then each of the 4 batches is two round trips: begin, lock and take the timers, read the instances; then the firings, the framing and the commit', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 9; i++) ids.push(await start('plain'));
    const counting = countingPool(db.url);
    try {
      const counted = createEngine(counting.pool, log);
      // One firing first, so that the definition's plan is cached (a read of its own).
      await makeDueInOrder(ids.slice(0, 1));
      expect(await fireDueTimers(counted, 100)).toBe(1);
      // Nothing due: the look-ups alone (due timers, due timer start events).
      let before = counting.roundTrips();
      expect(await fireDueTimers(counted, 100)).toBe(0);
      const lookUps = counting.roundTrips() - before;
      await makeDueInOrder(ids.slice(1));
      // 8 timers in 4 lanes: 4 transactions of 2 firings each (five round trips each before).
      before = counting.roundTrips();
      expect(await fireDueTimers(counted, 100)).toBe(8);
      expect(counting.roundTrips() - before).toBe(lookUps + 4 * 2);
    } finally {
      await counting.pool.end();
    }
    for (const id of ids) await expectFramesEqualHistory(id);
    const { rows } = await db.pool.query(
      `select count(*)::int as n from timers where instance_id = any($1::uuid[]) and state = 'fired' and fired_at >= due_at`,
      [ids],
    );
    expect(rows[0].n).toBe(9);
  });

  it('given a batch mixing plain firings with a message wait that finds its message buffered, a terminate end, and an instance with two due timers, then each fires once with the result of firing alone', async () => {
    // Four lanes of three: [p, message, p] [p, two, two] [p, terminate, p] [p, p, p]
    const p = async () => start('plain');
    const [p1, message, p2, p3, two, p4, terminate, p5, p6, p7, p8] = [
      await p(),
      await start('then-message'),
      await p(),
      await p(),
      await start('two-timers'),
      await p(),
      await start('terminate'),
      await p(),
      await p(),
      await p(),
      await p(),
    ];
    // A message published before its wait begins is kept and matched when the wait starts.
    expect((await publishMessage(engine, { name: 'pipeline-paid' })).status).toBe('buffered');
    await makeDueInOrder([p1!, message!, p2!, p3!, two!, p4!, terminate!, p5!, p6!, p7!, p8!]);
    expect(await fireDueTimers(engine, 100)).toBe(12);
    const { rows } = await db.pool.query<{ id: string; status: string; fired: number }>(
      `select i.id, i.status,
        (select count(*)::int from events e where e.instance_id = i.id and e.kind = 'step:completed' and e.step_id in ('wait', 'w1', 'w2')) as fired
      from instances i where i.id = any($1::uuid[])`,
      [[p1, message, p2, p3, two, p4, terminate, p5, p6, p7, p8]],
    );
    const byId = new Map(rows.map((r) => [r.id, r]));
    for (const id of [p1, p2, p3, p4, p5, p6, p7, p8]) expect(byId.get(id!)).toMatchObject({ status: 'completed', fired: 1 });
    expect(byId.get(message!)).toMatchObject({ status: 'completed', fired: 1 });
    expect(byId.get(two!)).toMatchObject({ status: 'completed', fired: 2 });
    expect(byId.get(terminate!)).toMatchObject({ status: 'completed', fired: 1 });
    const { rows: tasks } = await db.pool.query(`select state from external_tasks where instance_id = $1`, [terminate]);
    expect(tasks.map((t) => t.state)).not.toContain('ready');
    const { rows: joins } = await db.pool.query(
      `select count(*)::int as n from events where instance_id = $1 and kind = 'step:completed' and step_id = 'join'`,
      [two],
    );
    expect(joins[0].n).toBe(1);
    // The firings that went alone (the message, the terminate) and the two of one instance
    // were framed by the batch's last statement too: every event framed, frames = history.
    for (const id of [p1, message, p2, p3, two, p4, terminate, p5, p6, p7, p8]) {
      await expectFramesEqualHistory(id!);
      const firing = (await history(id!)).filter((e) => e.kind !== 'task:created' && e.kind !== 'task:locked');
      expect(
        firing.map((e) => e.framed),
        id,
      ).toEqual(firing.map(() => true));
    }
  });
});

describe('timer firings written together', () => {
  it('given a batch of interrupting timeouts on open tasks beside plain timers, then one statement writes them: each task canceled, each instance ended once, frames equal to the history', async () => {
    // 8 timers in 4 lanes: batches of two, each a timeout and a plain timer.
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push(await start('timeout'), await start('plain'));
    await makeDueInOrder(ids);
    expect(await fireDueTimers(engine, 100)).toBe(8);
    const { rows } = await db.pool.query<{ id: string; status: string; tasks: string[]; fired: string[] }>(
      `select i.id, i.status,
        (select array_agg(state order by state) from external_tasks t where t.instance_id = i.id) as tasks,
        (select array_agg(step_id order by step_id) from events e where e.instance_id = i.id and e.kind = 'step:completed') as fired
      from instances i where i.id = any($1::uuid[])`,
      [ids],
    );
    const byId = new Map(rows.map((r) => [r.id, r]));
    for (const [k, id] of ids.entries()) {
      expect(byId.get(id), id).toMatchObject(
        k % 2 === 0
          ? { status: 'completed', tasks: ['canceled'], fired: ['e2', 'late', 's'] }
          : { status: 'completed', tasks: null, fired: ['e', 's', 'wait'] },
      );
      await expectFramesEqualHistory(id);
    }
    // four transactions of two firings each (the batches of two take the together statement)
    const {
      rows: [x],
    } = await db.pool.query(`select count(distinct xmin::text)::int as transactions from instances where id = any($1::uuid[])`, [
      ids,
    ]);
    expect(x).toEqual({ transactions: 4 });
  });
});

describe('timer batches frame at the end', () => {
  it('given a batch of due timers, then its last statement frames every firing: events written framed, frames equal to the history, one notification per instance', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) ids.push(await start('plain'));
    await makeDueInOrder(ids);
    const before = new Map<string, number>();
    for (const id of ids) before.set(id, (await frames(id)).length);
    await bellsSoFar();
    bells.length = 0;
    // 6 timers, 4 lanes: batches of 2, so each transaction frames two instances at once.
    expect(await fireDueTimers(engine, 100)).toBe(6);
    const rung = await bellsSoFar();
    for (const id of ids) {
      await expectFramesEqualHistory(id);
      expect((await history(id)).map((e) => e.framed)).toEqual((await history(id)).map(() => true));
      const got = await frames(id);
      expect(got.length).toBeGreaterThan(before.get(id)!);
      // one notification for the whole firing, carrying its last seq
      expect(rung.filter((b) => b.startsWith(id))).toEqual([`${id} 1 ${got.length}`]);
    }
    // No firing queued the trigger: it frames events whose `framed` is null only.
    const { rows } = await db.pool.query(
      `select count(*)::int as n from events where instance_id = any($1::uuid[]) and framed is null`,
      [ids],
    );
    expect(rows[0].n).toBe(0);
  });

  it('given progress pending for one instance of a batch, then the batch goes one by one, every timer fires once, and that progress is framed before the firing cancels its task', async () => {
    const [a, timeout] = [await start('plain'), await start('timeout')];
    const others: string[] = [];
    for (let i = 0; i < 6; i++) others.push(await start('plain'));
    const [task] = await lockTasks('pipeline-timeout', 1);
    expect(task!.instance_id).toBe(timeout);
    expect(
      (await recordProgress(db.pool, { taskId: task!.id, workerId: 'pw', lockToken: task!.lock_token!, data: { n: 1 } })).ok,
    ).toBe(true);
    // 8 timers in 4 lanes: batches of 2, the first [a, timeout].
    await makeDueInOrder([a!, timeout!, ...others]);
    expect(await fireDueTimers(engine, 100)).toBe(8);
    const got = await frames(timeout!);
    const progress = got.findIndex((f) => f.kind === 'task:progress');
    expect(progress).toBeGreaterThan(-1);
    expect(got[progress]!.data.reports).toEqual([{ n: 1 }]);
    expect(progress).toBeLessThan(got.findIndex((f) => f.kind === 'step:canceled' && f.data.stepId === 'work'));
    await expectFramesEqualHistory(timeout!);
    // One by one: the trigger framed every firing of that batch, the instance without progress
    // too; the other batches framed theirs at the end.
    const firing = async (id: string) =>
      (await history(id))
        .filter((e) => e.kind === 'step:completed' && e.step_id === (id === timeout ? 'late' : 'wait'))
        .map((e) => e.framed);
    expect(await firing(a!)).toEqual([null]);
    expect(await firing(timeout!)).toEqual([null]);
    for (const id of others) expect(await firing(id)).toEqual([true]);
    for (const id of [a!, timeout!, ...others]) await expectFramesEqualHistory(id);
    const { rows } = await db.pool.query(`select count(*)::int as n from progress_reports where instance_id = $1`, [timeout]);
    expect(rows[0].n).toBe(0);
  });

  it('given a report that commits while the batch waits for the task row its firing cancels, then the firing sees it and the progress frame comes first', async () => {
    const [a, timeout] = [await start('plain'), await start('timeout')];
    const others: string[] = [];
    for (let i = 0; i < 6; i++) others.push(await start('plain'));
    const [task] = await lockTasks('pipeline-timeout', 1);
    // batches of 2, the first [a, timeout]
    await makeDueInOrder([a!, timeout!, ...others]);
    const reporter = await db.pool.connect();
    let firing: Promise<number> | undefined;
    try {
      // What recordProgress does: FOR SHARE on the holder's task row, then the report.
      await reporter.query('begin');
      await reporter.query('select 1 from external_tasks where id = $1 for share', [task!.id]);
      await reporter.query(
        `insert into progress_reports (task_id, instance_id, generation, step_id, data, bytes) values ($1, $2, 1, 'work', '{"n": 9}', 10)`,
        [task!.id, timeout],
      );
      firing = fireDueTimers(engine, 100);
      await waitFor(
        async () => {
          const { rows } = await db.pool.query(`select 1 from pg_stat_activity
                                                where datname = current_database() and wait_event_type = 'Lock' and query like 'with%i as (update instances%'`);
          return rows.length > 0 ? true : undefined;
        },
        10_000,
        'the firing to wait for the task row',
      );
      await reporter.query('commit');
      expect(await firing).toBe(8);
    } finally {
      if (firing) await firing.catch(() => undefined);
      reporter.release();
    }
    const got = await frames(timeout!);
    const progress = got.findIndex((f) => f.kind === 'task:progress');
    expect(progress).toBeGreaterThan(-1);
    expect(got[progress]!.data.reports).toEqual([{ n: 9 }]);
    expect(progress).toBeLessThan(got.findIndex((f) => f.kind === 'step:canceled' && f.data.stepId === 'work'));
    for (const id of [a!, timeout!, ...others]) await expectFramesEqualHistory(id);
  });

  it('given timers firing in batches while the other branch of each instance completes, then a follower reading the frames never sees a gap, and each instance ends once (8 rounds of 12)', async () => {
    for (let round = 0; round < 8; round++) {
      const ids: string[] = [];
      for (let i = 0; i < 12; i++) ids.push(await start('race'));
      const tasks = (await lockTasks('pipeline-race', 100)).filter((t) => ids.includes(t.instance_id));
      expect(tasks).toHaveLength(12);
      await makeDueInOrder(ids);
      let ended = false;
      let reads = 0;
      const follower = (async () => {
        while (!ended) {
          const { rows } = await db.pool.query<{ id: string; seqs: number[]; kinds: string[] }>(
            `select instance_id as id, array_agg(seq order by seq) as seqs, array_agg(kind order by seq) as kinds
              from frames where instance_id = any($1::uuid[]) and generation = 1 group by instance_id`,
            [ids],
          );
          reads++;
          for (const r of rows) expect(r.seqs, `round ${round}, ${r.id}`).toEqual(r.seqs.map((_, i) => i + 1));
          ended = rows.length === ids.length && rows.every((r) => r.kinds.at(-1) === 'instance:ended');
        }
      })();
      const [fired, results] = await Promise.all([
        fireDueTimers(engine, 100),
        Promise.all(tasks.map((t) => completeTask(engine, { taskId: t.id, workerId: 'pw', lockToken: t.lock_token! }))),
      ]);
      expect(fired).toBe(12);
      expect(results.map((r) => r.ok)).toEqual(tasks.map(() => true));
      await follower;
      expect(reads).toBeGreaterThan(0);
      for (const id of ids) {
        await expectFramesEqualHistory(id);
        const kinds = (await history(id)).map((e) => e.kind);
        expect(
          kinds.filter((k) => k === 'instance:completed'),
          id,
        ).toHaveLength(1);
      }
    }
  }, 60_000);
});

describe('runPipelined', () => {
  it('given a group of statements in a transaction, then they run in call order and answer in order; given one that fails, then the transaction fails and the client works as before', async () => {
    await db.pool.query('create table pipeline_probe (seq serial primary key, n int not null)');
    const order = await withTransaction(db.pool, async (tx) => {
      const results = await runPipelined(
        tx,
        Array.from(
          { length: 10 },
          (_, n) => async () =>
            (
              await tx.query<{ n: number }>({
                name: 'probe_insert',
                text: 'insert into pipeline_probe (n) values ($1) returning n',
                values: [n],
              })
            ).rows[0]!.n,
        ),
      );
      return results.map((r) => (r.status === 'fulfilled' ? r.value : -1));
    });
    expect(order).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    const { rows } = await db.pool.query('select array_agg(n order by seq) as ns from pipeline_probe');
    expect(rows[0].ns).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);

    const client = await db.pool.connect();
    try {
      await client.query('begin');
      const results = await runPipelined(client, [
        () => client.query('insert into pipeline_probe (n) values (100)'),
        () => client.query('insert into pipeline_probe (n) values (null)'),
        () => client.query('insert into pipeline_probe (n) values (101)'),
      ]);
      expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'rejected']);
      await client.query('rollback');
      expect((client as unknown as { pipeline: boolean }).pipeline).toBe(false);
      expect(Object.prototype.hasOwnProperty.call(client, 'query')).toBe(false);
      expect((await client.query('select count(*)::int as n from pipeline_probe')).rows[0].n).toBe(10);
    } finally {
      client.release();
    }
  });
});

describe('timer scheduler at a due time', () => {
  it('given a timer due in 400 ms, then the first statement after the sleep is the look-up of due timers, not a recomputation of the next due time', async () => {
    const sent: { name: string; at: number }[] = [];
    const counting = createPool({ connectionString: db.url });
    const query = counting.query.bind(counting) as (...args: unknown[]) => unknown;
    (counting as { query: unknown }).query = (...args: unknown[]) => {
      const config = args[0] as { name?: string } | string;
      sent.push({ name: typeof config === 'string' ? config : (config.name ?? '?'), at: performance.now() });
      return query(...args);
    };
    // No other timer waits: the old tests' timers all fired.
    await db.pool.query(`update timers set state = 'canceled' where state = 'waiting'`);
    const scheduler = startTimerScheduler(createEngine(counting, log), log, { maxSleepMs: 30_000, batchSize: 500 });
    try {
      await waitFor(async () => (sent.length > 0 ? true : undefined), 5000, 'the first recomputation');
      const id = await start('plain');
      await db.pool.query(`update timers set due_at = now() + interval '400 milliseconds' where instance_id = $1`, [id]);
      scheduler.poke();
      await waitFor(
        async () =>
          (await db.pool.query(`select status from instances where id = $1`, [id])).rows[0]?.status === 'completed'
            ? true
            : undefined,
        10_000,
        'the timer to fire',
      );
      const first = sent.findIndex((s) => s.name === 'find_due_timers');
      expect(first).toBeGreaterThan(0);
      // The statement before it was the poke's recomputation, a sleep earlier.
      expect(sent[first - 1]!.name).toBe('ms_until_next_timer');
      expect(sent[first]!.at - sent[first - 1]!.at).toBeGreaterThan(200);
    } finally {
      await scheduler.stop();
      await counting.end();
    }
  });
});
