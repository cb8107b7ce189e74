// Operator retry of an incident: a failed task gets new retries, a stuck gateway decides again.
import { resumeStep } from './advance.ts';
import { emptyEffects, type Variables } from '../model/effects.ts';
import { planOf, type Engine } from './context.ts';
import { commitTransition } from './transition.ts';
import type { InstanceStatus } from '../model/vocabulary.ts';
import { withPlannerDefaults, withTransaction, type PoolClient } from '../store/db.ts';
import { findIncident, listIncidents, requeueFailedTask, resolveIncident, type IncidentFilter } from '../store/incidents.ts';
import { lockInstance } from '../store/instances.ts';
import { jsonbTextBytes } from '../shared/variables-size.ts';

export interface RetryIncidentRequest {
  incidentId: string;
  /** new retry budget for a failed task; default: the task's configured retries */
  retries?: number;
  /** merged into the instance variables before the step runs again, in the retry's transition */
  variables?: Variables;
  /** the caller's token name, kept in the `incident:resolved` event */
  by?: string;
}

export type RetryRefusal = 'not_found' | 'not_open' | 'suspended' | 'variables_too_large';

export type RetryIncidentResult =
  { ok: true; status: InstanceStatus } | { ok: false; reason: RetryRefusal; details?: Record<string, unknown> };

/** One retry, one transaction: the instance's lock is held only for its own incident. */
export async function retryIncident(engine: Engine, req: RetryIncidentRequest): Promise<RetryIncidentResult> {
  return withTransaction(engine.pool, (tx) => retryIncidentInTransaction(engine, tx, req));
}

/** The retry inside the caller's transaction (a batch retries an instance's incidents in one, with its result row). */
export async function retryIncidentInTransaction(
  engine: Engine,
  tx: PoolClient,
  req: RetryIncidentRequest,
): Promise<RetryIncidentResult> {
  const found = await findIncident(tx, req.incidentId);
  if (!found) return { ok: false, reason: 'not_found' };
  const instance = await lockInstance(tx, found.instance_id);
  if (!instance || found.status !== 'open' || isEnded(instance.status)) return { ok: false, reason: 'not_open' };
  if (instance.suspended_at) return { ok: false, reason: 'suspended', details: { instanceId: instance.id } };
  const variables = { ...instance.variables, ...req.variables };
  const max = engine.options.maxVariablesBytes;
  const bytes = req.variables && Number.isFinite(max) ? jsonbTextBytes(variables) : 0;
  if (bytes > max)
    return { ok: false, reason: 'variables_too_large', details: { limit: 'maxVariablesBytes', max, actual: bytes } };
  const incident = await resolveIncident(tx, req.incidentId);
  if (!incident) return { ok: false, reason: 'not_open' };
  const fx = emptyEffects();
  fx.events.push({
    kind: 'incident:resolved',
    stepId: incident.step_id,
    data: {
      incidentId: incident.id,
      kind: incident.kind,
      ...(req.variables ? { variablesSet: Object.keys(req.variables) } : {}),
      by: req.by ?? null,
    },
  });
  if (incident.task_id) {
    await requeueFailedTask(tx, incident.task_id, req.retries ?? null);
    instance.state.steps[incident.step_id] = 'active';
    fx.steps.push({ stepId: incident.step_id, status: 'active' });
  }
  const plan = await planOf(engine, instance.definition_id, tx);
  if (!incident.task_id) resumeStep(plan, incident.step_id, instance.state, variables, fx, req.variables);
  const status = await commitTransition(tx, instance, fx, variables, { plan });
  return { ok: true, status };
}

/** Past this many incidents a retry call answers `more: true`; the caller calls again for the rest. */
export const MAX_RETRIES_PER_CALL = 1000;

export interface RetryIncidentsRequest {
  /** these incidents, or the open ones the filter matches (newest first) */
  ids?: string[];
  filter?: Omit<IncidentFilter, 'status'>;
  retries?: number;
  variables?: Variables;
  by?: string;
}

export interface RetryIncidentsResult {
  results: { id: string; ok: boolean; reason?: RetryRefusal; instanceStatus?: InstanceStatus }[];
  /** the filter matched more open incidents than one call retries */
  more: boolean;
}

/**
 * Retries many incidents one transaction each, in turn: a batch never holds the locks of
 * thousands of instances at once, and one refused retry leaves the others applied.
 */
export async function retryIncidents(
  engine: Engine,
  req: RetryIncidentsRequest,
  max = MAX_RETRIES_PER_CALL,
): Promise<RetryIncidentsResult> {
  let ids = req.ids ?? [];
  let more = false;
  if (!req.ids) {
    const rows = await withPlannerDefaults(engine.pool, (db) =>
      listIncidents(db, { ...req.filter, status: 'open', limit: max + 1 }),
    );
    more = rows.length > max;
    ids = rows.slice(0, max).map((r) => r.id);
  }
  const results: RetryIncidentsResult['results'] = [];
  for (const id of new Set(ids)) {
    const r = await retryIncident(engine, {
      incidentId: id,
      ...(req.retries !== undefined ? { retries: req.retries } : {}),
      ...(req.variables ? { variables: req.variables } : {}),
      ...(req.by ? { by: req.by } : {}),
    });
    results.push(r.ok ? { id, ok: true, instanceStatus: r.status } : { id, ok: false, reason: r.reason });
  }
  return { results, more };
}

export function isEnded(status: InstanceStatus): boolean {
  return status === 'canceled' || status === 'completed' || status === 'compensated';
}
