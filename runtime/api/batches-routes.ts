// /api/batches: cancel or retry every instance an instance search matches, as a durable batch
// that the nodes' batch runners work through (engine/batches.ts). Lists page newest first.
import { Router } from 'express';
import type { Engine } from '../engine/context.ts';
import { createBatch, stopBatch } from '../engine/batches.ts';
import type { BatchOperation, BatchOutcome } from '../model/vocabulary.ts';
import type { Caller } from '../security/auth.ts';
import { findBatch, listBatches, listBatchResults, type BatchOptions, type BatchRow } from '../store/batches.ts';
import type { InstanceSearch } from '../store/queries.ts';
import { BatonError } from '../shared/errors.ts';
import { isUuid, requireUuid, validateBody, validateQuery } from '../shared/validate.ts';
import { sendAnswer } from './answer.ts';
import { readCursor, writeCursor } from './cursors.ts';
import { batchResultView, batchView } from './views.ts';

interface CreateBatchBody {
  operation: BatchOperation;
  filter: InstanceSearch;
  options?: BatchOptions;
}

/** Which options each operation reads. */
const OPTIONS_OF: Record<BatchOperation, string[]> = {
  cancel: [],
  retry: ['retries', 'variables'],
  suspend: [],
  resume: [],
  migrate: ['version', 'mapping'],
};

/** `onCreated` tells this node's batch runner, so the batch starts without waiting for its next look. */
export function batchesRouter(engine: Engine, onCreated: () => void = () => {}): Router {
  const router = Router();

  router.post('/', async (req, res) => {
    const body = validateBody<CreateBatchBody>('create-batch-request', req.body);
    const given = Object.keys(body.options ?? {});
    const allowed = OPTIONS_OF[body.operation];
    const stray = given.filter((name) => !allowed.includes(name));
    if (stray.length > 0)
      throw new BatonError('validation', `Invalid request body: a ${body.operation} batch takes no option ${stray.join(', ')}`, [
        { path: '/options', message: `${body.operation} takes ${allowed.length > 0 ? allowed.join(', ') : 'no options'}` },
      ]);
    if (body.operation === 'migrate' && body.options?.version === undefined)
      throw new BatonError('validation', 'Invalid request body: a migrate batch needs options.version, the version to move to', [
        { path: '/options', message: "must have required property 'version'" },
      ]);
    const caller = res.locals.caller as Caller | undefined;
    const batch = await createBatch(engine, {
      operation: body.operation,
      filter: body.filter,
      ...(body.options ? { options: body.options } : {}),
      createdBy: caller ? `${caller.name} (${caller.role})` : null,
    });
    if (batch.state === 'running') onCreated();
    sendAnswer(res, { status: 201, body: batchView(batch) });
  });

  router.get('/', async (req, res) => {
    const q = validateQuery<{ cursor?: string; limit?: number }>('list-batches-query', req.query);
    const limit = q.limit ?? 50;
    const rows = await listBatches(engine.pool, { ...(q.cursor ? { after: readCursor(q.cursor) } : {}), limit: limit + 1 });
    const page = rows.slice(0, limit);
    const last = page.at(-1);
    res.json({
      items: page.map(batchView),
      ...(rows.length > limit && last ? { nextCursor: writeCursor(last.created_us, last.id) } : {}),
    });
  });

  router.get('/:id', async (req, res) => {
    res.json(batchView(await batchOf(engine, req.params.id)));
  });

  router.get('/:id/results', async (req, res) => {
    const batch = await batchOf(engine, req.params.id);
    const q = validateQuery<{ cursor?: string; limit?: number; outcome?: BatchOutcome }>('batch-results-query', req.query);
    if (q.cursor !== undefined && !isUuid(q.cursor))
      throw new BatonError('validation', `Invalid query: cursor "${q.cursor}" is not a nextCursor this API gave`);
    const limit = q.limit ?? 100;
    const rows = await listBatchResults(engine.pool, {
      batchId: batch.id,
      ...(q.cursor ? { afterInstanceId: q.cursor } : {}),
      ...(q.outcome ? { outcome: q.outcome } : {}),
      limit: limit + 1,
    });
    const page = rows.slice(0, limit);
    const last = page.at(-1);
    res.json({
      items: page.map(batchResultView),
      ...(rows.length > limit && last ? { nextCursor: last.instance_id } : {}),
    });
  });

  router.post('/:id/cancel', async (req, res) => {
    const id = requireUuid(req.params.id, 'batch');
    const result = await stopBatch(engine, id);
    if (!result.ok && result.reason === 'not_found') throw new BatonError('not_found', `No batch with id "${id}"`);
    if (!result.ok)
      throw new BatonError('conflict', `Batch ${id} already ended (${result.state ?? ''}); nothing to cancel`, {
        state: result.state,
      });
    res.json(batchView(result.batch));
  });

  return router;
}

async function batchOf(engine: Engine, rawId: string | undefined): Promise<BatchRow> {
  const id = requireUuid(rawId, 'batch');
  const batch = await findBatch(engine.pool, id);
  if (!batch) throw new BatonError('not_found', `No batch with id "${id}"`);
  return batch;
}
