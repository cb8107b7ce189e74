// Retention: ended instances past the retention period are deleted in small batches
// (ON DELETE CASCADE removes their steps, flows, tasks, incidents and waits; the statement
// deletes their events, frame heads and frames, which have no foreign keys), and
// their history can be read out first for `baton export`.
import type { Queryable } from './db.ts';

/**
 * The CTEs that delete the instances a `doomed (id)` CTE names, and their history: the history
 * tables have no foreign keys (migration 0014), so their rows go in the same statement. Frame
 * runs go after their heads (`fr` reads what `fh` deleted): the frame trim locks heads before it
 * deletes their runs, so taking them in the same order keeps the two from deadlocking.
 */
export const DELETE_DOOMED_WITH_HISTORY_SQL = `gone as (delete from instances i using doomed where i.id = doomed.id returning i.id),
           ev as (delete from events e using gone where e.instance_id = gone.id),
           fh as (delete from frame_heads h using gone where h.instance_id = gone.id returning h.instance_id, h.generation),
           fr as (delete from frame_runs r using fh where r.instance_id = fh.instance_id and r.generation = fh.generation)`;

/**
 * Deletes up to `batch` completed/canceled instances that ended before `before`.
 * SKIP LOCKED: a row another transaction holds is left for the next run, so retention
 * never waits on live work and each batch holds its locks only for one short statement.
 */
export async function deleteEndedInstances(db: Queryable, before: Date, batch: number): Promise<number> {
  const { rows } = await db.query<{ n: number }>({
    name: 'delete_ended_instances',
    text: `with doomed as (
             select id from instances
              where status in ('completed', 'canceled') and ended_at < $1
              order by ended_at, id limit $2
              for update skip locked),
           ${DELETE_DOOMED_WITH_HISTORY_SQL}
           select count(*)::int as n from gone`,
    values: [before, batch],
  });
  return rows[0]?.n ?? 0;
}

export interface ExportedInstanceRow {
  id: string;
  definition_key: string;
  definition_version: number;
  business_key: string | null;
  status: string;
  variables: Record<string, unknown>;
  created_at: string;
  ended_at: string;
  /** {seq, kind, stepId, taskId, attempt, generation, at, data} in seq order */
  events: unknown[];
}

const AFTER_CURSOR_SQL = 'and (i.ended_at, i.id) > ($3::timestamptz, $4::uuid)';

/** A page of ended instances (before `before`) with their history, oldest first, after the cursor. */
export async function listEndedInstancesWithHistory(
  db: Queryable,
  p: { before: Date; after?: { endedAt: string; id: string }; limit: number },
): Promise<(ExportedInstanceRow & { cursor_at: string })[]> {
  // Two statements, the first page's and the next pages': one plan for both could not start
  // the index scan at the cursor (db.ts plans every statement once for any parameters).
  const cursorSql = p.after ? AFTER_CURSOR_SQL : '';
  const { rows } = await db.query<ExportedInstanceRow & { cursor_at: string }>({
    name: p.after ? 'list_ended_instances_with_history_after' : 'list_ended_instances_with_history',
    text: `select i.id, i.definition_key, i.definition_version, i.business_key, i.status, i.variables,
                  i.created_at, i.ended_at, to_char(i.ended_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as cursor_at,
                  coalesce((select jsonb_agg(jsonb_build_object('seq', e.seq, 'kind', e.kind, 'stepId', e.step_id, 'taskId', e.task_id,
                                    'attempt', e.attempt, 'generation', e.generation, 'at', e.at, 'data', e.data) order by e.seq)
                              from events e where e.instance_id = i.id), '[]'::jsonb) as events
             from instances i
            where i.status in ('completed', 'canceled') and i.ended_at < $1
              ${cursorSql}
            order by i.ended_at, i.id
            limit $2`,
    values: p.after ? [p.before, p.limit, p.after.endedAt, p.after.id] : [p.before, p.limit],
  });
  return rows;
}
