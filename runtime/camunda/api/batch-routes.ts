// /engine-rest/batch: Baton's running batches as Camunda's runtime batches. Camunda moves a
// batch to its history once it ends, so an ended Baton batch is not here (404); the native
// GET /api/batches/:id keeps it with its results.
import { Router } from 'express';
import type { Engine } from '../../engine/context.ts';
import { stopBatch } from '../../engine/batches.ts';
import { isUuid } from '../../shared/validate.ts';
import { countCamundaBatches, listCamundaBatches, type CamundaBatchQuery } from '../store/batches.ts';
import { batchDtoView, batchStatisticsView, operationsOfType } from './batch-views.ts';
import { invalidRequest, notFound, sendJson, sendNoContent } from './errors.ts';
import { readDate, readFlag, readPaging, readSorting, readText, refuseUnsupported, type Source } from './query-params.ts';

export function batchRouter(engine: Engine): Router {
  const router = Router();

  router.get('/', async (req, res) => {
    sendJson(res, 200, (await listCamundaBatches(engine.pool, readBatchQuery(req.query))).map(batchDtoView));
  });
  router.get('/count', async (req, res) => {
    sendJson(res, 200, { count: await countCamundaBatches(engine.pool, readBatchQuery(req.query)) });
  });
  router.get('/statistics', async (req, res) => {
    sendJson(res, 200, (await listCamundaBatches(engine.pool, readBatchQuery(req.query))).map(batchStatisticsView));
  });
  router.get('/statistics/count', async (req, res) => {
    sendJson(res, 200, { count: await countCamundaBatches(engine.pool, readBatchQuery(req.query)) });
  });

  router.get('/:id', async (req, res) => {
    const id = String(req.params.id);
    const [batch] = await listCamundaBatches(engine.pool, { batchId: id, sortOrder: 'asc', firstResult: 0, maxResults: 1 });
    if (!batch) throw notFound(`Batch with id '${id}' does not exist`);
    sendJson(res, 200, batchDtoView(batch));
  });

  // Camunda deletes a running batch; Baton stops it (the instance being worked on finishes) and keeps it and its results.
  router.delete('/:id', async (req, res) => {
    const id = String(req.params.id);
    if (readFlag(req.query, 'cascade', 'query'))
      throw invalidRequest('Baton keeps a stopped batch and its results (GET /api/batches/:id): cascade=true cannot be honoured');
    const result = isUuid(id) ? await stopBatch(engine, id) : ({ ok: false, reason: 'not_found' } as const);
    // As Camunda: a batch that does not exist (or ended: Camunda has removed it) cannot be deleted, 400.
    if (!result.ok) throw invalidRequest(`Unable to delete batch with id '${id}': no running batch has that id`);
    sendNoContent(res);
  });

  return router;
}

const BATCH_SORT = { batchId: 'b.id' } as const;

function readBatchQuery(query: Source): CamundaBatchQuery {
  refuseUnsupported(query, ['tenantIdIn'], 'batch');
  const sorting = readSorting(query, 'query', BATCH_SORT, 'batches');
  const q: CamundaBatchQuery = { sortOrder: sorting[0]?.sortOrder ?? 'asc', ...readPaging(query) };
  const batchId = readText(query, 'batchId');
  if (batchId !== undefined) q.batchId = batchId;
  const type = readText(query, 'type');
  if (type !== undefined) q.operations = operationsOfType(type);
  const createdBy = readText(query, 'createdBy');
  if (createdBy !== undefined) q.createdBy = createdBy;
  const startedBefore = readDate(query, 'startedBefore');
  if (startedBefore) q.startedBefore = startedBefore;
  const startedAfter = readDate(query, 'startedAfter');
  if (startedAfter) q.startedAfter = startedAfter;
  if (readFlag(query, 'suspended', 'query')) q.suspended = true;
  const withFailures = readFlag(query, 'withFailures', 'query');
  const withoutFailures = readFlag(query, 'withoutFailures', 'query');
  if (withFailures && withoutFailures) throw invalidRequest('withFailures and withoutFailures exclude each other: give one');
  if (withFailures) q.withFailures = true;
  if (withoutFailures) q.withFailures = false;
  return q;
}
