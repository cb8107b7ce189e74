// Look-ups of one instance's live timers and incidents must go through the instance,
// whatever the table's statistics say. When a table was last analyzed while no row was
// live (every timer fired, every incident resolved) and a burst of live rows came since,
// PostgreSQL counted one live row, found the partial index over live rows (due timers, open
// incidents) as cheap as the instance's, and read every live row to find the instance's.
// In the bench that was 7-40 ms per timer firing until autovacuum analyzed `timers` again,
// the late first bursts of a timer round (docs/PERFORMANCE.md, "Session 9"). The guards of a
// held task (by id, `state = 'locked'`) had the same trap with the partial indexes of locked
// tasks (by topic, by expiry): every complete read every locked task ("Session 11").
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { emptyEffects } from '../../../runtime/model/effects.ts';
import { TaskState } from '../../../runtime/model/vocabulary.ts';
import { transitionStatement, type TransitionWrite } from '../../../runtime/store/transition-statement.ts';
import { currentHolder, lockTokenOf } from '../../../runtime/camunda/store/tasks.ts';
import type { Queryable } from '../../../runtime/store/db.ts';
import { cancelOpenWork } from '../../../runtime/store/instances.ts';
import { HELD_TASK_SQL, OPEN_INCIDENT_SQL, OPEN_TIMER_SQL, READY_TASK_SQL } from '../../../runtime/store/open-states.ts';
import { recordProgress } from '../../../runtime/store/progress.ts';
import { extendLock, failTask, markTaskDone, markTaskErrored, unlockTask } from '../../../runtime/store/tasks.ts';
import { lockAndMarkDueTimers, markTimerFired } from '../../../runtime/store/waits.ts';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';
import type { PlanNode } from '../../support/plans.ts';

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
    await c.query(
      `insert into instances (id, definition_id, definition_key, definition_version, status, revision)
                   select gen_random_uuid(), gen_random_uuid(), 'stale', 1, 'running', 1 from generate_series(1, $1)`,
      [ENDED + LIVE],
    );
    await c.query(`create temp table halves as select id, row_number() over (order by id) <= $1 as ended from instances`, [
      ENDED,
    ]);
    await c.query(`insert into timers (instance_id, step_id, due_at, state, fired_at)
                   select id, 'wait', now() - interval '1 hour', 'fired', now() from halves where ended`);
    await c.query(`insert into incidents (instance_id, step_id, generation, kind, message, status, resolved_at)
                   select id, 'work', 1, 'task_failed', 'boom', 'resolved', now() from halves where ended`);
    await c.query(`insert into external_tasks (instance_id, step_id, generation, topic, retries, retries_left, idempotency_key, state, ended_at)
                   select id, 'work', 1, 'stale', 3, 3, id::text, 'done', now() from halves where ended`);
    await c.query('analyze timers; analyze incidents; analyze external_tasks');
    await c.query(
      `insert into timers (instance_id, step_id, due_at) select id, 'wait', now() + interval '1 minute' from halves where not ended`,
    );
    await c.query(
      `insert into incidents (instance_id, step_id, generation, kind, message) select id, 'work', 1, 'task_failed', 'boom' from halves where not ended`,
    );
    await c.query(`insert into external_tasks (instance_id, step_id, generation, topic, retries, retries_left, idempotency_key, state, worker_id, lock_token, lock_expires_at)
                   select id, 'work', 1, 'stale', 3, 3, id::text, 'locked', 'w', gen_random_uuid(), now() + interval '1 hour' from halves where not ended`);
    await c.query('set session_replication_role = origin');
  } finally {
    c.release();
  }
});
afterAll(async () => {
  await db?.drop();
});

async function liveInstance(): Promise<string> {
  const { rows } = await db.pool.query<{ instance_id: string }>(
    `select instance_id from timers where state = 'waiting' order by instance_id desc limit 1`,
  );
  return rows[0]!.instance_id;
}

type Explained = { 'QUERY PLAN': [{ Plan: PlanNode }] };

/** Each search of an index named `prefix…` in a plan: the index and its condition ('' for a walk through all of it). */
function indexSearches(rows: Explained[], prefix: string): { index: string; cond: string }[] {
  const out: { index: string; cond: string }[] = [];
  const walk = (n: PlanNode) => {
    if (n['Index Name']?.startsWith(prefix)) out.push({ index: n['Index Name'], cond: n['Index Cond'] ?? '' });
    (n.Plans ?? []).forEach(walk);
  };
  walk(rows[0]!['QUERY PLAN'][0].Plan);
  return out;
}

/** Runs `prepare` (which prepares `name` on the connection) in a transaction rolled back, then explains `execute name(literals)`. */
async function explainPrepared(
  name: string,
  literals: string,
  prepare: (c: Queryable) => Promise<unknown>,
): Promise<Explained[]> {
  const c = await db.pool.connect();
  try {
    await c.query('begin');
    await prepare(c);
    const { rows } = await c.query<Explained>(`explain (format json) execute ${name}(${literals})`);
    await c.query('rollback');
    return rows;
  } finally {
    c.release();
  }
}

/** The scans of `table` in a plan, as "Node Type on index" strings. */
function scans(rows: Explained[], table: string): string[] {
  const out: string[] = [];
  const walk = (n: PlanNode) => {
    if (n['Relation Name'] === table && n['Node Type'].endsWith('Scan'))
      out.push(`${n['Node Type']}${n['Index Name'] ? ` on ${n['Index Name']}` : ''}`);
    (n.Plans ?? []).forEach(walk);
  };
  walk(rows[0]!['QUERY PLAN'][0].Plan);
  return out;
}

describe('look-ups by instance with statistics from when no row was live', () => {
  it("given timers analyzed when none waited and then a burst of waiting ones, then a transition's cancel of its wait scans timers_instance_idx", async () => {
    const { rows } = await db.pool.query<Explained>(
      `explain (format json) update timers set state = 'canceled' where instance_id = $1::uuid and step_id = any($2::text[]) and ${OPEN_TIMER_SQL}`,
      [await liveInstance(), ['wait']],
    );
    expect(scans(rows, 'timers')).toEqual(['Index Scan on timers_instance_idx']);
  });

  it("given incidents analyzed when none was open and then a burst of open ones, then a transition's resolve of its step's incidents scans incidents_instance_idx", async () => {
    const { rows } = await db.pool.query<Explained>(
      `explain (format json) update incidents set status = 'resolved' where instance_id = $1::uuid and step_id = any($2::text[]) and ${OPEN_INCIDENT_SQL}`,
      [await liveInstance(), ['work']],
    );
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
      const {
        rows: [left],
      } = await c.query(
        `select (select state from timers where instance_id = $1) as timer, (select status from incidents where instance_id = $1) as incident`,
        [id],
      );
      expect(left).toEqual({ timer: 'canceled', incident: 'resolved' });
      await c.query('rollback');
    } finally {
      c.release();
    }
  });
});

describe('firings of due timers with statistics from when none waited', () => {
  // `state = 'waiting' and due_at <= now()` matched timers_due_idx, which such statistics
  // make look empty: every batch of firings read every due timer (docs/PERFORMANCE.md,
  // "Session 16"); written as the states a waiting timer is not, the guard matched
  // timers_instance_idx instead and read all of that. The plans are read with the timers
  // not yet due, so nothing fires.
  const timerSearches = async (name: string, literals: string, prepare: (c: Queryable) => Promise<unknown>) =>
    indexSearches(await explainPrepared(name, literals, prepare), 'timers_');
  /** A search by the timer's id or its instance's, not a walk through a whole index. */
  const byIdOrInstance = {
    index: expect.stringMatching(/^timers_(pkey|instance_idx)$/),
    cond: expect.stringMatching(/\b(id|instance_id) = /),
  };

  it("given 3,000 timers waiting since the analyze, then a batch's lock and mark searches timers by id or by instance", async () => {
    const { rows } = await db.pool.query<{ id: string; instance_id: string }>(
      `select id, instance_id from timers where state = 'waiting' order by id limit 21`,
    );
    const searches = await timerSearches(
      'lock_and_mark_due_timers',
      `'{${rows.map((r) => r.instance_id).join(',')}}', '{${rows.map((r) => r.id).join(',')}}'`,
      (c) => lockAndMarkDueTimers(c, rows),
    );
    expect(searches).toEqual([byIdOrInstance]);
  });

  it("given the same, then a batch of firings written together cancels their instances' waits through timers_instance_idx by instance", async () => {
    const { rows } = await db.pool.query<{ instance_id: string }>(
      `select instance_id from timers where state = 'waiting' order by id limit 21`,
    );
    const list: TransitionWrite[] = rows.map((r) => {
      const fx = emptyEffects();
      fx.endedWaits.push('wait');
      fx.events.push({ kind: 'step:completed', stepId: 'wait' });
      return {
        instance: {
          id: r.instance_id,
          definition_id: randomUUID(),
          definition_key: 'stale',
          definition_version: 1,
          business_key: null,
          status: 'running',
          variables: {},
          generation: 1,
          revision: 1,
          created_at: new Date(),
          updated_at: new Date(),
          ended_at: null,
        },
        effects: fx,
        status: 'completed',
        variables: {},
        incidentTaskIds: [],
        framesAtEnd: true,
      };
    });
    const st = transitionStatement(list, { alone: false });
    const { rows: plan } = await db.pool.query<Explained>({ text: `explain (format json) ${st.text}`, values: st.values });
    expect(indexSearches(plan, 'timers_')).toEqual([
      { index: 'timers_instance_idx', cond: expect.stringMatching(/\binstance_id = /) },
    ]);
  });

  it("given the same, then one timer's firing (markTimerFired) searches it by id or by instance", async () => {
    const {
      rows: [t],
    } = await db.pool.query<{ id: string; instance_id: string }>(
      `select id, instance_id from timers where state = 'waiting' order by id desc limit 1`,
    );
    expect(
      await timerSearches('mark_timer_fired', `'${t!.id}', 1, '${t!.instance_id}'`, (c) =>
        markTimerFired(c, t!.id, t!.instance_id, 1),
      ),
    ).toEqual([byIdOrInstance]);
  });
});

describe('guards of a held task with statistics from when few tasks were locked', () => {
  async function heldTask(): Promise<{ id: string; lockToken: string; instanceId: string }> {
    const { rows } = await db.pool.query<{ id: string; lock_token: string; instance_id: string }>(
      `select id, lock_token, instance_id from external_tasks where state = 'locked' order by id desc limit 1`,
    );
    return { id: rows[0]!.id, lockToken: rows[0]!.lock_token, instanceId: rows[0]!.instance_id };
  }

  /** The scans of external_tasks in the plan of `execute name(args)` (explainPrepared). */
  async function planOf(name: string, args: unknown[], prepare: (c: Queryable) => Promise<unknown>): Promise<string[]> {
    const literals = args.map((a) => (typeof a === 'number' || a === null ? String(a) : `'${String(a)}'`)).join(', ');
    return scans(await explainPrepared(name, literals, prepare), 'external_tasks');
  }

  it('given the states the table allows, then HELD_TASK_SQL and READY_TASK_SQL name every state but theirs (a new state must be added to them)', async () => {
    const {
      rows: [check],
    } = await db.pool.query<{ def: string }>(
      `select pg_get_constraintdef(oid) as def from pg_constraint
        where conrelid = 'external_tasks'::regclass and contype = 'c' and pg_get_constraintdef(oid) like '%''locked''%'`,
    );
    const allowed = [...check!.def.matchAll(/'(\w+)'::text/g)].map((m) => m[1]).sort();
    expect(allowed).toEqual(Object.values(TaskState).sort());
    const named = (sql: string) => [...sql.matchAll(/'(\w+)'/g)].map((m) => m[1]);
    expect([...named(HELD_TASK_SQL), 'locked'].sort()).toEqual(allowed);
    expect([...named(READY_TASK_SQL), 'ready'].sort()).toEqual(allowed);
  });

  it('given 3,000 tasks locked since the analyze, then every guard by task id reads the primary key', async () => {
    const t = await heldTask();
    const other = randomUUID(); // a token that misses: the guard's statement runs and changes nothing
    const holder = { taskId: t.id, workerId: 'w', lockToken: other };
    const pk = ['Index Scan on external_tasks_pkey'];
    expect(await planOf('mark_task_done', [t.id, 'w', other, 1], (c) => markTaskDone(c, { ...holder, generation: 1 }))).toEqual(
      pk,
    );
    expect(
      await planOf('fail_task', [t.id, 'w', other, 1, 'm', 1, 1, 'd', null, null], (c) =>
        failTask(c, { ...holder, generation: 1, errorMessage: 'm', errorDetails: null, backoffBaseMs: 1, backoffMaxMs: 1 }),
      ),
    ).toEqual(pk);
    expect(
      await planOf('mark_task_errored', [t.id, 'w', other, 1, 'e', 'm'], (c) =>
        markTaskErrored(c, { ...holder, generation: 1, errorCode: 'E', errorMessage: null }),
      ),
    ).toEqual(pk);
    expect(
      await planOf('extend_lock', [t.id, 'w', other, 1000], (c) => extendLock(c, { ...holder, lockDurationMs: 1000 })),
    ).toEqual(pk);
    expect(await planOf('unlock_task', [t.id, 'w', other], (c) => unlockTask(c, holder))).toEqual(pk);
    expect(await planOf('record_progress', [t.id, 'w', other, '{}'], (c) => recordProgress(c, { ...holder, data: {} }))).toEqual(
      expect.arrayContaining(pk),
    );
    expect(await planOf('camunda_lock_token_of', [t.id, 'w'], (c) => lockTokenOf(c, t.id, 'w'))).toEqual(pk);
    expect(await planOf('camunda_current_holder', [t.id], (c) => currentHolder(c, t.id))).toEqual(pk);
  });

  it('given the same, then a complete written with its transition (the transition statement) marks its task done through the primary key', async () => {
    const t = await heldTask();
    const {
      rows: [row],
    } = await db.pool.query('select revision, generation, definition_id from instances where id = $1', [t.instanceId]);
    const st = transitionStatement(
      [
        {
          instance: {
            id: t.instanceId,
            generation: row.generation,
            business_key: null,
            definition_id: row.definition_id,
            definition_key: 'stale',
          },
          effects: emptyEffects(),
          status: 'running',
          variables: {},
          incidentTaskIds: [],
          guard: { revision: row.revision, completes: { taskId: t.id, workerId: 'w', lockToken: t.lockToken } },
        },
      ],
      { alone: true },
    );
    const { rows } = await db.pool.query<Explained>({ text: `explain (format json) ${st.text}`, values: st.values });
    expect(scans(rows, 'external_tasks')).toEqual(['Index Scan on external_tasks_pkey']);
  });
});
