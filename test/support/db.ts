// A fresh database per test file, cloned from the migrated template.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';
import { createPool, type Pool } from '../../runtime/store/db.ts';

export interface TestDatabase {
  url: string;
  pool: Pool;
  drop(): Promise<void>;
}

function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

export async function createTestDatabase(): Promise<TestDatabase> {
  const adminUrl = inject('adminUrl');
  const template = inject('templateDb');
  // The template name ends in the run's pid; global teardown drops every database of the run.
  const runPid = template.slice(template.lastIndexOf('_') + 1);
  const name = `baton_t_${runPid}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    for (let attempt = 0; ; attempt++) {
      try {
        await admin.query(`create database ${name} template ${template}`);
        break;
      } catch (err) {
        // Two clones of one template at the same instant may collide; try again shortly.
        if (attempt >= 20 || !/being accessed by other users/.test((err as Error).message)) throw err;
        await new Promise((r) => setTimeout(r, 100 + Math.random() * 200));
      }
    }
  } finally {
    await admin.end();
  }
  const url = withDatabase(adminUrl, name);
  const pool = createPool({ connectionString: url, max: 10 });
  return {
    url,
    pool,
    async drop() {
      await pool.end();
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      await c.query(`drop database if exists ${name} with (force)`).finally(() => c.end());
    },
  };
}

/** Whether a backend of this database waits for a lock while running a statement whose text holds `fragment`. */
export async function waitsForLock(pool: Pool, fragment: string): Promise<boolean> {
  const { rows } = await pool.query(
    `select 1 from pg_stat_activity
      where datname = current_database() and wait_event_type = 'Lock' and position($1 in query) > 0`,
    [fragment],
  );
  return rows.length > 0;
}

/**
 * A transaction on a connection of its own that runs `sql` and holds its locks until
 * release (commit); `waiting` tells whether some session of the database waits for a lock.
 */
export async function holdLocks(
  db: TestDatabase,
  sql: string,
): Promise<{ waiting: () => Promise<boolean>; release: () => Promise<void> }> {
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  await client.query('begin');
  await client.query(sql);
  return {
    waiting: async () => {
      const { rows } = await db.pool.query(
        `select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`,
      );
      return rows[0].n > 0;
    },
    release: async () => {
      await client.query('commit');
      await client.end();
    },
  };
}
