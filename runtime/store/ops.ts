// Read-only statements of /readyz and /metrics, and the retention batch delete.
import type { Queryable } from './db.ts';

export async function listAppliedMigrations(db: Queryable): Promise<string[]> {
  const { rows } = await db.query<{ name: string }>({ name: 'list_applied_migrations', text: `select name from schema_migrations` });
  return rows.map((r) => r.name);
}

export interface GaugeRows {
  instances: { definition_key: string; status: string; count: number }[];
  tasks: { topic: string; state: string; count: number; oldest_seconds: number | null }[];
  incidents: { kind: string; count: number }[];
  lockExpiries: number;
  /** rows ever inserted, from PostgreSQL's cumulative statistics (reset with them) */
  inserted: { frames: number; incidents: number };
}

/** One snapshot of the gauges /metrics reports; low-cardinality groups only. */
export async function readGauges(db: Queryable): Promise<GaugeRows> {
  const instances = await db.query<GaugeRows['instances'][number]>({
    name: 'metrics_instances',
    text: `select definition_key, status, count(*)::int as count from instances group by definition_key, status`,
  });
  const tasks = await db.query<GaugeRows['tasks'][number]>({
    name: 'metrics_tasks',
    text: `select topic, state, count(*)::int as count,
                  extract(epoch from now() - min(created_at) filter (where state = 'ready' and retry_at <= now()))::float8 as oldest_seconds
             from external_tasks where state in ('ready', 'locked') group by topic, state`,
  });
  const incidents = await db.query<GaugeRows['incidents'][number]>({
    name: 'metrics_incidents',
    text: `select kind, count(*)::int as count from incidents where status = 'open' group by kind`,
  });
  const expiries = await db.query<{ count: number }>({
    name: 'metrics_lock_expiries',
    text: `select count(*)::int as count from events where kind = 'task:lock_expired' and at > now() - interval '5 minutes'`,
  });
  // O(1): the statistics collector counts inserts per table; no scan of frames or incidents.
  const inserted = await db.query<{ relname: string; n: number }>({
    name: 'metrics_inserted_rows',
    text: `select relname, n_tup_ins::float8 as n from pg_stat_user_tables
            where schemaname = current_schema() and relname in ('frames', 'incidents')`,
  });
  const insertedInto = (table: string) => inserted.rows.find((r) => r.relname === table)?.n ?? 0;
  return {
    instances: instances.rows, tasks: tasks.rows, incidents: incidents.rows, lockExpiries: expiries.rows[0]?.count ?? 0,
    inserted: { frames: insertedInto('frames'), incidents: insertedInto('incidents') },
  };
}

/**
 * Bytes of the task's instance variables once `variables` are merged in (top level, as a
 * complete merges them), as PostgreSQL prints jsonb; undefined for an unknown task.
 */
export async function measureMergedVariables(db: Queryable, taskId: string, variables: Record<string, unknown>): Promise<number | undefined> {
  const { rows } = await db.query<{ bytes: number }>({
    name: 'measure_merged_variables',
    text: `select octet_length((i.variables || $2::jsonb)::text)::int as bytes
             from external_tasks t join instances i on i.id = t.instance_id where t.id = $1`,
    values: [taskId, JSON.stringify(variables)],
  });
  return rows[0]?.bytes;
}
