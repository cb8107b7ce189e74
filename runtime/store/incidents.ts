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
}

export async function findIncident(db: Queryable, incidentId: string): Promise<IncidentRow | undefined> {
  const { rows } = await db.query<IncidentRow>('select * from incidents where id = $1', [incidentId]);
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

export interface ListIncidentsParams {
  status?: 'open' | 'resolved';
  instanceId?: string;
  limit: number;
}

/** Newest first. Names only the filters given (whereGiven). */
export async function listIncidents(db: Queryable, p: ListIncidentsParams): Promise<IncidentRow[]> {
  const w = whereGiven((param) => [
    p.status !== undefined && `status = ${param(p.status)}`,
    p.instanceId !== undefined && `instance_id = ${param(p.instanceId)}::uuid`,
  ]);
  const { rows } = await db.query<IncidentRow>(
    `select * from incidents where ${w.sql} order by created_at desc, id limit $${w.values.length + 1}`,
    [...w.values, p.limit],
  );
  return rows;
}
