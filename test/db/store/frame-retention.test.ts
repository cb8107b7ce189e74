// Frame retention must cost what is left to trim, not what ever ended. The sweeper runs it once a
// second on every node; a generation's frames go once, and its head is marked trimmed so no
// later sweep reads it again (migration 0044). Without the mark every sweep read every ended
// head and probed its frames: 217 ms for 200,000 ended instances.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { QueryConfig } from 'pg';
import type { Queryable } from '../../../runtime/store/db.ts';
import { deleteExpiredFrames } from '../../../runtime/store/frames.ts';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';
import { planNodes, type PlanNode } from '../../support/plans.ts';

const DAY_MS = 86_400_000;
/** generations that ended long ago and were trimmed: only their last frame is left */
const TRIMMED = 2000;

let db: TestDatabase;

/** Inserts heads of generation 1 with frames 1..3, each written by a transaction of its own (a run of one); `endedAgo` null: not ended. */
async function insertHeads(
  n: number,
  p: { endedAgo: string | null; trimmed: boolean; frames: 'all' | 'last' },
): Promise<string[]> {
  const { rows } = await db.pool.query<{ instance_id: string }>(
    `insert into frame_heads (instance_id, generation, last_seq, ended_at, trimmed)
     select gen_random_uuid(), 1, 3, now() - $2::interval, $3 from generate_series(1, $1)
     returning instance_id`,
    [n, p.endedAgo, p.trimmed],
  );
  const ids = rows.map((r) => r.instance_id);
  await db.pool.query(
    `insert into frame_runs (instance_id, generation, last_seq, kinds, data)
     select id, 1, seq, array[case when seq = 3 then 'instance:ended' else 'step:completed' end], array['{}'::jsonb]
       from unnest($1::uuid[]) id, generate_series(case when $2 then 3 else 1 end, 3) seq`,
    [ids, p.frames === 'last'],
  );
  return ids;
}

async function framesOf(ids: string[]): Promise<number[]> {
  const { rows } = await db.pool.query<{ seq: number }>(
    'select seq from frames where instance_id = any($1::uuid[]) order by instance_id, seq',
    [ids],
  );
  return rows.map((r) => r.seq);
}

const trim = () => deleteExpiredFrames(db.pool, { keepMs: DAY_MS, limit: 500 });

beforeAll(async () => {
  db = await createTestDatabase();
  await insertHeads(TRIMMED, { endedAgo: '3 days', trimmed: true, frames: 'last' });
  await db.pool.query('vacuum analyze frame_heads');
}, 60_000);

afterAll(async () => {
  await db?.drop();
});

describe('frame retention', () => {
  it('given generations ended before the retention time, within it, and not ended, then only the first lose their frames but the last, once', async () => {
    const old = await insertHeads(3, { endedAgo: '2 days', trimmed: false, frames: 'all' });
    const recent = await insertHeads(1, { endedAgo: '1 minute', trimmed: false, frames: 'all' });
    const live = await insertHeads(1, { endedAgo: null, trimmed: false, frames: 'all' });

    expect(await trim()).toEqual({ generations: 3, frames: 6 });
    expect(await framesOf(old)).toEqual([3, 3, 3]);
    expect(await framesOf(recent)).toEqual([1, 2, 3]);
    expect(await framesOf(live)).toEqual([1, 2, 3]);
    const { rows } = await db.pool.query<{ trimmed: boolean }>(
      'select trimmed from frame_heads where instance_id = any($1::uuid[])',
      [old],
    );
    expect(rows.map((r) => r.trimmed)).toEqual([true, true, true]);
    expect(await trim()).toEqual({ generations: 0, frames: 0 });
  });

  it('given a generation whose last transaction wrote several frames, then the trim keeps only the last', async () => {
    const { rows } = await db.pool.query<{ instance_id: string }>(
      `insert into frame_heads (instance_id, generation, last_seq, ended_at)
       values (gen_random_uuid(), 1, 5, now() - interval '2 days') returning instance_id`,
    );
    const id = rows[0]!.instance_id;
    await db.pool.query(
      `insert into frame_runs (instance_id, generation, last_seq, kinds, data) values
         ($1, 1, 2, array['instance:started', 'task:created'], array['{}'::jsonb, '{}'::jsonb]),
         ($1, 1, 5, array['task:completed', 'instance:completed', 'instance:ended'], array['{}'::jsonb, '{}'::jsonb, '{}'::jsonb])`,
      [id],
    );
    expect(await trim()).toEqual({ generations: 1, frames: 4 });
    const { rows: left } = await db.pool.query<{ seq: number; kind: string }>(
      'select seq, kind from frames where instance_id = $1 order by seq',
      [id],
    );
    expect(left).toEqual([{ seq: 5, kind: 'instance:ended' }]);
  });

  it('given only trimmed generations, when the sweep runs, then its plan reads none of their heads', async () => {
    const plan = await explainTrim();
    const scans = planNodes(plan).filter(
      (n) => n['Node Type'].endsWith('Scan') && n['Relation Name'] === 'frame_heads' && (n['Actual Loops'] ?? 0) > 0,
    );
    expect(scans.map((n) => n['Index Name'])).toEqual(['frame_heads_untrimmed_idx']);
    expect(scans.map((n) => (n['Actual Rows'] ?? 0) + (n['Rows Removed by Filter'] ?? 0))).toEqual([0]);
  });

  it('given a head another transaction holds, then the sweep leaves it for the next one', async () => {
    const [held, free] = [
      await insertHeads(1, { endedAgo: '2 days', trimmed: false, frames: 'all' }),
      await insertHeads(1, { endedAgo: '2 days', trimmed: false, frames: 'all' }),
    ];
    const holder = await db.pool.connect();
    try {
      await holder.query('begin');
      await holder.query('select 1 from frame_heads where instance_id = $1 for update', [held[0]]);
      expect(await trim()).toEqual({ generations: 1, frames: 2 });
      expect(await framesOf([...held!, ...free!])).toEqual(held![0]! < free![0]! ? [1, 2, 3, 3] : [3, 1, 2, 3]);
      await holder.query('commit');
    } finally {
      holder.release();
    }
    expect(await trim()).toEqual({ generations: 1, frames: 2 });
    expect(await framesOf(held!)).toEqual([3]);
  });
});

/**
 * The sweep's statement, explained as the pool runs it: prepared (the pool forces generic plans)
 * and executed in a transaction that is rolled back.
 */
async function explainTrim(): Promise<PlanNode> {
  let statement: QueryConfig | undefined;
  const recorder = {
    query: (config: QueryConfig) => {
      statement = config;
      return Promise.resolve({ rows: [] });
    },
  } as unknown as Queryable;
  await deleteExpiredFrames(recorder, { keepMs: DAY_MS, limit: 500 });
  const client = await db.pool.connect();
  try {
    await client.query('begin');
    await client.query(`prepare trim_frames (bigint, int) as ${statement!.text}`);
    const { rows } = await client.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
      `explain (analyze, format json) execute trim_frames (${DAY_MS}, 500)`,
    );
    return rows[0]!['QUERY PLAN'][0].Plan;
  } finally {
    await client.query('rollback');
    client.release();
  }
}
