// Call activities in the store: child instances linked to the step that waits for them, and
// call_returns, how a child ended, waiting for its parent's transition (migration 0024).
import type { Variables } from '../model/effects.ts';
import type { InstanceStatus } from '../model/vocabulary.ts';
import { newInstanceId } from '../shared/uuid.ts';
import { afterCommit, type Queryable } from './db.ts';
import type { InstanceRow } from './instances.ts';

export interface ChildOf {
  instanceId: string;
  stepId: string;
  /** '/' outside loops */
  scopePath: string;
  generation: number;
  /** multi-instance: the element the child runs */
  loopIndex?: number;
}

/**
 * Inserts the child instance of a call activity, of the given definition, running. Answers
 * undefined when this activation already has a child that has not ended (a repeated start); a
 * child that ended without completing (the retry of the call's incident) gets a successor.
 */
export async function insertChildInstance(
  db: Queryable,
  p: { definitionId: string; parent: ChildOf; businessKey: string | null; variables: Variables; inherited?: Variables },
): Promise<InstanceRow | undefined> {
  const { rows } = await db.query<InstanceRow>({
    name: 'insert_child_instance',
    text: `insert into instances (id, definition_id, definition_key, definition_version, business_key, variables, revision,
                                  parent_instance_id, parent_step_id, parent_scope_path, parent_generation, parent_loop_index,
                                  inherited_variables, parent_attempt)
           select $1, d.id, d.key, d.version, $3, $4, 0, $5, $6, $7, $8, $9, $10,
                  (select count(*) from instances c
                    where c.parent_instance_id = $5 and c.parent_step_id = $6 and c.parent_scope_path = $7
                      and c.parent_generation = $8 and coalesce(c.parent_loop_index, -1) = coalesce($9::integer, -1)
                      and c.status in ('completed', 'canceled', 'compensated'))
             from definitions d where d.id = $2
           on conflict do nothing
           returning *`,
    values: [
      newInstanceId(),
      p.definitionId,
      p.businessKey,
      p.variables,
      p.parent.instanceId,
      p.parent.stepId,
      p.parent.scopePath,
      p.parent.generation,
      p.parent.loopIndex ?? null,
      p.inherited ?? null,
    ],
  });
  return rows[0];
}

/** Children that have not ended, of the whole instance or of the given steps, in id order (the order locks are taken in). */
export async function openChildren(db: Queryable, parentId: string, stepIds: string[] | null): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>({
    name: 'open_children',
    text: `select id from instances
            where parent_instance_id = $1 and ($2::text[] is null or parent_step_id = any($2))
              and status not in ('completed', 'canceled', 'compensated')
            order by id`,
    values: [parentId, stepIds],
  });
  return rows.map((r) => r.id);
}

/** Where a child's return or escalation goes: the step of its parent that waits for it. */
interface ParentLink {
  child_instance_id: string;
  parent_instance_id: string;
  parent_step_id: string;
  parent_scope_path: string;
  parent_generation: number;
  parent_loop_index: number | null;
}

/** The values of a ParentLink's columns, in their order, for a child's row. */
function parentLinkOf(child: InstanceRow): unknown[] {
  return [
    child.id,
    child.parent_instance_id,
    child.parent_step_id,
    child.parent_scope_path,
    child.parent_generation,
    child.parent_loop_index,
  ];
}

export interface CallReturnRow extends ParentLink {
  outcome: 'completed' | 'compensated' | 'error';
  variables: Variables;
  error_code: string | null;
  error_message: string | null;
}

/** A child that throws a BPMN error on to its parent records it in its own transition. */
export async function insertErrorReturn(
  db: Queryable,
  child: InstanceRow,
  error: { errorCode: string | null; errorMessage: string | null },
  variables: Variables,
): Promise<void> {
  await db.query({
    name: 'insert_error_return',
    text: `insert into call_returns (child_instance_id, parent_instance_id, parent_step_id, parent_scope_path, parent_generation,
                                     parent_loop_index, outcome, variables, error_code, error_message)
           values ($1, $2, $3, $4, $5, $6, 'error', $7, $8, $9)
           on conflict (child_instance_id) do nothing`,
    values: [...parentLinkOf(child), variables, error.errorCode, error.errorMessage],
  });
  announceCallReturn(db);
}

export interface CallEscalationRow extends ParentLink {
  id: string;
  escalation_code: string;
  thrown_by: string;
}

/** A child whose escalation nothing in it catches passes it on to its parent, in its own transition (migration 0039). */
export async function insertCallEscalation(
  db: Queryable,
  child: InstanceRow,
  escalation: { escalationCode: string; stepId: string },
): Promise<void> {
  await db.query({
    name: 'insert_call_escalation',
    text: `insert into call_escalations (child_instance_id, parent_instance_id, parent_step_id, parent_scope_path,
                                         parent_generation, parent_loop_index, escalation_code, thrown_by)
           values ($1, $2, $3, $4, $5, $6, $7, $8)`,
    values: [...parentLinkOf(child), escalation.escalationCode, escalation.stepId],
  });
  announceCallReturn(db);
}

/**
 * Whether any return or escalation waits, read without a transaction: the idle re-check costs one
 * statement. A suspended parent's wait for its resume (which announces them), not counted here.
 */
export async function anyCallReturn(db: Queryable): Promise<boolean> {
  const { rows } = await db.query<{ waiting: boolean }>({
    name: 'any_call_return',
    text: `select exists (select 1 from call_returns r join instances i on i.id = r.parent_instance_id
                           where i.suspended_at is null)
               or exists (select 1 from call_escalations e join instances i on i.id = e.parent_instance_id
                           where i.suspended_at is null) as waiting`,
  });
  return rows[0]?.waiting === true;
}

export type CallDelivery = { escalation: CallEscalationRow } | { return: CallReturnRow };

/**
 * One row to deliver, of a parent that is not suspended, that no other transaction is
 * delivering: the oldest escalation if any waits, else the oldest return whose child has no
 * escalation still waiting (a child's escalations go first). One statement takes the row, locks
 * its parent (waiting for a transaction that holds it; the suspension is checked again against
 * the parent's newest row, and a parent suspended meanwhile keeps its row for the resume) and
 * deletes the row: the caller reads the parent's state next (readHeldInstances), in a statement
 * of its own so that it sees what the transaction it waited for wrote.
 */
export async function takeCallDelivery(db: Queryable): Promise<CallDelivery | undefined> {
  const { rows } = await db.query<{ escalation: CallEscalationRow | null; returned: CallReturnRow | null }>({
    name: 'take_call_delivery',
    text: `with escalation as materialized (
             select e.* from call_escalations e join instances i on i.id = e.parent_instance_id
              where i.suspended_at is null
              order by e.id limit 1 for update of e skip locked for no key update of i),
           returned as materialized (
             select r.* from call_returns r join instances i on i.id = r.parent_instance_id
              where i.suspended_at is null and not exists (select 1 from escalation)
                and not exists (select 1 from call_escalations e where e.child_instance_id = r.child_instance_id)
              order by r.created_at limit 1 for update of r skip locked for no key update of i),
           gone_escalation as (delete from call_escalations x using escalation e where x.id = e.id),
           gone_return as (delete from call_returns x using returned r where x.child_instance_id = r.child_instance_id)
           select (select to_jsonb(escalation) from escalation) as escalation,
                  (select to_jsonb(returned) from returned) as returned`,
  });
  const row = rows[0];
  if (row?.escalation) return { escalation: { ...row.escalation, id: String(row.escalation.id) } };
  if (row?.returned) return { return: row.returned };
  return undefined;
}

export interface CalledInstance {
  id: string;
  step_id: string;
  scope_path: string;
  generation: number;
  loop_index: number | null;
  definition_key: string;
  definition_version: number;
  status: InstanceStatus;
  open_incidents: number;
}

/** The instances call activities of `parentId` started, oldest first, with their open incidents. */
export async function listCalledInstances(db: Queryable, parentId: string): Promise<CalledInstance[]> {
  const { rows } = await db.query<CalledInstance>({
    name: 'list_called_instances',
    text: `select i.id, i.parent_step_id as step_id, i.parent_scope_path as scope_path, i.parent_generation as generation,
                  i.parent_loop_index as loop_index, i.definition_key, i.definition_version, i.status,
                  (select count(*)::int from incidents x where x.instance_id = i.id and x.status = 'open') as open_incidents
             from instances i where i.parent_instance_id = $1 order by i.created_at, i.parent_loop_index, i.id`,
    values: [parentId],
  });
  return rows;
}

const returnListeners = new Set<() => void>();

/** Called after a commit that may have written a call return (this process's writes only); answers the unsubscribe. */
export function onCallReturn(fn: () => void): () => void {
  returnListeners.add(fn);
  return () => returnListeners.delete(fn);
}

/** Tells this process's return deliverers, once the transaction commits. */
export function announceCallReturn(db: Queryable): void {
  afterCommit(db, () => {
    for (const fn of returnListeners) fn();
  });
}
