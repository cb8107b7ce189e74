// Operator retry of an incident: a failed task gets new retries, a stuck gateway decides again.
import { resumeStep } from './advance.ts';
import { emptyEffects, type Variables } from '../model/effects.ts';
import { planOf, type Engine } from './context.ts';
import { commitTransition } from './transition.ts';
import type { InstanceStatus } from '../model/vocabulary.ts';
import { withTransaction } from '../store/db.ts';
import { findIncident, requeueFailedTask, resolveIncident } from '../store/incidents.ts';
import { lockInstance } from '../store/instances.ts';

export interface RetryIncidentRequest {
  incidentId: string;
  /** new retry budget for a failed task; default: the task's configured retries */
  retries?: number;
  /** merged into the instance variables before the step runs again */
  variables?: Variables;
}

export type RetryIncidentResult = { ok: true; status: InstanceStatus } | { ok: false; reason: 'not_found' | 'not_open' };

export async function retryIncident(engine: Engine, req: RetryIncidentRequest): Promise<RetryIncidentResult> {
  return withTransaction(engine.pool, async (tx) => {
    const found = await findIncident(tx, req.incidentId);
    if (!found) return { ok: false, reason: 'not_found' };
    const instance = await lockInstance(tx, found.instance_id);
    const incident = await resolveIncident(tx, req.incidentId);
    if (
      !instance ||
      !incident ||
      instance.status === 'canceled' ||
      instance.status === 'completed' ||
      instance.status === 'compensated'
    ) {
      return { ok: false, reason: 'not_open' };
    }
    const variables = { ...instance.variables, ...req.variables };
    const fx = emptyEffects();
    fx.events.push({
      kind: 'incident:resolved',
      stepId: incident.step_id,
      data: { incidentId: incident.id, kind: incident.kind },
    });
    if (incident.task_id) {
      await requeueFailedTask(tx, incident.task_id, req.retries ?? null);
      instance.state.steps[incident.step_id] = 'active';
      fx.steps.push({ stepId: incident.step_id, status: 'active' });
    }
    const plan = await planOf(engine, instance.definition_id, tx);
    if (!incident.task_id) resumeStep(plan, incident.step_id, instance.state, variables, fx);
    const status = await commitTransition(tx, instance, fx, variables, { plan });
    return { ok: true, status };
  });
}
