// The statements that cancel an instance's waiting timers must find them through the
// instance, whatever the table's statistics say. When `timers` was last analyzed while no
// timer waited (every one fired) and a burst of timers was created since, PostgreSQL
// estimated one waiting timer in all; both partial indexes looked equally cheap and it
// walked the due-time index, reading every waiting timer to find the instance's one. In
// the bench that was 7-40 ms per firing until autovacuum analyzed the table again, the
// late first bursts of a timer round (docs/PERFORMANCE.md, "Session 9").
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cancelOpenWork } from '../../runtime/store/instances.ts';
import { OPEN_TIMER } from '../../runtime/store/waits.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';

let db: TestDatabase;
const FIRED = 3000;
const WAITING = 3000;

beforeAll(async () => {
  db = await createTestDatabase();
  const c = await db.pool.connect();
  try {
    // Rows only, no engine: the foreign keys' triggers are off for the load.
    await c.query('set session_replication_role = replica');
    await c.query(`insert into instances (id, definition_id, definition_key, definition_version, status, revision)
                   select gen_random_uuid(), gen_random_uuid(), 'plans', 1, 'running', 1 from generate_series(1, $1)`, [FIRED + WAITING]);
    await c.query(`insert into timers (instance_id, step_id, due_at, state, fired_at)
                   select id, 'wait', now() - interval '1 hour', 'fired', now() from (select id from instances order by id limit $1) i`, [FIRED]);
    await c.query('analyze timers');
    await c.query(`insert into timers (instance_id, step_id, due_at)
                   select id, 'wait', now() + interval '1 minute' from (select id from instances order by id offset $1) i`, [FIRED]);
    await c.query('set session_replication_role = origin');
  } finally {
    c.release();
  }
});
afterAll(async () => {
  await db?.drop();
});

async function waitingInstance(): Promise<string> {
  const { rows } = await db.pool.query<{ instance_id: string }>(`select instance_id from timers where state = 'waiting' order by instance_id desc limit 1`);
  return rows[0]!.instance_id;
}

/** The plan's scan nodes, as "Node Type on index" strings. */
function scans(plan: { Plan: PlanNode }): string[] {
  const out: string[] = [];
  const walk = (n: PlanNode) => {
    if (n['Relation Name'] === 'timers' && n['Node Type'].endsWith('Scan')) out.push(`${n['Node Type']}${n['Index Name'] ? ` on ${n['Index Name']}` : ''}`);
    (n.Plans ?? []).forEach(walk);
  };
  walk(plan.Plan);
  return out;
}
interface PlanNode { 'Node Type': string; 'Relation Name'?: string; 'Index Name'?: string; Plans?: PlanNode[] }

describe('timer look-ups by instance with stale statistics', () => {
  it('given timers analyzed when none waited and then a burst of waiting ones, then a transition\'s cancel of its wait scans timers_instance_idx', async () => {
    const id = await waitingInstance();
    const { rows } = await db.pool.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
      `explain (format json) update timers set state = 'canceled' where instance_id = $1::uuid and step_id = any($2::text[]) and ${OPEN_TIMER}`, [id, ['wait']]);
    expect(scans(rows[0]!['QUERY PLAN'][0])).toEqual(['Index Scan on timers_instance_idx']);
  });

  it('given the same table, then cancelOpenWork (cancel, terminate) scans timers_instance_idx and cancels the timer', async () => {
    const id = await waitingInstance();
    const c = await db.pool.connect();
    try {
      await c.query('begin');
      await cancelOpenWork(c, id); // prepares the named statement on this connection
      const { rows } = await c.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`explain (format json) execute cancel_open_work('${id}', null)`); // an id read back from the table
      expect(scans(rows[0]!['QUERY PLAN'][0])).toEqual(['Index Scan on timers_instance_idx']);
      const { rows: left } = await c.query(`select state from timers where instance_id = $1`, [id]);
      expect(left).toEqual([{ state: 'canceled' }]);
      await c.query('rollback');
    } finally {
      c.release();
    }
  });
});
