// Read models for the API: lists, one instance in detail, history.
import type { FlowState, InstanceStatus } from '../model/vocabulary.ts';
import { withTransaction, type Pool, type Queryable } from './db.ts';
import type { IncidentRow } from './incidents.ts';
import type { InstanceRow } from './instances.ts';
import type { ExternalTaskRow } from './tasks.ts';
import { whereGiven } from './filters.ts';
import { listCalledInstances, type CalledInstance } from './calls.ts';
import { OPEN_INCIDENT_SQL, OPEN_TASK_SQL } from './open-states.ts';

export interface InstanceFilter {
  status?: InstanceStatus;
  definitionKey?: string;
  /** with definitionKey: that version only */
  version?: number;
  businessKey?: string;
  startedAfter?: string;
  startedBefore?: string;
  endedAfter?: string;
  endedBefore?: string;
  /** instances with this step active now */
  activeStep?: string;
  /** instances with an open incident */
  withIncident?: boolean;
  /** suspended instances (true) or the others (false) */
  suspended?: boolean;
  /** instances whose variable `name` holds exactly `value` (compared as JSON) */
  variable?: { name: string; value: unknown };
  /** these instances only (at most MAX_INSTANCE_IDS; the schema bounds it) */
  instanceIds?: string[];
}

/** Most ids an instance search names: a batch's filter is stored with it and read again for each chunk. */
export const MAX_INSTANCE_IDS = 10_000;

export interface ListInstancesParams extends InstanceFilter {
  limit: number;
  /** (created_at, id) of the last item of the previous page */
  after?: { createdAt: string; id: string };
}

/**
 * Newest first; keyset paging on (created_at, id) so pages stay stable while instances start.
 * The statement names only the filters given, so that a generic plan (the pool's, db.ts) has
 * an index to go by too; `($1 is null or status = $1)` leaves it none. The API runs it with
 * PostgreSQL's defaults (withPlannerDefaults): a plan for the values given.
 */
export async function listInstances(db: Queryable, p: ListInstancesParams): Promise<(InstanceRow & { cursor_at: string })[]> {
  const w = whereGiven((param) => [
    ...instanceFilterClauses(p, param),
    p.after !== undefined && `(created_at, id) < (${param(p.after.createdAt)}::timestamptz, ${param(p.after.id)}::uuid)`,
  ]);
  // cursor_at keeps the microseconds a JS Date would drop.
  const { rows } = await db.query<InstanceRow & { cursor_at: string }>(
    `select *, to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as cursor_at from instances
      where ${w.sql}
      order by created_at desc, id desc
      limit $${w.values.length + 1}`,
    [...w.values, p.limit],
  );
  return rows;
}

/** The instance search as a request names it (GET /api/instances, a batch's filter): a variable's name and value apart. */
export type InstanceSearch = Omit<InstanceFilter, 'variable'> & { variableName?: string; variableValue?: string };

/** The store's filter from a search: only what was given; a variable's value is JSON, or else text. */
export function instanceFilterOf(search: InstanceSearch): InstanceFilter {
  const { variableName, variableValue, ...rest } = search;
  const f: InstanceFilter = Object.fromEntries(Object.entries(rest).filter(([, v]) => v !== undefined && v !== ''));
  if (variableName !== undefined && variableValue !== undefined)
    f.variable = { name: variableName, value: jsonOrText(variableValue) };
  return f;
}

function jsonOrText(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** What a batch adds to its filter: instances created up to the batch, after its cursor, without a result yet. */
export interface BatchScope {
  batchId: string;
  afterId?: string;
}

/**
 * The filter's where clause over `instances` (unaliased); with a batch's scope, only the
 * instances the batch has still to reach (store/batches.ts).
 */
export function instanceWhere(f: InstanceFilter & Partial<BatchScope>): { sql: string; values: unknown[] } {
  return whereGiven((param) => [
    ...instanceFilterClauses(f, param),
    f.batchId !== undefined && `created_at <= (select b.created_at from batches b where b.id = ${param(f.batchId)}::uuid)`,
    f.batchId !== undefined &&
      `not exists (select 1 from batch_results r where r.batch_id = ${param(f.batchId)}::uuid and r.instance_id = instances.id)`,
    f.afterId !== undefined && `id > ${param(f.afterId)}::uuid`,
  ]);
}

/** The filter's clauses over `instances` (unaliased), each only when given. */
function instanceFilterClauses(f: InstanceFilter, param: (value: unknown) => string): (string | false)[] {
  return [
    f.status !== undefined && `status = ${param(f.status)}`,
    f.definitionKey !== undefined && `definition_key = ${param(f.definitionKey)}`,
    f.version !== undefined && `definition_version = ${param(f.version)}`,
    // With the key, the version names one definition: its instances are read through instances_version_idx.
    f.version !== undefined &&
      f.definitionKey !== undefined &&
      `definition_id = (select d.id from definitions d where d.key = ${param(f.definitionKey)} and d.version = ${param(f.version)})`,
    f.businessKey !== undefined && `business_key = ${param(f.businessKey)}`,
    f.startedAfter !== undefined && `created_at > ${param(f.startedAfter)}::timestamptz`,
    f.startedBefore !== undefined && `created_at < ${param(f.startedBefore)}::timestamptz`,
    f.endedAfter !== undefined && `ended_at > ${param(f.endedAfter)}::timestamptz`,
    f.endedBefore !== undefined && `ended_at < ${param(f.endedBefore)}::timestamptz`,
    f.activeStep !== undefined &&
      `exists (select 1 from steps s where s.instance_id = instances.id and s.step_id = ${param(f.activeStep)} and s.status = 'active')`,
    f.withIncident === true && `exists (select 1 from incidents x where x.instance_id = instances.id and x.${OPEN_INCIDENT_SQL})`,
    f.suspended === true && 'suspended_at is not null',
    f.suspended === false && 'suspended_at is null',
    f.variable !== undefined && `variables -> ${param(f.variable.name)} = ${param(JSON.stringify(f.variable.value))}::jsonb`,
    f.instanceIds !== undefined && `id = any(${param(f.instanceIds)}::uuid[])`,
  ];
}

/** How many instances match, in all and per status. */
export async function countInstances(
  db: Queryable,
  f: InstanceFilter,
): Promise<{ count: number; byStatus: Record<string, number> }> {
  const w = whereGiven((param) => instanceFilterClauses(f, param));
  const { rows } = await db.query<{ status: string; n: number }>(
    `select status, count(*)::int as n from instances where ${w.sql} group by status`,
    w.values,
  );
  const byStatus = Object.fromEntries(rows.map((r) => [r.status, r.n]));
  return { count: rows.reduce((sum, r) => sum + r.n, 0), byStatus };
}

export interface StepView {
  step_id: string;
  status: string;
  attempts: number;
  activated_at: Date;
  ended_at: Date | null;
  /** loop steps: the pass running, or the last one */
  pass: number | null;
  /** a subprocess with mappings: its local variables (shown while it is open) */
  locals: Record<string, unknown> | null;
}

/** A resolved sequence flow; a flow without a row is still pending. */
export interface FlowView {
  flow_id: string;
  state: FlowState;
}

export interface InstanceDetail {
  instance: InstanceRow;
  steps: StepView[];
  flows: FlowView[];
  openTasks: ExternalTaskRow[];
  openIncidents: IncidentRow[];
  /** instances its call activities started */
  calledInstances: CalledInstance[];
}

export async function getInstanceDetail(db: Queryable, instanceId: string): Promise<InstanceDetail | undefined> {
  const { rows } = await db.query<InstanceRow>('select * from instances where id = $1', [instanceId]);
  const instance = rows[0];
  if (!instance) return undefined;
  const [steps, flows, tasks, incidents, called] = await Promise.all([
    db.query<StepView>(
      // A step in a loop or a multi-instance step has a task per pass or element: the attempts are the newest one's.
      `select s.step_id, s.status, s.activated_at, s.ended_at, (s.loop->>'pass')::int as pass, s.loop->'locals' as locals,
              coalesce((select t.attempt from external_tasks t
                         where t.instance_id = s.instance_id and t.step_id = s.step_id and t.generation = s.generation
                         order by t.created_at desc, t.attempt desc limit 1), 0) as attempts
         from steps s
        where s.instance_id = $1 order by s.activated_at, s.step_id`,
      [instanceId],
    ),
    db.query<FlowView>('select flow_id, state from flows where instance_id = $1 order by resolved_at, flow_id', [instanceId]),
    db.query<ExternalTaskRow>(`select * from external_tasks where instance_id = $1 and ${OPEN_TASK_SQL} order by created_at`, [
      instanceId,
    ]),
    db.query<IncidentRow>(`select * from incidents where instance_id = $1 and ${OPEN_INCIDENT_SQL} order by created_at`, [
      instanceId,
    ]),
    listCalledInstances(db, instanceId),
  ]);
  return {
    instance,
    steps: steps.rows,
    flows: flows.rows,
    openTasks: tasks.rows,
    openIncidents: incidents.rows,
    calledInstances: called,
  };
}

export interface EventRow {
  seq: number;
  kind: string;
  step_id: string | null;
  task_id: string | null;
  attempt: number | null;
  generation: number;
  at: Date;
  data: Record<string, unknown>;
}

/** How long a history read waits for the writers of its instance's bucket to commit (migration 0038). */
export const HISTORY_SETTLE_MS = 2_000;

/**
 * A page of an instance's history after a seq, in seq order, or 'busy' when writers of its
 * bucket kept it unsettled for HISTORY_SETTLE_MS. The read waits, polling, until no
 * transaction that numbered events of the bucket is open (baton_history_settled, migration
 * 0038), so an event that commits after the page can only have a higher seq than the page's
 * last: paging by afterSeq never skips one. The wait is a millisecond or two under load.
 */
export async function listHistory(pool: Pool, instanceId: string, afterSeq: number, limit: number): Promise<EventRow[] | 'busy'> {
  const deadline = Date.now() + HISTORY_SETTLE_MS;
  for (let pause = 1; ; pause = Math.min(pause * 2, 32)) {
    const rows = await withTransaction(pool, async (tx) => {
      const settled = await tx.query<{ settled: boolean }>({
        name: 'history_settled',
        text: 'select baton_history_settled($1) as settled',
        values: [instanceId],
      });
      if (!settled.rows[0]?.settled) return undefined;
      // a statement of its own: its snapshot is taken after the lock is held
      const page = await tx.query<EventRow>({
        name: 'list_history',
        text: `select seq, kind, step_id, task_id, attempt, generation, at, data from events
                where instance_id = $1 and seq > $2 order by seq limit $3`,
        values: [instanceId, afterSeq, limit],
      });
      return page.rows;
    });
    if (rows) return rows;
    if (Date.now() >= deadline) return 'busy';
    await new Promise((resolve) => setTimeout(resolve, pause));
  }
}
