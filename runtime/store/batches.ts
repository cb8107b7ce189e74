// Batches: a bulk operation over the instances an instance search matches (migration 0031).
// The batch row is the progress and the lease; batch_results holds one row per instance reached.
import type { BatchOperation, BatchOutcome, BatchState } from '../model/vocabulary.ts';
import type { Queryable } from './db.ts';
import { instanceFilterOf, instanceWhere, type InstanceSearch } from './queries.ts';

export interface BatchRow {
  id: string;
  operation: BatchOperation;
  filter: InstanceSearch;
  options: BatchOptions;
  state: BatchState;
  total: number;
  done: number;
  failed: number;
  skipped: number;
  cursor: string | null;
  created_by: string | null;
  created_at: Date;
  lease_owner: string | null;
  lease_until: Date | null;
  ended_at: Date | null;
  /** created_at in microseconds, the list's cursor */
  created_us: string;
}

/** retry's options (retries, variables) and migrate's (version, mapping); the others have none */
export interface BatchOptions {
  retries?: number;
  variables?: Record<string, unknown>;
  version?: number;
  mapping?: Record<string, string>;
}

export interface BatchResultRow {
  batch_id: string;
  instance_id: string;
  outcome: BatchOutcome;
  message: string | null;
  at: Date;
}

const BATCH_COLUMNS_SQL = `*, (extract(epoch from created_at) * 1000000)::bigint::text as created_us`;

/**
 * A new batch with the count of the instances its filter matches now. The count and the row's
 * created_at share the transaction's now(): an instance started later is not the batch's.
 * A filter that matches nothing makes a batch completed at once, with total 0.
 */
export async function insertBatch(
  db: Queryable,
  p: { operation: BatchOperation; filter: InstanceSearch; options: BatchOptions; createdBy: string | null },
): Promise<BatchRow> {
  const w = instanceWhere(instanceFilterOf(p.filter));
  const n = w.values.length;
  const { rows } = await db.query<BatchRow>(
    `with matched as (select count(*)::int as total from instances where ${w.sql} and created_at <= now())
     insert into batches (operation, filter, options, created_by, total, state, ended_at)
     select $${n + 1}, $${n + 2}::jsonb, $${n + 3}::jsonb, $${n + 4}, total,
            case when total = 0 then 'completed' else 'running' end,
            case when total = 0 then now() end
       from matched
     returning ${BATCH_COLUMNS_SQL}`,
    [...w.values, p.operation, JSON.stringify(p.filter), JSON.stringify(p.options), p.createdBy],
  );
  return rows[0]!;
}

export async function findBatch(db: Queryable, id: string): Promise<BatchRow | undefined> {
  const { rows } = await db.query<BatchRow>(`select ${BATCH_COLUMNS_SQL} from batches where id = $1`, [id]);
  return rows[0];
}

/** Newest first; keyset on (created_at, id). */
export async function listBatches(
  db: Queryable,
  p: { after?: { createdUs: string; id: string }; limit: number },
): Promise<BatchRow[]> {
  const { rows } = await db.query<BatchRow>(
    p.after
      ? `select ${BATCH_COLUMNS_SQL} from batches
          where (created_at, id) < (timestamptz 'epoch' + $2::bigint * interval '1 microsecond', $3::uuid)
          order by created_at desc, id desc limit $1`
      : `select ${BATCH_COLUMNS_SQL} from batches order by created_at desc, id desc limit $1`,
    p.after ? [p.limit, p.after.createdUs, p.after.id] : [p.limit],
  );
  return rows;
}

/** A batch's results in instance order (the order it reaches them), after an instance id. */
export async function listBatchResults(
  db: Queryable,
  p: { batchId: string; afterInstanceId?: string; outcome?: BatchOutcome; limit: number },
): Promise<BatchResultRow[]> {
  const { rows } = await db.query<BatchResultRow>(
    `select * from batch_results
      where batch_id = $1 and instance_id > coalesce($2::uuid, '00000000-0000-0000-0000-000000000000')
        and ($3::text is null or outcome = $3)
      order by instance_id limit $4`,
    [p.batchId, p.afterInstanceId ?? null, p.outcome ?? null, p.limit],
  );
  return rows;
}

/**
 * Takes the oldest running batch whose lease is free, expired or the owner's own (after a
 * failed chunk), for `leaseMs`. SKIP LOCKED:
 * nodes claiming at once take different batches, or none.
 */
export async function claimBatch(db: Queryable, owner: string, leaseMs: number): Promise<BatchRow | undefined> {
  const { rows } = await db.query<BatchRow>({
    name: 'claim_batch',
    text: `update batches set lease_owner = $1, lease_until = now() + $2::int * interval '1 millisecond'
            where id = (select id from batches
                         where state = 'running' and (lease_until is null or lease_until < now() or lease_owner = $1)
                         order by created_at limit 1 for update skip locked)
        returning ${BATCH_COLUMNS_SQL}`,
    values: [owner, leaseMs],
  });
  return rows[0];
}

/**
 * Inside an instance's transaction: the batch is still running and still this node's (an
 * expired lease no other node took is still its). FOR SHARE keeps it so until the commit: a
 * cancel waits for the instance's transaction, a claim skips the row, and no result is
 * written after the batch stopped or changed hands.
 */
export async function holdBatch(db: Queryable, id: string, owner: string): Promise<boolean> {
  const { rows } = await db.query({
    name: 'hold_batch',
    text: `select 1 from batches where id = $1 and state = 'running' and lease_owner = $2 for share`,
    values: [id, owner],
  });
  return rows.length > 0;
}

/** The next instance ids the batch has to reach: matching, created up to it, after its cursor, without a result. */
export async function nextBatchInstances(db: Queryable, batch: BatchRow, limit: number): Promise<string[]> {
  const w = instanceWhere({
    ...instanceFilterOf(batch.filter),
    batchId: batch.id,
    ...(batch.cursor ? { afterId: batch.cursor } : {}),
  });
  const { rows } = await db.query<{ id: string }>(
    `select id from instances where ${w.sql} order by id limit $${w.values.length + 1}`,
    [...w.values, limit],
  );
  return rows.map((r) => r.id);
}

export async function hasBatchResult(db: Queryable, batchId: string, instanceId: string): Promise<boolean> {
  const { rows } = await db.query({
    name: 'has_batch_result',
    text: 'select 1 from batch_results where batch_id = $1 and instance_id = $2',
    values: [batchId, instanceId],
  });
  return rows.length > 0;
}

/** The instance's one result; a second write for it changes nothing (answers false). */
export async function insertBatchResult(
  db: Queryable,
  p: { batchId: string; instanceId: string; outcome: BatchOutcome; message?: string },
): Promise<boolean> {
  const { rowCount } = await db.query({
    name: 'insert_batch_result',
    text: `insert into batch_results (batch_id, instance_id, outcome, message) values ($1, $2, $3, $4)
           on conflict (batch_id, instance_id) do nothing`,
    values: [p.batchId, p.instanceId, p.outcome, p.message ?? null],
  });
  return (rowCount ?? 0) > 0;
}

// The counts plus the results past the cursor (up to the chunk's last instance, $3, or all):
// each result is counted once, by the statement that moves the cursor over it or ends the batch.
const COUNTS_PAST_CURSOR_SQL = `select batches.done + count(*) filter (where r.outcome = 'done'),
         batches.failed + count(*) filter (where r.outcome = 'failed'),
         batches.skipped + count(*) filter (where r.outcome = 'skipped')
    from batch_results r
   where r.batch_id = batches.id and r.instance_id > coalesce(batches.cursor, '00000000-0000-0000-0000-000000000000')`;
const CHUNK_COUNTS_SQL = `(done, failed, skipped) = (${COUNTS_PAST_CURSOR_SQL} and r.instance_id <= $3::uuid)`;
const REST_COUNTS_SQL = `(done, failed, skipped) = (${COUNTS_PAST_CURSOR_SQL})`;

export type AdvanceBatchResult = { ok: true; batch: BatchRow } | { ok: false; reason: 'lease_lost' };

/**
 * After a chunk: the cursor moves to its last instance, the counts take its results and the
 * lease is renewed. Guarded by the owner and the running state, so a node that lost the batch
 * (its lease expired and another took it, or an operator canceled it) changes nothing.
 */
export async function advanceBatch(
  db: Queryable,
  p: { id: string; owner: string; to: string; leaseMs: number },
): Promise<AdvanceBatchResult> {
  const { rows } = await db.query<BatchRow>({
    name: 'advance_batch',
    text: `update batches set ${CHUNK_COUNTS_SQL}, cursor = $3::uuid, lease_until = now() + $4::int * interval '1 millisecond'
            where id = $1 and lease_owner = $2 and state = 'running'
        returning ${BATCH_COLUMNS_SQL}`,
    values: [p.id, p.owner, p.to, p.leaseMs],
  });
  return rows[0] ? { ok: true, batch: rows[0] } : { ok: false, reason: 'lease_lost' };
}

/** No instance left: the results past the cursor are counted, the batch completes, the lease is let go. */
export async function completeBatch(db: Queryable, p: { id: string; owner: string }): Promise<BatchRow | undefined> {
  const { rows } = await db.query<BatchRow>({
    name: 'complete_batch',
    text: `update batches set ${REST_COUNTS_SQL}, state = 'completed', ended_at = now(), lease_owner = null, lease_until = null
            where id = $1 and lease_owner = $2 and state = 'running'
        returning ${BATCH_COLUMNS_SQL}`,
    values: [p.id, p.owner],
  });
  return rows[0];
}

/** A stopping node lets its batch go, so another node takes it at once instead of after the lease. */
export async function releaseBatch(db: Queryable, p: { id: string; owner: string }): Promise<void> {
  await db.query({
    name: 'release_batch',
    text: `update batches set lease_owner = null, lease_until = null where id = $1 and lease_owner = $2 and state = 'running'`,
    values: [p.id, p.owner],
  });
}

export type CancelBatchResult = { ok: true; batch: BatchRow } | { ok: false; reason: 'not_found' | 'ended'; state?: BatchState };

/**
 * Stops a running batch; run in a transaction after lockBatch, whose wait for an instance
 * transaction holding the batch (holdBatch) lets this statement's snapshot see its result:
 * the results past the cursor it counts are all there will be.
 */
export async function cancelBatch(db: Queryable, id: string): Promise<CancelBatchResult> {
  const { rows } = await db.query<BatchRow>({
    name: 'cancel_batch',
    text: `update batches set ${REST_COUNTS_SQL}, state = 'canceled', ended_at = now(), lease_owner = null, lease_until = null
            where id = $1 and state = 'running'
        returning ${BATCH_COLUMNS_SQL}`,
    values: [id],
  });
  if (rows[0]) return { ok: true, batch: rows[0] };
  const found = await findBatch(db, id); // miss path only
  return found ? { ok: false, reason: 'ended', state: found.state } : { ok: false, reason: 'not_found' };
}

/** Waits for the instance transactions holding the batch, then holds it until the commit. */
export async function lockBatch(db: Queryable, id: string): Promise<void> {
  await db.query({ name: 'lock_batch', text: 'select 1 from batches where id = $1 for update', values: [id] });
}
