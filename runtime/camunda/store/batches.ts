// Baton's batches as Camunda's runtime batches: only running ones (Camunda moves an ended
// batch to its history), with counts read from the results, so they move per instance rather
// than per chunk as the batch row's do.
import type { BatchOperation } from '../../model/vocabulary.ts';
import type { Queryable } from '../../store/db.ts';
import { isUuid } from '../../shared/validate.ts';
import { clauses } from './process-queries.ts';

export interface CamundaBatchRow {
  id: string;
  operation: BatchOperation;
  total: number;
  done: number;
  failed: number;
  skipped: number;
  created_by: string | null;
  created_at: Date;
}

export interface CamundaBatchQuery {
  batchId?: string;
  /** the operations of the Camunda type asked for; empty matches nothing */
  operations?: BatchOperation[];
  /** Baton's batches are never suspended: true matches nothing */
  suspended?: boolean;
  createdBy?: string;
  startedBefore?: Date;
  startedAfter?: Date;
  /** with a failed instance (true) or without (false) */
  withFailures?: boolean;
  sortOrder: 'asc' | 'desc';
  firstResult: number;
  maxResults: number;
}

// Results per outcome: a running batch's rows past its cursor are not in its counts yet.
const COUNTED_SQL = `b.id, b.operation, b.total, b.created_by, b.created_at,
  (select count(*) from batch_results r where r.batch_id = b.id and r.outcome = 'done')::int as done,
  (select count(*) from batch_results r where r.batch_id = b.id and r.outcome = 'failed')::int as failed,
  (select count(*) from batch_results r where r.batch_id = b.id and r.outcome = 'skipped')::int as skipped`;

function batchWhere(q: CamundaBatchQuery) {
  const w = clauses(`b.state = 'running'`);
  if (q.suspended === true) w.raw('false');
  if (q.batchId !== undefined)
    if (isUuid(q.batchId)) w.add('b.id = ?::uuid', q.batchId);
    else w.raw('false');
  if (q.operations !== undefined) w.add('b.operation = any(?::text[])', q.operations);
  if (q.createdBy !== undefined) w.add('b.created_by = ?', q.createdBy);
  if (q.startedBefore !== undefined) w.add('b.created_at < ?::timestamptz', q.startedBefore);
  if (q.startedAfter !== undefined) w.add('b.created_at > ?::timestamptz', q.startedAfter);
  if (q.withFailures === true) w.raw(`exists (select 1 from batch_results f where f.batch_id = b.id and f.outcome = 'failed')`);
  if (q.withFailures === false)
    w.raw(`not exists (select 1 from batch_results f where f.batch_id = b.id and f.outcome = 'failed')`);
  return w;
}

export async function listCamundaBatches(db: Queryable, q: CamundaBatchQuery): Promise<CamundaBatchRow[]> {
  const w = batchWhere(q);
  const n = w.values.length;
  const { rows } = await db.query<CamundaBatchRow>(
    q.sortOrder === 'desc'
      ? `select ${COUNTED_SQL} from batches b where ${w.sql} order by b.id desc offset $${n + 1} limit $${n + 2}`
      : `select ${COUNTED_SQL} from batches b where ${w.sql} order by b.id offset $${n + 1} limit $${n + 2}`,
    [...w.values, q.firstResult, q.maxResults],
  );
  return rows;
}

export async function countCamundaBatches(db: Queryable, q: CamundaBatchQuery): Promise<number> {
  const w = batchWhere(q);
  const { rows } = await db.query<{ count: number }>(`select count(*)::int as count from batches b where ${w.sql}`, w.values);
  return rows[0]?.count ?? 0;
}
