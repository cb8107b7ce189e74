// /api/incidents: what an operator looks at and retries. Lists page newest first with an
// opaque cursor; a retry of many is one transaction per incident (engine/incidents.ts).
import { readCursor, writeCursor } from './cursors.ts';
import { Router, type Response } from 'express';
import type { Caller } from '../security/auth.ts';
import type { Engine } from '../engine/context.ts';
import { retryIncident, retryIncidents, type RetryIncidentRequest, type RetryIncidentResult } from '../engine/incidents.ts';
import type { Variables } from '../model/effects.ts';
import type { IncidentKind } from '../model/vocabulary.ts';
import { withPlannerDefaults } from '../store/db.ts';
import { countIncidents, listIncidents, type IncidentFilter } from '../store/incidents.ts';
import { BatonError } from '../shared/errors.ts';
import { requireUuid, validateBody, validateQuery } from '../shared/validate.ts';
import { incidentListView } from './views.ts';

/** The filters as the query string and the retry body name them. */
interface FilterQuery {
  instanceId?: string;
  definitionKey?: string;
  version?: number;
  definitionId?: string;
  kind?: IncidentKind;
  stepId?: string;
  olderThan?: string;
  newerThan?: string;
}

interface ListQuery extends FilterQuery {
  status?: 'open' | 'resolved';
  cursor?: string;
  limit?: number;
}

interface RetryManyBody {
  ids?: string[];
  filter?: FilterQuery;
  retries?: number;
  variables?: Variables;
}

export function incidentsRouter(engine: Engine): Router {
  const router = Router();

  router.get('/', async (req, res) => {
    const q = validateQuery<ListQuery>('list-incidents-query', req.query);
    const limit = q.limit ?? 100;
    const rows = await withPlannerDefaults(engine.pool, (db) =>
      listIncidents(db, {
        ...filterOf(q),
        status: q.status ?? 'open',
        ...(q.cursor ? { after: readCursor(q.cursor) } : {}),
        limit: limit + 1,
      }),
    );
    const page = rows.slice(0, limit);
    const last = page.at(-1);
    res.json({
      items: page.map(incidentListView),
      ...(rows.length > limit && last ? { nextCursor: writeCursor(last.created_us, last.id) } : {}),
    });
  });

  router.get('/count', async (req, res) => {
    const q = validateQuery<FilterQuery & { status?: 'open' | 'resolved' }>('count-incidents-query', req.query);
    const byKind = await withPlannerDefaults(engine.pool, (db) =>
      countIncidents(db, { ...filterOf(q), status: q.status ?? 'open' }),
    );
    res.json({
      count: byKind.reduce((sum, k) => sum + k.count, 0),
      byKind: Object.fromEntries(byKind.map((k) => [k.kind, k.count])),
    });
  });

  router.post('/retry', async (req, res) => {
    const body = validateBody<RetryManyBody>('retry-incidents-request', req.body ?? {});
    if ((body.ids === undefined) === (body.filter === undefined))
      throw new BatonError('validation', 'Invalid request body: name the incidents by ids or by filter, one of them', [
        { path: '/', message: 'must have ids or filter, not both' },
      ]);
    const answer = await retryIncidents(engine, {
      ...(body.ids ? { ids: body.ids } : { filter: filterOf(body.filter ?? {}) }),
      ...(body.retries !== undefined ? { retries: body.retries } : {}),
      ...(body.variables ? { variables: body.variables } : {}),
      ...(callerOf(res) ? { by: callerOf(res)! } : {}),
    });
    res.json(answer);
  });

  router.post('/:id/retry', async (req, res) => {
    const incidentId = requireUuid(req.params.id, 'incident');
    const body = validateBody<Omit<RetryIncidentRequest, 'incidentId'>>('retry-incident-request', req.body ?? {});
    const by = callerOf(res);
    const result = await retryIncident(engine, { ...body, incidentId, ...(by ? { by } : {}) });
    if (!result.ok) throw refusalError(incidentId, result);
    res.json({ id: incidentId, status: 'resolved', instanceStatus: result.status });
  });

  return router;
}

function callerOf(res: Response): string | undefined {
  return (res.locals.caller as Caller | undefined)?.name;
}

function refusalError(incidentId: string, result: Extract<RetryIncidentResult, { ok: false }>): BatonError {
  switch (result.reason) {
    case 'not_found':
      return new BatonError('not_found', `No incident with id "${incidentId}"`);
    case 'variables_too_large':
      return new BatonError(
        'payload_too_large',
        `With these variables the instance of incident ${incidentId} would hold ${String(result.details?.actual)} bytes of variables, above the limit of ${String(result.details?.max)} bytes (BATON_MAX_VARIABLES_BYTES)`,
        result.details,
      );
    case 'not_open':
      return new BatonError('conflict', `Incident ${incidentId} is not open (already retried, or its instance ended)`);
    case 'suspended':
      return new BatonError(
        'conflict',
        `The instance of incident ${incidentId} is suspended: resume it (POST /api/instances/${String(result.details?.instanceId)}/resume), then retry`,
        result.details,
      );
  }
}

const AGE_UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };

/** An age the schema let through (`15m`) in seconds. */
function seconds(age: string): number {
  return Number(age.slice(0, -1)) * (AGE_UNIT_SECONDS[age.slice(-1)] ?? 1);
}

function filterOf(q: FilterQuery): Omit<IncidentFilter, 'status'> {
  return {
    ...(q.instanceId ? { instanceId: q.instanceId } : {}),
    ...(q.definitionKey ? { definitionKey: q.definitionKey } : {}),
    ...(q.version !== undefined ? { definitionVersion: q.version } : {}),
    ...(q.definitionId ? { definitionId: q.definitionId } : {}),
    ...(q.kind ? { kind: q.kind } : {}),
    ...(q.stepId ? { stepId: q.stepId } : {}),
    ...(q.olderThan ? { olderThanSeconds: seconds(q.olderThan) } : {}),
    ...(q.newerThan ? { newerThanSeconds: seconds(q.newerThan) } : {}),
  };
}
