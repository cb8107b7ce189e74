// A fetch-and-lock reads each topic's first maxTasks ready tasks from its ready index, not
// every waiting task of its topics: with thousands waiting, picking across the topics at
// once read and sorted them all (12.8 ms per fetch in the three-step bench, 35 ms with
// 100,000 waiting; docs/PERFORMANCE.md "Session 12"). The rows the per-topic pick locks
// and does not take are free again at its commit, and the fetch rings their topics: a poll
// that found them locked in the meantime and parked fetches again at once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, type Pool } from '../../../runtime/store/db.ts';
import { fetchAndLockCamunda } from '../../../runtime/camunda/store/fetch.ts';
import { fetchAndLock } from '../../../runtime/store/tasks.ts';
import { singleTaskBpmn } from '../../support/bpmn.ts';
import { deploy, fetchTasks, start } from '../../support/flows.ts';
import { startTestServer, waitFor, type TestServer } from '../../support/server.ts';
import type { PlanNode } from '../../support/plans.ts';

let t: TestServer;
/** a pool that keeps the last statement it was given */
let capturing: Pool;
let last: { text: string; values: unknown[] } | undefined;
const TOPICS = ['backlog-1', 'backlog-2', 'backlog-3'];
const WAITING = 3000;

beforeAll(async () => {
  t = await startTestServer();
  capturing = createPool({ connectionString: t.db.url });
  const query = capturing.query.bind(capturing) as (...args: unknown[]) => unknown;
  (capturing as { query: unknown }).query = (...args: unknown[]) => {
    last = args[0] as { text: string; values: unknown[] };
    return query(...args);
  };
  const c = await t.db.pool.connect();
  try {
    // Rows only, no engine: the foreign keys' triggers are off for the load. Priorities 0-3,
    // creation times all different, the topics interleaved.
    await c.query('set session_replication_role = replica');
    await c.query(
      `insert into instances (id, definition_id, definition_key, definition_version, status, revision)
                   select gen_random_uuid(), gen_random_uuid(), 'backlog', 1, 'running', 1 from generate_series(1, $1)`,
      [WAITING],
    );
    await c.query(
      `insert into external_tasks (instance_id, step_id, generation, topic, priority, retries, retries_left, idempotency_key, created_at)
                   select id, 'work', 1, ($1::text[])[1 + g % 3], (g * 7) % 4, 3, 3, 'backlog/' || g, now() - interval '1 hour' + g * interval '1 ms'
                     from (select id, row_number() over (order by id) as g from instances where definition_key = 'backlog') i`,
      [TOPICS],
    );
    await c.query('set session_replication_role = origin');
    await c.query('analyze external_tasks');
  } finally {
    c.release();
  }
});
afterAll(async () => {
  await capturing?.end();
  await t?.close();
});

/** The scans of external_tasks in an analyzed plan, other than look-ups by id, with the rows each read. */
function readsOfWaitingTasks(plan: PlanNode): { scan: string; rows: number }[] {
  const out: { scan: string; rows: number }[] = [];
  const walk = (n: PlanNode) => {
    if (n['Relation Name'] === 'external_tasks' && n['Node Type'].endsWith('Scan') && n['Index Name'] !== 'external_tasks_pkey') {
      out.push({
        scan: `${n['Node Type']}${n['Index Name'] ? ` on ${n['Index Name']}` : ''}`,
        rows: (n['Actual Rows'] ?? 0) * (n['Actual Loops'] ?? 0),
      });
    }
    (n.Plans ?? []).forEach(walk);
  };
  walk(plan);
  return out;
}

/** Runs the captured fetch again (rolled back) under EXPLAIN ANALYZE: it read waiting tasks only through the ready index, at most `max` of them. */
async function expectReadsPerTopic(statement: { text: string; values: unknown[] }, max: number): Promise<void> {
  expect(statement.text).toContain('cand as');
  const c = await t.db.pool.connect();
  try {
    await c.query('begin');
    const { rows } = await c.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
      `explain (analyze, format json) ${statement.text}`,
      statement.values,
    );
    await c.query('rollback');
    const reads = readsOfWaitingTasks(rows[0]!['QUERY PLAN'][0].Plan);
    expect(reads.length).toBeGreaterThan(0);
    for (const r of reads) expect(r.scan).toMatch(/^Index Scan on external_tasks_ready_idx$/);
    expect(reads.reduce((n, r) => n + r.rows, 0)).toBeLessThanOrEqual(max);
  } finally {
    c.release();
  }
}

describe('fetch-and-lock with a backlog of ready tasks', () => {
  it(`given ${WAITING} ready tasks over three topics, when a worker fetches 5 of the three, then the statement reads at most 5 per topic from the ready index`, async () => {
    const topics = TOPICS.map((name) => ({ name, lockDurationMs: 30_000 }));
    await fetchAndLock(capturing, { workerId: 'capture', maxTasks: 5, topics });
    // The pick across the topics read all 3,000 (a bitmap scan, then a sort; the Camunda one a sequential scan).
    await expectReadsPerTopic(last!, 15);
  });

  it('given the backlog, when a Camunda worker fetches 5 of the three topics by priority, then it reads at most 5 per topic and gets the first 5 of all three', async () => {
    const { rows: expected } = await t.db.pool.query<{ id: string }>(
      `select id from external_tasks where state = 'ready' and topic = any($1::text[]) order by priority desc, created_at limit 5`,
      [TOPICS],
    );
    const { tasks } = await fetchAndLockCamunda(capturing, {
      workerId: 'camunda',
      maxTasks: 5,
      usePriority: true,
      createTimeOrder: 'asc',
      topics: TOPICS.map((topicName) => ({ topicName, lockDuration: 30_000 })),
    });
    expect(tasks.map((x) => x.id)).toEqual(expected.map((r) => r.id));
    expect(tasks.every((x) => !('released' in x))).toBe(true);
    // The pick across the topics read all 3,000 (a bitmap scan, then a sort; the Camunda one a sequential scan).
    await expectReadsPerTopic(last!, 15);
  });

  it('given tasks of three topics with mixed priorities, when a worker fetches 5 of them, then it gets the first 5 of all three by priority then age, and the other rows it read stay ready and unlocked', async () => {
    const order = `select id from external_tasks where state = 'ready' and topic = any($1::text[]) order by priority desc, created_at`;
    const { rows: expected } = await t.db.pool.query<{ id: string }>(`${order} limit 5`, [TOPICS]);
    const { tasks } = await fetchAndLock(t.db.pool, {
      workerId: 'mixed',
      maxTasks: 5,
      topics: TOPICS.map((name) => ({ name, lockDurationMs: 30_000 })),
    });
    expect(tasks.map((x) => x.id)).toEqual(expected.map((r) => r.id));
    const {
      rows: [counts],
    } = await t.db.pool.query<{ locked: number; ready_with_holder: number; ready: number }>(
      `select count(*) filter (where state = 'locked')::int as locked,
              count(*) filter (where state = 'ready' and (worker_id is not null or lock_token is not null))::int as ready_with_holder,
              count(*) filter (where state = 'ready')::int as ready
         from external_tasks where topic = any($1::text[])`,
      [TOPICS],
    );
    expect(counts).toEqual({ locked: 5 + 5 + 5, ready_with_holder: 0, ready: WAITING - 15 }); // 10 more locked by the tests before
    // Nothing the fetch read and left is still locked: a fetch of one topic takes that topic's next 5 at once.
    const { rows: nextOfTopic } = await t.db.pool.query<{ id: string }>(`${order.replace('any($1::text[])', '$1')} limit 5`, [
      TOPICS[1],
    ]);
    const { tasks: again } = await fetchAndLock(t.db.pool, {
      workerId: 'mixed',
      maxTasks: 5,
      topics: [{ name: TOPICS[1]!, lockDurationMs: 30_000 }],
    });
    expect(again.map((x) => x.id)).toEqual(nextOfTopic.map((r) => r.id));
  });

  it('given a fetch above the per-topic budget (three topics × 100 tasks), then it picks across the topics at once, in the same order, locking only what it takes', async () => {
    const { rows: expected } = await t.db.pool.query<{ id: string }>(
      `select id from external_tasks where state = 'ready' and topic = any($1::text[]) order by priority desc, created_at limit 100`,
      [TOPICS],
    );
    const { tasks } = await fetchAndLock(capturing, {
      workerId: 'wide',
      maxTasks: 100,
      topics: TOPICS.map((name) => ({ name, lockDurationMs: 30_000 })),
    });
    expect(last!.text).not.toContain('cand as');
    expect(tasks.map((x) => x.id)).toEqual(expected.map((r) => r.id));
    const {
      rows: [held],
    } = await t.db.pool.query<{ n: number }>(`select count(*)::int as n from external_tasks where worker_id = 'wide'`);
    expect(held!.n).toBe(100);
  });

  it('given a fetch of two topics holding the task of the second it will not take, when a poll of that topic found it locked and parked, then the poll gets it as soon as the fetch commits (rung, not the 2 s re-check)', async () => {
    await deploy(t.api, singleTaskBpmn('released-a', 'released-a'));
    await deploy(t.api, singleTaskBpmn('released-b', 'released-b'));
    const a = await start(t.api, 'released-a');
    const b = await start(t.api, 'released-b');
    // The fetch (one task, the older: a's) locks both topics' first tasks, then waits for a's frame head, held here.
    const holder = await t.db.pool.connect();
    try {
      await holder.query('begin');
      await holder.query('select 1 from frame_heads where instance_id = $1 for update', [a]);
      const fetching = fetchTasks(t.api, 'both', ['released-a', 'released-b'], { maxTasks: 1 });
      await waitFor(
        async () => {
          const { rows } = await t.db.pool.query(
            `select 1 from pg_stat_activity where wait_event_type = 'Lock' and query like '%cand as%'`,
          );
          return rows.length > 0 ? true : undefined;
        },
        5000,
        'the two-topic fetch to wait for the frame head',
      );
      const parked = fetchTasks(t.api, 'b-only', ['released-b'], { waitMs: 10_000 });
      await waitFor(
        async () => (t.server.parkedPolls.parked > 0 ? true : undefined),
        5000,
        'the poll of b to find its task locked and park',
      );
      const releasedAt = Date.now();
      await holder.query('commit');
      expect((await fetching).map((x) => x.instanceId)).toEqual([a]);
      const got = await parked;
      expect(Date.now() - releasedAt).toBeLessThan(1000);
      expect(got.map((x) => x.instanceId)).toEqual([b]);
    } finally {
      await holder.query('rollback').catch(() => undefined);
      holder.release();
    }
  });
});
