// A digest of every table's rows (as test/db/api/bad-input.test.ts): rejected input must leave it unchanged.
import pg from 'pg';
import type { Pool } from '../../runtime/store/db.ts';

/**
 * Written in the background: each node flushes the fetches it accepted earlier every few
 * seconds (engine/fetch-activity.ts), whenever that falls, so no request's digest can hold it.
 */
export const BACKGROUND_TABLES = ['topic_fetches'];

export async function databaseDigest(pool: Pool): Promise<string> {
  const { rows: tables } = await pool.query<{ name: string }>(
    `select table_name as name from information_schema.tables
      where table_schema = 'public' and table_type = 'BASE TABLE' and table_name <> all($1) order by 1`,
    [BACKGROUND_TABLES],
  );
  const parts: string[] = [];
  for (const { name } of tables) {
    const { rows } = await pool.query<{ h: string }>(
      `select md5(coalesce(string_agg(x::text, '|' order by x::text), '')) as h from ${pg.escapeIdentifier(name)} x`,
    );
    parts.push(`${name}:${rows[0]?.h ?? ''}`);
  }
  return parts.join(',');
}
