// A commit that creates ready tasks wakes only as many parked long polls as the tasks need
// (engine/parked-polls.ts): waking every parked poll of the topic cost a fetch statement
// per poll, all but one finding nothing. A woken poll that leaves without fetching wakes
// the others. The parkedPolls listens on another database, so
// no NOTIFY reaches it: only this process's notifications (with their counts) wake the polls.
import { pino } from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createEngine, type Engine } from '../../../runtime/engine/context.ts';
import { deployDefinition } from '../../../runtime/engine/definitions.ts';
import { SAFETY_RECHECK_MS } from '../../../runtime/engine/fetch.ts';
import { startInstance } from '../../../runtime/engine/instances.ts';
import { ParkedPolls } from '../../../runtime/engine/parked-polls.ts';
import { createPool, type Pool } from '../../../runtime/store/db.ts';
import { notifyAfterCommit } from '../../../runtime/store/notifications.ts';
import { fetchAndLock } from '../../../runtime/store/tasks.ts';
import { parallelBpmn, singleTaskBpmn } from '../../support/bpmn.ts';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';
import { parkPoll, type Poll } from '../../support/polls.ts';
import { waitFor } from '../../support/server.ts';

const log = pino({ level: 'silent' });
let db: TestDatabase;
let elsewhere: TestDatabase;
let counting: Pool;
let engine: Engine;
let parkedPolls: ParkedPolls;
/** names of the statements sent through the engine's pool, in order, and of those answered */
const sent: string[] = [];
const answered: string[] = [];
const fetches = () => sent.filter((n) => n.startsWith('fetch_and_lock')).length;
const fetchesAnswered = () => answered.filter((n) => n.startsWith('fetch_and_lock')).length;

beforeAll(async () => {
  [db, elsewhere] = await Promise.all([createTestDatabase(), createTestDatabase()]);
  counting = createPool({ connectionString: db.url });
  const query = counting.query.bind(counting) as (...args: unknown[]) => unknown;
  (counting as { query: unknown }).query = (...args: unknown[]) => {
    const name = (args[0] as { name?: string }).name ?? '?';
    sent.push(name);
    const result = query(...args) as Promise<unknown> | undefined;
    void result?.then(
      () => answered.push(name),
      () => answered.push(name),
    );
    return result;
  };
  // No delivery: every new task rings, none is handed to a parked poll.
  engine = createEngine(counting, log);
  parkedPolls = new ParkedPolls(elsewhere.url, log);
  await parkedPolls.start();
  await deployDefinition(engine, singleTaskBpmn('wake-one', 'wake-one-task'));
  await deployDefinition(engine, parallelBpmn('wake-two', 'wake-two-task', 'wake-two-task'));
  await deployDefinition(engine, singleTaskBpmn('wake-full', 'wake-full-task'));
});
afterAll(async () => {
  await parkedPolls?.stop();
  await counting?.end();
  await Promise.all([db?.drop(), elsewhere?.drop()]);
});
beforeEach(() => {
  sent.length = 0;
  answered.length = 0;
});

/**
 * Parks polls one after the other (the first parked is the oldest); resolves once each has
 * had the answer to its first, empty fetch, and so parked: a poll parks in the microtasks
 * that follow the answer, and waitFor looks again only in a later turn of the event loop.
 */
async function parkAll(topic: string, maxTasks: number[]): Promise<Poll[]> {
  const polls: Poll[] = [];
  for (const [i, n] of maxTasks.entries()) {
    polls.push(parkPoll({ engine, parkedPolls }, `w${i}`, topic, { maxTasks: n }));
    await waitFor(async () => (fetchesAnswered() === i + 1 ? true : undefined), 5000, `poll ${i}'s first fetch to answer`);
  }
  return polls;
}

/** Which polls answered within ms, and how many fetches ran; the rest are aborted (they answer []). */
async function outcome(
  polls: Poll[],
  expected: number,
  ms = SAFETY_RECHECK_MS / 2,
): Promise<{ answered: number[]; fetches: number }> {
  await waitFor(
    async () => (polls.filter((p) => p.settled()).length >= expected ? true : undefined),
    ms,
    `${expected} polls to answer`,
  );
  // a poll woken for nothing would fetch at once: give any such fetch the time to show
  await new Promise((r) => setTimeout(r, 100));
  const result = { answered: polls.flatMap((p, i) => (p.settled() ? [i] : [])), fetches: fetches() - polls.length };
  for (const p of polls) p.abort.abort();
  await Promise.all(polls.map((p) => p.answer));
  return result;
}

describe('a notification wakes as many parked polls as its tasks need', () => {
  it('given four parked polls taking one task each, when a start creates one task, then only the oldest poll wakes and fetches, and it gets the task', async () => {
    const polls = await parkAll('wake-one-task', [1, 1, 1, 1]);
    const started = await startInstance(engine, { definitionKey: 'wake-one' });
    const { answered, fetches: woken } = await outcome(polls, 1);
    expect(answered).toEqual([0]);
    expect(woken).toBe(1);
    const [task] = await polls[0]!.answer;
    expect(started.ok && task?.instance_id).toBe(started.ok ? started.instance.id : 'started');
  });

  it('given three parked polls taking one task each, when one transition creates two tasks of the topic, then the two oldest polls wake and each gets one', async () => {
    const polls = await parkAll('wake-two-task', [1, 1, 1]);
    await startInstance(engine, { definitionKey: 'wake-two' });
    const { answered, fetches: woken } = await outcome(polls, 2);
    expect(answered).toEqual([0, 1]);
    expect(woken).toBe(2);
    const got = (await Promise.all(polls.map((p) => p.answer))).map((tasks) => tasks.length);
    expect(got).toEqual([1, 1, 0]);
  });

  it('given a parked poll taking five tasks and one taking one, when one transition creates two tasks, then only the first wakes and takes both', async () => {
    const polls = await parkAll('wake-two-task', [5, 1]);
    await startInstance(engine, { definitionKey: 'wake-two' });
    const { answered, fetches: woken } = await outcome(polls, 1);
    expect(answered).toEqual([0]);
    expect(woken).toBe(1);
    expect((await polls[0]!.answer).length).toBe(2);
  });

  it("given a notification without a count (another node's, relayed), then every parked poll of the topic wakes", async () => {
    const polls = await parkAll('wake-one-task', [1, 1, 1]);
    notifyAfterCommit(counting, { topics: ['wake-one-task'] });
    await waitFor(async () => (fetches() >= 6 ? true : undefined), SAFETY_RECHECK_MS / 2, 'every poll to fetch again');
    const { fetches: woken } = await outcome(polls, 0);
    expect(woken).toBe(3);
  });

  it("given two parked polls and a ready task that rang for one, when the woken poll's caller leaves before it fetches, then the other poll wakes and takes the task well before the re-check", async () => {
    // A ready task without its notification: locked by a holder, then given back by SQL.
    await startInstance(engine, { definitionKey: 'wake-full' });
    const held = await fetchAndLock(db.pool, {
      workerId: 'holder',
      maxTasks: 1,
      topics: [{ name: 'wake-full-task', lockDurationMs: 60_000 }],
    });
    expect(held.tasks).toHaveLength(1);
    const polls = await parkAll('wake-full-task', [1, 1]);
    await db.pool.query(
      `update external_tasks set state = 'ready', worker_id = null, lock_token = null, lock_expires_at = null where worker_id = 'holder'`,
    );
    const began = performance.now();
    notifyAfterCommit(counting, { topics: ['wake-full-task'], counts: [1] }); // wakes the oldest poll…
    polls[0]!.abort.abort(); // …whose caller leaves before its fetch runs
    const [first, second] = await Promise.all(polls.map((p) => p.answer));
    expect(performance.now() - began).toBeLessThan(SAFETY_RECHECK_MS / 2);
    expect(first).toEqual([]);
    expect(second!.map((t) => t.id)).toEqual([held.tasks[0]!.id]);
  });
});
