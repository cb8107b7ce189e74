// Starts one PostgreSQL for the whole run (embedded, or DATABASE_URL's server),
// migrates a template database, and hands its name to the test files, which
// each clone a fresh database from it (test/support/db.ts).
import { rm } from 'node:fs/promises';
import { freePort } from './ports.ts';
import path from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres, type EmbeddedPostgresHandle } from '../../runtime/store/embedded.ts';
import { createPool } from '../../runtime/store/db.ts';
import { applyMigrations } from '../../runtime/store/migrate.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** URL of a database on the test server with rights to create databases */
    adminUrl: string;
    /** migrated database to clone per test file */
    templateDb: string;
  }
}

function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  let embedded: EmbeddedPostgresHandle | undefined;
  let adminUrl = process.env.DATABASE_URL;
  if (!adminUrl) {
    const dataDir = path.resolve('.baton-test', `run-${process.pid}`);
    embedded = await startEmbeddedPostgres({
      dataDir,
      port: await freePort(),
      database: 'postgres',
      maxConnections: 300,
      sharedDir: process.env.BATON_SHARED_DIR,
    });
    adminUrl = embedded.url;
  }
  const templateDb = `baton_template_${process.pid}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`drop database if exists ${templateDb}`);
  await admin.query(`create database ${templateDb}`);
  const pool = createPool({ connectionString: withDatabase(adminUrl, templateDb), max: 1 });
  await applyMigrations(pool);
  await pool.end();
  project.provide('adminUrl', adminUrl);
  project.provide('templateDb', templateDb);

  return async () => {
    // Drop what this run created; test databases carry the template's pid.
    const { rows } = await admin.query<{ datname: string }>(
      `select datname from pg_database where datname like $1 or datname = $2`,
      [`baton_t_${process.pid}_%`, templateDb],
    );
    for (const { datname } of rows) await admin.query(`drop database if exists ${pg.escapeIdentifier(datname)} with (force)`);
    await admin.end();
    if (embedded) {
      await embedded.stop();
      await rm(embedded.dataDir, { recursive: true, force: true });
      await rm(path.resolve('.baton-test', `run-${process.pid}`), { recursive: true, force: true });
    }
  };
}
