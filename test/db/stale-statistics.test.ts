// Look-ups of one instance's live timers and incidents must go through the instance,
// whatever the table's statistics say. When a table was last analyzed while no row was
// live (every timer fired, every incident resolved) and a burst of live rows came since,
// PostgreSQL counted one live row, found the partial index over live rows (due timers, open
// incidents) as cheap as the instance's, and read every live row to find the instance's.
// In the bench that was 7-40 ms per timer firing until autovacuum analyzed `timers` again,
// the late first bursts of a timer round (docs/PERFORMANCE.md, "Session 9").
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cancelOpenWork } from '../../runtime/store/instances.ts';
import { OPEN_INCIDENT_SQL, OPEN_TIMER_SQL } from '../../runtime/store/live-rows.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';

let db: TestDatabase;
/** rows ended before the analyze, and live rows created after it */
const ENDED = 3000;
const LIVE = 3000;

beforeAll(async () => {
  db = await createTestDatabase();
  const c = await db.pool.connect();
  try {
    // Rows only, no engine: the foreign keys' triggers are off for the load.
    await c.query('set session_replication_role = replica');
    await c.query(`insert into instances (id, definition_id, definition_key, definition_version, status, revision)
                   select gen_random_uuid(), gen_random_uuid(), 'stale', 1, 'running', 1 from generate_series(1, $1)`, [ENDED + LIVE]);
    await c.query(`create temp table halves as select id, row_number() over (order by id) <= $1 as ended from instances`, [ENDED]);
    await c.query(`insert into timers (instance_id, step_id, due_at, state, fired_at)
                   select id, 'wait', now() - interval '1 hour', 'fired', now() from halves where ended`);
    await c.query(`insert into incidents (instance_id, step_id, generation, kind, message, status, resolved_at)
                   select id, 'work', 1, 'task_failed', 'boom', 'resolved', now() from halves where ended`);
    await c.query('analyze timers; analyze incidents');
    await c.query(`insert into timers (instance_id, step_id, due_at) select id, 'wait', now() + interval '1 minute' from halves where not ended`);
    await c.query(`insert into incidents (instance_id, step_id, generation, kind, message) select id, 'work', 1, 'task_failed', 'boom' from halves where not ended`);
    await c.query('set session_replication_role = origin');
  } finally {
    c.release();
  }
});
afterAll(async () => {
  await db?.drop();
});

async function liveInstance(): Promise<string> {
  const { rows } = await db.pool.query<{ instance_id: string }>(`select instance_id from timers where state = 'waiting' order by instance_id desc limit 1`);
  return rows[0]!.instance_id;
}

interface PlanNode { 'Node Type': string; 'Relation Name'?: string; 'Index Name'?: string; Plans?: PlanNode[] }
type Explained = { 'QUERY PLAN': [{ Plan: PlanNode }] };

/** The scans of `table` in a plan, as "Node Type on index" strings. */
function scans(rows: Explained[], table: string): string[] {
  const out: string[] = [];
  const walk = (n: PlanNode) => {
    if (n['Relation Name'] === table && n['Node Type'].endsWith('Scan')) out.push(`${n['Node Type']}${n['Index Name'] ? ` on ${n['Index Name']}` : ''}`);
    (n.Plans ?? []).forEach(walk);
  };
  walk(rows[0]!['QUERY PLAN'][0].Plan);
  return out;
}

describe('look-ups by instance with statistics from when no row was live', () => {
  it('given timers analyzed when none waited and then a burst of waiting ones, then a transition\'s cancel of its wait scans timers_instance_idx', async () => {
    const { rows } = await db.pool.query<Explained>(
      `explain (format json) update timers set state = 'canceled' where instance_id = $1::uuid and step_id = any($2::text[]) and ${OPEN_TIMER_SQL}`,
      [await liveInstance(), ['wait']]);
    expect(scans(rows, 'timers')).toEqual(['Index Scan on timers_instance_idx']);
  });

  it('given incidents analyzed when none was open and then a burst of open ones, then a transition\'s resolve of its step\'s incidents scans incidents_instance_idx', async () => {
    const { rows } = await db.pool.query<Explained>(
      `explain (format json) update incidents set status = 'resolved' where instance_id = $1::uuid and step_id = any($2::text[]) and ${OPEN_INCIDENT_SQL}`,
      [await liveInstance(), ['work']]);
    expect(scans(rows, 'incidents')).toEqual(['Index Scan on incidents_instance_idx']);
  });

  it('given both tables, then cancelOpenWork (cancel, terminate) scans the instance indexes and ends the timer and the incident', async () => {
    const id = await liveInstance();
    const c = await db.pool.connect();
    try {
      await c.query('begin');
      await cancelOpenWork(c, id); // prepares the named statement on this connection
      const { rows } = await c.query<Explained>(`explain (format json) execute cancel_open_work('${id}', null)`); // an id read back from the table
      expect(scans(rows, 'timers')).toEqual(['Index Scan on timers_instance_idx']);
      expect(scans(rows, 'incidents')).toEqual(['Index Scan on incidents_instance_idx']);
      const { rows: [left] } = await c.query(`select (select state from timers where instance_id = $1) as timer, (select status from incidents where instance_id = $1) as incident`, [id]);
      expect(left).toEqual({ timer: 'canceled', incident: 'resolved' });
      await c.query('rollback');
    } finally {
      c.release();
    }
  });
});
