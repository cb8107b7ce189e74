import { Router } from 'express';
import type { Engine } from '../engine/context.ts';
import { retryIncident, type RetryIncidentRequest } from '../engine/incidents.ts';
import { withPlannerDefaults } from '../store/db.ts';
import { listIncidents } from '../store/incidents.ts';
import { BatonError } from '../shared/errors.ts';
import { requireUuid, validateBody, validateQuery } from '../shared/validate.ts';
import { incidentView } from './views.ts';

export function incidentsRouter(engine: Engine): Router {
  const router = Router();

  router.get('/', async (req, res) => {
    const q = validateQuery<{ status?: 'open' | 'resolved'; instanceId?: string; limit?: number }>(
      'list-incidents-query',
      req.query,
    );
    const items = await withPlannerDefaults(engine.pool, (db) =>
      listIncidents(db, { ...q, status: q.status ?? 'open', limit: q.limit ?? 100 }),
    );
    res.json({ items: items.map(incidentView) });
  });

  router.post('/:id/retry', async (req, res) => {
    const incidentId = requireUuid(req.params.id, 'incident');
    const body = validateBody<Omit<RetryIncidentRequest, 'incidentId'>>('retry-incident-request', req.body ?? {});
    const result = await retryIncident(engine, { ...body, incidentId });
    if (!result.ok && result.reason === 'not_found') throw new BatonError('not_found', `No incident with id "${incidentId}"`);
    if (!result.ok)
      throw new BatonError('conflict', `Incident ${incidentId} is not open (already retried, or its instance ended)`);
    res.json({ id: incidentId, status: 'resolved', instanceStatus: result.status });
  });

  return router;
}
