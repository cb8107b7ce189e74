// Incident rows: raised inside transitions (store/transition-statement.ts), resolved by an operator.
import type { IncidentKind } from '../model/vocabulary.ts';
import type { Queryable } from './db.ts';
import { notifyAfterCommit } from './notifications.ts';
import { whereGiven } from './filters.ts';

export interface IncidentRow {
  id: string;
  instance_id: string;
  step_id: string;
  task_id: string | null;
  generation: number;
  kind: IncidentKind;
  message: string;
  details: Record<string, unknown> | null;
  status: 'open' | 'resolved';
  created_at: Date;
  resolved_at: Date | null;
  /** the operator's note on it, null when none */
  annotation: string | null;
}

export async function findIncident(db: Queryable, incidentId: string): Promise<IncidentRow | undefined> {
  const { rows } = await db.query<IncidentRow>('select * from incidents where id = $1', [incidentId]);
  return rows[0];
}

/** Sets (or, with null, clears) an incident's annotation; undefined for an unknown incident. */
export async function annotateIncident(
  db: Queryable,
  p: { incidentId: string; annotation: string | null },
): Promise<IncidentRow | undefined> {
  const { rows } = await db.query<IncidentRow>({
    name: 'annotate_incident',
    text: 'update incidents set annotation = $2 where id = $1 returning *',
    values: [p.incidentId, p.annotation],
  });
  return rows[0];
}

/** Resolves an open incident; a lost guard means someone resolved it first. */
export async function resolveIncident(db: Queryable, incidentId: string): Promise<IncidentRow | undefined> {
  const { rows } = await db.query<IncidentRow>(
    `update incidents set status = 'resolved', resolved_at = now()
      where id = $1 and status = 'open' returning *`,
    [incidentId],
  );
  return rows[0];
}

/** Gives a failed task a fresh retry budget and makes it fetchable now. */
export async function requeueFailedTask(db: Queryable, taskId: string, retries: number | null): Promise<boolean> {
  const { rows } = await db.query<{ topic: string }>(
    `with t as (
       update external_tasks
          set state = 'ready', retries = coalesce($2, retries), retries_left = coalesce($2, retries),
              retry_at = now(), worker_id = null, lock_token = null, lock_expires_at = null, ended_at = null, lease_expiries = 0
        where id = $1 and state = 'failed'
    returning topic)
     select topic from t`,
    [taskId, retries],
  );
  if (rows[0]) notifyAfterCommit(db, { topics: [rows[0].topic], counts: [1] });
  return rows.length > 0;
}

/** The filters an operator lists, counts and retries incidents by; each one given narrows the set. */
export interface IncidentFilter {
  status?: 'open' | 'resolved';
  instanceId?: string;
  definitionKey?: string;
  definitionVersion?: number;
  definitionId?: string;
  kind?: IncidentKind;
  stepId?: string;
  /** created at least this many seconds ago */
  olderThanSeconds?: number;
  /** created at most this many seconds ago */
  newerThanSeconds?: number;
}

export interface ListIncidentsParams extends IncidentFilter {
  /** cursor: the last row of the page before (newest first), its creation time in microseconds since 1970 */
  after?: { createdUs: string; id: string };
  limit: number;
}

/** An incident as the operator lists it: with its process, and its failed task's error when a task raised it. */
export interface IncidentListRow extends IncidentRow {
  definition_id: string;
  definition_key: string;
  definition_version: number;
  business_key: string | null;
  error_message: string | null;
  error_details: string | null;
  created_us: string;
}

// The filters join instances only for the definition columns; a plain status filter reads incidents_open_idx.
function incidentWhere(f: IncidentFilter, after?: ListIncidentsParams['after']) {
  return whereGiven((param) => [
    f.status !== undefined && `x.status = ${param(f.status)}`,
    f.instanceId !== undefined && `x.instance_id = ${param(f.instanceId)}::uuid`,
    f.definitionKey !== undefined && `i.definition_key = ${param(f.definitionKey)}`,
    f.definitionVersion !== undefined && `i.definition_version = ${param(f.definitionVersion)}::int`,
    f.definitionId !== undefined && `i.definition_id = ${param(f.definitionId)}::uuid`,
    f.kind !== undefined && `x.kind = ${param(f.kind)}`,
    f.stepId !== undefined && `x.step_id = ${param(f.stepId)}`,
    f.olderThanSeconds !== undefined && `x.created_at <= now() - ${param(f.olderThanSeconds)}::int * interval '1 second'`,
    f.newerThanSeconds !== undefined && `x.created_at >= now() - ${param(f.newerThanSeconds)}::int * interval '1 second'`,
    after !== undefined &&
      `(x.created_at, x.id) < (timestamptz 'epoch' + ${param(after.createdUs)}::bigint * interval '1 microsecond', ${param(after.id)}::uuid)`,
  ]);
}

/** Newest first, a page at a time. Names only the filters given (whereGiven). */
export async function listIncidents(db: Queryable, p: ListIncidentsParams): Promise<IncidentListRow[]> {
  const w = incidentWhere(p, p.after);
  const { rows } = await db.query<IncidentListRow>(
    `select x.*, i.definition_id, i.definition_key, i.definition_version, i.business_key,
            t.error_message, t.error_details, (extract(epoch from x.created_at) * 1000000)::bigint::text as created_us
       from incidents x
       join instances i on i.id = x.instance_id
       left join external_tasks t on t.id = x.task_id
      where ${w.sql}
      order by x.created_at desc, x.id desc
      limit $${w.values.length + 1}`,
    [...w.values, p.limit],
  );
  return rows;
}

/** How many incidents the filter matches, by kind. */
export async function countIncidents(db: Queryable, f: IncidentFilter): Promise<{ kind: IncidentKind; count: number }[]> {
  const w = incidentWhere(f);
  const { rows } = await db.query<{ kind: IncidentKind; count: number }>(
    `select x.kind, count(*)::int as count
       from incidents x join instances i on i.id = x.instance_id
      where ${w.sql}
      group by x.kind order by x.kind`,
    w.values,
  );
  return rows;
}
