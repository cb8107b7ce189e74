import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { createPool } from '../../../runtime/store/db.ts';
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
});
