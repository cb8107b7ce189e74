import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { createPool } from '../../../runtime/store/db.ts';
import { readFrameHead, readFrames } from '../../../runtime/store/frames.ts';
import { applyMigrations, readMigrations } from '../../../runtime/store/migrate.ts';

/** A database with no migrations applied, named like the run's others (global teardown drops it). */
async function emptyDatabase(tag: string): Promise<{ admin: pg.Client; name: string; url: URL }> {
  const admin = new pg.Client({ connectionString: inject('adminUrl') });
  await admin.connect();
  const name = `baton_t_${inject('templateDb').split('_').pop()}_${tag}${Date.now()}`;
  await admin.query(`create database ${name}`);
  const url = new URL(inject('adminUrl'));
  url.pathname = `/${name}`;
  return { admin, name, url };
}

describe('migrations', () => {
  it('given an empty database, when two nodes migrate at once, then every migration is applied exactly once', async () => {
    const { admin, name, url } = await emptyDatabase('empty');
    const a = createPool({ connectionString: url.toString(), max: 2 });
    const b = createPool({ connectionString: url.toString(), max: 2 });
    try {
      const [ra, rb] = await Promise.all([applyMigrations(a), applyMigrations(b)]);
      const all = (await readMigrations()).map((m) => m.name);
      expect([...ra, ...rb].sort()).toEqual(all);
      const { rows } = await a.query('select count(*)::int as n from schema_migrations');
      expect(rows[0].n).toBe(all.length);
    } finally {
      await a.end();
      await b.end();
      await admin.query(`drop database ${name} with (force)`);
      await admin.end();
    }
  });

  it('given the migrating connection cut between two statements, then applyMigrations rejects and the process lives on; a second try applies everything', async () => {
    const { admin, name, url } = await emptyDatabase('cut');
    const pool = createPool({ connectionString: url.toString(), max: 2 });
    const crashes: Error[] = [];
    const onUncaught = (err: Error) => crashes.push(err);
    process.on('uncaughtException', onUncaught);
    let cut = false;
    // The first statement of the first client runs, then its backend is ended while the client sits idle.
    pool.once('acquire', (client: pg.PoolClient & { processID?: number }) => {
      const query = client.query.bind(client) as (...args: unknown[]) => Promise<unknown>;
      (client as unknown as { query: unknown }).query = async (...args: unknown[]) => {
        const result = await query(...args);
        if (!cut) {
          cut = true;
          await admin.query('select pg_terminate_backend($1)', [client.processID]);
          await new Promise((r) => setTimeout(r, 300));
        }
        return result;
      };
    });
    try {
      await expect(applyMigrations(pool)).rejects.toThrow();
      expect(cut).toBe(true);
      expect(crashes).toEqual([]);
      const applied = await applyMigrations(pool);
      expect(applied).toEqual((await readMigrations()).map((m) => m.name));
    } finally {
      process.off('uncaughtException', onUncaught);
      await pool.end();
      await admin.query(`drop database ${name} with (force)`);
      await admin.end();
    }
  });
  it('given frames stored one per row, when frames become runs, then a live generation reads the same and numbers on', async () => {
    const { admin, name, url } = await emptyDatabase('runs');
    const pool = createPool({ connectionString: url.toString(), max: 2 });
    const id = '0190a5b0-0000-7000-8000-000000000001';
    try {
      // The schema as it was before frame runs, with a generation of three frames, the last two kept.
      await pool.query(
        'create table schema_migrations (id integer primary key, name text not null, applied_at timestamptz not null default now())',
      );
      for (const m of (await readMigrations()).filter((m) => m.name < '0045')) {
        await pool.query(m.sql);
        await pool.query('insert into schema_migrations (id, name) values ($1, $2)', [m.id, m.name]);
      }
      await pool.query(
        `insert into frame_heads (instance_id, generation, last_seq) values ($1, 1, 3);
         insert into frames (instance_id, generation, seq, kind, data) values
           ($1, 1, 2, 'step:completed', '{"stepId": "a"}'), ($1, 1, 3, 'task:created', '{"stepId": "b"}')`.replaceAll(
          '$1',
          `'${id}'`,
        ),
      );
      expect(await applyMigrations(pool)).toContain('0045_frame_runs.sql');

      expect(await readFrameHead(pool, id, 1)).toEqual({ generation: 1, lastSeq: 3, firstKeptSeq: 2, ended: false });
      await pool.query(`select append_frame($1, 1, 'task:locked', '{"stepId": "b"}', now())`, [id]);
      const frames = await readFrames(pool, { instanceId: id, generation: 1, afterSeq: 2, limit: 10 });
      expect(frames.map((f) => [f.seq, f.kind, f.data])).toEqual([
        [3, 'task:created', { stepId: 'b' }],
        [4, 'task:locked', { stepId: 'b' }],
      ]);
      const { rows } = await pool.query<{ seq: number }>('select seq from frames where instance_id = $1 order by seq', [id]);
      expect(rows.map((r) => r.seq)).toEqual([2, 3, 4]);
    } finally {
      await pool.end();
      await admin.query(`drop database ${name} with (force)`);
      await admin.end();
    }
  });
});
