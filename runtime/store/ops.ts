// Read-only statements of /readyz and /metrics, and the retention batch delete.
import { withPlannerDefaults, type Pool, type Queryable } from './db.ts';

export async function listAppliedMigrations(db: Queryable): Promise<string[]> {
  const { rows } = await db.query<{ name: string }>({
    name: 'list_applied_migrations',
    text: `select name from schema_migrations`,
  });
  return rows.map((r) => r.name);
}

export interface GaugeRows {
  instances: { definition_key: string; status: string; count: number }[];
  tasks: { topic: string; state: string; count: number; oldest_seconds: number | null }[];
  incidents: { kind: string; count: number }[];
  lockExpiries: number;
  /** rows ever inserted, from PostgreSQL's cumulative statistics (reset with them) */
  inserted: { frameRuns: number; incidents: number };
}

/**
 * One snapshot of the gauges /metrics reports; low-cardinality groups only, planned with
 * PostgreSQL's defaults, not the hot path's. Each statement reads only open rows (live
 * instances, ready and locked tasks, open incidents) through a partial index (finished
 * instances are counted as they end, ops/instruments.ts), so a scrape costs what is live,
 * not what history holds.
 */
export function readGauges(pool: Pool): Promise<GaugeRows> {
  return withPlannerDefaults(pool, readGaugesIn);
}

/** readGauges' statements, on a connection planning with the defaults (withPlannerDefaults). */
export async function readGaugesIn(db: Queryable): Promise<GaugeRows> {
  const instances = await db.query<GaugeRows['instances'][number]>({
    name: 'metrics_instances',
    text: `select definition_key, status, count(*)::int as count from instances
            where status in ('running', 'incident', 'compensating') group by definition_key, status`,
  });
  const tasks = await db.query<GaugeRows['tasks'][number]>({
    name: 'metrics_tasks',
    // One branch per state, each matching a partial index's predicate: `state in ('ready', 'locked')`
    // implies neither, and reads every task ever created (150 ms with a million done ones).
    text: `select topic, 'ready' as state, count(*)::int as count,
                  extract(epoch from now() - min(created_at) filter (where retry_at <= now()))::float8 as oldest_seconds
             from external_tasks where state = 'ready' group by topic
           union all
           select topic, 'locked', count(*)::int, null::float8 from external_tasks where state = 'locked' group by topic`,
  });
  const incidents = await db.query<GaugeRows['incidents'][number]>({
    name: 'metrics_incidents',
    text: `select kind, count(*)::int as count from incidents where status = 'open' group by kind`,
  });
  const expiries = await db.query<{ count: number }>({
    name: 'metrics_lock_expiries',
    text: `select count(*)::int as count from events where kind = 'task:lock_expired' and at > now() - interval '5 minutes'`,
  });
  // O(1): the statistics collector counts inserts per table; no scan of frame runs or incidents.
  const inserted = await db.query<{ relname: string; n: number }>({
    name: 'metrics_inserted_rows',
    text: `select relname, n_tup_ins::float8 as n from pg_stat_user_tables
            where schemaname = current_schema() and relname in ('frame_runs', 'incidents')`,
  });
  const insertedInto = (table: string) => inserted.rows.find((r) => r.relname === table)?.n ?? 0;
  return {
    instances: instances.rows,
    tasks: tasks.rows,
    incidents: incidents.rows,
    lockExpiries: expiries.rows[0]?.count ?? 0,
    inserted: { frameRuns: insertedInto('frame_runs'), incidents: insertedInto('incidents') },
  };
}
