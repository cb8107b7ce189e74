import pg from 'pg';

// Dates come back as ISO strings and bigint as number: the API speaks JSON and
// event seqs stay far below 2^53.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));

export type Queryable = Pick<pg.PoolClient, 'query'>;
export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;

export interface PoolOptions {
  connectionString: string;
  max?: number;
}

/**
 * How long an idle connection stays open. pg's default (10 s) closes most of the pool in
 * any quiet spell, and the next burst (a second's due timers, the first start after a
 * pause) pays new connections: authentication, a new backend with cold caches, every
 * statement prepared again. With pg's default, bench workload 5's first bursts are 160 ms
 * late, against 60-90 with this (docs/PERFORMANCE.md, "Timer bursts").
 */
export const POOL_IDLE_MS = 300_000;

/**
 * The planner settings of every connection of Baton's pools, set before the pool hands the
 * new connection out (docs/PERFORMANCE.md, "Generic plans and planner settings"). They are for the hot path:
 * statements prepared once per connection and run thousands of times a minute, each finding
 * its rows by an index.
 *
 * - `plan_cache_mode = force_generic_plan`: with the default PostgreSQL keeps making custom
 *   plans for some of them (about 2 ms a plan for the fetch) and makes them again on every
 *   connection after each analyze.
 * - `enable_seqscan = off`: a plan made while a table is nearly empty (a new database, the
 *   first minute of a deployment) scans it whole, and keeps doing so as the table grows,
 *   until the next analyze.
 * - `jit = off`: a scan the planner cannot avoid (a small table without a fitting index)
 *   still costs 10^10 with sequential scans off, far above the JIT thresholds: PostgreSQL
 *   builds with LLVM would spend 100-300 ms compiling such statements. Baton's statements
 *   are short; JIT does not pay for them anyway.
 *
 * Reads whose best plan depends on their parameters' values (the API's lists, where one
 * status may be rare and another common) or that read whole tables (metrics) run with
 * PostgreSQL's defaults instead: withPlannerDefaults.
 */
export const PLANNER_SETTINGS_SQL = 'set plan_cache_mode = force_generic_plan; set enable_seqscan = off; set jit = off';

// `default`: the server's (or the role's) setting, whatever the connection's SET said.
const PLANNER_DEFAULTS_SQL = 'set local plan_cache_mode = default; set local enable_seqscan = default; set local jit = default';

export function createPool(opts: PoolOptions): pg.Pool {
  const config: pg.PoolConfig & { onConnect: (client: pg.PoolClient) => Promise<unknown> } = {
    connectionString: opts.connectionString,
    max: opts.max ?? 20,
    idleTimeoutMillis: POOL_IDLE_MS,
    // pg-pool awaits this before the first statement; if it fails, that statement gets the error.
    onConnect: (client) => client.query(PLANNER_SETTINGS_SQL),
  };
  const pool = new pg.Pool(config);
  // An idle client that loses its server (Postgres restart) must not crash the process.
  pool.on('error', () => undefined);
  return pool;
}

/** Whether a statement sent through db is its own transaction (the pool's query, not a client's). */
export function isPool(db: Queryable): boolean {
  return db instanceof pg.Pool;
}

// Work to run once the transaction a client is in has committed (in-process wake-ups).
const commitHooks = new WeakMap<object, (() => void)[]>();
// The pool of a client in withPipelinedTransaction: its commit hooks may use the pool.
const transactionPools = new WeakMap<object, pg.Pool>();

/** The pool a client in withTransaction came from; undefined for any other client. */
export function poolOf(db: Queryable): pg.Pool | undefined {
  return transactionPools.get(db);
}

/**
 * Runs fn once db's transaction (withTransaction) has committed; outside one, the
 * statement just sent has committed already, so fn runs at once.
 */
export function afterCommit(db: Queryable, fn: () => void): void {
  const hooks = commitHooks.get(db);
  if (hooks) hooks.push(fn);
  else fn();
}

/**
 * Runs fn with a client of its own. A server that ends the connection between two
 * statements (PostgreSQL restart, a terminated backend) fails fn; unheard, the
 * client's 'error' event would crash the process. A broken client is discarded.
 */
export async function withClient<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  const onError = (err: Error) => (broken = err);
  client.on('error', onError);
  try {
    return await fn(client);
  } finally {
    client.removeListener('error', onError);
    client.release(broken);
  }
}

/**
 * Runs reads in one transaction planned with the server's own settings, not the pool's
 * hot-path ones (PLANNER_SETTINGS_SQL): a plan made for the values given, sequential scans allowed.
 */
export function withPlannerDefaults<T>(pool: pg.Pool, fn: (db: Queryable) => Promise<T>): Promise<T> {
  return withTransaction(pool, async (tx) => {
    await tx.query(PLANNER_DEFAULTS_SQL);
    return fn(tx);
  });
}

/** Runs fn inside one transaction; rolls back when it throws. */
export async function withTransaction<T>(pool: pg.Pool, fn: (tx: pg.PoolClient) => Promise<T>): Promise<T> {
  return withPipelinedTransaction(pool, async (tx, edges) => {
    await edges.begin();
    return fn(tx);
  });
}

/** The two ends of a transaction, for a caller that sends them in its own pipelined groups. */
export interface TransactionEdges {
  begin: () => Promise<void>;
  /** rejects when the transaction rolled back instead (a statement before it failed) */
  commit: () => Promise<void>;
}

/**
 * withTransaction for a caller that pipelines (store/pipeline.ts) and so can save two round
 * trips: fn sends edges.begin first in its first group of statements, and may send
 * edges.commit last in its last group; a transaction fn did not commit is committed when fn
 * returns, rolled back when it throws. Commit hooks run once the commit has answered.
 */
export async function withPipelinedTransaction<T>(
  pool: pg.Pool,
  fn: (tx: pg.PoolClient, edges: TransactionEdges) => Promise<T>,
): Promise<T> {
  return withClient(pool, async (client) => {
    const hooks: (() => void)[] = [];
    commitHooks.set(client, hooks);
    transactionPools.set(client, pool);
    let begun = false;
    let committed = false;
    const edges: TransactionEdges = {
      begin: async () => {
        begun = true;
        await client.query('begin');
      },
      commit: async () => {
        // COMMIT in a failed transaction answers ROLLBACK, not an error.
        const { command } = await client.query('commit');
        if (command !== 'COMMIT') throw new Error(`the transaction ended with ${command}, not COMMIT`);
        committed = true;
      },
    };
    try {
      const result = await fn(client, edges);
      if (!begun) throw new Error('withPipelinedTransaction: fn sent no begin');
      if (!committed) await edges.commit();
      commitHooks.delete(client);
      for (const hook of hooks) {
        try {
          hook();
        } catch {
          // the transaction is committed: a failing listener must not turn it into an error
        }
      }
      return result;
    } catch (err) {
      if (begun && !committed) await client.query('rollback').catch(() => undefined);
      throw err;
    } finally {
      commitHooks.delete(client);
      transactionPools.delete(client);
    }
  });
}
