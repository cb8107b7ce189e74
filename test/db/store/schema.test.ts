import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyMigrations, readMigrations } from '../../../runtime/store/migrate.ts';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});

// A readable dump of tables, columns, constraints and indexes: every schema change shows as a diff.
async function dumpSchema(): Promise<string> {
  const columns = await db.pool.query<{
    table_name: string;
    column_name: string;
    data_type: string;
    is_nullable: string;
    column_default: string | null;
  }>(
    `select table_name, column_name, data_type, is_nullable, column_default
       from information_schema.columns where table_schema = 'public'
      order by table_name, ordinal_position`,
  );
  const constraints = await db.pool.query<{ table_name: string; conname: string; def: string }>(
    `select c.conrelid::regclass::text as table_name, c.conname, pg_get_constraintdef(c.oid) as def
       from pg_constraint c join pg_namespace n on n.oid = c.connamespace
      where n.nspname = 'public' order by 1, 2`,
  );
  const indexes = await db.pool.query<{ indexdef: string }>(
    `select indexdef from pg_indexes where schemaname = 'public' order by tablename, indexname`,
  );
  const lines: string[] = [];
  let table = '';
  for (const c of columns.rows) {
    if (c.table_name !== table) lines.push(`\ntable ${(table = c.table_name)}`);
    lines.push(
      `  ${c.column_name} ${c.data_type}${c.is_nullable === 'NO' ? ' not null' : ''}${c.column_default ? ` default ${c.column_default}` : ''}`,
    );
  }
  lines.push('\nconstraints');
  for (const c of constraints.rows) lines.push(`  ${c.table_name}.${c.conname}: ${c.def}`);
  lines.push('\nindexes');
  for (const i of indexes.rows) lines.push(`  ${i.indexdef}`);
  return `${lines.join('\n').trim()}\n`;
}

describe('schema', () => {
  it('matches the committed snapshot', async () => {
    await expect(await dumpSchema()).toMatchFileSnapshot('./__snapshots__/schema.txt');
  });

  it('given migrations already applied, when applied again concurrently, then nothing changes and nothing fails', async () => {
    const before = await dumpSchema();
    const results = await Promise.all([applyMigrations(db.pool), applyMigrations(db.pool), applyMigrations(db.pool)]);
    expect(results).toEqual([[], [], []]);
    expect(await dumpSchema()).toBe(before);
    const { rows } = await db.pool.query('select id, name from schema_migrations order by id');
    expect(rows.map((r) => r.name)).toEqual((await readMigrations()).map((m) => m.name));
  });
});
