// A complete that creates a chain's next task hands it to a native long poll parked on
// this node, inside the complete's own guarded statement (engine/tasks.ts
// completeOptimistically, engine/poll-delivery.ts): the next task is inserted locked for the
// poll, with the task:locked event and frame a fetch would write, in the complete's
// commit. Every window is driven here on a real PostgreSQL: the guard lost to an instance
// that moved or a lock that went elsewhere, an error after the commit, the poll's caller
// leaving while the complete is blocked, two completes for one poll, flow limits, Camunda
// polls (left on the ring), and a complete that ends the instance.
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchCamundaTasks } from '../../../runtime/camunda/engine/fetch.ts';
import { createEngine, type Engine } from '../../../runtime/engine/context.ts';
import { deployDefinition } from '../../../runtime/engine/definitions.ts';
import { startInstance } from '../../../runtime/engine/instances.ts';
import { completeTask } from '../../../runtime/engine/tasks.ts';
import { ParkedPolls } from '../../../runtime/engine/parked-polls.ts';
import { createPool } from '../../../runtime/store/db.ts';
import { putFlowLimit } from '../../../runtime/store/flow-limits.ts';
import { fetchAndLock, type LockedTaskRow } from '../../../runtime/store/tasks.ts';
import { buildBpmn } from '../../support/bpmn.ts';
import { createTestDatabase, holdLocks, type TestDatabase } from '../../support/db.ts';
import { parkPoll } from '../../support/polls.ts';
import { complete, fetchTasks, start } from '../../support/flows.ts';
import { startTestServer, waitFor } from '../../support/server.ts';

const log = pino({ level: 'silent' });
let db: TestDatabase;
let engine: Engine;
let parkedPolls: ParkedPolls;

/** start -> one -> two -> three -> end, topics `${key}-1` .. `${key}-3` */
function chainBpmn(key: string): string {
  return buildBpmn(
    key,
    [
      { id: 'start', type: 'startEvent' },
      { id: 'one', type: 'serviceTask', topic: `${key}-1` },
      { id: 'two', type: 'serviceTask', topic: `${key}-2` },
      { id: 'three', type: 'serviceTask', topic: `${key}-3` },
      { id: 'end', type: 'endEvent' },
    ],
    [
      { from: 'start', to: 'one' },
      { from: 'one', to: 'two' },
      { from: 'two', to: 'three' },
      { from: 'three', to: 'end' },
    ],
  );
}

const KEYS = ['chain', 'chain-limited', 'chain-late', 'chain-camunda'];

beforeAll(async () => {
  db = await createTestDatabase();
  engine = createEngine(db.pool, log);
  parkedPolls = new ParkedPolls(db.url, log);
  await parkedPolls.start();
  engine.delivery = parkedPolls;
  for (const key of KEYS) await deployDefinition(engine, chainBpmn(key));
});
afterAll(async () => {
  await parkedPolls?.stop();
  await db?.drop();
});

const poll = (workerId: string, topic: string, opts: { waitMs?: number } = {}) =>
  parkPoll({ engine, parkedPolls }, workerId, topic, opts);

/** Waits until a poll of the topic is parked and unrung: a claim taken and given back at once shows it. */
async function parked(topic: string): Promise<void> {
  await waitFor(
    async () => {
      const claim = parkedPolls.claimPoll(topic);
      claim?.release();
      return claim ? true : undefined;
    },
    5000,
    `a poll parked on ${topic}`,
  );
}

/** An instance of `key` started with its first task fetched and locked by `workerId`. */
async function atStepOne(key: string, workerId = 'w1'): Promise<{ id: string; task: LockedTaskRow }> {
  const r = await startInstance(engine, { definitionKey: key, variables: { from: 'start' } });
  if (!r.ok) throw new Error(`start of ${key}: ${r.reason}`);
  const { tasks } = await fetchAndLock(db.pool, {
    workerId,
    maxTasks: 10,
    topics: [{ name: `${key}-1`, lockDurationMs: 45_000 }],
  });
  const task = tasks.find((t) => t.instance_id === r.instance.id);
  if (!task) throw new Error(`no step one task of ${r.instance.id}`);
  return { id: r.instance.id, task };
}

const holderOf = (task: LockedTaskRow, workerId = 'w1') => ({ taskId: task.id, workerId, lockToken: task.lock_token! });

async function taskAt(instanceId: string, stepId: string) {
  const { rows } = await db.pool.query('select * from external_tasks where instance_id = $1 and step_id = $2', [
    instanceId,
    stepId,
  ]);
  return rows[0];
}

/** The instance's events with the transaction that wrote each (xmin). */
async function history(instanceId: string) {
  const { rows } = await db.pool.query<{
    kind: string;
    step_id: string | null;
    attempt: number | null;
    data: Record<string, unknown>;
    tx: string;
  }>('select kind, step_id, attempt, data, xmin::text as tx from events where instance_id = $1 order by seq', [instanceId]);
  return rows;
}

const holding = (sql: string) => holdLocks(db, sql);

async function blockedUntil(block: { waiting: () => Promise<boolean> }): Promise<void> {
  await waitFor(async () => ((await block.waiting()) ? true : undefined), 5000, 'the complete to wait');
}

describe("delivery of a chain's next task from the complete that creates it", () => {
  it("given polls parked on steps two and three, when each step is completed, then each poll answers the next task locked in the complete's own transaction, and the history and frames show it once with no gap", async () => {
    const { id, task: one } = await atStepOne('chain');
    const p2 = poll('two-1', 'chain-2');
    await parked('chain-2');
    expect((await completeTask(engine, { ...holderOf(one), variables: { one: 1 } })).ok).toBe(true);
    const [two] = await p2.answer;
    expect(two).toMatchObject({
      instance_id: id,
      step_id: 'two',
      worker_id: 'two-1',
      attempt: 1,
      variables: { from: 'start', one: 1 },
    });
    const row = await taskAt(id, 'two');
    expect(row).toMatchObject({ id: two!.id, state: 'locked', worker_id: 'two-1', lock_token: two!.lock_token, attempt: 1 });
    const expiresInMs = row.lock_expires_at.getTime() - row.created_at.getTime();
    expect(expiresInMs).toBeGreaterThanOrEqual(45_000);
    expect(expiresInMs).toBeLessThan(46_000);

    const p3 = poll('three-1', 'chain-3');
    await parked('chain-3');
    expect((await completeTask(engine, { ...holderOf(two!, 'two-1'), variables: { two: 2 } })).ok).toBe(true);
    const [three] = await p3.answer;
    expect(three).toMatchObject({
      instance_id: id,
      step_id: 'three',
      worker_id: 'three-1',
      attempt: 1,
      variables: { from: 'start', one: 1, two: 2 },
    });

    const events = await history(id);
    const locked = events.filter((e) => e.kind === 'task:locked');
    expect(locked.map((e) => [e.step_id, e.attempt, e.data.workerId])).toEqual([
      ['one', 1, 'w1'],
      ['two', 1, 'two-1'],
      ['three', 1, 'three-1'],
    ]);
    // each complete and the next task's lock in one commit: no fetch statement after it
    for (const step of ['one', 'two']) {
      const done = events.find((e) => e.kind === 'task:completed' && e.step_id === step)!;
      const next = locked.find((e) => e.step_id === (step === 'one' ? 'two' : 'three'))!;
      expect(next.tx).toBe(done.tx);
      expect(events.filter((e) => e.tx === done.tx).at(-1)).toBe(next); // the lock follows the complete's own events
    }
    expect(new Date(locked[1]!.data.lockExpiresAt as string).getTime()).toBe(row.lock_expires_at.getTime());
    // frames equal the history, seq 1..n, with what the trigger would frame for task:locked
    const { rows: frames } = await db.pool.query('select seq, kind, data from frames where instance_id = $1 order by seq', [id]);
    expect(frames.map((f) => f.kind)).toEqual(events.map((e) => e.kind));
    expect(frames.map((f) => Number(f.seq))).toEqual(frames.map((_, i) => i + 1));
    expect(frames[events.indexOf(locked[1]!)]!.data).toEqual({
      stepId: 'two',
      taskId: row.id,
      attempt: 1,
      workerId: 'two-1',
      trafficWaitMs: 0,
      lockExpiresAt: locked[1]!.data.lockExpiresAt,
    });
  });

  it('given a poll parked on step two, when a complete of step one loses its guard (the instance moved while it waited), then nothing of it is written, the claim is released, and the poll gets the task through the ring of the locked path', async () => {
    const { id, task: one } = await atStepOne('chain');
    const p = poll('two-2', 'chain-2');
    await parked('chain-2');
    // a transition of the instance commits while the complete's statement waits for the row
    const block = await holding(`update instances set revision = revision + 1 where id = '${id}'`);
    const completed = completeTask(engine, holderOf(one));
    await blockedUntil(block);
    expect(parkedPolls.claimPoll('chain-2')).toBeUndefined(); // the complete holds the poll's claim
    expect(p.settled()).toBe(false);
    await block.release();
    expect(await completed).toEqual({ ok: true, duplicate: false });
    const [two] = await p.answer;
    expect(two).toMatchObject({ instance_id: id, step_id: 'two', worker_id: 'two-2', attempt: 1 });
    const events = await history(id);
    expect(events.filter((e) => e.kind === 'task:completed')).toHaveLength(1);
    const done = events.find((e) => e.kind === 'task:completed')!;
    const locked = events.filter((e) => e.kind === 'task:locked' && e.step_id === 'two');
    expect(locked).toHaveLength(1);
    expect(locked[0]!.tx).not.toBe(done.tx); // fetched after the locked path's commit
  });

  it('given a poll parked on step two, when the completing holder lost its lock while the complete waited, then the guard refuses, nothing is created, and the poll stays parked', async () => {
    const { id, task: one } = await atStepOne('chain');
    const p = poll('two-3', 'chain-2');
    await parked('chain-2');
    // the lease went to another worker in the window
    const block =
      await holding(`update external_tasks set worker_id = 'heir', lock_token = gen_random_uuid(), attempt = attempt + 1 where id = '${one.id}';
                                 update instances set revision = revision where id = '${id}'`);
    const completed = completeTask(engine, holderOf(one));
    await blockedUntil(block);
    expect(parkedPolls.claimPoll('chain-2')).toBeUndefined(); // the complete holds the poll's claim
    await block.release();
    expect(await completed).toEqual({ ok: false, reason: 'lock_lost' });
    expect(await taskAt(id, 'two')).toBeUndefined();
    await parked('chain-2'); // claimable again: back to parked, not answered
    expect(p.settled()).toBe(false);
    p.abort.abort();
    expect(await p.answer).toEqual([]);
  });

  it("given a poll parked on step two, when the complete's statement commits but its answer is lost (an error of unknown outcome), then the handed task is unlocked and the poll fetches it", async () => {
    const { id, task: one } = await atStepOne('chain');
    const p = poll('two-4', 'chain-2');
    await parked('chain-2');
    // a pool whose delivery statement commits and then reports a lost connection
    const pool = createPool({ connectionString: db.url, max: 2 });
    const query = pool.query.bind(pool) as (...args: unknown[]) => Promise<unknown>;
    (pool as unknown as { query: unknown }).query = async (...args: unknown[]) => {
      const result = await query(...args);
      const text = (args[0] as { text?: string }).text ?? '';
      if (text.includes('flow_limit_topics')) throw new Error('Connection terminated unexpectedly');
      return result;
    };
    const faulty = createEngine(pool, log);
    faulty.delivery = parkedPolls;
    try {
      await expect(completeTask(faulty, holderOf(one))).rejects.toThrow(/Connection terminated/);
    } finally {
      await pool.end();
    }
    const [two] = await p.answer;
    expect(two).toMatchObject({ instance_id: id, step_id: 'two', worker_id: 'two-4', attempt: 2 });
    expect((await history(id)).filter((e) => e.step_id === 'two' && e.kind.startsWith('task:')).map((e) => e.kind)).toEqual([
      'task:locked',
      'task:unlocked',
      'task:locked',
    ]);
    // the worker repeats its complete: the locked path answers it as already applied
    expect(await completeTask(engine, holderOf(one))).toEqual({ ok: true, duplicate: true });
  });

  it("given a complete blocked while holding a poll, when the poll's caller leaves, then the task is unlocked once the complete commits, and fetched normally", async () => {
    const { id, task: one } = await atStepOne('chain');
    const p = poll('two-5', 'chain-2');
    await parked('chain-2');
    const block = await holding(`select 1 from instances where id = '${id}' for update`);
    const completed = completeTask(engine, holderOf(one));
    await blockedUntil(block);
    p.abort.abort();
    await new Promise((r) => setTimeout(r, 50));
    expect(p.settled()).toBe(false); // the claim is waited for
    await block.release();
    expect(await completed).toEqual({ ok: true, duplicate: false });
    expect(await p.answer).toEqual([]);
    const events = await history(id);
    expect(events.filter((e) => e.step_id === 'two' && e.kind.startsWith('task:')).map((e) => e.kind)).toEqual([
      'task:locked',
      'task:unlocked',
    ]);
    expect((await taskAt(id, 'two')).state).toBe('ready');
    const { tasks } = await fetchAndLock(db.pool, {
      workerId: 'heir',
      maxTasks: 1,
      topics: [{ name: 'chain-2', lockDurationMs: 45_000 }],
    });
    expect(tasks.map((t) => [t.instance_id, t.attempt])).toEqual([[id, 2]]);
  });

  it('given one parked poll with maxTasks 1, when two completes race, then one next task is handed and the other is left ready and rung, each locked once', async () => {
    const a = await atStepOne('chain');
    const b = await atStepOne('chain');
    const p = poll('two-6', 'chain-2');
    await parked('chain-2');
    await Promise.all([completeTask(engine, holderOf(a.task)), completeTask(engine, holderOf(b.task))]);
    const handed = await p.answer;
    expect(handed).toHaveLength(1);
    const other = [a.id, b.id].find((id) => id !== handed[0]!.instance_id)!;
    expect((await taskAt(other, 'two')).state).toBe('ready');
    const { tasks } = await fetchAndLock(db.pool, {
      workerId: 'two-6b',
      maxTasks: 5,
      topics: [{ name: 'chain-2', lockDurationMs: 45_000 }],
    });
    expect(tasks.map((t) => t.instance_id)).toEqual([other]);
    const { rows } = await db.pool.query(
      `select count(*)::int as n from events where kind = 'task:locked' and step_id = 'two' and instance_id = any($1::uuid[]) group by instance_id`,
      [[a.id, b.id]],
    );
    expect(rows.map((r) => r.n)).toEqual([1, 1]);
  });

  it('given a poll parked on a flow-limited topic, when step one completes, then no delivery: the ring wakes the poll and the limited fetch locks the task', async () => {
    expect((await putFlowLimit(db.pool, { resource: 'chain-limited-2', maxConcurrent: 5, maxStartsPerSecond: 0 })).ok).toBe(true);
    const { id, task: one } = await atStepOne('chain-limited');
    const p = poll('two-7', 'chain-limited-2');
    await waitFor(async () => (parkedPolls.parked > 0 ? true : undefined), 5000, 'the poll to subscribe');
    await new Promise((r) => setTimeout(r, 100)); // no claim can show it parked: it offers none
    expect(parkedPolls.claimPoll('chain-limited-2')).toBeUndefined();
    expect((await completeTask(engine, holderOf(one))).ok).toBe(true);
    expect((await p.answer).map((t) => [t.instance_id, t.step_id])).toEqual([[id, 'two']]);
    const events = await history(id);
    expect(events.find((e) => e.kind === 'task:locked' && e.step_id === 'two')!.tx).not.toBe(
      events.find((e) => e.kind === 'task:completed')!.tx,
    );
  });

  it('given a poll parked before a flow limit was put on its topic, when step one completes, then the guard refuses the delivery (BT409), the locked path completes, and the limited fetch takes the task', async () => {
    const { id, task: one } = await atStepOne('chain-late');
    const p = poll('two-8', 'chain-late-2');
    await parked('chain-late-2');
    expect((await putFlowLimit(db.pool, { resource: 'chain-late-2', maxConcurrent: 5, maxStartsPerSecond: 0 })).ok).toBe(true);
    expect(await completeTask(engine, holderOf(one))).toEqual({ ok: true, duplicate: false });
    expect((await p.answer).map((t) => [t.instance_id, t.step_id])).toEqual([[id, 'two']]);
    const events = await history(id);
    expect(events.filter((e) => e.kind === 'task:completed')).toHaveLength(1);
    expect(events.find((e) => e.kind === 'task:locked' && e.step_id === 'two')!.tx).not.toBe(
      events.find((e) => e.kind === 'task:completed')!.tx,
    );
  });

  it("given a Camunda long poll parked on step two's topic, when step one completes, then it is woken by the ring and fetches (Camunda polls are not handed tasks)", async () => {
    const { id, task: one } = await atStepOne('chain-camunda');
    const answer = fetchCamundaTasks(engine, parkedPolls, {
      workerId: 'camunda-1',
      maxTasks: 1,
      waitMs: 20_000,
      usePriority: true,
      createTimeOrder: 'asc',
      topics: [{ topicName: 'chain-camunda-2', lockDuration: 45_000 }],
    });
    await waitFor(async () => (parkedPolls.parked > 0 ? true : undefined), 5000, 'the Camunda poll to subscribe');
    await new Promise((r) => setTimeout(r, 100));
    expect(parkedPolls.claimPoll('chain-camunda-2')).toBeUndefined();
    expect((await completeTask(engine, holderOf(one))).ok).toBe(true);
    expect(await answer).toHaveLength(1);
    const events = await history(id);
    expect(events.find((e) => e.kind === 'task:locked' && e.step_id === 'two')!.tx).not.toBe(
      events.find((e) => e.kind === 'task:completed')!.tx,
    );
  });

  it('given polls parked on every topic of the chain, when the last step completes and ends the instance, then nothing is handed and the polls stay parked', async () => {
    const { id, task: one } = await atStepOne('chain');
    expect((await completeTask(engine, holderOf(one))).ok).toBe(true);
    const {
      tasks: [two],
    } = await fetchAndLock(db.pool, { workerId: 'w1', maxTasks: 1, topics: [{ name: 'chain-2', lockDurationMs: 45_000 }] });
    expect((await completeTask(engine, holderOf(two!))).ok).toBe(true);
    const {
      tasks: [three],
    } = await fetchAndLock(db.pool, { workerId: 'w1', maxTasks: 1, topics: [{ name: 'chain-3', lockDurationMs: 45_000 }] });
    const polls = ['chain-1', 'chain-2', 'chain-3'].map((topic) => poll(`idle-${topic}`, topic));
    for (const topic of ['chain-1', 'chain-2', 'chain-3']) await parked(topic);
    expect((await completeTask(engine, holderOf(three!))).ok).toBe(true);
    const { rows } = await db.pool.query('select status from instances where id = $1', [id]);
    expect(rows[0].status).toBe('completed');
    for (const topic of ['chain-1', 'chain-2', 'chain-3']) await parked(topic);
    expect(polls.map((x) => x.settled())).toEqual([false, false, false]);
    for (const x of polls) x.abort.abort();
    expect(await Promise.all(polls.map((x) => x.answer))).toEqual([[], [], []]);
    const {
      rows: [count],
    } = await db.pool.query(`select count(*)::int as n from external_tasks where instance_id = $1`, [id]);
    expect(count.n).toBe(3);
  });

  it("given the server, when a native poll is parked over HTTP on step two and step one is completed over HTTP, then the poll's answer is step two in fetch-and-lock's JSON shape, locked in the complete's transaction", async () => {
    const t = await startTestServer();
    try {
      await t.api.post('/api/definitions', { xml: chainBpmn('chain-http') });
      const id = await start(t.api, 'chain-http', { businessKey: 'http-bk', variables: { n: 1 } });
      const [one] = await fetchTasks(t.api, 'http-1', ['chain-http-1'], { maxTasks: 1 });
      const parkedAnswer = fetchTasks(t.api, 'http-2', ['chain-http-2'], { maxTasks: 1, waitMs: 20_000 });
      await waitFor(
        async () => {
          const claim = t.server.parkedPolls.claimPoll('chain-http-2');
          claim?.release();
          return claim ? true : undefined;
        },
        5000,
        'the HTTP poll to park',
      );
      expect((await complete(t.api, one!, 'http-1', { m: 2 })).status).toBe(204);
      const [two] = await parkedAnswer;
      expect(two).toMatchObject({
        instanceId: id,
        stepId: 'two',
        topic: 'chain-http-2',
        businessKey: 'http-bk',
        attempt: 1,
        variables: { n: 1, m: 2 },
      });
      const { rows } = await t.db.pool.query(
        `select kind, xmin::text as tx from events where instance_id = $1 and kind in ('task:completed', 'task:locked') and step_id in ('one', 'two') order by seq`,
        [id],
      );
      expect(rows.map((r) => r.kind)).toEqual(['task:locked', 'task:completed', 'task:locked']);
      expect(rows[2].tx).toBe(rows[1].tx);
      // a fetch of the same task, given back, answers the same fields
      expect(
        (await t.api.post(`/api/external-tasks/${two!.id}/unlock`, { workerId: 'http-2', lockToken: two!.lockToken })).status,
      ).toBe(204);
      const [fetched] = await fetchTasks(t.api, 'http-2', ['chain-http-2'], { maxTasks: 1 });
      expect({ ...two, lockToken: '', lockExpiresAt: '', attempt: 0 }).toEqual({
        ...fetched,
        lockToken: '',
        lockExpiresAt: '',
        attempt: 0,
      });
    } finally {
      await t.close();
    }
  });
});
