// Configuration from the environment; every variable is documented in the README.
import path from 'node:path';
import { DEFAULT_SHARED_DIR } from './store/embedded-placement.ts';

export interface Config {
  port: number;
  host: string;
  /** unset: an embedded PostgreSQL is started under dataDir */
  databaseUrl: string | undefined;
  dataDir: string;
  /** as root: a folder the `postgres` user can reach, where the embedded PostgreSQL moves when dataDir or the checkout is out of its reach */
  sharedDir: string;
  /** port of the embedded PostgreSQL */
  embeddedPgPort: number;
  logLevel: string;
  /** pretty: lines for a person; json: one JSON object per line; auto: pretty when stdout is a terminal */
  logFormat: 'auto' | 'json' | 'pretty';
  /** pause between sweeps for expired task leases */
  sweepIntervalMs: number;
  /** first retry delay after a task failure */
  retryBackoffMs: number;
  /** lease expiries a task may have beyond its retries */
  leaseExpiryAllowance: number;
  /** statements of starts in flight at once; starts arriving meanwhile go together in the next */
  startLanes: number;
  /** batches: instances per chunk, the lease a node holds a batch by, the pause between looks for one */
  batchChunkSize: number;
  batchLeaseMs: number;
  batchIntervalMs: number;
  /** folder whose .bpmn files are deployed at start; empty to deploy none */
  samplesDir: string | undefined;
}

function intFrom(env: NodeJS.ProcessEnv, name: string, fallback: number, min = 0): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new Error(`${name} must be an integer of at least ${min}, got "${raw}"`);
  return n;
}

function oneOf<T extends string>(env: NodeJS.ProcessEnv, name: string, values: readonly T[], fallback: T): T {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!values.includes(raw as T)) throw new Error(`${name} must be one of ${values.join(', ')}, got "${raw}"`);
  return raw as T;
}

export function readConfig(env: NodeJS.ProcessEnv = process.env): Config {
  return {
    port: intFrom(env, 'PORT', 8080),
    host: env.HOST || '127.0.0.1',
    databaseUrl: env.DATABASE_URL || undefined,
    dataDir: path.resolve(env.BATON_DATA_DIR || '.baton'),
    sharedDir: path.resolve(env.BATON_SHARED_DIR || DEFAULT_SHARED_DIR),
    embeddedPgPort: intFrom(env, 'BATON_PG_PORT', 54329, 1),
    logLevel: env.LOG_LEVEL || 'info',
    logFormat: oneOf(env, 'LOG_FORMAT', ['auto', 'json', 'pretty'] as const, 'auto'),
    sweepIntervalMs: intFrom(env, 'BATON_SWEEP_INTERVAL_MS', 1000, 10),
    retryBackoffMs: intFrom(env, 'BATON_RETRY_BACKOFF_MS', 1000, 1),
    leaseExpiryAllowance: intFrom(env, 'BATON_LEASE_EXPIRY_ALLOWANCE', 3, 0),
    startLanes: intFrom(env, 'BATON_START_LANES', 2, 1),
    batchChunkSize: intFrom(env, 'BATON_BATCH_CHUNK_SIZE', 50, 1),
    batchLeaseMs: intFrom(env, 'BATON_BATCH_LEASE_MS', 30_000, 100),
    batchIntervalMs: intFrom(env, 'BATON_BATCH_INTERVAL_MS', 1000, 10),
    samplesDir: env.BATON_SAMPLES_DIR === '' ? undefined : path.resolve(env.BATON_SAMPLES_DIR || 'samples'),
  };
}
