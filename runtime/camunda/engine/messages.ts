// POST /engine-rest/message as Camunda 7 correlates a message: to the executions waiting for
// its name whose instance's current process variables hold every correlation key (and whose
// business key and id are the ones given), else to the process whose message start event
// names it. The catch event's own correlation key (baton:correlationKey, zeebe:subscription)
// plays no part here: it is how the native /api/messages correlates.
import { randomUUID } from 'node:crypto';
import type { Engine } from '../../engine/context.ts';
import { startOnMessage } from '../../engine/event-starts.ts';
import { deliverToSubscription, retryWhileBusy } from '../../engine/waits.ts';
import type { PoolClient } from '../../store/db.ts';
import { lockInstance } from '../../store/instances.ts';
import { insertMessage, lockMessageName } from '../../store/waits.ts';
import { lockCorrelatedSubscriptions, type CorrelationKey } from '../store/correlations.ts';
import { loadInstanceVariables, writeVariableTypes, type InstanceVariables } from '../store/variables.ts';
import type { CamundaVariables } from './tasks.ts';

export interface CamundaCorrelationRequest {
  messageName: string;
  businessKey: string | null;
  instanceId: string | null;
  correlationKeys: CorrelationKey[];
  /** processVariables: written to each instance the message reaches (or starts), types kept */
  variables: Pick<CamundaVariables, 'values' | 'types'>;
  /** every matching execution, and a start, rather than exactly one of them */
  all: boolean;
  /** read each instance reached as the correlation left it (resultEnabled) */
  readInstances: boolean;
}

export interface Correlation {
  /** Execution: a waiting catch took the message; ProcessDefinition: a message start event started the instance */
  resultType: 'Execution' | 'ProcessDefinition';
  instanceId: string;
  /** with readInstances: the instance and its variables at the end of the correlation's transaction */
  instance?: InstanceVariables;
}

export type CamundaCorrelationResult =
  | { ok: true; correlations: Correlation[] }
  /** without `all`: nothing waits and nothing starts on the message */
  | { ok: false; reason: 'no_match' }
  /** without `all`: several executions match; nothing was changed */
  | { ok: false; reason: 'ambiguous'; executions: number };

/**
 * Correlates in one transaction under the message-name lock, so two correlations of one
 * message never both take one waiting execution: the second finds the subscription gone.
 * Each execution reached is one transition of its instance, in instance order; a message
 * start event starts an instance only when no execution matched (with `all`, also when some
 * did), and never for a message addressed to one instance. Every delivery is recorded in the
 * inbox as matched.
 */
export async function correlateCamundaMessage(engine: Engine, req: CamundaCorrelationRequest): Promise<CamundaCorrelationResult> {
  return retryWhileBusy(engine, `Message '${req.messageName}'`, (tx) => tryCorrelate(engine, tx, req));
}

async function tryCorrelate(
  engine: Engine,
  tx: PoolClient,
  req: CamundaCorrelationRequest,
): Promise<CamundaCorrelationResult | 'busy'> {
  await lockMessageName(tx, req.messageName);
  const found = await lockCorrelatedSubscriptions(tx, {
    messageName: req.messageName,
    businessKey: req.businessKey,
    instanceId: req.instanceId,
    keys: req.correlationKeys,
  });
  if (!found.ok) return 'busy';
  if (!req.all && found.subscriptions.length > 1)
    return { ok: false, reason: 'ambiguous', executions: found.subscriptions.length };
  const correlations: Correlation[] = [];
  for (const sub of found.subscriptions) {
    // Held since the statement above; read again for the state an earlier delivery to it left.
    const instance = await lockInstance(tx, sub.instance_id);
    const messageId = randomUUID();
    if (!instance || !(await deliverToSubscription(engine, tx, instance, sub, { ...req.variables.values }, { messageId })))
      continue;
    await recordDelivery(tx, req, messageId, instance.id, sub.step_id);
    correlations.push({ resultType: 'Execution', instanceId: instance.id });
  }
  if (req.instanceId === null && (req.all || correlations.length === 0)) {
    const start = await startOnMessage(engine, tx, {
      name: req.messageName,
      businessKey: req.businessKey,
      variables: { ...req.variables.values },
    });
    // An instance already holding the business key is answered as the start (business keys are unique in Baton).
    if (start?.created) await recordDelivery(tx, req, randomUUID(), start.instanceId, start.stepId);
    if (start && !correlations.some((c) => c.instanceId === start.instanceId))
      correlations.push({ resultType: 'ProcessDefinition', instanceId: start.instanceId });
  }
  if (correlations.length === 0 && !req.all) return { ok: false, reason: 'no_match' };
  if (req.readInstances)
    for (const c of correlations) {
      const read = await loadInstanceVariables(tx, c.instanceId);
      if (read) c.instance = read;
    }
  return { ok: true, correlations };
}

/** The inbox row of one delivery (already matched: Camunda keeps nothing for later) and the variables' types. */
async function recordDelivery(
  tx: PoolClient,
  req: CamundaCorrelationRequest,
  messageId: string,
  instanceId: string,
  stepId: string,
): Promise<void> {
  await insertMessage(tx, {
    messageId,
    name: req.messageName,
    correlationKey: null,
    instanceId,
    payload: req.variables.values,
    ttlMs: 0,
    matchedStepId: stepId,
  });
  await writeVariableTypes(tx, instanceId, req.variables.types);
}
