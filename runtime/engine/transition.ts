// The common tail of every instance transition: settle termination, derive the
// status, and write everything in one statement.
import type { Effects, Variables } from '../model/effects.ts';
import { deriveStatus } from './advance.ts';
import type { InstanceStatus } from '../model/vocabulary.ts';
import type { Plan } from '../compiler/plan.ts';
import type { PoolClient, Queryable } from '../store/db.ts';
import { consumeBufferedMessages } from './inbox.ts';
import { advanceCompensation, queueCompensations } from '../store/compensations.ts';
import { cancelOpenWork, type LockedInstance } from '../store/instances.ts';
import type { TransitionWrite } from '../store/transition-statement.ts';
import { writeTransitions } from '../store/transition-writer.ts';

export interface CommitOptions {
  /** forces a status (cancel); otherwise derived from the steps */
  status?: InstanceStatus;
  incidentTaskIds?: (string | null)[];
  /** needed when the transition may start message waits: they look in the inbox first */
  plan?: Plan;
  /**
   * The transaction frames its transitions at its end (a batch of timer firings): the events
   * are written framed; that framing fails (BT409) with progress pending for the instance.
   */
  framesAtEnd?: boolean;
}

export async function commitTransition(
  tx: Queryable,
  instance: LockedInstance,
  fx: Effects,
  variables: Variables,
  opts: CommitOptions = {},
): Promise<InstanceStatus> {
  if (opts.plan && fx.subscriptions.some((x) => x.kind === 'message')) {
    await consumeBufferedMessages(tx as PoolClient, instance, opts.plan, fx, variables);
  }
  await storeCompensationQueue(tx, instance, fx);
  const closing = fx.terminated || opts.status === 'canceled';
  if (closing) closeOpenSteps(instance, fx);
  const status = opts.status ?? deriveStatus(instance.state, fx);
  if (status !== instance.status) fx.events.push({ kind: `instance:${status}` });
  await writeTransitions(tx, [
    {
      instance,
      effects: fx,
      status,
      variables,
      ...(opts.incidentTaskIds ? { incidentTaskIds: opts.incidentTaskIds } : {}),
      ...(opts.framesAtEnd ? { framesAtEnd: true } : {}),
    },
  ]);
  if (closing) await cancelOpenWork(tx, instance.id);
  return status;
}

/**
 * Whether a transition's write needs commitTransition: it reads inside the transaction (message
 * waits look in the inbox first) or sends more statements than its one write (terminate,
 * compensation). Only the others can be written alone or together with other instances' writes.
 */
export function needsCommitTransition(fx: Effects): boolean {
  return (
    fx.terminated ||
    fx.subscriptions.some((x) => x.kind === 'message') ||
    fx.compensationRuns.length > 0 ||
    fx.compensationMoves.length > 0
  );
}

/**
 * The one write of a transition that needs no read and no other statement (no message waits,
 * no compensation, no termination, no forced status): its status derived and its status
 * event added as commitTransition adds them, written framed by the transaction's last
 * statement (framesAtEnd). Several such writes of different instances can go together
 * (store/transition-statement.ts).
 */
export function plainFramedWrite(instance: LockedInstance, fx: Effects, variables: Variables): TransitionWrite {
  if (needsCommitTransition(fx)) {
    throw new Error(`plainFramedWrite: the transition of instance ${instance.id} needs commitTransition`);
  }
  const status = deriveStatus(instance.state, fx);
  if (status !== instance.status) fx.events.push({ kind: `instance:${status}` });
  return { instance, effects: fx, status, variables, framesAtEnd: true };
}

// Terminate and cancel end every open step; tasks this transition was about to create are dropped.
function closeOpenSteps(instance: LockedInstance, fx: Effects): void {
  for (const [stepId, status] of Object.entries(instance.state.steps)) {
    if (status !== 'active' && status !== 'incident') continue;
    instance.state.steps[stepId] = 'canceled';
    fx.steps.push({ stepId, status: 'canceled' });
    fx.events.push({ kind: 'step:canceled', stepId });
  }
  // cancel_open_work ends every task, timer and subscription the instance still has.
  fx.tasks = [];
  fx.timers = [];
  fx.subscriptions = [];
}

async function storeCompensationQueue(tx: Queryable, instance: LockedInstance, fx: Effects): Promise<void> {
  for (const run of fx.compensationRuns) {
    await queueCompensations(tx, {
      instanceId: instance.id,
      generation: instance.generation,
      hosts: run.hosts,
      throwStepId: run.throwStepId,
    });
  }
  for (const move of fx.compensationMoves) {
    await advanceCompensation(tx, {
      instanceId: instance.id,
      generation: instance.generation,
      host: move.host,
      from: move.to === 'running' ? 'pending' : 'running',
      to: move.to,
    });
  }
}
