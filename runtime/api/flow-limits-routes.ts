// /api/flow-limits: capacity limits of downstream resources (docs/workers.md, "Flow control and fair priority").
// Reads for admin and viewer, writes for admin (runtime/security/roles.ts).
import { Router } from 'express';
import type { Engine } from '../engine/context.ts';
import {
  deleteFlowLimit,
  findFlowLimit,
  listFlowLimits,
  putFlowLimit,
  type FlowLimitRow,
  type PutFlowLimitParams,
} from '../store/flow-limits.ts';
import { BatonError } from '../shared/errors.ts';
import { validateBody } from '../shared/validate.ts';

export function flowLimitsRouter(engine: Engine): Router {
  const router = Router();

  router.get('/', async (_req, res) => {
    res.json({ items: (await listFlowLimits(engine.pool)).map(flowLimitView) });
  });

  router.get('/:resource', async (req, res) => {
    const resource = resourceOf(req.params.resource);
    const limit = await findFlowLimit(engine.pool, resource);
    if (!limit) throw notFound(resource);
    res.json(flowLimitView(limit));
  });

  router.put('/:resource', async (req, res) => {
    const resource = resourceOf(req.params.resource);
    const body = validateBody<Omit<PutFlowLimitParams, 'resource'>>('flow-limit-put-request', req.body);
    const result = await putFlowLimit(engine.pool, { ...body, resource });
    if (!result.ok) {
      const list = result.taken.map((x) => `"${x.topic}" (resource "${x.resource}")`).join(', ');
      throw new BatonError(
        'conflict',
        `A topic belongs to at most one resource: ${list} already covered. Remove it from that limit first; nothing was changed.`,
        result.taken,
      );
    }
    res.status(result.created ? 201 : 200).json(flowLimitView(result.limit));
  });

  router.delete('/:resource', async (req, res) => {
    const resource = resourceOf(req.params.resource);
    if (!(await deleteFlowLimit(engine.pool, resource))) throw notFound(resource);
    res.status(204).end();
  });

  return router;
}

// Same bounds as a topic name (common.schema.json key): anything else cannot exist.
function resourceOf(resource: string | undefined): string {
  if (!resource || resource.length > 255)
    throw new BatonError('validation', 'A resource name is 1 to 255 characters', [
      { path: '/resource', message: 'must be 1 to 255 characters' },
    ]);
  return resource;
}

function notFound(resource: string): BatonError {
  return new BatonError('not_found', `No flow limit for resource "${resource}"; GET /api/flow-limits lists them`);
}

export function flowLimitView(l: FlowLimitRow) {
  return {
    resource: l.resource,
    topics: l.topics,
    maxConcurrent: l.max_concurrent,
    maxStartsPerSecond: l.max_starts_per_second,
    heldLocks: l.held_locks,
    createdAt: l.created_at,
    updatedAt: l.updated_at,
  };
}
