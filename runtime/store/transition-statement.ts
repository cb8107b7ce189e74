// The one statement that writes transitions: step and flow states, new tasks, incidents,
// history events, waits, cancels, the instance rows and, where the statement may, the
// progress frames of its events. One builder serves one instance or many: every row of
// every part carries its instance id and generation, so one shape serves any number of
// instances. PostgreSQL's cost of a transition is mostly per statement, not per row: a
// start cost its backend 400-530 µs of CPU one at a time, 150-205 µs per instance eight at
// a time (docs/PERFORMANCE.md, "Cost is per statement: transitions written together").
//
// A statement has only the parts its transitions use: a complete of a one-task instance
// writes steps, flows, events, the instance row and its task, and a statement with every
// part cost about 0.56 ms more of PostgreSQL time per call on empty CTEs. The parts present
// (the shape), the kind of write and how its events are framed name the prepared statement;
// its parameters are numbered in the order the parts are written, so every $n given is used
// (PostgreSQL infers a parameter's type from its use and refuses a prepared statement with
// an unused one). Only placeholders ($${n}) and constant fragments are interpolated.
import type { Effects, Variables } from '../model/effects.ts';
import type { InstanceStatus } from '../model/vocabulary.ts';
import { appendHeadsCte } from './frames.ts';
import { HELD_TASK_SQL, OPEN_INCIDENT_SQL, OPEN_TASK_SQL, OPEN_TIMER_SQL } from './open-states.ts';
import { BUSINESS_KEY_CONFLICT_SQL } from './instances.ts';

/** The holder of a task that an optimistic complete marks done. */
export interface TaskHolder {
  taskId: string;
  workerId: string;
  lockToken: string;
}

/** One transition of one instance, as the engine computed it. */
export interface TransitionWrite {
  instance: {
    id: string;
    generation: number;
    business_key: string | null;
    definition_id: string;
    definition_key: string;
    /** set on a called instance: its end leaves a call return (migration 0024) */
    parent_instance_id?: string | null;
  };
  effects: Effects;
  status: InstanceStatus;
  variables: Variables;
  /** incident rows of this transition that belong to an existing task */
  incidentTaskIds?: (string | null)[];
  /**
   * An optimistic complete (no instance lock held): written only if the instance is still at
   * this revision and its generation, and the task is still locked by its holder, whom it
   * marks done; otherwise nothing is written (TRANSITION_GUARD_LOST).
   */
  guard?: { revision: number; completes: TaskHolder };
  /**
   * A start: the instance row (instance: id, definition_id, business_key) is inserted with the
   * transition; nothing is written when the business key is taken or, with latestOnly, a newer
   * version of the definition exists.
   */
  insert?: { latestOnly: boolean };
  /**
   * Inside a transaction whose last statement frames its transitions (frameTransitions, or a
   * batch's last write with `frameBatch`): the events are written framed, and that framing
   * fails (TRANSITION_GUARD_LOST) if progress is pending for the instance.
   */
  framesAtEnd?: boolean;
  /**
   * A start or an optimistic complete: these of its new tasks are inserted locked for parked
   * polls of this node, as fetch-and-lock would lock them (attempt 1, the poll's lock duration
   * on the database clock, a task:locked event), and answered in fetch-and-lock's shape. A flow
   * limit covering one of their topics makes the guard fail.
   */
  delivery?: DeliveredTask[];
}

/** A new task of a transition (effects.tasks[index]) inserted locked for a parked poll. */
export interface DeliveredTask {
  index: number;
  taskId: string;
  workerId: string;
  lockToken: string;
  lockDurationMs: number;
}

/** A transition written with framesAtEnd, to be framed by its transaction's last statement. */
export interface FramedTransition {
  instance: { id: string; generation: number };
  effects: Effects;
}

/**
 * How a statement's instance rows are written: `insert` (starts), `guarded` (optimistic
 * completes: revision, generation and the task's holder checked), `locked` (the transaction
 * holds every instance's row lock).
 */
export type WriteKind = 'insert' | 'guarded' | 'locked';

/**
 * How the events get their frames: `here`, by this statement (it is its own transaction, so the
 * frame heads are its last locks with the commit right after); `end`, by the transaction's last
 * statement; `trigger`, by the deferred trigger of migration 0011 at commit.
 */
export type Framing = 'here' | 'end' | 'trigger';

/** The parts of a statement; its shape is the sum of those present. */
export const PART = {
  steps: 1,
  flows: 2,
  tasks: 4,
  incidents: 8,
  events: 16,
  timers: 32,
  subscriptions: 64,
  endedWaits: 128,
  canceledTasks: 256,
  latestOnly: 512,
  delivery: 1024,
  /** the statement also frames the batch's transitions (`frameBatch`) */
  frameBatch: 2048,
  /** a loop's next pass: rows of its body's steps and flows from the pass before are removed */
  reset: 4096,
  /** subscriptions include user tasks, with their details */
  userTasks: 8192,
  /** a start with a business key: its instance row is inserted unless another holds the key */
  businessKeys: 16384,
} as const;

export interface TransitionStatement {
  name: string;
  text: string;
  values: unknown[];
  kind: WriteKind;
  framing: Framing;
}

/** Events that end a generation: instance:ended follows them, and nothing after it. */
const ENDING_KINDS = new Set(['instance:completed', 'instance:canceled', 'instance:compensated']);

export function kindOf(w: TransitionWrite): WriteKind {
  return w.insert ? 'insert' : w.guard ? 'guarded' : 'locked';
}

/**
 * Whether a statement alone in its transaction may frame the write's events itself. An
 * incident may name a task, whose key lock its foreign key takes at the end of the statement,
 * after the frame heads: those transitions leave framing to the trigger.
 */
export function framableHere(w: TransitionWrite): boolean {
  return w.effects.events.length > 0 && w.effects.incidents.length === 0;
}

/**
 * Whether the last write of a batch can frame the batch's transitions in its own statement
 * (`frameBatch`): none of them raises an incident (as framableHere).
 */
export function framableInStatement(transitions: FramedTransition[]): boolean {
  return transitions.every((t) => t.effects.incidents.length === 0);
}

/** How the statement for these writes frames their events; `alone`: the statement is its own transaction. */
export function framingOf(writes: TransitionWrite[], alone: boolean): Framing {
  if (writes.every((w) => w.framesAtEnd === true)) return 'end';
  if (writes.some((w) => w.framesAtEnd === true))
    throw new Error('transitionStatement: writes framed at the end go together only with such writes');
  return alone && writes.every(framableHere) ? 'here' : 'trigger';
}

/**
 * The statement for the writes (at least one, all of one kind). With `frameBatch` (framing
 * `end`, framableInStatement) it also frames those transitions (this statement's and the
 * batch's earlier writes', in the order written) and must be the batch's last statement that
 * may lock a row.
 */
export function transitionStatement(
  writes: TransitionWrite[],
  o: { alone: boolean; frameBatch?: FramedTransition[] },
): TransitionStatement {
  const first = writes[0];
  if (!first) throw new Error('transitionStatement: no writes');
  const kind = kindOf(first);
  if (writes.some((w) => kindOf(w) !== kind)) throw new Error('transitionStatement: one statement writes one kind of transition');
  const framing = framingOf(writes, o.alone);
  const delivery = deliveryOf(writes, kind);
  if (o.frameBatch && (framing !== 'end' || !framableInStatement(o.frameBatch))) {
    throw new Error("transitionStatement: only a batch's write framed at the end, without incidents, frames the batch");
  }
  // The frame heads must be the statement's last locks (held until the commit that follows):
  // every part that may lock a row answers a row, and the progress check and the heads run
  // after all of them (`locks`). New instances need none of it: nobody can be waiting for
  // their heads, and no progress can be pending for them.
  const framesBatch = o.frameBatch !== undefined && runsOf(o.frameBatch).length > 0;
  const checksProgress = (framing === 'here' && kind !== 'insert') || framesBatch;
  const held: string[] = [];
  const hold = (name: string): string => (checksProgress ? (held.push(name), ' returning 1') : '');

  const values: unknown[] = [];
  const $ = (v: unknown): number => values.push(v);
  const ctes: string[] = [];
  // One entry per row of a part: its write, then the part's item.
  const rows = <T>(pick: (w: TransitionWrite) => T[]) => writes.flatMap((w) => pick(w).map((item) => ({ w, item })));
  const idsOf = (r: { w: TransitionWrite }[]) => $(r.map((x) => x.w.instance.id));
  const gensOf = (r: { w: TransitionWrite }[]) => $(r.map((x) => x.w.instance.generation));
  let shape = 0;

  const ids = $(writes.map((w) => w.instance.id));
  ctes.push(...instanceParts(kind, writes, ids, $));
  if (kind === 'guarded') held.push('i', 'done');
  else if (checksProgress) held.push('i');
  if (writes.some((w) => w.insert?.latestOnly)) shape += PART.latestOnly;
  if (kind === 'insert' && writes.some((w) => w.instance.business_key !== null)) shape += PART.businessKeys;

  if (writes.some((w) => w.effects.resetSteps.length > 0 || w.effects.resetFlows.length > 0)) {
    shape += PART.reset;
    // Rows this statement writes again are overwritten instead: one statement touches a row once.
    const stepRows = rows((w) =>
      notWritten(
        w.effects.resetSteps,
        w.effects.steps.map((x) => x.stepId),
      ),
    );
    const flowRows = rows((w) =>
      notWritten(
        w.effects.resetFlows,
        w.effects.flows.map((x) => x.flowId),
      ),
    );
    ctes.push(
      `rs as (delete from steps where (instance_id, step_id) in (select * from unnest($${idsOf(stepRows)}::uuid[], $${$(stepRows.map((x) => x.item))}::text[]))` +
        hold('rs') +
        ')',
      `rf as (delete from flows where (instance_id, flow_id) in (select * from unnest($${idsOf(flowRows)}::uuid[], $${$(flowRows.map((x) => x.item))}::text[]))` +
        hold('rf') +
        ')',
    );
  }
  // A start's instance is new and has no rows yet: its steps, flows and frame head are plain
  // inserts, which write no speculative-insertion confirmation to the WAL as an upsert does.
  const steps = rows((w) => lastStatusPerStep(w.effects.steps));
  if (steps.length > 0) {
    shape += PART.steps;
    const [iid, gen] = [idsOf(steps), gensOf(steps)];
    const sid = $(steps.map((s) => s.item.stepId));
    const st = $(steps.map((s) => s.item.status));
    const loop = $(steps.map((s) => s.w.effects.loops[s.item.stepId] ?? null));
    ctes.push(
      `s as (insert into steps (instance_id, step_id, generation, status, ended_at, completed_seq, loop)
            select y.iid, y.step_id, y.gen, y.status,
                   case when y.status in ('completed', 'skipped', 'canceled', 'failed', 'compensated') then now() end,
                   case when y.status = 'completed' then nextval('events_seq') end,
                   y.loop
              from unnest($${iid}::uuid[], $${gen}::int[], $${sid}::text[], $${st}::text[], $${loop}::jsonb[]) with ordinality as y(iid, gen, step_id, status, loop, n)
             order by y.n` +
        (kind === 'insert'
          ? ''
          : `
            on conflict (instance_id, step_id)
            do update set status = excluded.status, ended_at = excluded.ended_at,
                          completed_seq = coalesce(excluded.completed_seq, steps.completed_seq),
                          loop = coalesce(excluded.loop, steps.loop)`) +
        hold('s') +
        ')',
    );
  }
  const flows = rows((w) => w.effects.flows);
  if (flows.length > 0) {
    shape += PART.flows;
    const [iid, gen] = [idsOf(flows), gensOf(flows)];
    const fid = $(flows.map((f) => f.item.flowId));
    const st = $(flows.map((f) => f.item.state));
    ctes.push(
      `f as (insert into flows (instance_id, flow_id, generation, state)
            select y.iid, y.flow_id, y.gen, y.state from unnest($${iid}::uuid[], $${gen}::int[], $${fid}::text[], $${st}::text[]) as y(iid, gen, flow_id, state)` +
        (kind === 'insert'
          ? ''
          : `
            on conflict (instance_id, flow_id) do update set generation = excluded.generation, state = excluded.state, resolved_at = excluded.resolved_at`) +
        hold('f') +
        ')',
    );
  }
  const tasks = rows((w) => w.effects.tasks.map((task, index) => ({ task, handed: w.delivery?.find((d) => d.index === index) })));
  if (tasks.length > 0) {
    shape += PART.tasks;
    const [iid, gen] = [idsOf(tasks), gensOf(tasks)];
    const sid = $(tasks.map((t) => t.item.task.stepId));
    const topic = $(tasks.map((t) => t.item.task.topic));
    const prio = $(tasks.map((t) => t.item.task.priority));
    const retries = $(tasks.map((t) => t.item.task.retries));
    const keys = $(
      tasks.map((t) =>
        idempotencyKey(
          t.w.instance.id,
          t.item.task.stepId,
          t.w.instance.generation,
          t.item.task.loopIndex,
          t.item.task.scopePath,
        ),
      ),
    );
    const loopIdx = $(tasks.map((t) => t.item.task.loopIndex ?? 0));
    const locals = $(tasks.map((t) => t.item.task.localVariables ?? {}));
    const scopes = $(tasks.map((t) => t.item.task.scopePath ?? '/'));
    const headers = $(tasks.map((t) => t.item.task.headers ?? null));
    const columns = `$${iid}::uuid[], $${gen}::int[], $${sid}::text[], $${topic}::text[], $${prio}::int[], $${retries}::int[], $${keys}::text[], $${loopIdx}::int[], $${locals}::jsonb[], $${scopes}::text[], $${headers}::jsonb[]`;
    const named =
      'iid, gen, step_id, topic, priority, retries, idempotency_key, loop_index, local_variables, scope_path, headers';
    if (delivery) {
      const taskIds = $(tasks.map((t) => t.item.handed?.taskId ?? null));
      const workers = $(tasks.map((t) => t.item.handed?.workerId ?? null));
      const tokens = $(tasks.map((t) => t.item.handed?.lockToken ?? null));
      const lockMs = $(tasks.map((t) => t.item.handed?.lockDurationMs ?? null));
      // A delivered task is locked as fetch-and-lock locks it (store/tasks.ts): attempt 1, expiry on the database clock.
      ctes.push(`t as (insert into external_tasks (id, instance_id, step_id, generation, topic, priority, retries, retries_left, idempotency_key, loop_index, local_variables,
                                         scope_path, headers, state, worker_id, lock_token, lock_expires_at, attempt)
            select coalesce(y.id, time_ordered_uuid()), y.iid, y.step_id, y.gen, y.topic, y.priority, y.retries, y.retries, y.idempotency_key, y.loop_index, y.local_variables, y.scope_path, y.headers,
                   case when y.lock_token is null then 'ready' else 'locked' end, y.worker_id, y.lock_token,
                   statement_timestamp() + y.lock_ms * interval '1 millisecond', case when y.lock_token is null then 0 else 1 end
              from unnest(${columns}, $${taskIds}::uuid[], $${workers}::text[], $${tokens}::uuid[], $${lockMs}::int[])
                   as y(${named}, id, worker_id, lock_token, lock_ms)
         returning *)`);
      // its rows are answered, so it counts among the parts run before the progress check as it is
      if (checksProgress) held.push('t');
    } else {
      ctes.push(
        `t as (insert into external_tasks (instance_id, step_id, generation, topic, priority, retries, retries_left, idempotency_key, loop_index, local_variables, scope_path, headers)
            select y.iid, y.step_id, y.gen, y.topic, y.priority, y.retries, y.retries, y.idempotency_key, y.loop_index, y.local_variables, y.scope_path, y.headers
              from unnest(${columns})
                   as y(${named})` +
          hold('t') +
          ')',
      );
    }
  }
  const incidents = rows((w) => w.effects.incidents.map((x, k) => ({ ...x, taskId: w.incidentTaskIds?.[k] ?? null })));
  if (incidents.length > 0) {
    shape += PART.incidents;
    const [iid, gen] = [idsOf(incidents), gensOf(incidents)];
    const sid = $(incidents.map((x) => x.item.stepId));
    const kinds = $(incidents.map((x) => x.item.kind));
    const msgs = $(incidents.map((x) => x.item.message));
    const details = $(incidents.map((x) => x.item.details ?? null));
    const taskIds = $(incidents.map((x) => x.item.taskId));
    ctes.push(
      `inc as (insert into incidents (instance_id, step_id, generation, kind, message, details, task_id)
            select y.iid, y.step_id, y.gen, y.kind, y.message, y.details, y.task_id
              from unnest($${iid}::uuid[], $${gen}::int[], $${sid}::text[], $${kinds}::text[], $${msgs}::text[], $${details}::jsonb[], $${taskIds}::uuid[])
                   as y(iid, gen, step_id, kind, message, details, task_id)` +
        hold('inc') +
        ')',
    );
  }
  const timers = rows((w) => waitingTimers(w.effects));
  if (timers.length > 0) {
    shape += PART.timers;
    const [iid, gen] = [idsOf(timers), gensOf(timers)];
    const sid = $(timers.map((t) => t.item.stepId));
    const delays = $(timers.map((t) => ('interval' in t.item.due ? t.item.due.interval : null)));
    const ats = $(timers.map((t) => ('at' in t.item.due ? t.item.due.at : null)));
    ctes.push(
      `tm as (insert into timers (instance_id, step_id, generation, due_at)
            select y.iid, y.step_id, y.gen,
                   case when y.at is not null then greatest(y.at::timestamptz, now()) else now() + y.delay::interval end
              from unnest($${iid}::uuid[], $${gen}::int[], $${sid}::text[], $${delays}::text[], $${ats}::text[]) as y(iid, gen, step_id, delay, at)` +
        hold('tm') +
        ')',
    );
  }
  // The correlation key defaults to the business key, as read (it never changes).
  const subscriptions = rows((w) =>
    w.effects.subscriptions
      .filter((x) => !w.effects.endedWaits.includes(x.stepId))
      .map((x) => ({ ...x, correlationKey: x.kind === 'user' ? null : (x.correlationKey ?? w.instance.business_key) })),
  );
  if (subscriptions.length > 0) {
    shape += PART.subscriptions;
    const [iid, gen] = [idsOf(subscriptions), gensOf(subscriptions)];
    const sid = $(subscriptions.map((x) => x.item.stepId));
    const kinds = $(subscriptions.map((x) => x.item.kind));
    const names = $(subscriptions.map((x) => x.item.name));
    const keys = $(subscriptions.map((x) => x.item.correlationKey));
    const scopes = $(subscriptions.map((x) => x.item.scopePath ?? '/'));
    // A user task's details ride along only in statements that create one.
    const people = subscriptions.some((x) => x.item.userTask !== undefined);
    if (people) shape += PART.userTasks;
    const details = people ? $(subscriptions.map((x) => x.item.userTask ?? null)) : 0;
    const indexes = people ? $(subscriptions.map((x) => x.item.loopIndex ?? null)) : 0;
    const locals = people ? $(subscriptions.map((x) => x.item.localVariables ?? null)) : 0;
    ctes.push(
      people
        ? `sb as (insert into subscriptions (instance_id, step_id, generation, kind, name, correlation_key, scope_path, user_task, assignee,
                                             loop_index, local_variables)
            select y.iid, y.step_id, y.gen, y.kind, y.name, y.correlation_key, y.scope_path, y.details, y.details->>'assignee',
                   y.loop_index, y.locals
              from unnest($${iid}::uuid[], $${gen}::int[], $${sid}::text[], $${kinds}::text[], $${names}::text[], $${keys}::text[], $${scopes}::text[], $${details}::jsonb[],
                          $${indexes}::int[], $${locals}::jsonb[])
                   as y(iid, gen, step_id, kind, name, correlation_key, scope_path, details, loop_index, locals)` +
            hold('sb') +
            ')'
        : `sb as (insert into subscriptions (instance_id, step_id, generation, kind, name, correlation_key, scope_path)
            select y.iid, y.step_id, y.gen, y.kind, y.name, y.correlation_key, y.scope_path
              from unnest($${iid}::uuid[], $${gen}::int[], $${sid}::text[], $${kinds}::text[], $${names}::text[], $${keys}::text[], $${scopes}::text[])
                   as y(iid, gen, step_id, kind, name, correlation_key, scope_path)` +
            hold('sb') +
            ')',
    );
  }
  // `instance_id = any(…)` gives the instance indexes a condition to search by: without it, with
  // statistics from when no timer waited, the planner reads all of timers_instance_idx for each
  // batch, the pairs joined to every waiting timer (docs/PERFORMANCE.md, "Stale statistics and
  // partial indexes").
  // A loop's next pass ends the waits of the pass before; the new pass's rows, written by this
  // same statement, are not seen by it.
  const endedWaits = rows((w) => [...w.effects.endedWaits, ...w.effects.resetSteps]);
  if (endedWaits.length > 0) {
    shape += PART.endedWaits;
    const waitIds = idsOf(endedWaits);
    const pairs = `(select * from unnest($${waitIds}::uuid[], $${$(endedWaits.map((x) => x.item))}::text[]))`;
    ctes.push(
      `tc as (update timers set state = 'canceled' where instance_id = any($${waitIds}::uuid[]) and (instance_id, step_id) in ${pairs} and ${OPEN_TIMER_SQL}` +
        hold('tc') +
        ')',
      `sd as (delete from subscriptions where instance_id = any($${waitIds}::uuid[]) and (instance_id, step_id) in ${pairs}` +
        hold('sd') +
        ')',
    );
  }
  const canceled = rows((w) => w.effects.canceledTasks);
  if (canceled.length > 0) {
    shape += PART.canceledTasks;
    const cancelIds = idsOf(canceled);
    const pairs = `(select * from unnest($${cancelIds}::uuid[], $${$(canceled.map((c) => c.item))}::text[]))`;
    ctes.push(
      `kc as (update external_tasks set state = 'canceled', ended_at = now()
              where instance_id = any($${cancelIds}::uuid[]) and (instance_id, step_id) in ${pairs} and ${OPEN_TASK_SQL}` +
        hold('kc') +
        ')',
      `ki as (update incidents set status = 'resolved', resolved_at = now()
              where instance_id = any($${cancelIds}::uuid[]) and (instance_id, step_id) in ${pairs} and ${OPEN_INCIDENT_SQL}` +
        hold('ki') +
        ')',
    );
  }

  // The guard: every instance row written (and with `guarded` every task done for its holder);
  // a delivered task's topic under no flow limit (its insert counts no capacity). It runs
  // before the progress check and the heads, so a lost guard locks no head.
  const guard = guardSql(kind, ids, delivery, $);
  if (guard) {
    ctes.push(`guarded as (select baton_transition_guard(${guard}) as ok)`);
    if (checksProgress) held.unshift('guarded');
  }

  const events = rows((w) => [...w.effects.events, ...deliveredEvents(w)]);
  const framedHere = framing === 'here' && events.length > 0;
  if (checksProgress && framedHere) ctes.push(...progressParts(held, ids, 'leave-to-trigger'));
  if (events.length > 0) {
    shape += PART.events;
    const framed = framing === 'trigger' ? undefined : checksProgress && framedHere ? PENDING_TO_TRIGGER_SQL : 'true';
    ctes.push(eventsPart(events, $, idsOf, gensOf, framed, delivery !== undefined));
  }
  let framesHeads = false;
  if (framedHere) {
    ctes.push(...frameParts(writes, $, checksProgress ? 'pend' : 'none'));
    framesHeads = true;
  } else if (o.frameBatch && framesBatch) {
    shape += PART.frameBatch;
    const ids = $(runsOf(o.frameBatch).map((r) => r.instance.id));
    ctes.push(...progressParts(held, ids, 'raise'), ...frameParts(o.frameBatch, $, 'quiet'));
    framesHeads = true;
  }
  if (delivery) shape += PART.delivery;

  const text =
    'with\n      ' + ctes.join(',\n      ') + '\n      ' + answerSql(guard !== undefined, framesHeads, delivery, writes, $);
  return { name: `write_${kind}_${framing}_${shape.toString(36)}`, text, values, kind, framing };
}

// The instance rows: inserted (a start), updated under the optimistic guard, or updated under
// the transaction's row locks. `i` answers (id, created_at) of every row written.
function instanceParts(kind: WriteKind, writes: TransitionWrite[], ids: number, $: (v: unknown) => number): string[] {
  const status = $(writes.map((w) => w.status));
  const vars = $(writes.map((w) => w.variables));
  const ended = $(writes.map((w) => w.status === 'completed' || w.status === 'canceled' || w.status === 'compensated'));
  if (kind === 'insert') {
    const bks = $(writes.map((w) => w.instance.business_key));
    const defs = $(writes.map((w) => w.instance.definition_id));
    const latest = writes.some((w) => w.insert?.latestOnly === true);
    const latestOnly = latest ? $(writes.map((w) => w.insert?.latestOnly === true)) : 0;
    // Inserted in business-key order: two statements inserting the same keys wait for each
    // other in one order, never in a cycle.
    return [
      `x as (select * from unnest($${ids}::uuid[], $${status}::text[], $${vars}::jsonb[], $${ended}::boolean[], $${bks}::text[], $${defs}::uuid[]` +
        (latest
          ? `, $${latestOnly}::boolean[]) as x(id, status, vars, ended, bk, def, latest))`
          : ') as x(id, status, vars, ended, bk, def))'),
      `i as (insert into instances (id, definition_id, definition_key, definition_version, business_key, variables, status, revision, ended_at)
            select x.id, d.id, d.key, d.version, x.bk, x.vars, x.status, 1, case when x.ended then now() end
              from x join definitions d on d.id = x.def` +
        (latest
          ? '\n             where not x.latest or not exists (select 1 from definitions n where n.key = d.key and n.version > d.version)'
          : '') +
        `
             order by x.bk, x.id` +
        // Without business keys there is no conflict to arbitrate, and a plain insert writes no confirmation record.
        (writes.some((w) => w.instance.business_key !== null)
          ? `
            ${BUSINESS_KEY_CONFLICT_SQL}`
          : '') +
        `
         returning id, created_at)`,
    ];
  }
  if (kind === 'locked') {
    return [
      `x as (select * from unnest($${ids}::uuid[], $${status}::text[], $${vars}::jsonb[], $${ended}::boolean[]) as x(id, status, vars, ended))`,
      `i as (update instances n set status = x.status, variables = x.vars, revision = n.revision + 1, updated_at = now(),
                   ended_at = case when x.ended then now() end
              from x
             where n.id = x.id
         returning n.id, n.created_at)`,
    ];
  }
  const gens = $(writes.map((w) => w.instance.generation));
  const revs = $(writes.map((w) => w.guard!.revision));
  const tasks = $(writes.map((w) => w.guard!.completes.taskId));
  const workers = $(writes.map((w) => w.guard!.completes.workerId));
  const tokens = $(writes.map((w) => w.guard!.completes.lockToken));
  return [
    `x as (select * from unnest($${ids}::uuid[], $${status}::text[], $${vars}::jsonb[], $${ended}::boolean[], $${gens}::int[], $${revs}::int[],
                                   $${tasks}::uuid[], $${workers}::text[], $${tokens}::uuid[]) as x(id, status, vars, ended, gen, rev, task, worker, token))`,
    `i as (update instances n set status = x.status, variables = x.vars, revision = n.revision + 1, updated_at = now(),
                   ended_at = case when x.ended then now() end
              from x
             where n.id = x.id and n.revision = x.rev and n.generation = x.gen
         returning n.id, n.created_at)`,
    `done as (update external_tasks t set state = 'done', ended_at = now(), last_result = 'complete'
                from x
               where t.id = x.task and ${HELD_TASK_SQL} and t.worker_id = x.worker and t.lock_token = x.token and t.generation = x.gen
                 and exists (select 1 from i where i.id = x.id)
            returning t.id)`,
  ];
}

function guardSql(kind: WriteKind, ids: number, delivery: string[] | undefined, $: (v: unknown) => number): string | undefined {
  if (kind === 'locked') return undefined;
  const all = `(select count(*) from i) = cardinality($${ids}::uuid[])`;
  const done = kind === 'guarded' ? ` and (select count(*) from done) = cardinality($${ids}::uuid[])` : '';
  const limits = delivery
    ? ` and not exists (select 1 from flow_limit_topics fl where fl.topic = any($${$(delivery)}::text[]))`
    : '';
  return all + done + limits;
}

// The topics of the delivered tasks; only a start or an optimistic complete, one at a time, delivers.
function deliveryOf(writes: TransitionWrite[], kind: WriteKind): string[] | undefined {
  const delivering = writes.filter((w) => (w.delivery?.length ?? 0) > 0);
  if (delivering.length === 0) return undefined;
  if (kind === 'locked' || writes.length > 1) {
    throw new Error('transitionStatement: only a start or a guarded complete, written alone, delivers its tasks to parked polls');
  }
  return delivering.flatMap((w) =>
    w.delivery!.map((d) => {
      const task = w.effects.tasks[d.index];
      if (!task) throw new Error(`transitionStatement: no new task at index ${d.index} to deliver`);
      return task.topic;
    }),
  );
}

/** The task:locked events of a write's delivered tasks, as fetch-and-lock writes them (the expiry is added in SQL). */
function deliveredEvents(w: TransitionWrite): (Effects['events'][number] & { lockMs?: number })[] {
  return (w.delivery ?? []).map((d) => ({
    kind: 'task:locked',
    stepId: w.effects.tasks[d.index]!.stepId,
    taskId: d.taskId,
    data: { workerId: d.workerId, trafficWaitMs: 0 },
    lockMs: d.lockDurationMs,
  }));
}

// A delivered task's lock expiry in its event and frame, on the database clock like the task row's.
const lockExpiryData = (alias: string) => `case when ${alias}.lock_ms is null then '{}'::jsonb
                   else jsonb_build_object('lockExpiresAt', statement_timestamp() + ${alias}.lock_ms * interval '1 millisecond') end`;

// An event whose instance has progress pending goes to the trigger, which flushes the step's reports before its frames.
const PENDING_TO_TRIGGER_SQL = '(select case when p.pending then null else true end from pend p where p.id = y.iid)';

// The history rows, in order (their seqs follow it; baton_event_seq numbers them, migration 0038). `framed`: the SQL of the column, or none (the trigger frames them).
function eventsPart(
  events: { w: TransitionWrite; item: Effects['events'][number] & { lockMs?: number } }[],
  $: (v: unknown) => number,
  idsOf: (r: { w: TransitionWrite }[]) => number,
  gensOf: (r: { w: TransitionWrite }[]) => number,
  framed: string | undefined,
  delivery: boolean,
): string {
  const [iid, gen] = [idsOf(events), gensOf(events)];
  const kinds = $(events.map((e) => e.item.kind));
  const sid = $(events.map((e) => e.item.stepId ?? null));
  const data = $(events.map((e) => e.item.data ?? {}));
  const taskIds = $(events.map((e) => e.item.taskId ?? null));
  const lock = delivery
    ? {
        columns: `, $${$(events.map((e) => (e.item.lockMs === undefined ? null : 1)))}::int[], $${$(events.map((e) => e.item.lockMs ?? null))}::int[]`,
        named: ', attempt, lock_ms',
      }
    : undefined;
  return `e as (insert into events (seq, instance_id, generation, kind, step_id, task_id, data${lock ? ', attempt' : ''}${framed ? ', framed' : ''})
            select baton_event_seq(o.iid), o.* from (
              select y.iid, y.gen, y.kind, y.step_id, y.task_id, y.data${lock ? ' || ' + lockExpiryData('y') + ', y.attempt' : ''}${framed ? ', ' + framed : ''}
                from unnest($${iid}::uuid[], $${gen}::int[], $${kinds}::text[], $${sid}::text[], $${data}::jsonb[], $${taskIds}::uuid[]${lock?.columns ?? ''})
                     with ordinality as y(iid, gen, kind, step_id, data, task_id${lock?.named ?? ''}, n)
               order by y.n) o)`;
}

// Whether progress is pending for the instances, asked after every part that takes row locks
// (`held`) has run: `raise` fails the statement (BT409: the batch's earlier writes are framed
// already, so it goes one by one), `leave-to-trigger` leaves that instance's events to the
// trigger. baton_progress_pending is volatile: its own snapshot sees a report that committed
// while a part waited for its task row. `locks` is materialized and its column used: a CTE
// referenced once is otherwise inlined, and a column nobody reads is never computed, which
// would leave those parts to the end of the statement.
function progressParts(held: string[], ids: number, mode: 'raise' | 'leave-to-trigger'): string[] {
  const locks =
    'locks as materialized (select ' + held.map((name) => '(select count(*) from ' + name + ')').join(' + ') + ' as n)';
  if (mode === 'raise') {
    return [
      locks,
      `quiet as materialized (select baton_transition_guard(not coalesce(bool_or(baton_progress_pending(q.id)), false)) as ok
                                from locks, unnest($${ids}::uuid[]) as q(id) where locks.n >= 0)`,
    ];
  }
  return [
    locks,
    `pend as materialized (select q.id, baton_progress_pending(q.id) as pending from locks, unnest($${ids}::uuid[]) as q(id) where locks.n >= 0)`,
  ];
}

/** Transitions grouped per instance, in instance order (the order heads are locked in), each instance's events in the order written. */
function runsOf(transitions: FramedTransition[]): { instance: FramedTransition['instance']; events: Effects['events'] }[] {
  const runs: { instance: FramedTransition['instance']; events: Effects['events'] }[] = [];
  const sorted = transitions
    .filter((t) => t.effects.events.length > 0)
    .sort((a, b) => (a.instance.id < b.instance.id ? -1 : a.instance.id > b.instance.id ? 1 : 0));
  for (const x of sorted) {
    const last = runs.at(-1);
    if (last?.instance.id === x.instance.id && last.instance.generation === x.instance.generation)
      last.events = [...last.events, ...x.effects.events];
    else runs.push({ instance: x.instance, events: x.effects.events });
  }
  return runs;
}

/**
 * The frames of transitions: every instance's head (in instance order, as the trigger takes
 * them at commit) and its frames (framesOf); several transitions of one instance (two of its
 * timers, a batch's rounds) are framed as one run in the order written, as the trigger frames
 * all of a transaction's events of an instance (a row may be upserted once per statement).
 * `head` answers (instance_id, generation, last_seq) of each head it moved. `allow`: the CTE
 * that must allow a head (`pend`: its instance has no progress pending; `quiet`: the check
 * passed; `none`: new instances). None when no transition has events.
 */
function frameParts(
  transitions: (FramedTransition & { delivery?: DeliveredTask[] })[],
  $: (v: unknown) => number,
  allow: 'pend' | 'quiet' | 'none',
): string[] {
  const withDelivered = transitions.map((t) => {
    const delivered = t.delivery ? deliveredEvents(t as TransitionWrite) : [];
    return delivered.length === 0 ? t : { ...t, effects: { ...t.effects, events: [...t.effects.events, ...delivered] } };
  });
  const runs = runsOf(withDelivered);
  if (runs.length === 0) return [];
  const frames = runs.map((x) => framesOf(x.events));
  const ids = $(runs.map((x) => x.instance.id));
  const gens = $(runs.map((x) => x.instance.generation));
  const counts = $(frames.map((f) => f.kinds.length));
  const ends = $(frames.map((f) => f.kinds.at(-1) === 'instance:ended'));
  const fk = $(frames.flatMap((f, i) => f.kinds.map(() => i + 1)));
  const pos = $(frames.flatMap((f) => f.kinds.map((_, j) => j + 1)));
  const kinds = $(frames.flatMap((f) => f.kinds));
  const data = $(frames.flatMap((f) => f.data));
  const delivering = transitions.some((t) => (t.delivery?.length ?? 0) > 0);
  const lockMs = delivering ? $(frames.flatMap((f) => f.lockMs)) : 0;
  const allowed =
    allow === 'pend' ? ' join pend p on p.id = hx.id where not p.pending' : allow === 'quiet' ? ', quiet where quiet.ok' : '';
  return [
    `hx as (select * from unnest($${ids}::uuid[], $${gens}::int[], $${counts}::int[], $${ends}::boolean[]) with ordinality as y(id, gen, n, ends, k))`,
    appendHeadsCte(`hx.id, hx.gen, hx.n, case when hx.ends then now() end from hx${allowed} order by hx.k`, allow === 'none'),
    `fw as (insert into frame_runs (instance_id, generation, last_seq, kinds, data)
            select hx.id, hx.gen, head.last_seq, array_agg(f.kind order by f.pos), array_agg(f.data${delivering ? ' || ' + lockExpiryData('f') : ''} order by f.pos)
              from unnest($${fk}::int[], $${pos}::int[], $${kinds}::text[], $${data}::jsonb[]${delivering ? `, $${lockMs}::int[]` : ''}) as f(k, pos, kind, data${delivering ? ', lock_ms' : ''})
              join hx on hx.k = f.k
              join head on head.instance_id = hx.id and head.generation = hx.gen
             group by hx.id, hx.gen, head.last_seq)`,
  ];
}

/**
 * The frames of transitions written with framesAtEnd, as the CTEs of a statement of their
 * own (frameTransitions): with progress pending for any of the instances it fails (BT409).
 */
export function frameTransitionsStatement(
  transitions: FramedTransition[],
): { name: string; text: string; values: unknown[] } | undefined {
  const values: unknown[] = [];
  const $ = (v: unknown): number => values.push(v);
  const ids = $(runsOf(transitions).map((r) => r.instance.id));
  const frames = frameParts(transitions, $, 'quiet');
  if (frames.length === 0) return undefined;
  const quiet = `quiet as (select baton_transition_guard(not exists (select 1 from progress_reports where instance_id = any($${ids}::uuid[]))) as ok)`;
  return {
    name: 'frame_transitions',
    text: 'with ' + [quiet, ...frames].join(',\n           ') + '\n           select instance_id, generation, last_seq from head',
    values,
  };
}

// What the statement answers. Without delivery: the rows' created_at (one transaction, one
// now()) and, when it framed, one row per head it moved. With delivery: one row per delivered
// task, shaped like fetch-and-lock's answer (store/tasks.ts): the task row, the business key,
// the instance's variables under the task's local ones, and the instance's last frame seq.
function answerSql(
  guarded: boolean,
  framesHeads: boolean,
  delivery: string[] | undefined,
  writes: TransitionWrite[],
  $: (v: unknown) => number,
): string {
  const from = guarded ? 'guarded' : '(select 1) as one';
  if (delivery) {
    const w = writes[0]!;
    return (
      `select l.*, $${$(w.instance.business_key)}::text as business_key, $${$(w.variables)}::jsonb || l.local_variables as variables` +
      (framesHeads ? ', (select last_seq from head limit 1) as frame_seq' : '') +
      `
        from ${from} left join (select * from t where t.lock_token is not null) l on true
       order by l.priority desc, l.created_at`
    );
  }
  if (!framesHeads) return 'select (select created_at from i limit 1) as created_at' + (guarded ? ' from guarded' : '');
  return `select (select created_at from i limit 1) as created_at, head.instance_id, head.generation, head.last_seq from ${from} left join head on true`;
}

/**
 * The frames of a transition's events, as the trigger of migration 0011 makes them: the
 * event's data with its stepId and taskId (a delivered task's task:locked also its attempt),
 * and after an ending event instance:ended {status}, the generation's last frame (later events
 * of the transition get none). `lockMs`: per frame, a delivered task's lock duration or null.
 */
export function framesOf(events: (Effects['events'][number] & { lockMs?: number })[]): {
  kinds: string[];
  data: Record<string, unknown>[];
  lockMs: (number | null)[];
} {
  const kinds: string[] = [];
  const data: Record<string, unknown>[] = [];
  const lockMs: (number | null)[] = [];
  for (const e of events) {
    kinds.push(e.kind);
    data.push({
      ...(e.stepId != null ? { stepId: e.stepId } : {}),
      ...(e.taskId != null ? { taskId: e.taskId } : {}),
      ...e.data,
      ...(e.lockMs !== undefined ? { attempt: 1 } : {}),
    });
    lockMs.push(e.lockMs ?? null);
    if (ENDING_KINDS.has(e.kind)) {
      kinds.push('instance:ended');
      data.push({ status: e.kind.slice('instance:'.length) });
      lockMs.push(null);
      break;
    }
  }
  return { kinds, data, lockMs };
}

/** The timers a transition leaves waiting: a wait that starts and ends within it never needs a row. */
export function waitingTimers(fx: Effects): Effects['timers'] {
  return fx.timers.filter((t) => !fx.endedWaits.includes(t.stepId));
}

/** The same for every attempt of one step (one element of a multi-instance step) in one generation, different for anything else. */
/** Stable for one task of one pass of one generation: a worker that sees it twice did the work once. */
export function idempotencyKey(
  instanceId: string,
  stepId: string,
  generation: number,
  loopIndex?: number,
  scopePath?: string,
): string {
  return `${instanceId}/${stepId}/${generation}${loopIndex === undefined ? '' : `/${loopIndex}`}${scopePath === undefined ? '' : scopePath}`;
}

function notWritten(reset: string[], written: string[]): string[] {
  const again = new Set(written);
  return [...new Set(reset)].filter((id) => !again.has(id));
}

// A step may change twice in one transition (an incident resolved, then completed);
// one statement may touch a row once, so only the last status is written.
function lastStatusPerStep(steps: Effects['steps']): Effects['steps'] {
  const last = new Map<string, Effects['steps'][number]>();
  for (const s of steps) last.set(s.stepId, s);
  return [...last.values()];
}
