// Worker progress reports: stored per call, coalesced into task:progress frames
// by flush_progress (migration 0008); the frames' notifications ring after the commit (0016).
import type { Pool, Queryable } from './db.ts';
import { notifyAfterCommit } from './notifications.ts';
import { HELD_TASK_SQL } from './open-states.ts';
import type { LockHolder } from './tasks.ts';

export interface ProgressReport extends LockHolder {
  data: unknown;
}

export type RecordProgressResult =
  | { ok: true; instanceId: string; generation: number; stepId: string; pendingBytes: number }
  | { ok: false; reason: 'not_found' | 'lock_lost' };

/**
 * Stores one report from the lock holder. FOR SHARE on the task row makes a
 * report and the call that ends the attempt exclusive: a report that commits
 * first is flushed by that call's frames; one that comes after finds no lock.
 */
export async function recordProgress(db: Queryable, r: ProgressReport): Promise<RecordProgressResult> {
  const { rows } = await db.query<{ instance_id: string; generation: number; step_id: string; pending_bytes: number }>({
    name: 'record_progress',
    text: `with holder as (
             select id, instance_id, generation, step_id from external_tasks
              where id = $1 and ${HELD_TASK_SQL} and worker_id = $2 and lock_token = $3
                for share),
           r as (
             insert into progress_reports (task_id, instance_id, generation, step_id, data, bytes)
             select id, instance_id, generation, step_id, $4::jsonb, octet_length($4::text) from holder
             returning instance_id, generation, step_id, bytes)
           select r.instance_id, r.generation, r.step_id,
                  r.bytes + coalesce((select sum(bytes) from progress_reports p
                                       where p.instance_id = r.instance_id and p.step_id = r.step_id), 0)::int as pending_bytes
             from r`,
    values: [r.taskId, r.workerId, r.lockToken, JSON.stringify(r.data ?? null)],
  });
  const row = rows[0];
  if (row)
    return {
      ok: true,
      instanceId: row.instance_id,
      generation: row.generation,
      stepId: row.step_id,
      pendingBytes: row.pending_bytes,
    };
  const { rows: exists } = await db.query('select 1 from external_tasks where id = $1', [r.taskId]);
  return { ok: false, reason: exists.length > 0 ? 'lock_lost' : 'not_found' };
}

// Set for the flush's own transaction: append_frame leaves the notification to notifyAfterCommit
// (migration 0016). Only statements that are their own transaction may set it: in a longer
// one it would silence the framing trigger's notifications at its commit too.
const QUIET_FRAMES_SQL = "(select set_config('baton.ring_after_commit', 'on', true) as quiet) q";

/**
 * Turns the step's pending reports into one frame; answers its seq, or null when nothing
 * was pending. Its own transaction (a pool): the frame's notification rings after its commit.
 */
export async function flushProgress(
  pool: Pool,
  p: { instanceId: string; generation: number; stepId: string },
): Promise<number | null> {
  const { rows } = await pool.query<{ seq: number | null }>({
    name: 'flush_progress',
    text: `select flush_progress($1, $2, $3) as seq from ${QUIET_FRAMES_SQL}`,
    values: [p.instanceId, p.generation, p.stepId],
  });
  const seq = rows[0]?.seq ?? null;
  if (seq !== null) notifyAfterCommit(pool, { frames: [{ instanceId: p.instanceId, generation: p.generation, seq }] });
  return seq;
}

/**
 * Flushes reports left pending longer than `olderThanMs` (the node that took them
 * died before its flush). Steps are taken in instance order: each flush locks a
 * frame head until commit.
 */
export async function flushStaleProgress(pool: Pool, olderThanMs: number): Promise<number> {
  // s names q.quiet, so the setting is made before the first flush.
  const { rows } = await pool.query<{ instance_id: string; generation: number; seq: number | null }>({
    name: 'flush_stale_progress',
    text: `select s.instance_id, s.generation, flush_progress(s.instance_id, s.generation, s.step_id) as seq
             from ${QUIET_FRAMES_SQL}
             cross join lateral (select instance_id, max(generation) as generation, step_id from progress_reports
                                  where at < now() - $1::bigint * interval '1 millisecond' and q.quiet = 'on'
                                  group by instance_id, step_id
                                  order by instance_id, step_id) s`,
    values: [olderThanMs],
  });
  const frames = rows
    .filter((r) => r.seq !== null)
    .map((r) => ({ instanceId: r.instance_id, generation: r.generation, seq: r.seq! }));
  notifyAfterCommit(pool, { frames });
  return frames.length;
}
