// The common tail of every instance transition: settle termination, derive the
// status, and write everything in one statement.
import { emptyEffects, type Effects, type NewCall, type Variables } from '../model/effects.ts';
import { deriveStatus, failCall, startPlan } from './advance.ts';
import type { InstanceStatus } from '../model/vocabulary.ts';
import type { Plan } from '../compiler/plan.ts';
import type { PoolClient, Queryable } from '../store/db.ts';
import { consumeBufferedMessages } from './inbox.ts';
import { advanceCompensation, keepPassCompletions, queueCompensations } from '../store/compensations.ts';
import { cancelOpenWork, lockInstance, type LockedInstance } from '../store/instances.ts';
import { insertCallEscalation, insertChildInstance, insertErrorReturn, openChildren } from '../store/calls.ts';
import { findDefinition, findDefinitionById, type DefinitionRow } from '../store/definitions.ts';
import type { TransitionWrite } from '../store/transition-statement.ts';
import { writeTransitions } from '../store/transition-writer.ts';
import { insertSignalBroadcasts } from '../store/signals.ts';

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
  /** data of the `instance:<status>` event a status change records (who canceled it) */
  statusData?: Record<string, unknown>;
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
  if (fx.keptCompletions.length > 0)
    await keepPassCompletions(tx, { instanceId: instance.id, generation: instance.generation, kept: fx.keptCompletions });
  await storeCompensationQueue(tx, instance, fx);
  // A child that throws its error on ends canceled: it did not complete, its parent decides what follows.
  const forced = opts.status ?? (fx.thrownError ? 'canceled' : undefined);
  if (fx.thrownError) await insertErrorReturn(tx, instance, fx.thrownError, variables);
  for (const escalation of fx.escalatedToParent ?? []) await insertCallEscalation(tx, instance, escalation);
  if (fx.signals.length > 0) await insertSignalBroadcasts(tx, instance.id, fx.signals);
  const closing = fx.terminated || forced === 'canceled';
  if (closing) closeOpenSteps(instance, fx);
  const children = fx.calls.length > 0 ? await resolveCalls(tx, instance, fx, opts.plan) : [];
  const status = forced ?? deriveStatus(instance.state, fx);
  if (status !== instance.status)
    fx.events.push({ kind: `instance:${status}`, ...(opts.statusData ? { data: opts.statusData } : {}) });
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
  if (closing || fx.canceledCalls.length > 0) await cancelChildren(tx, instance.id, closing ? null : fx.canceledCalls);
  for (const child of children) await startChild(tx, instance, child);
  return status;
}

interface ResolvedCall {
  call: NewCall;
  definition: DefinitionRow;
  businessKey: string | null;
}

/**
 * The definitions the transition's call activities start. A call that cannot start (no such
 * process or version, its business key taken) stops its step in an incident instead, before
 * anything is written.
 */
async function resolveCalls(tx: Queryable, instance: LockedInstance, fx: Effects, known?: Plan): Promise<ResolvedCall[]> {
  const resolved: ResolvedCall[] = [];
  for (const call of [...fx.calls]) {
    if (!fx.calls.includes(call)) continue; // its step already stopped in an incident (another element's call)
    const beside = call.sameDeployment ? instance.definition_id : undefined;
    const definition = await findDefinition(tx, call.key, call.version, call.versionTag, beside);
    const plan = known ?? (await findDefinitionById(tx, instance.definition_id))!.plan;
    const wanted =
      call.version !== undefined
        ? `version ${call.version} of process ${call.key}`
        : call.versionTag !== undefined
          ? `process ${call.key} with version tag ${call.versionTag}`
          : call.sameDeployment
            ? `process ${call.key} from the deployment of ${instance.definition_key} version ${instance.definition_version}`
            : `process ${call.key}`;
    if (!definition) {
      failCall(
        plan,
        call.stepId,
        instance.state,
        fx,
        call.sameDeployment
          ? `Call activity ${call.stepId} calls ${wanted}, which that deployment does not hold. Deploy the caller and ${call.key} together (one deployment), then start the instance again.`
          : `Call activity ${call.stepId} calls ${wanted}, which is not deployed. Deploy it, then retry the incident.`,
        {
          calledElement: call.key,
          ...(call.version !== undefined ? { version: call.version } : {}),
          ...(call.versionTag !== undefined ? { versionTag: call.versionTag } : {}),
          ...(call.sameDeployment ? { binding: 'deployment' } : {}),
        },
      );
      continue;
    }
    if (!definition.plan.steps.some((s) => s.kind === 'startEvent' && s.scope === undefined && s.wait === undefined)) {
      failCall(
        plan,
        call.stepId,
        instance.state,
        fx,
        `Call activity ${call.stepId} calls process ${call.key} (version ${definition.version}), which has no none start event to start at. Give it one, deploy it, then retry the incident.`,
        { calledElement: call.key, version: definition.version },
      );
      continue;
    }
    // A called instance may share its parent's business key with other children (migration 0043).
    const businessKey = call.businessKey ? instance.business_key : null;
    resolved.push({ call, definition, businessKey });
  }
  // An element whose sibling failed starts no child either: the step waits in the incident.
  return resolved.filter((r) => fx.calls.includes(r.call));
}

/** The child instance of a call activity and its first transition, in the parent's transaction. */
async function startChild(tx: Queryable, parent: LockedInstance, { call, definition, businessKey }: ResolvedCall): Promise<void> {
  const row = await insertChildInstance(tx, {
    definitionId: definition.id,
    parent: {
      instanceId: parent.id,
      stepId: call.stepId,
      scopePath: call.scopePath ?? '/',
      generation: parent.generation,
      ...(call.loopIndex !== undefined ? { loopIndex: call.loopIndex } : {}),
    },
    businessKey,
    variables: call.variables,
    ...(call.body ? { inherited: call.inherited ?? call.variables } : {}),
  });
  if (!row) return; // this activation has its child already
  const child: LockedInstance = { ...row, state: { flows: {}, steps: {}, calledBy: parent.id } };
  const fx = emptyEffects();
  fx.events.push({
    kind: 'instance:started',
    data: {
      businessKey,
      definitionId: definition.id,
      parentInstanceId: parent.id,
      parentStepId: call.stepId,
      ...(call.scopePath ? { parentScopePath: call.scopePath } : {}),
      ...(call.loopIndex !== undefined ? { loopCounter: call.loopIndex } : {}),
    },
  });
  startPlan(definition.plan, child.state, call.variables, fx);
  await commitTransition(tx, child, fx, call.variables, { plan: definition.plan });
}

/**
 * Cancels the running children of the instance (stepIds null) or of these call activities, and
 * theirs in turn: the parent holds its lock, then takes theirs, in id order.
 */
export async function cancelChildren(tx: Queryable, parentId: string, stepIds: string[] | null): Promise<void> {
  for (const id of await openChildren(tx, parentId, stepIds)) {
    const child = await lockInstance(tx, id);
    if (!child || child.status === 'completed' || child.status === 'canceled' || child.status === 'compensated') continue;
    await commitTransition(tx, child, emptyEffects(), child.variables, { status: 'canceled' });
  }
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
    fx.compensationMoves.length > 0 ||
    fx.keptCompletions.length > 0 ||
    fx.calls.length > 0 ||
    fx.canceledCalls.length > 0 ||
    fx.signals.length > 0 ||
    fx.thrownError !== undefined ||
    (fx.escalatedToParent?.length ?? 0) > 0
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
  fx.calls = [];
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
