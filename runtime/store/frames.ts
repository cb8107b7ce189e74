// Frames: the per-(instance, generation) replay buffer of the progress stream. The
// statements that write events write their frames too where they can (the transition
// statement, fetch-and-lock), through appendHeadsCte; otherwise the deferred trigger on
// events and flush_progress do (migrations 0011, 0016). The frames one transaction writes to a
// generation are stored as one row, a run of consecutive seqs (migration 0045). This module also
// reads them.
import type { Queryable } from './db.ts';
import type { FrameNotice } from './notifications.ts';

/**
 * The CTE `head` that moves frame heads on: `rows` is the rest of a select answering
 * (instance_id, generation, frames to add, ended_at or null) per head, in instance order: the
 * order the trigger takes heads in at commit, so two writers never wait for each other in a
 * cycle. A head already ended takes no frames, as in the trigger. Answers (instance_id,
 * generation, last_seq) of every head it moved; its frames are numbered up to last_seq.
 * `fresh`: the heads are of new instances, which have none yet (a plain insert).
 */
export function appendHeadsCte(rows: string, fresh = false): string {
  return `head as (insert into frame_heads as h (instance_id, generation, last_seq, ended_at)
            select ${rows}${
              fresh
                ? ''
                : `
            on conflict (instance_id, generation) do update set last_seq = h.last_seq + excluded.last_seq, ended_at = excluded.ended_at
             where h.ended_at is null`
            }
         returning h.instance_id, h.generation, h.last_seq)`;
}

export interface FrameRow {
  instance_id: string;
  generation: number;
  seq: number;
  kind: string;
  data: Record<string, unknown>;
  at: string;
}

export interface FrameHead {
  generation: number;
  /** highest seq written so far (0: none) */
  lastSeq: number;
  /** lowest seq still stored; above lastSeq when none is */
  firstKeptSeq: number;
  ended: boolean;
}

export interface StreamTarget {
  instanceId: string;
  status: string;
  /** the instance's current generation */
  generation: number;
}

/** The instance a subscriber asks for, or undefined when it does not exist. */
export async function findStreamTarget(db: Queryable, instanceId: string): Promise<StreamTarget | undefined> {
  const { rows } = await db.query<{ id: string; status: string; generation: number }>({
    name: 'find_stream_target',
    text: 'select id, status, generation from instances where id = $1',
    values: [instanceId],
  });
  const row = rows[0];
  return row ? { instanceId: row.id, status: row.status, generation: row.generation } : undefined;
}

/** Where a generation's frames stand; a generation without frames yet has lastSeq 0. */
export async function readFrameHead(db: Queryable, instanceId: string, generation: number): Promise<FrameHead> {
  const { rows } = await db.query<{ last_seq: number; ended: boolean; first_kept: number | null }>({
    name: 'read_frame_head',
    text: `select h.last_seq, h.ended_at is not null as ended,
                  (select r.last_seq - cardinality(r.kinds) + 1 from frame_runs r
                    where r.instance_id = h.instance_id and r.generation = h.generation
                    order by r.last_seq limit 1) as first_kept
             from frame_heads h where h.instance_id = $1 and h.generation = $2`,
    values: [instanceId, generation],
  });
  const row = rows[0];
  if (!row) return { generation, lastSeq: 0, firstKeptSeq: 1, ended: false };
  return { generation, lastSeq: row.last_seq, firstKeptSeq: row.first_kept ?? row.last_seq + 1, ended: row.ended };
}

/** The heads of every generation of the instances, as notifications: what a lost notification would have said (stream/frame-hub.ts). */
export async function readFrameNotices(db: Queryable, instanceIds: string[]): Promise<FrameNotice[]> {
  const { rows } = await db.query<{ instance_id: string; generation: number; last_seq: number }>({
    name: 'read_frame_notices',
    text: 'select instance_id, generation, last_seq from frame_heads where instance_id = any($1::uuid[])',
    values: [instanceIds],
  });
  return rows.map((r) => ({ instanceId: r.instance_id, generation: r.generation, seq: r.last_seq }));
}

/** Frames of one generation after a seq, in seq order: only the runs that hold such frames are read. */
export async function readFrames(
  db: Queryable,
  p: { instanceId: string; generation: number; afterSeq: number; limit: number },
): Promise<FrameRow[]> {
  const { rows } = await db.query<FrameRow>({
    name: 'read_frames',
    text: `select r.instance_id, r.generation, r.last_seq - cardinality(r.kinds) + f.n::int as seq, f.kind, f.data, r.at
             from frame_runs r cross join lateral unnest(r.kinds, r.data) with ordinality as f(kind, data, n)
            where r.instance_id = $1 and r.generation = $2 and r.last_seq > $3
              and r.last_seq - cardinality(r.kinds) + f.n::int > $3
            order by r.last_seq, f.n limit $4`,
    values: [p.instanceId, p.generation, p.afterSeq, p.limit],
  });
  return rows;
}

/**
 * Closes a generation that did not end by itself (a replay of an instance in
 * incident): its last frame says so, and nothing more is written to it.
 */
export async function endFrameGeneration(
  db: Queryable,
  p: { instanceId: string; generation: number; status: string; nextGeneration: number },
): Promise<void> {
  await db.query({
    name: 'end_frame_generation',
    text: `select append_frame($1, $2, 'instance:ended', jsonb_build_object('status', $3::text, 'nextGeneration', $4::int), now())`,
    values: [p.instanceId, p.generation, p.status, p.nextGeneration],
  });
}

/**
 * Deletes the frames of up to `limit` generations that ended more than `keepMs` ago, except each
 * one's last frame (instance:ended: its run is cut to it), so a late subscriber still learns the
 * final state, and marks their heads trimmed: the next sweep reads only heads not trimmed yet
 * (migration 0044). Heads another transaction holds are left for the next sweep. Answers how many
 * generations were trimmed and how many frames went; call again while the generations reach `limit`.
 */
export async function deleteExpiredFrames(
  db: Queryable,
  p: { keepMs: number; limit: number },
): Promise<{ generations: number; frames: number }> {
  const { rows } = await db.query<{ generations: number; frames: number }>({
    name: 'delete_expired_frames',
    text: `with heads as (
             select instance_id, generation, last_seq from frame_heads
              where ended_at < now() - $1::bigint * interval '1 millisecond' and not trimmed
              order by ended_at limit $2
              for update skip locked),
           gone as (
             delete from frame_runs r using heads h
              where r.instance_id = h.instance_id and r.generation = h.generation and r.last_seq < h.last_seq
             returning cardinality(r.kinds) as n),
           last_runs as (
             select r.instance_id, r.generation, r.last_seq, cardinality(r.kinds) as n
               from frame_runs r join heads h on r.instance_id = h.instance_id and r.generation = h.generation and r.last_seq = h.last_seq
              where cardinality(r.kinds) > 1),
           cut as (
             update frame_runs r set kinds = r.kinds[l.n:l.n], data = r.data[l.n:l.n] from last_runs l
              where r.instance_id = l.instance_id and r.generation = l.generation and r.last_seq = l.last_seq
             returning l.n - 1 as n),
           marked as (
             update frame_heads t set trimmed = true from heads h
              where t.instance_id = h.instance_id and t.generation = h.generation
             returning 1)
           select (select count(*) from marked)::int as generations, (select coalesce(sum(n), 0) from (select n from gone union all select n from cut) x)::int as frames`,
    values: [p.keepMs, p.limit],
  });
  return rows[0] ?? { generations: 0, frames: 0 };
}
