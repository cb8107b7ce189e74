// Batches: cancel, retry, suspend, resume or migrate every instance an instance search matches, a chunk at a time.
// Each instance is its own transaction, holding only its own row, and that transaction
// writes the instance's result row: a node killed between two instances loses nothing and,
// since an instance with a result is never taken again, applies nothing twice.
import type { Engine } from './context.ts';
import { retryIncidentInTransaction } from './incidents.ts';
import { cancelInTransaction } from './instances.ts';
import { resumeInTransaction, suspendInTransaction } from './suspension.ts';
import { migrateInTransaction } from './migration.ts';
import type { BatchOperation, BatchOutcome } from '../model/vocabulary.ts';
import {
  advanceBatch,
  cancelBatch,
  completeBatch,
  hasBatchResult,
  holdBatch,
  insertBatch,
  insertBatchResult,
  lockBatch,
  nextBatchInstances,
  type BatchOptions,
  type BatchRow,
  type CancelBatchResult,
} from '../store/batches.ts';
import { withTransaction, type PoolClient } from '../store/db.ts';
import { listIncidents } from '../store/incidents.ts';
import { lockInstance } from '../store/instances.ts';
import type { InstanceSearch } from '../store/queries.ts';
import { fault, FaultPoint } from '../shared/faults.ts';

export interface CreateBatchRequest {
  operation: BatchOperation;
  filter: InstanceSearch;
  options?: BatchOptions;
  /** the caller's name and role */
  createdBy: string | null;
}

/** A running batch (completed at once when nothing matches); any node's batch runner takes it from here. */
export async function createBatch(engine: Engine, req: CreateBatchRequest): Promise<BatchRow> {
  return insertBatch(engine.pool, {
    operation: req.operation,
    filter: req.filter,
    options: req.options ?? {},
    createdBy: req.createdBy,
  });
}

/** Stops a running batch once the instance being worked on (if any) has committed. */
export async function stopBatch(engine: Engine, batchId: string): Promise<CancelBatchResult> {
  return withTransaction(engine.pool, async (tx) => {
    await lockBatch(tx, batchId);
    return cancelBatch(tx, batchId);
  });
}

export interface ChunkOptions {
  /** the node's lease owner name */
  owner: string;
  /** instances per chunk */
  chunkSize: number;
  leaseMs: number;
}

export type ChunkResult =
  | { state: 'advanced'; batch: BatchRow }
  | { state: 'completed'; batch: BatchRow }
  /** canceled, or taken by another node after this node's lease expired: this node stops */
  | { state: 'lost' };

/**
 * The next chunk of a batch this node holds: the instances after its cursor that match and
 * have no result, each in its own transaction; then the cursor, counts and lease move on in
 * one statement. No instance left: the batch completes.
 */
export async function runBatchChunk(engine: Engine, batch: BatchRow, opts: ChunkOptions): Promise<ChunkResult> {
  const ids = await nextBatchInstances(engine.pool, batch, opts.chunkSize);
  const last = ids.at(-1);
  if (!last) {
    const completed = await completeBatch(engine.pool, { id: batch.id, owner: opts.owner });
    return completed ? { state: 'completed', batch: completed } : { state: 'lost' };
  }
  for (const instanceId of ids) {
    if ((await applyToInstance(engine, batch, instanceId, opts.owner)) === 'lost') return { state: 'lost' };
    await fault(FaultPoint.batchAfterInstance);
  }
  const advanced = await advanceBatch(engine.pool, { id: batch.id, owner: opts.owner, to: last, leaseMs: opts.leaseMs });
  return advanced.ok ? { state: 'advanced', batch: advanced.batch } : { state: 'lost' };
}

/** An operation refused part-way (a later incident's retry): thrown so its transaction rolls back. */
class OperationRefused extends Error {}

interface Outcome {
  outcome: BatchOutcome;
  message?: string;
}

async function applyToInstance(engine: Engine, batch: BatchRow, instanceId: string, owner: string): Promise<'applied' | 'lost'> {
  try {
    return await withTransaction(engine.pool, async (tx) => {
      if (!(await holdBatch(tx, batch.id, owner))) return 'lost';
      if (await hasBatchResult(tx, batch.id, instanceId)) return 'applied';
      const result = await applyOperation(engine, tx, batch, instanceId);
      await insertBatchResult(tx, { batchId: batch.id, instanceId, ...result });
      return 'applied';
    });
  } catch (err) {
    // A lost connection, a deadlock or a serialization failure: the loop tries the chunk again later.
    if (isTransient(err)) throw err;
    // Refused, or a bug in the operation: it rolled back, and the instance is recorded failed.
    const message = (err as Error).message;
    return withTransaction(engine.pool, async (tx) => {
      if (!(await holdBatch(tx, batch.id, owner))) return 'lost';
      await insertBatchResult(tx, { batchId: batch.id, instanceId, outcome: 'failed', message });
      return 'applied';
    });
  }
}

function isTransient(err: unknown): boolean {
  if (err instanceof OperationRefused) return false;
  const { code, message } = err as { code?: unknown; message?: unknown };
  // SQLSTATE classes 08 (connection), 40 (rollback: deadlock, serialization), 57 (a shutdown); Node's socket errors
  if (typeof code === 'string' && /^(08|40|57|E[A-Z]+$)/.test(code)) return true;
  return typeof message === 'string' && /connection/i.test(message);
}

async function applyOperation(engine: Engine, tx: PoolClient, batch: BatchRow, instanceId: string): Promise<Outcome> {
  switch (batch.operation) {
    case 'cancel':
      return cancelOne(tx, instanceId, actorOf(batch));
    case 'retry':
      return retryOne(engine, tx, batch, instanceId);
    case 'suspend':
    case 'resume':
      return suspendOrResumeOne(engine, tx, batch, instanceId);
    case 'migrate':
      return migrateOne(engine, tx, batch, instanceId);
  }
}

/** An instance the plan refuses is `failed` with the first problem; one already at the version is skipped. */
async function migrateOne(engine: Engine, tx: PoolClient, batch: BatchRow, instanceId: string): Promise<Outcome> {
  const { version, mapping } = batch.options;
  const r = await migrateInTransaction(engine, tx, {
    instanceId,
    version: version!,
    ...(mapping ? { mapping } : {}),
    by: actorOf(batch),
  });
  if (r.ok) return { outcome: 'done', message: `version ${r.summary.fromVersion} to ${r.summary.toVersion}` };
  switch (r.reason) {
    case 'not_found':
      return { outcome: 'skipped', message: 'the instance no longer exists' };
    case 'same_version':
      return { outcome: 'skipped', message: `already at version ${r.version}` };
    case 'not_running':
      return { outcome: 'skipped', message: `the instance is ${r.status}` };
    case 'suspended':
      return { outcome: 'failed', message: 'the instance is suspended: resume it, then migrate' };
    case 'no_version':
      return { outcome: 'failed', message: `no version ${r.version} of ${r.key}` };
    case 'invalid':
      return { outcome: 'failed', message: r.problems.map((p) => `${p.elementId}: ${p.message}`).join('; ') };
  }
}

async function suspendOrResumeOne(engine: Engine, tx: PoolClient, batch: BatchRow, instanceId: string): Promise<Outcome> {
  const by = { by: actorOf(batch) };
  const r =
    batch.operation === 'suspend'
      ? await suspendInTransaction(tx, { instanceId, ...by })
      : await resumeInTransaction(engine, tx, { instanceId, ...by });
  if (!r.ok && r.reason === 'not_found') return { outcome: 'skipped', message: 'the instance no longer exists' };
  if (!r.ok) return { outcome: 'skipped', message: `the instance already ended (${r.status})` };
  if (!r.changed) return { outcome: 'skipped', message: r.suspended ? 'already suspended' : 'not suspended' };
  return { outcome: 'done' };
}

/** Who the history names for a batch's action on an instance: its creator, and the batch. */
function actorOf(batch: BatchRow): string {
  return batch.created_by === null ? `batch ${batch.id}` : `${batch.created_by}, batch ${batch.id}`;
}

async function cancelOne(tx: PoolClient, instanceId: string, by: string): Promise<Outcome> {
  const r = await cancelInTransaction(tx, instanceId, by);
  if (r.ok) return { outcome: 'done' };
  switch (r.reason) {
    case 'not_found':
      return { outcome: 'skipped', message: 'the instance no longer exists' };
    case 'already_ended':
      return { outcome: 'skipped', message: `the instance already ended (${r.status ?? ''})` };
    case 'called':
      return {
        outcome: 'failed',
        message: `started by call activity ${r.parentStepId} of instance ${r.parentInstanceId}: cancel that instance, and its cancel ends this one`,
      };
  }
}

/** Most open incidents one instance has retried in one transaction */
const MAX_INCIDENTS_PER_INSTANCE = 1000;

/** Every open incident of the instance, in one transaction: all of them run again, or none. */
async function retryOne(engine: Engine, tx: PoolClient, batch: BatchRow, instanceId: string): Promise<Outcome> {
  const options = batch.options;
  const instance = await lockInstance(tx, instanceId);
  if (!instance) return { outcome: 'skipped', message: 'the instance no longer exists' };
  if (instance.suspended_at) throw new OperationRefused('the instance is suspended: resume it, then retry');
  const open = await listIncidents(tx, { instanceId, status: 'open', limit: MAX_INCIDENTS_PER_INSTANCE });
  let retried = 0;
  for (const incident of open.reverse()) {
    const r = await retryIncidentInTransaction(engine, tx, {
      incidentId: incident.id,
      ...(options.retries !== undefined ? { retries: options.retries } : {}),
      ...(options.variables ? { variables: options.variables } : {}),
      by: actorOf(batch),
    });
    if (r.ok) retried++;
    else if (r.reason === 'variables_too_large')
      throw new OperationRefused(
        `with these variables the instance would hold ${String(r.details?.actual)} bytes of variables, above the limit of ${String(r.details?.max)} bytes (BATON_MAX_VARIABLES_BYTES)`,
      );
    // not_found, not_open: resolved meanwhile, nothing to do for it
  }
  if (retried === 0) return { outcome: 'skipped', message: `no open incident (the instance is ${instance.status})` };
  return { outcome: 'done', message: `${retried} incident${retried === 1 ? '' : 's'} retried` };
}
