// Message, signal and conditional start events: a published message that no waiting instance
// takes, or a broadcast signal, starts an instance of the latest version of every
// definition whose start event waits for it; conditions evaluated over given variables start
// an instance of every latest version whose conditional start event's condition holds.
import type { Diagnostic, Plan } from '../compiler/plan.ts';
import type { Variables } from '../model/effects.ts';
import type { Engine } from './context.ts';
import { startInTransaction } from './instances.ts';
import { withTransaction, type PoolClient, type Queryable } from '../store/db.ts';
import type { InstanceRow } from '../store/instances.ts';
import { findConditionalStarts, findEventStarts, lockMessageName } from '../store/waits.ts';
import { testCondition } from './conditions.ts';
import { BatonError } from '../shared/errors.ts';

/** An instance a message start event started, or the one already holding the business key. */
export interface MessageStart {
  created: boolean;
  instanceId: string;
  /** the message start event */
  stepId: string;
}

/**
 * Starts the definition whose message start event names this message, in the
 * publisher's transaction (it holds the message-name lock), with the message's
 * variables. `businessKey` becomes the instance's: when an instance already holds it,
 * nothing starts and that instance is answered (`created: false`). Undefined when no
 * definition starts on this message. The caller records the message as matched.
 */
export async function startOnMessage(
  engine: Engine,
  tx: PoolClient,
  req: { name: string; businessKey: string | null; variables: Variables },
): Promise<MessageStart | undefined> {
  // Deploy refuses a message start name that another key's latest version uses, so there is at most one.
  const [start] = await findEventStarts(tx, 'message', req.name);
  if (!start) return undefined;
  const started = await startInTransaction(
    engine,
    tx,
    { definitionKey: start.key, version: start.version, businessKey: req.businessKey, variables: req.variables },
    start.step_id,
  );
  if (!started.ok) return undefined;
  return { created: started.created, instanceId: started.instance.id, stepId: start.step_id };
}

/** One new instance per definition whose signal start event names this signal, each in its own transaction. */
export async function startOnSignal(engine: Engine, name: string, variables: Variables): Promise<string[]> {
  const started: string[] = [];
  for (const start of await findEventStarts(engine.pool, 'signal', name)) {
    const result = await withTransaction(engine.pool, (tx) =>
      startInTransaction(
        engine,
        tx,
        { definitionKey: start.key, version: start.version, variables: { ...variables } },
        start.step_id,
      ),
    );
    if (result.ok) started.push(result.instance.id);
  }
  return started;
}

export interface ConditionEvaluation {
  variables: Variables;
  businessKey?: string;
  /** only this process's latest version */
  definitionKey?: string;
  /** only this definition (the latest version of its process holds the start events that are evaluated) */
  definitionId?: string;
}

/**
 * Evaluates the condition of every conditional start event of the latest versions over the given
 * variables, and starts an instance (with those variables and business key) at each whose
 * condition holds, all in one transaction. A condition that cannot be evaluated refuses the whole
 * evaluation, naming it, and nothing starts; no conditional start event at all is refused too (as
 * Camunda does), so that a typo in a key is not an empty success.
 */
export async function startOnConditions(
  engine: Engine,
  req: ConditionEvaluation,
  /** runs in the same transaction with the instances started, e.g. to keep the variables' Camunda types */
  alongside?: (tx: PoolClient, started: string[]) => Promise<void>,
): Promise<{ evaluated: number; started: InstanceRow[] }> {
  return withTransaction(engine.pool, async (tx) => {
    const starts = (await findConditionalStarts(tx, req.definitionKey ?? null)).filter(
      (s) => req.definitionId === undefined || s.definition_id === req.definitionId,
    );
    if (starts.length === 0)
      throw new BatonError(
        'validation',
        req.definitionId
          ? `Definition ${req.definitionId} is not the latest version of a process with a conditional start event`
          : req.definitionKey
            ? `Process ${req.definitionKey} has no conditional start event in its latest version`
            : 'No deployed process has a conditional start event in its latest version',
      );
    const holding = [];
    for (const start of starts) {
      const holds = testCondition(start.condition, req.variables);
      if (!holds.ok)
        throw new BatonError(
          'validation',
          `The condition "${start.condition.source}" of start event ${start.step_id} of process ${start.key} cannot be evaluated over the given variables: ${holds.message}; nothing was started`,
          { definitionKey: start.key, elementId: start.step_id },
        );
      if (holds.value) holding.push(start);
    }
    const started: InstanceRow[] = [];
    for (const start of holding) {
      const result = await startInTransaction(
        engine,
        tx,
        {
          definitionKey: start.key,
          version: start.version,
          variables: { ...req.variables },
          ...(req.businessKey !== undefined ? { businessKey: req.businessKey } : {}),
        },
        start.step_id,
      );
      if (result.ok && result.created) started.push(result.instance);
    }
    await alongside?.(
      tx,
      started.map((i) => i.id),
    );
    return { evaluated: starts.length, started };
  });
}

/**
 * As in Camunda, one message name starts one process: a message start event that names a
 * message another key's latest version starts on is an error. Deploy (`lock`) takes the
 * message-name lock first, so two such deploys at once see each other; lint only reads.
 */
export async function takenMessageStarts(db: Queryable, plan: Plan, lock = false): Promise<Diagnostic[]> {
  const taken: Diagnostic[] = [];
  for (const step of plan.steps) {
    if (step.kind !== 'startEvent' || step.wait?.trigger !== 'message') continue;
    if (lock) await lockMessageName(db, step.wait.name);
    const other = (await findEventStarts(db, 'message', step.wait.name)).find((s) => s.key !== plan.processKey);
    if (other)
      taken.push({
        elementId: step.id,
        message: `Message start event ${step.id} starts on message "${step.wait.name}", which already starts process ${other.key} (version ${other.version}): one message name starts one process`,
        severity: 'error',
      });
  }
  return taken;
}

export async function refuseTakenMessageStarts(tx: PoolClient, plan: Plan): Promise<void> {
  const taken = await takenMessageStarts(tx, plan, true);
  if (taken.length > 0)
    throw new BatonError(
      'compile',
      `The BPMN does not compile: ${taken.map((d) => `${d.elementId}: ${d.message}`).join('; ')}`,
      taken,
    );
}
