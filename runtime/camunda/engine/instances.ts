// Start through the Camunda API: the same transition as engine/instances.ts
// startInstance, plus the Camunda types of the start variables in the same
// transaction (a task created by the start can be fetched the moment it commits).
import { startPlan } from '../../engine/advance.ts';
import { emptyEffects } from '../../model/effects.ts';
import { planOf, type Engine } from '../../engine/context.ts';
import { commitWithPlan, type CamundaVariables } from './tasks.ts';
import { withTransaction } from '../../store/db.ts';
import { writeVariableTypes } from '../store/variables.ts';
import { insertInstance } from '../../store/instances.ts';
import type { StartInstanceResult } from '../../engine/instances.ts';

export interface CamundaStartRequest {
  definitionKey: string;
  version?: number;
  businessKey: string | null;
  variables: CamundaVariables;
}

export async function startCamundaInstance(engine: Engine, req: CamundaStartRequest): Promise<StartInstanceResult> {
  return withTransaction(engine.pool, async (tx) => {
    const variables = req.variables.values;
    const inserted = await insertInstance(tx, {
      definitionKey: req.definitionKey,
      businessKey: req.businessKey,
      variables,
      ...(req.version !== undefined ? { version: req.version } : {}),
    });
    if (!inserted.ok || !inserted.created) return inserted;
    const instance = { ...inserted.instance, state: { flows: {}, steps: {} } };
    const plan = await planOf(engine, instance.definition_id, tx);
    const fx = emptyEffects();
    fx.events.push({
      kind: 'instance:started',
      data: { businessKey: instance.business_key, definitionId: instance.definition_id },
    });
    startPlan(plan, instance.state, { ...variables, ...req.variables.transient }, fx);
    // The row was inserted as 'running'; only a change (an instant end or incident) is an event.
    const status = await commitWithPlan(tx, { ...instance, status: 'running' }, fx, variables, plan);
    await writeVariableTypes(tx, instance.id, req.variables.types);
    return { ok: true, created: true, instance: { ...instance, status, revision: 1 } };
  });
}
