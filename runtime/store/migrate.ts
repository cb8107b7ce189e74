import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import type pg from 'pg';
import { withClient } from './db.ts';

const migrationsDir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'migrations');
// Any fixed number: every node takes the same lock, so only one migrates at a time.
const MIGRATION_LOCK_KEY = 7_201_405_811;

export interface Migration {
  id: number;
  name: string;
  sql: string;
}

export async function readMigrations(): Promise<Migration[]> {
  const files = (await readdir(migrationsDir)).filter((f) => /^\d{4}_[\w-]+\.sql$/.test(f)).sort();
  return Promise.all(
    files.map(async (name) => ({
      id: Number(name.slice(0, 4)),
      name,
      sql: await readFile(path.join(migrationsDir, name), 'utf8'),
    })),
  );
}

/** Applies pending migrations, each in its own transaction, under an advisory lock. Idempotent. */
export async function applyMigrations(pool: pg.Pool): Promise<string[]> {
  const migrations = await readMigrations();
  const applied: string[] = [];
  await withClient(pool, async (client) => {
    try {
      await client.query('select pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
      await client.query(`create table if not exists schema_migrations (
        id integer primary key, name text not null, applied_at timestamptz not null default now())`);
      const { rows } = await client.query<{ id: number }>('select id from schema_migrations');
      const done = new Set(rows.map((r) => r.id));
      for (const m of migrations) {
        if (done.has(m.id)) continue;
        await client.query('begin');
        try {
          await client.query(m.sql);
          await client.query('insert into schema_migrations (id, name) values ($1, $2)', [m.id, m.name]);
          await client.query('commit');
          applied.push(m.name);
        } catch (err) {
          await client.query('rollback').catch(() => undefined);
          throw new Error(`Migration ${m.name} failed: ${(err as Error).message}`, { cause: err });
        }
      }
    } finally {
      await client.query('select pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]).catch(() => undefined);
    }
  });
  return applied;
}
