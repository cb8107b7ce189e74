// The statement of applyEffects (store/instances.ts), built per shape: only the parts a
// transition uses. A complete of a one-task instance writes steps, flows, events, the
// instance row and its task; it has no timers, subscriptions, incidents or cancels, and
// the seventeen-CTE statement it used to run cost about 0.56 ms of PostgreSQL time per
// call on empty CTEs (pg_stat_statements, docs/PERFORMANCE.md "Session 4").
//
// A shape is a bitmask of the parts present. Each shape is one named prepared statement
// (the name carries the mask), and its parameters are numbered in the order the parts
// are written, so every $n given is used (PostgreSQL infers a parameter's type from its
// use and refuses a prepared statement with an unused one). The SQL below interpolates
// only placeholders ($${n}); the parts are joined as plain strings.
import type { Effects, Variables } from '../model/effects.ts';
import type { InstanceStatus } from '../model/vocabulary.ts';
import { HELD_TASK_SQL, OPEN_INCIDENT_SQL, OPEN_TASK_SQL, OPEN_TIMER_SQL } from './open-states.ts';

/** The parts of a transition's statement; a shape is the sum of those present (also of apply-together.ts' statements). */
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
  /** the optimistic guard: instance revision and generation as read */
  guard: 512,
  /** the guard also marks the completed task done for its holder */
  completes: 1024,
  /** a start: the statement inserts the instance row */
  insert: 2048,
  /** a start that must use the latest version of its definition */
  latestOnly: 4096,
  /** the statement is its own transaction and writes the frames of its events itself */
  frames: 8192,
  /** the transaction frames the events at its end (frameTransitions, or its last write with `frame`) */
  framesAtEnd: 16384,
  /** a start or a guarded complete inserts some of its tasks locked for parked polls of this node (engine/poll-delivery.ts) */
  delivery: 32768,
} as const;

/** Events that end a generation: instance:ended follows them, and nothing after it. */
const ENDING_KINDS = new Set(['instance:completed', 'instance:canceled', 'instance:compensated']);

export interface ApplyEffectsParams {
  instance: { id: string; generation: number; business_key: string | null; definition_id: string; definition_key: string };
  effects: Effects;
  status: InstanceStatus;
  variables: Variables;
  /** incident rows of this transition that belong to an existing task */
  incidentTaskIds?: (string | null)[];
  /**
   * Optimistic write (no instance lock held): the statement applies only if
   * the instance is still at the revision and generation it was read at and, with `completes`,
   * marks that task done for its holder; otherwise it fails with TRANSITION_GUARD_LOST and
   * writes nothing.
   */
  guard?: { revision: number; completes?: { taskId: string; workerId: string; lockToken: string } };
  /**
   * Inside a transaction that frames its transitions at the end (frameTransitions, or the
   * batch's last write with `frame`): the events are written framed (no trigger call); that
   * framing fails (BT409) if progress is pending for the instance.
   */
  framesAtEnd?: boolean;
  /**
   * A start in one statement: the instance row (p.instance: id, definition_id, business_key)
   * is inserted with the transition. It fails with TRANSITION_GUARD_LOST, writing nothing,
   * when the business key is taken or, with latestOnly, a newer version of the definition exists.
   */
  insert?: { latestOnly: boolean };
}

export interface ApplyEffectsInput {
  instance: { id: string; generation: number; business_key: string | null; definition_id: string };
  effects: Effects;
  status: InstanceStatus;
  variables: Variables;
  incidentTaskIds: (string | null)[];
  guard?: { revision: number; completes?: { taskId: string; workerId: string; lockToken: string } };
  insert?: { latestOnly: boolean };
  /**
   * The statement is its own transaction (sent through the pool, not a client): only then
   * may it lock the frame head itself, as its last lock with the commit right after.
   */
  alone?: boolean;
  /**
   * A write inside a transaction that frames its transitions at its end (a batch of
   * completes, a batch of timer firings: frameTransitions, or the batch's last write with
   * `frame`): the events are written framed. Pending progress is checked once, by that framing.
   */
  framesAtEnd?: boolean;
  /**
   * A start (`insert`) or an optimistic complete (`guard` with `completes`): these of its new
   * tasks are inserted locked for a parked poll, as fetch-and-lock would lock them (attempt 1, the poll's lock duration from the
   * database clock, a `task:locked` event), and are not rung. The guard fails (BT409) when a
   * flow limit covers one of their topics. The statement then answers one row per handed
   * task, shaped like fetch-and-lock's answer (store/tasks.ts ANSWER_SQL).
   */
  delivery?: DeliveredTask[];
}

/** A new task of the transition (fx.tasks[index]) inserted locked for a parked poll. */
export interface DeliveredTask {
  index: number;
  taskId: string;
  workerId: string;
  lockToken: string;
  lockDurationMs: number;
}

export interface ApplyEffectsStatement {
  name: string;
  text: string;
  values: unknown[];
}

/** The statement and values for one transition; the same shape always gives the same name and text. */
export function applyEffectsStatement(p: ApplyEffectsInput): ApplyEffectsStatement {
  const fx = p.effects;
  const delivery = p.delivery && p.delivery.length > 0 ? deliveryColumns(fx, p.delivery) : undefined;
  // The guard decides whether the handed tasks are written: a start's, or an optimistic complete's (revision, generation, the holder's lock).
  if (delivery && !p.insert && !p.guard?.completes)
    throw new Error('applyEffectsStatement: only a start or a guarded complete hands its tasks to parked polls');
  // the handed tasks' task:locked events follow the transition's own (as a fetch after the commit would)
  const allEvents = delivery ? [...fx.events, ...delivery.events] : fx.events;
  const steps = lastStatusPerStep(fx.steps);
  const ended = p.status === 'completed' || p.status === 'canceled' || p.status === 'compensated';
  // A wait that starts and ends within one transition never needs a row.
  const timers = waitingTimers(fx);
  const subscriptions = fx.subscriptions.filter((x) => !fx.endedWaits.includes(x.stepId));
  const has = (part: number, on: boolean) => (on ? part : 0);
  const shape =
    has(PART.steps, steps.length > 0) +
    has(PART.flows, fx.flows.length > 0) +
    has(PART.tasks, fx.tasks.length > 0) +
    has(PART.incidents, fx.incidents.length > 0) +
    has(PART.events, fx.events.length > 0) +
    has(PART.timers, timers.length > 0) +
    has(PART.subscriptions, subscriptions.length > 0) +
    has(PART.endedWaits, fx.endedWaits.length > 0) +
    has(PART.canceledTasks, fx.canceledTasks.length > 0) +
    has(PART.guard, p.guard !== undefined) +
    has(PART.completes, p.guard?.completes !== undefined) +
    has(PART.insert, p.insert !== undefined) +
    has(PART.latestOnly, p.insert?.latestOnly === true) +
    has(PART.delivery, delivery !== undefined);
  // A statement that is its own transaction frames its events itself. Inside a transaction
  // (a batch of completes) the head would be locked before the transaction's later locks,
  // so the trigger does it at commit. An incident may name a task, whose key lock its
  // foreign key takes at the end of the statement, after the frame head: those
  // transitions leave framing to the trigger too.
  const framesHere = p.alone === true && fx.events.length > 0 && fx.incidents.length === 0;
  const framesAtEnd = !framesHere && p.framesAtEnd === true && fx.events.length > 0;
  const shapeOf = shape + has(PART.frames, framesHere) + has(PART.framesAtEnd, framesAtEnd);
  // With framesHere, the frame head must be the statement's last lock: the parts that take
  // row locks answer a row each, and the framing parts depend on all of them being run.
  // A start needs neither: its instance id is new, so no report can be pending for it and
  // nobody else can be waiting for its frame head. With framesAtEnd, frameTransitions
  // checks for progress once for the whole batch, after every write of it (as late as this
  // statement's check, so it sees at least as much).
  const checksProgress = framesHere && p.insert === undefined;
  const held: string[] = [];
  const hold = (name: string): string => (checksProgress ? (held.push(name), ' returning 1') : '');

  const values: unknown[] = [];
  const $ = (v: unknown): number => values.push(v);
  const ctes: string[] = [];
  const id = $(p.instance.id);
  let genAt = 0;
  // allocated at its first use: a shape that never names the generation must not be given it
  const gen = (): number => (genAt ||= $(p.instance.generation));
  const status = $(p.status);
  const vars = $(p.variables);
  const end = $(ended);

  let correlationKey: string;
  let guard: string | undefined;
  let bkParam = 0;
  if (p.insert) {
    const bk = $(p.instance.business_key);
    bkParam = bk;
    const def = $(p.instance.definition_id);
    ctes.push(
      `i as (insert into instances (id, definition_id, definition_key, definition_version, business_key, variables, status, revision, ended_at)
            select $${id}::uuid, d.id, d.key, d.version, $${bk}::text, $${vars}::jsonb, $${status}::text, 1, case when $${end}::boolean then now() end
              from definitions d
             where d.id = $${def}::uuid` +
        (p.insert.latestOnly
          ? ' and not exists (select 1 from definitions n where n.key = d.key and n.version > d.version)'
          : '') +
        `
            on conflict (definition_key, business_key) where business_key is not null do nothing
         returning id, created_at)`,
    );
    // the new row is not visible to its own statement
    correlationKey = `$${bk}::text`;
    // A start's guard: its row was inserted (business key free, definition still the latest).
    guard = (p.guard ? 'false and ' : '') + 'exists (select 1 from i)';
  } else {
    const rev = p.guard ? $(p.guard.revision) : 0;
    ctes.push(
      `i as (update instances set status = $${status}::text, variables = $${vars}::jsonb, revision = revision + 1, updated_at = now(),
                   ended_at = case when $${end}::boolean then now() end
             where id = $${id}::uuid` +
        (p.guard ? ` and revision = $${rev}::int and generation = $${gen()}::int` : '') +
        `
         returning id, created_at)`,
    );
    correlationKey = `(select business_key from instances where id = $${id}::uuid)`;
    if (p.guard) guard = 'exists (select 1 from i)';
    // the handed rows' business key, as read (it never changes)
    if (delivery) bkParam = $(p.instance.business_key);
  }

  if (steps.length > 0) {
    const ids = $(steps.map((s) => s.stepId));
    const sts = $(steps.map((s) => s.status));
    const loops = $(steps.map((s) => fx.loops[s.stepId] ?? null));
    ctes.push(
      `s as (insert into steps (instance_id, step_id, generation, status, ended_at, completed_seq, loop)
            select $${id}::uuid, x.step_id, $${gen()}::int, x.status,
                   case when x.status in ('completed', 'skipped', 'canceled', 'failed', 'compensated') then now() end,
                   case when x.status = 'completed' then nextval('events_seq') end,
                   x.loop
              from unnest($${ids}::text[], $${sts}::text[], $${loops}::jsonb[]) with ordinality as x(step_id, status, loop, n)
             order by x.n
            on conflict (instance_id, step_id)
            do update set status = excluded.status, ended_at = excluded.ended_at,
                          completed_seq = coalesce(excluded.completed_seq, steps.completed_seq),
                          loop = coalesce(excluded.loop, steps.loop)` +
        hold('s') +
        ')',
    );
  }
  if (fx.flows.length > 0) {
    const ids = $(fx.flows.map((f) => f.flowId));
    const sts = $(fx.flows.map((f) => f.state));
    ctes.push(
      `f as (insert into flows (instance_id, flow_id, generation, state)
            select $${id}::uuid, x.flow_id, $${gen()}::int, x.state from unnest($${ids}::text[], $${sts}::text[]) as x(flow_id, state)` +
        hold('f') +
        ')',
    );
  }
  if (fx.tasks.length > 0) {
    const ids = $(fx.tasks.map((t) => t.stepId));
    const topics = $(fx.tasks.map((t) => t.topic));
    const prio = $(fx.tasks.map((t) => t.priority));
    const retries = $(fx.tasks.map((t) => t.retries));
    const keys = $(fx.tasks.map((t) => idempotencyKey(p.instance.id, t.stepId, p.instance.generation, t.loopIndex)));
    const loopIdx = $(fx.tasks.map((t) => t.loopIndex ?? 0));
    const locals = $(fx.tasks.map((t) => t.localVariables ?? {}));
    // every new task's columns; a handed task adds its id, holder, token and lock duration
    const unnested = `unnest($${ids}::text[], $${topics}::text[], $${prio}::int[], $${retries}::int[], $${keys}::text[], $${loopIdx}::int[], $${locals}::jsonb[]`;
    const named = 'as x(step_id, topic, priority, retries, idempotency_key, loop_index, local_variables';
    if (delivery) {
      const taskIds = $(delivery.taskIds);
      const workers = $(delivery.workers);
      const tokens = $(delivery.tokens);
      const lockMs = $(delivery.lockMs);
      // A handed task is locked as fetch-and-lock locks it (store/tasks.ts lockPickedSql): attempt 1, expiry on the database clock.
      ctes.push(
        `t as (insert into external_tasks (id, instance_id, step_id, generation, topic, priority, retries, retries_left, idempotency_key, loop_index, local_variables,
                                         state, worker_id, lock_token, lock_expires_at, attempt)
            select coalesce(x.id, gen_random_uuid()), $${id}::uuid, x.step_id, $${gen()}::int, x.topic, x.priority, x.retries, x.retries, x.idempotency_key, x.loop_index, x.local_variables,
                   case when x.lock_token is null then 'ready' else 'locked' end, x.worker_id, x.lock_token,
                   statement_timestamp() + x.lock_ms * interval '1 millisecond', case when x.lock_token is null then 0 else 1 end
              from ` +
          unnested +
          `, $${taskIds}::uuid[], $${workers}::text[], $${tokens}::uuid[], $${lockMs}::int[])
                   ` +
          named +
          `, id, worker_id, lock_token, lock_ms)
         returning *)`,
      );
      // a complete's statement checks pending progress after this insert too (its rows are answered, so no hold('t'))
      if (checksProgress) held.push('t');
      // No fetch may lock beyond a flow limit, and this insert counts no capacity: a limited topic is never handed.
      const handedTopics = $(delivery.topics);
      guard =
        (guard ?? 'true') + ` and not exists (select 1 from flow_limit_topics fl where fl.topic = any($${handedTopics}::text[]))`;
    } else {
      ctes.push(
        `t as (insert into external_tasks (instance_id, step_id, generation, topic, priority, retries, retries_left, idempotency_key, loop_index, local_variables)
            select $${id}::uuid, x.step_id, $${gen()}::int, x.topic, x.priority, x.retries, x.retries, x.idempotency_key, x.loop_index, x.local_variables
              from ` +
          unnested +
          ')\n                   ' +
          named +
          ')' +
          hold('t') +
          ')',
      );
    }
  }
  if (fx.incidents.length > 0) {
    const ids = $(fx.incidents.map((x) => x.stepId));
    const kinds = $(fx.incidents.map((x) => x.kind));
    const msgs = $(fx.incidents.map((x) => x.message));
    const details = $(fx.incidents.map((x) => x.details ?? null));
    const tasks = $(p.incidentTaskIds);
    ctes.push(`inc as (insert into incidents (instance_id, step_id, generation, kind, message, details, task_id)
            select $${id}::uuid, x.step_id, $${gen()}::int, x.kind, x.message, x.details, x.task_id
              from unnest($${ids}::text[], $${kinds}::text[], $${msgs}::text[], $${details}::jsonb[], $${tasks}::uuid[]) as x(step_id, kind, message, details, task_id))`);
  }
  let events: EventParams | undefined;
  if (allEvents.length > 0) {
    events = {
      kinds: $(allEvents.map((e) => e.kind)),
      ids: $(allEvents.map((e) => e.stepId ?? null)),
      data: $(allEvents.map((e) => e.data ?? {})),
      tasks: $(allEvents.map((e) => e.taskId ?? null)),
      ...(delivery ? { attempts: $(delivery.eventAttempts), lockMs: $(delivery.eventLockMs) } : {}),
    };
  }
  if (timers.length > 0) {
    const ids = $(timers.map((t) => t.stepId));
    const delays = $(timers.map((t) => ('interval' in t.due ? t.due.interval : null)));
    const ats = $(timers.map((t) => ('at' in t.due ? t.due.at : null)));
    ctes.push(
      `tm as (insert into timers (instance_id, step_id, generation, due_at)
            select $${id}::uuid, x.step_id, $${gen()}::int,
                   case when x.at is not null then greatest(x.at::timestamptz, now()) else now() + x.delay::interval end
              from unnest($${ids}::text[], $${delays}::text[], $${ats}::text[]) as x(step_id, delay, at)` +
        hold('tm') +
        ')',
    );
  }
  if (subscriptions.length > 0) {
    const ids = $(subscriptions.map((x) => x.stepId));
    const kinds = $(subscriptions.map((x) => x.kind));
    const names = $(subscriptions.map((x) => x.name));
    const keys = $(subscriptions.map((x) => x.correlationKey));
    ctes.push(
      `sb as (insert into subscriptions (instance_id, step_id, generation, kind, name, correlation_key)
            select $${id}::uuid, x.step_id, $${gen()}::int, x.kind, x.name, coalesce(x.correlation_key, ` +
        correlationKey +
        `)
              from unnest($${ids}::text[], $${kinds}::text[], $${names}::text[], $${keys}::text[]) as x(step_id, kind, name, correlation_key)` +
        hold('sb') +
        ')',
    );
  }
  if (fx.endedWaits.length > 0) {
    const ids = $(fx.endedWaits);
    ctes.push(
      `tc as (update timers set state = 'canceled' where instance_id = $${id}::uuid and step_id = any($${ids}::text[]) and ${OPEN_TIMER_SQL}` +
        hold('tc') +
        ')',
      `sd as (delete from subscriptions where instance_id = $${id}::uuid and step_id = any($${ids}::text[])` + hold('sd') + ')',
    );
  }
  if (fx.canceledTasks.length > 0) {
    const ids = $(fx.canceledTasks);
    ctes.push(
      `kc as (update external_tasks set state = 'canceled', ended_at = now()
              where instance_id = $${id}::uuid and step_id = any($${ids}::text[]) and ${OPEN_TASK_SQL}` +
        hold('kc') +
        ')',
      `ki as (update incidents set status = 'resolved', resolved_at = now()
              where instance_id = $${id}::uuid and step_id = any($${ids}::text[]) and ${OPEN_INCIDENT_SQL}` +
        hold('ki') +
        ')',
    );
  }
  if (p.guard?.completes) {
    const task = $(p.guard.completes.taskId);
    const worker = $(p.guard.completes.workerId);
    const token = $(p.guard.completes.lockToken);
    ctes.push(`done as (update external_tasks set state = 'done', ended_at = now(), last_result = 'complete'
                where id = $${task}::uuid and ${HELD_TASK_SQL} and worker_id = $${worker}::text and lock_token = $${token}::uuid and generation = $${gen()}::int
                  and exists (select 1 from i)
            returning id)`);
    guard = (guard ?? 'true') + ' and exists (select 1 from done)';
  }
  if (events && framesHere) {
    held.push('i', ...(p.guard?.completes ? ['done'] : []));
    const frames = framesOf(allEvents);
    if (delivery) {
      // the trigger's frame of a task:locked event carries its attempt (migration 0011)
      for (let k = fx.events.length; k < frames.data.length; k++) frames.data[k] = { ...frames.data[k], attempt: 1 };
    }
    ctes.push(
      ...frameParts(
        id,
        gen(),
        events,
        { kinds: $(frames.kinds), data: $(frames.data), ...(delivery ? { lockMs: $(delivery.eventLockMs) } : {}) },
        checksProgress ? held : undefined,
      ),
    );
  } else if (events && framesAtEnd) {
    ctes.push(eventsPart(id, gen(), events, 'true'));
  } else if (events) {
    ctes.push(eventsPart(id, gen(), events, ''));
  }
  // A guarded write whose guard lost raises, so the whole statement writes nothing.
  if (guard) ctes.push('guarded as (select baton_transition_guard(' + guard + ') as ok)');
  // With handed tasks, the created_at of their rows is the instance's (both now(), one transaction).
  const answers = delivery ? [] : ['(select created_at from i) as created_at'];
  // The transition's notifications ring after its commit (store/notifications.ts); the frames' one needs the head's seq.
  if (events && framesHere) answers.push('(select last_seq from head) as frame_seq');
  // The handed rows as fetch-and-lock answers them (store/tasks.ts ANSWER_SQL): the task row, the
  // business key, the instance's variables under the task's local ones. A row of nulls if none.
  if (delivery) answers.push(`l.*, $${bkParam}::text as business_key, $${vars}::jsonb || l.local_variables as variables`);
  const from = !delivery
    ? guard
      ? ' from guarded'
      : ''
    : `
        from guarded left join (select * from t where t.lock_token is not null) l on true
       order by l.priority desc, l.created_at`;
  const text = 'with\n      ' + ctes.join(',\n      ') + '\n      select ' + answers.join(', ') + from;
  return { name: 'apply_effects_' + shapeOf.toString(36), text, values };
}

/** The timers a transition leaves waiting: a wait that starts and ends within it never needs a row. */
export function waitingTimers(fx: Effects): Effects['timers'] {
  return fx.timers.filter((t) => !fx.endedWaits.includes(t.stepId));
}

/**
 * The frames of a transition's events, as the trigger of migration 0011 makes them: the
 * event's data with its stepId and taskId, and after an ending event instance:ended
 * {status}, the generation's last frame (later events of the transition get none).
 */
export function framesOf(events: Effects['events']): { kinds: string[]; data: Record<string, unknown>[] } {
  const kinds: string[] = [];
  const data: Record<string, unknown>[] = [];
  for (const e of events) {
    kinds.push(e.kind);
    data.push({
      ...(e.stepId != null ? { stepId: e.stepId } : {}),
      ...(e.taskId != null ? { taskId: e.taskId } : {}),
      ...e.data,
    });
    if (ENDING_KINDS.has(e.kind)) {
      kinds.push('instance:ended');
      data.push({ status: e.kind.slice('instance:'.length) });
      break;
    }
  }
  return { kinds, data };
}

/** Parameter numbers of the events; with a delivery also each event's attempt and lock duration (null but for task:locked). */
type EventParams = { kinds: number; ids: number; data: number; tasks: number; attempts?: number; lockMs?: number };

// A handed task's lock expiry in its event and frame, on the database clock like the task row's.
const LOCK_EXPIRY_DATA = `case when x.lock_ms is null then '{}'::jsonb
                   else jsonb_build_object('lockExpiresAt', statement_timestamp() + x.lock_ms * interval '1 millisecond') end`;

// The history rows, in order (their seqs follow it). `framed`: an SQL expression for the column.
function eventsPart(id: number, gen: number, ev: EventParams, framed: string): string {
  if (ev.attempts !== undefined && ev.lockMs !== undefined) {
    return (
      `e as (insert into events (instance_id, generation, kind, step_id, task_id, attempt, data` +
      (framed ? ', framed' : '') +
      `)
            select $${id}::uuid, $${gen}::int, x.kind, x.step_id, x.task_id, x.attempt, x.data || ` +
      LOCK_EXPIRY_DATA +
      (framed ? ', ' + framed : '') +
      `
              from unnest($${ev.kinds}::text[], $${ev.ids}::text[], $${ev.data}::jsonb[], $${ev.tasks}::uuid[], $${ev.attempts}::int[], $${ev.lockMs}::int[])
                   with ordinality as x(kind, step_id, data, task_id, attempt, lock_ms, n)
             order by x.n)`
    );
  }
  return (
    `e as (insert into events (instance_id, generation, kind, step_id, task_id, data` +
    (framed ? ', framed' : '') +
    `)
            select $${id}::uuid, $${gen}::int, x.kind, x.step_id, x.task_id, x.data` +
    (framed ? ', ' + framed : '') +
    `
              from unnest($${ev.kinds}::text[], $${ev.ids}::text[], $${ev.data}::jsonb[], $${ev.tasks}::uuid[]) with ordinality as x(kind, step_id, data, task_id, n)
             order by x.n)`
  );
}

// The events and their frames, written by the statement (migration 0013): what the trigger
// of 0011 does at commit, with the frames computed here (framesOf) instead of read back. With
// `held`, `locks` runs every part that takes a row lock first, so the head (locked until
// commit, which follows at once) is the last lock taken, and with progress pending the
// events are left to the trigger (framed null), which flushes it before the frame that
// ends its step. A start passes none: nothing can be pending or waiting for a new instance.
function frameParts(
  id: number,
  gen: number,
  ev: EventParams,
  fr: { kinds: number; data: number; lockMs?: number },
  held: string[] | undefined,
): string[] {
  return [
    ...(held ? progressParts(id, held) : []),
    eventsPart(id, gen, ev, held ? '(select case when pending then null else true end from pend)' : 'true'),
    `head as (insert into frame_heads as h (instance_id, generation, last_seq, ended_at)
            select $${id}::uuid, $${gen}::int, cardinality($${fr.kinds}::text[]), case when 'instance:ended' = any($${fr.kinds}::text[]) then now() end
              ` +
      (held ? 'from pend where not pending' : '') +
      `
            on conflict (instance_id, generation) do update set last_seq = h.last_seq + excluded.last_seq, ended_at = excluded.ended_at
             where h.ended_at is null
         returning h.last_seq)`,
    `fw as (insert into frames (instance_id, generation, seq, kind, data, at)
            select $${id}::uuid, $${gen}::int, head.last_seq - cardinality($${fr.kinds}::text[]) + x.n::int, x.kind, x.data` +
      (fr.lockMs ? ' || ' + LOCK_EXPIRY_DATA : '') +
      `, now()
              from head, unnest($${fr.kinds}::text[], $${fr.data}::jsonb[]` +
      (fr.lockMs
        ? `, $${fr.lockMs}::int[]) with ordinality as x(kind, data, lock_ms, n))`
        : ') with ordinality as x(kind, data, n))'),
  ];
}

// Whether progress is pending for the instance, asked after every part that takes row
// locks (those in `held`) has run. `locks` is materialized and its column used: a CTE
// referenced once is otherwise inlined, and a column nobody reads is never computed,
// which would leave those parts to the end of the statement.
function progressParts(id: number, held: string[]): string[] {
  return [
    'locks as materialized (select ' + held.map((name) => '(select count(*) from ' + name + ')').join(' + ') + ' as n)',
    `pend as materialized (select baton_progress_pending($${id}::uuid) as pending from locks where locks.n >= 0)`,
  ];
}

interface DeliveryColumns {
  /** per fx.tasks entry: null when not handed */
  taskIds: (string | null)[];
  workers: (string | null)[];
  tokens: (string | null)[];
  lockMs: (number | null)[];
  /** the topics of the handed tasks */
  topics: string[];
  /** their task:locked events, as fetch-and-lock writes them (the expiry is added in SQL) */
  events: Effects['events'];
  /** per event of the statement (the transition's, then the task:locked ones) */
  eventAttempts: (number | null)[];
  eventLockMs: (number | null)[];
}

function deliveryColumns(fx: Effects, delivery: DeliveredTask[]): DeliveryColumns {
  const n = fx.tasks.length;
  const c: DeliveryColumns = {
    taskIds: Array(n).fill(null),
    workers: Array(n).fill(null),
    tokens: Array(n).fill(null),
    lockMs: Array(n).fill(null),
    topics: [],
    events: [],
    eventAttempts: fx.events.map(() => null),
    eventLockMs: fx.events.map(() => null),
  };
  for (const h of delivery) {
    const task = fx.tasks[h.index];
    if (!task) throw new Error(`applyEffectsStatement: no new task at index ${h.index} to hand off`);
    c.taskIds[h.index] = h.taskId;
    c.workers[h.index] = h.workerId;
    c.tokens[h.index] = h.lockToken;
    c.lockMs[h.index] = h.lockDurationMs;
    c.topics.push(task.topic);
    c.events.push({
      kind: 'task:locked',
      stepId: task.stepId,
      taskId: h.taskId,
      data: { workerId: h.workerId, trafficWaitMs: 0 },
    });
    c.eventAttempts.push(1);
    c.eventLockMs.push(h.lockDurationMs);
  }
  return c;
}

/** The same for every attempt of one step (one element of a multi-instance step) in one generation, different for anything else. */
export function idempotencyKey(instanceId: string, stepId: string, generation: number, loopIndex?: number): string {
  return `${instanceId}/${stepId}/${generation}${loopIndex === undefined ? '' : `/${loopIndex}`}`;
}

// A step may change twice in one transition (an incident resolved, then completed);
// one statement may touch a row once, so only the last status is written.
export function lastStatusPerStep(steps: Effects['steps']): Effects['steps'] {
  const last = new Map<string, Effects['steps'][number]>();
  for (const s of steps) last.set(s.stepId, s);
  return [...last.values()];
}
