// The parent's side of a call activity: a child's end (a call_returns row, migration 0024) moves
// the step that waits for it, and an escalation nothing in the child caught (a call_escalations
// row, migration 0039) reaches the catchers around that step while the child runs on. Each is
// its own transaction: take and delete the row and lock the parent in one statement (SKIP LOCKED
// on the row, so any number of nodes share the work), read the parent's state, apply; a child's
// escalations go before its end. The end of an
// element whose multi-instance step waits in an incident (another element's output mappings
// failed) is kept on the step's row for the retry. Any other row whose step no longer waits for
// that child (the parent was canceled or replayed, an interrupting boundary ended the step, the
// loop pass moved on) is dropped.
import type { Logger } from 'pino';
import {
  catchThrown,
  findErrorBoundary,
  findEscalationCatcher,
  holdElementReturn,
  raiseIncident,
  recallElement,
  returnEventFiring,
  stopEventFiring,
  returnCall,
  returnElement,
  throwToParent,
} from './advance.ts';
import { planOf, type Engine } from './context.ts';
import { firesInChildren } from './event-subprocess-bodies.ts';
import { scopePathOf } from './loop-passes.ts';
import { indexPlan } from './plan-index.ts';
import { commitTransition } from './transition.ts';
import { emptyEffects, type Effects, type ElementReturn, type Variables } from '../model/effects.ts';
import type { Plan } from '../compiler/plan.ts';
import { anyCallReturn, onCallReturn, takeCallDelivery, type CallEscalationRow, type CallReturnRow } from '../store/calls.ts';
import { withPipelinedTransaction, type PoolClient } from '../store/db.ts';
import { runPipelined, valuesOf } from '../store/pipeline.ts';
import { fault } from '../shared/faults.ts';
import { readHeldInstances, type LockedInstance } from '../store/instances.ts';
import { startRelay, type Relay } from './relay.ts';

/** Delivers one waiting escalation or return; answers false when none was left to take. */
export async function deliverCallReturn(engine: Engine): Promise<boolean> {
  return withPipelinedTransaction(engine.pool, async (tx, edges) => {
    // The row is taken and deleted, its parent locked, in one statement, sent with the begin.
    const [, taken] = valuesOf(await runPipelined<unknown>(tx, [edges.begin, () => takeCallDelivery(tx)])) as [
      void,
      Awaited<ReturnType<typeof takeCallDelivery>>,
    ];
    if (!taken) return false;
    if ('escalation' in taken) {
      await deliverEscalation(engine, tx, taken.escalation);
      return true;
    }
    const row = taken.return;
    await fault('call:before-return');
    const parent = await heldParent(tx, row.parent_instance_id);
    if (!parent) return true;
    const plan = await planOf(engine, parent.definition_id, tx);
    const variables = { ...parent.variables };
    const fx = emptyEffects();
    if (waitsFor(plan, parent, row)) applyReturn(plan, parent, row, variables, fx);
    else if (keptFor(plan, parent, row)) {
      // Its multi-instance step waits in an incident: the element's return waits on the step's row
      // for the retry; an element that ended without completing is called again by it.
      const step = indexPlan(plan).steps.get(row.parent_step_id)!;
      if (row.outcome === 'completed') holdElementReturn(step, elementReturnOf(row), parent.state, fx);
      else applyReturn(plan, parent, row, variables, fx);
    } else {
      engine.log.info({ childInstanceId: row.child_instance_id, parentInstanceId: parent.id }, 'call:return_dropped');
      return true;
    }
    await commitTransition(tx, parent, fx, variables, { plan });
    return true;
  });
}

/** The parent's catchers around the call activity hear the child's escalation; an interrupting one cancels the child. */
async function deliverEscalation(engine: Engine, tx: PoolClient, row: CallEscalationRow): Promise<void> {
  await fault('call:before-escalation');
  const parent = await heldParent(tx, row.parent_instance_id);
  if (!parent) return;
  const plan = await planOf(engine, parent.definition_id, tx);
  if (!waitsFor(plan, parent, row)) {
    engine.log.info({ childInstanceId: row.child_instance_id, parentInstanceId: parent.id }, 'call:escalation_dropped');
    return;
  }
  const variables = { ...parent.variables };
  const fx = emptyEffects();
  const code = row.escalation_code;
  const from = { escalationCode: code, childInstanceId: row.child_instance_id, thrownBy: row.thrown_by };
  const catcher = findEscalationCatcher(plan, row.parent_step_id, code, parent.state);
  if (catcher?.wait?.trigger === 'escalation') {
    catchThrown(plan, catcher, parent.state, variables, fx, { code }, from);
  } else if (parent.state.calledBy !== undefined) {
    // Caught nowhere here either: on up to the call activity that started the parent.
    (fx.escalatedToParent ??= []).push({ escalationCode: code, stepId: row.parent_step_id });
    fx.events.push({
      kind: 'escalation:toParent',
      stepId: row.parent_step_id,
      data: { ...from, parentInstanceId: parent.state.calledBy },
    });
  } else fx.events.push({ kind: 'escalation:uncaught', stepId: row.parent_step_id, data: from });
  await commitTransition(tx, parent, fx, variables, { plan });
}

/** The parent the take locked, with its state, read after the lock so that it is the newest. */
async function heldParent(tx: PoolClient, parentId: string): Promise<LockedInstance | undefined> {
  return (await readHeldInstances(tx, [parentId])).get(parentId);
}

function waitsFor(plan: Plan, parent: LockedInstance, row: CallReturnRow | CallEscalationRow, status = 'active'): boolean {
  const step = indexPlan(plan).steps.get(row.parent_step_id);
  const firings = firesInChildren(step);
  if (!step || (step.kind !== 'callActivity' && !firings) || parent.generation !== row.parent_generation) return false;
  if (parent.status !== 'running' && parent.status !== 'incident') return false;
  // An event subprocess's firings run on while another waits in its incident: their ends count.
  const stepStatus = parent.state.steps[step.id];
  if (stepStatus !== status && !(firings && stepStatus === 'incident')) return false;
  return (scopePathOf(plan, step, parent.state).scopePath ?? '/') === row.parent_scope_path;
}

/** An element that ended while its multi-instance step waits in an incident (another element's) is kept for the retry. */
function keptFor(plan: Plan, parent: LockedInstance, row: CallReturnRow): boolean {
  const step = indexPlan(plan).steps.get(row.parent_step_id);
  return row.parent_loop_index !== null && step?.multiInstance !== undefined && waitsFor(plan, parent, row, 'incident');
}

function elementReturnOf(row: CallReturnRow): ElementReturn {
  return { index: row.parent_loop_index ?? 0, variables: row.variables, childInstanceId: row.child_instance_id };
}

function applyReturn(plan: Plan, parent: LockedInstance, row: CallReturnRow, vars: Variables, fx: Effects): void {
  const stepId = row.parent_step_id;
  const step = indexPlan(plan).steps.get(stepId)!;
  const child = { childInstanceId: row.child_instance_id };
  const firing = firesInChildren(step) ? (row.parent_loop_index ?? 0) : undefined;
  if (row.outcome === 'completed' && firing !== undefined)
    return returnEventFiring(plan, step, elementReturnOf(row), parent.state, vars, fx);
  if (row.outcome === 'completed') {
    // An element's child returns its element's result (as a multi-instance task's does): outputElement and outputCollection gather it.
    if (step.multiInstance && row.parent_loop_index !== null)
      return returnElement(plan, step, elementReturnOf(row), parent.state, vars, fx);
    return returnCall(plan, step, elementReturnOf(row), parent.state, vars, fx);
  }
  // An element's child that did not complete is called again by the retry of the step's incident
  // (one already open, when another element stopped the step first).
  const element = step.multiInstance && row.parent_loop_index !== null ? row.parent_loop_index : undefined;
  const stopped = (kind: 'call_activity' | 'bpmn_error', message: string, details: Record<string, unknown>) => {
    if (firing !== undefined) return stopEventFiring(plan, step, firing, { kind, message, details }, parent.state, vars, fx);
    if (element !== undefined) recallElement(step, element, parent.state, fx);
    if (parent.state.steps[stepId] !== 'incident') return raiseIncident(plan, parent.state, fx, stepId, kind, message, details);
    fx.events.push({ kind: 'call:held', stepId, data: { outcome: row.outcome, loopIndex: element, ...details } });
  };
  if (row.outcome === 'compensated') {
    return stopped(
      'call_activity',
      `The instance ${row.child_instance_id} called by ${stepId} was compensated instead of completing. Retry the incident to call it again.`,
      child,
    );
  }
  const code = row.error_code ?? undefined;
  const boundary = findErrorBoundary(plan, stepId, code, parent.state);
  if (boundary?.wait?.trigger === 'error') {
    catchThrown(
      plan,
      boundary,
      parent.state,
      vars,
      fx,
      { code: row.error_code, message: row.error_message },
      { errorCode: row.error_code, ...child },
    );
    return;
  }
  if (parent.state.calledBy !== undefined) {
    throwToParent(plan, stepId, row.error_code, row.error_message, parent.state, fx);
    return;
  }
  stopped(
    'bpmn_error',
    `The instance ${row.child_instance_id} called by ${stepId} threw ${row.error_code !== null ? `error ${row.error_code}` : 'an error without a code'} and no error boundary catches it. Catch it with an error boundary, or retry the incident to call it again.`,
    { errorCode: row.error_code, errorMessage: row.error_message, ...child },
  );
}

/**
 * Delivers returns as this process's commits announce them (store/calls.ts), and every
 * `intervalMs` those another node did not deliver: a crash between a child's commit and its
 * delivery leaves them behind.
 */
export function startCallReturns(engine: Engine, log: Logger, opts: { intervalMs: number; lanes: number }): Relay {
  return startRelay(log, {
    name: 'call:return',
    deliverOne: () => deliverCallReturn(engine),
    anyWaiting: () => anyCallReturn(engine.pool),
    subscribe: onCallReturn,
    ...opts,
  });
}
