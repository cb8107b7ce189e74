import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { createPool } from '../../runtime/store/db.ts';
import { applyMigrations, readMigrations } from '../../runtime/store/migrate.ts';

describe('migrations', () => {
  it('given an empty database, when two nodes migrate at once, then every migration is applied exactly once', async () => {
    const admin = new pg.Client({ connectionString: inject('adminUrl') });
    await admin.connect();
    const name = `baton_t_${inject('templateDb').split('_').pop()}_empty${Date.now()}`;
    await admin.query(`create database ${name}`);
    const url = new URL(inject('adminUrl'));
    url.pathname = `/${name}`;
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
});
