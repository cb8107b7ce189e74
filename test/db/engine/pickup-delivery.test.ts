// A start hands its new task to a native long poll parked on this node, inside the start's
// own statement (engine/poll-delivery.ts): the task is inserted locked for the poll, with the
// task:locked event a fetch would write, in the start's commit. Every window where the
// delivery can go wrong is driven here on a real PostgreSQL: the statement losing its
// guard, a start blocked while its poll's caller leaves or its wait runs out, two starts
// for one poll, a flow limit, a second node, and Camunda polls (left on the ring).
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lockedTaskView } from '../../../runtime/api/views.ts';
import { fetchCamundaTasks } from '../../../runtime/camunda/engine/fetch.ts';
import { createEngine, type Engine } from '../../../runtime/engine/context.ts';
import { deployDefinition } from '../../../runtime/engine/definitions.ts';
import { SAFETY_RECHECK_MS } from '../../../runtime/engine/fetch.ts';
import { startInstance } from '../../../runtime/engine/instances.ts';
import { ParkedPolls } from '../../../runtime/engine/parked-polls.ts';
import { putFlowLimit } from '../../../runtime/store/flow-limits.ts';
import { fetchAndLock, unlockTask } from '../../../runtime/store/tasks.ts';
import { singleTaskBpmn } from '../../support/bpmn.ts';
import { createTestDatabase, holdLocks, type TestDatabase } from '../../support/db.ts';
import { parkPoll } from '../../support/polls.ts';
import { fetchTasks, start } from '../../support/flows.ts';
import { startTestServer, waitFor } from '../../support/server.ts';

const log = pino({ level: 'silent' });
let db: TestDatabase;
let engine: Engine;
let parkedPolls: ParkedPolls;

beforeAll(async () => {
  db = await createTestDatabase();
  engine = createEngine(db.pool, log);
  parkedPolls = new ParkedPolls(db.url, log);
  await parkedPolls.start();
  engine.delivery = parkedPolls;
  // key -> topic; handoff-b shares the topic of handoff
  const topics = {
    handoff: 'handoff',
    'handoff-b': 'handoff',
    'handoff-limited': 'handoff-limited-task',
    'handoff-late': 'handoff-late-task',
    'handoff-camunda': 'handoff-camunda-task',
  };
  for (const [key, topic] of Object.entries(topics)) await deployDefinition(engine, singleTaskBpmn(key, topic));
});
afterAll(async () => {
  await parkedPolls?.stop();
  await db?.drop();
});

const poll = (
  workerId: string,
  topic: string,
  opts: { waitMs?: number; maxTasks?: number; on?: { engine: Engine; parkedPolls: ParkedPolls } } = {},
) => parkPoll(opts.on ?? { engine, parkedPolls }, workerId, topic, opts);

/** Waits until `n` polls are parked on the parkedPolls (their first fetch found nothing). */
async function parked(n = 1, on: ParkedPolls = parkedPolls): Promise<void> {
  await waitFor(async () => (on.parked >= n ? true : undefined), 5000, `${n} parked poll(s)`);
  // subscribed before the first fetch: parked once that fetch has answered, which a claim shows
  await waitFor(async () => ((await isParked(on)) ? true : undefined), 5000, 'the poll to park');
}

// A claim taken and given back at once is how a test sees that a poll is parked and unrung.
async function isParked(on: ParkedPolls): Promise<boolean> {
  for (const topic of ['handoff', 'handoff-late-task']) {
    const claim = on.claimPoll(topic);
    if (claim) {
      claim.release();
      return true;
    }
  }
  return false;
}

async function taskOf(instanceId: string) {
  const { rows } = await db.pool.query('select * from external_tasks where instance_id = $1', [instanceId]);
  return rows[0];
}

/** The instance's events with the transaction that wrote each (xmin). */
async function history(instanceId: string) {
  const { rows } = await db.pool.query<{ kind: string; attempt: number | null; data: Record<string, unknown>; tx: string }>(
    'select kind, attempt, data, xmin::text as tx from events where instance_id = $1 order by seq',
    [instanceId],
  );
  return rows;
}

async function startedId(key: string, businessKey?: string): Promise<string> {
  const r = await startInstance(engine, { definitionKey: key, ...(businessKey ? { businessKey } : {}) });
  if (!r.ok) throw new Error(`start of ${key}: ${r.reason}`);
  return r.instance.id;
}

const holding = (sql: string) => holdLocks(db, sql);

/** The definition row held: a start's insert (its foreign key check) waits until release. */
const blockStartsOf = (key: string) => holding(`select id from definitions where key = '${key}' for update`);

describe('delivery of a new task to a parked poll of this node', () => {
  it("given a parked poll, when an instance starts, then the poll answers its task locked in the start's own transaction, as fetch-and-lock answers it", async () => {
    const p = poll('hand-1', 'handoff');
    await parked();
    const id = await startedId('handoff', 'bk-1');
    const [task] = await p.answer;
    expect(task?.instance_id).toBe(id);
    const row = await taskOf(id);
    expect(row).toMatchObject({ state: 'locked', worker_id: 'hand-1', lock_token: task!.lock_token, attempt: 1 });
    // the poll's lock duration from the statement's clock (created_at is the transaction's, a little earlier)
    const expiresInMs = row.lock_expires_at.getTime() - row.created_at.getTime();
    expect(expiresInMs).toBeGreaterThanOrEqual(45_000);
    expect(expiresInMs).toBeLessThan(46_000);
    const events = await history(id);
    expect(events.map((e) => e.kind)).toEqual(['instance:started', 'step:completed', 'step:activated', 'task:locked']);
    expect(new Set(events.map((e) => e.tx)).size).toBe(1); // one commit: start and lock together
    const locked = events.at(-1)!;
    expect(locked.attempt).toBe(1);
    expect(locked.data).toMatchObject({ workerId: 'hand-1', trafficWaitMs: 0 });
    expect(new Date(locked.data.lockExpiresAt as string).getTime()).toBe(row.lock_expires_at.getTime());
    // frames equal the history, with what the trigger would have framed for task:locked
    const { rows: frames } = await db.pool.query('select kind, data from frames where instance_id = $1 order by seq', [id]);
    expect(frames.map((f) => f.kind)).toEqual(events.map((e) => e.kind));
    expect(frames.at(-1)!.data).toEqual({
      stepId: 'work',
      taskId: row.id,
      attempt: 1,
      workerId: 'hand-1',
      trafficWaitMs: 0,
      lockExpiresAt: locked.data.lockExpiresAt,
    });

    // The same task given back and fetched: the answers have the same fields and values, but the lease.
    expect((await unlockTask(db.pool, { taskId: row.id, workerId: 'hand-1', lockToken: task!.lock_token! })).ok).toBe(true);
    const {
      tasks: [fetched],
    } = await fetchAndLock(db.pool, { workerId: 'hand-1', maxTasks: 1, topics: [{ name: 'handoff', lockDurationMs: 45_000 }] });
    expect(Object.keys(task!).sort()).toEqual(Object.keys(fetched!).sort());
    const lease = (v: ReturnType<typeof lockedTaskView>) => ({ ...v, lockToken: 'x', lockExpiresAt: 'x', attempt: 0 });
    expect(lease(lockedTaskView(task!, 3))).toEqual(lease(lockedTaskView(fetched!, 3)));
    expect(lockedTaskView(task!, 3).businessKey).toBe('bk-1');
  });

  it("given a parked poll, when a start loses its guard (business key taken), then the poll stays parked and takes the next start's task", async () => {
    await startedId('handoff', 'taken');
    await fetchAndLock(db.pool, { workerId: 'other', maxTasks: 10, topics: [{ name: 'handoff', lockDurationMs: 45_000 }] });
    const p = poll('hand-2', 'handoff');
    await parked();
    const again = await startInstance(engine, { definitionKey: 'handoff', businessKey: 'taken' });
    expect(again.ok && again.created).toBe(false);
    await parked(); // claimable again: back to parked, not answered
    expect(p.settled()).toBe(false);
    const id = await startedId('handoff');
    expect((await p.answer).map((t) => t.instance_id)).toEqual([id]);
    const { rows } = await db.pool.query(
      `select count(*)::int as n from external_tasks where state = 'locked' and worker_id = 'hand-2'`,
    );
    expect(rows[0].n).toBe(1);
  });

  it('given a start blocked while holding a poll, when another start rings and the first then loses its guard, then the poll wakes and fetches the other task', async () => {
    const p = poll('hand-3', 'handoff');
    await parked();
    // the business key is taken by a transaction that commits while the first start waits for it: it then loses its guard
    const block =
      await holding(`insert into instances (definition_id, definition_key, definition_version, business_key, variables, revision)
                                 select id, key, version, 'raced', '{}', 0 from definitions where key = 'handoff'`);
    const first = startInstance(engine, { definitionKey: 'handoff', businessKey: 'raced' });
    await waitFor(async () => ((await block.waiting()) ? true : undefined), 5000, 'the first start to wait');
    const second = await startedId('handoff-b'); // same topic, not blocked: the poll is claimed, so its task is rung
    expect((await taskOf(second)).state).toBe('ready');
    expect(p.settled()).toBe(false);
    await block.release();
    const r = await first;
    expect(r.ok && r.created).toBe(false);
    expect((await p.answer).map((t) => t.instance_id)).toEqual([second]);
    expect(new Set((await history(second)).map((e) => e.tx)).size).toBe(2); // fetched: its own commit
  });

  it("given a start blocked while holding a poll, when the poll's caller leaves, then the task is unlocked at once once the start commits, and fetched normally", async () => {
    const p = poll('hand-4', 'handoff');
    await parked();
    const block = await blockStartsOf('handoff');
    const started = startInstance(engine, { definitionKey: 'handoff' });
    await waitFor(async () => ((await block.waiting()) ? true : undefined), 5000, 'the start to wait');
    p.abort.abort();
    await new Promise((r) => setTimeout(r, 50));
    expect(p.settled()).toBe(false); // the claim is waited for
    await block.release();
    const r = await started;
    expect(await p.answer).toEqual([]);
    const id = r.ok ? r.instance.id : '';
    expect((await history(id)).map((e) => e.kind).slice(-2)).toEqual(['task:locked', 'task:unlocked']);
    expect((await taskOf(id)).state).toBe('ready');
    const { tasks } = await fetchAndLock(db.pool, {
      workerId: 'heir',
      maxTasks: 1,
      topics: [{ name: 'handoff', lockDurationMs: 45_000 }],
    });
    expect(tasks.map((t) => [t.instance_id, t.attempt])).toEqual([[id, 2]]);
  });

  it("given a start blocked while holding a poll, when the poll's wait runs out, then the poll still answers the task once the start commits", async () => {
    const p = poll('hand-5', 'handoff', { waitMs: 400 });
    await parked();
    const block = await blockStartsOf('handoff');
    const started = startInstance(engine, { definitionKey: 'handoff' });
    await waitFor(async () => ((await block.waiting()) ? true : undefined), 5000, 'the start to wait');
    await new Promise((r) => setTimeout(r, 600));
    expect(p.settled()).toBe(false);
    await block.release();
    const r = await started;
    const tasks = await p.answer;
    expect(tasks.map((t) => t.instance_id)).toEqual([r.ok ? r.instance.id : '']);
    expect((await taskOf(tasks[0]!.instance_id)).worker_id).toBe('hand-5');
  });

  it('given one parked poll with maxTasks 1, when two starts race, then one task is handed and the other is fetched normally, each locked once', async () => {
    const p = poll('hand-6', 'handoff');
    await parked();
    const ids = await Promise.all([startedId('handoff'), startedId('handoff-b')]);
    const handed = await p.answer;
    expect(handed).toHaveLength(1);
    const other = ids.find((id) => id !== handed[0]!.instance_id)!;
    expect((await taskOf(other)).state).toBe('ready');
    const { tasks } = await fetchAndLock(db.pool, {
      workerId: 'hand-6b',
      maxTasks: 5,
      topics: [{ name: 'handoff', lockDurationMs: 45_000 }],
    });
    expect(tasks.map((t) => t.instance_id)).toEqual([other]);
    const { rows } = await db.pool.query(
      `select instance_id, count(*)::int as n from events where kind = 'task:locked' and instance_id = any($1::uuid[]) group by 1`,
      [ids],
    );
    expect(rows.map((r) => r.n)).toEqual([1, 1]);
  });

  it('given a poll parked on a flow-limited topic, when an instance starts, then no delivery: the ring wakes the poll and the limited fetch locks the task', async () => {
    expect((await putFlowLimit(db.pool, { resource: 'handoff-limited-task', maxConcurrent: 5, maxStartsPerSecond: 0 })).ok).toBe(
      true,
    );
    const p = poll('hand-7', 'handoff-limited-task');
    await waitFor(async () => (parkedPolls.parked > 0 ? true : undefined), 5000, 'the poll to subscribe');
    await new Promise((r) => setTimeout(r, 100)); // no claim can show it parked: it offers none
    expect(parkedPolls.claimPoll('handoff-limited-task')).toBeUndefined();
    const id = await startedId('handoff-limited');
    expect((await p.answer).map((t) => t.instance_id)).toEqual([id]);
    expect(new Set((await history(id)).map((e) => e.tx)).size).toBe(2);
  });

  it('given a poll parked before a flow limit was put on its topic, when an instance starts, then the start does not hand the task over (its guard) and the limited fetch takes it', async () => {
    const p = poll('hand-8', 'handoff-late-task');
    await parked();
    expect((await putFlowLimit(db.pool, { resource: 'handoff-late-task', maxConcurrent: 5, maxStartsPerSecond: 0 })).ok).toBe(
      true,
    );
    const id = await startedId('handoff-late');
    expect((await p.answer).map((t) => t.instance_id)).toEqual([id]);
    expect(new Set((await history(id)).map((e) => e.tx)).size).toBe(2);
  });

  it('given a Camunda long poll parked, when an instance starts, then it is woken by the ring and fetches (Camunda polls are not handed tasks)', async () => {
    const answer = fetchCamundaTasks(engine, parkedPolls, {
      workerId: 'camunda-1',
      maxTasks: 1,
      waitMs: 20_000,
      usePriority: true,
      createTimeOrder: 'asc',
      topics: [{ topicName: 'handoff-camunda-task', lockDuration: 45_000 }],
    });
    await waitFor(async () => (parkedPolls.parked > 0 ? true : undefined), 5000, 'the Camunda poll to subscribe');
    await new Promise((r) => setTimeout(r, 100));
    expect(parkedPolls.claimPoll('handoff-camunda-task')).toBeUndefined();
    const id = await startedId('handoff-camunda');
    const tasks = await answer;
    expect(tasks).toHaveLength(1);
    expect(new Set((await history(id)).map((e) => e.tx)).size).toBe(2);
  });

  it("given two server nodes on one database, when a poll is parked on node A and the start runs on node B, then the notification wakes A's poll and it fetches the task", async () => {
    const engineB = createEngine(db.pool, log);
    const notifierB = new ParkedPolls(db.url, log);
    await notifierB.start();
    engineB.delivery = notifierB;
    try {
      const p = poll('node-a', 'handoff');
      await parked();
      const began = performance.now();
      const r = await startInstance(engineB, { definitionKey: 'handoff' });
      const [task] = await p.answer;
      expect(performance.now() - began).toBeLessThan(SAFETY_RECHECK_MS / 2);
      expect(task?.instance_id).toBe(r.ok ? r.instance.id : '');
      expect(new Set((await history(task!.instance_id)).map((e) => e.tx)).size).toBe(2);
    } finally {
      await notifierB.stop();
    }
  });

  it("given the server, when a native poll is parked over HTTP and an instance is started over HTTP, then the poll's answer is the task, locked in the start's transaction, in fetch-and-lock's JSON shape", async () => {
    const t = await startTestServer();
    try {
      await t.api.post('/api/definitions', { xml: singleTaskBpmn('handoff-http', 'handoff-http') });
      const parkedAnswer = fetchTasks(t.api, 'http-1', ['handoff-http'], { maxTasks: 1, waitMs: 20_000 });
      await waitFor(
        async () => {
          const claim = t.server.parkedPolls.claimPoll('handoff-http');
          claim?.release();
          return claim ? true : undefined;
        },
        5000,
        'the HTTP poll to park',
      );
      const id = await start(t.api, 'handoff-http', { businessKey: 'http-bk', variables: { n: 1 } });
      const [task] = await parkedAnswer;
      expect(task).toMatchObject({
        instanceId: id,
        stepId: 'work',
        topic: 'handoff-http',
        businessKey: 'http-bk',
        attempt: 1,
        variables: { n: 1 },
      });
      const { rows } = await t.db.pool.query('select count(distinct xmin::text)::int as n from events where instance_id = $1', [
        id,
      ]);
      expect(rows[0].n).toBe(1);
      // a fetch of the same task, given back, answers the same fields
      expect(
        (await t.api.post(`/api/external-tasks/${task!.id}/unlock`, { workerId: 'http-1', lockToken: task!.lockToken })).status,
      ).toBe(204);
      const [fetched] = await fetchTasks(t.api, 'http-1', ['handoff-http'], { maxTasks: 1 });
      expect(Object.keys(task!).sort()).toEqual(Object.keys(fetched!).sort());
      expect({ ...task, lockToken: '', lockExpiresAt: '', attempt: 0 }).toEqual({
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
