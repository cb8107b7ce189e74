// The statement of applyEffectsTogether (store/instances.ts): the transitions of many
// instances in one statement. PostgreSQL's cost of a transition is mostly per statement,
// not per row: the start's statement cost its backend 400-530 µs of CPU one instance at a
// time, 150-205 µs per instance eight at a time and 113-140 µs sixteen at a time
// (docs/PERFORMANCE.md, "Session 13"). Three kinds, never mixed in one statement:
//
// - starts: each transition inserts its instance row, as applyEffects' `insert`, and
//   frames its events itself (a new instance has no frame head yet, no pending progress
//   and nobody waiting for its head, so its frames are numbered from 1 here);
// - guarded completes inside a batch's transaction, as applyEffects' `guard` with
//   `completes` and `framesAtEnd` (framed at the end: by frameTransitions, or by the
//   batch's last statement of this kind, below);
// - transitions of instances the transaction holds locked (a batch of timer firings), as
//   applyEffects' plain update with `framesAtEnd`.
//
// The last write of a batch (completes, locked) may also frame the batch's transitions in
// the same statement (`frame`), as frameTransitions would in a statement of its own
// (framingCtes, below).
//
// Every row of every part carries its instance id and generation, so one shape serves any
// number of instances; a part is present when any transition uses it (the shape, a sum of
// apply-effects.ts' parts, names the prepared statement with the kind). The guard covers
// all of them: if one instance's guard does not hold, the statement raises BT409 and writes
// nothing, and the caller goes one by one. Only placeholders ($${n}) are interpolated.
import type { Effects } from '../model/effects.ts';
import { PART, type ApplyEffectsParams, idempotencyKey, framesOf, lastStatusPerStep, waitingTimers } from './apply-effects.ts';
import { HELD_TASK_SQL, OPEN_INCIDENT_SQL, OPEN_TASK_SQL, OPEN_TIMER_SQL } from './open-states.ts';

export type TogetherKind = 'starts' | 'completes' | 'locked';

/**
 * Whether a transition can be written by the statement of its kind. A start that raises an
 * incident is framed by the trigger at commit (its single statement does not frame it);
 * a complete must be a holder's guarded one, and a locked instance's transition unguarded,
 * both written inside a transaction that frames at its end (framesAtEnd).
 */
export function writableTogether(kind: TogetherKind, p: ApplyEffectsParams): boolean {
  if (p.effects.events.length === 0) return false;
  if (kind === 'starts') return p.insert !== undefined && p.guard === undefined && p.effects.incidents.length === 0;
  if (p.insert !== undefined || p.framesAtEnd !== true) return false;
  return kind === 'completes' ? p.guard?.completes !== undefined : p.guard === undefined;
}

export interface TogetherStatement {
  name: string;
  text: string;
  values: unknown[];
}

/**
 * Whether the last write of a batch (its completes, or its timer firings) can frame the
 * batch's transitions in its own statement (`frame`): none of them raises an incident. An
 * incident may name a task, whose key lock its foreign key takes at the end of the
 * statement, after the frame heads (as applyEffects' framesHere, which leaves those to the
 * trigger).
 */
export function framableInStatement(transitions: FramedTransition[]): boolean {
  return transitions.every((t) => t.effects.incidents.length === 0);
}

/**
 * The statement for the transitions (at least one), all writable together as `kind`. With
 * `frame` (completes or locked, framableInStatement): the statement also frames those
 * transitions (this one's and the batch's earlier writes', in the order written) as the
 * batch's frameTransitions would, and answers their heads; it must be the batch's last
 * statement that may lock a row.
 */
export function applyEffectsTogetherStatement(
  kind: TogetherKind,
  list: ApplyEffectsParams[],
  frame?: FramedTransition[],
): TogetherStatement {
  for (const p of list)
    if (!writableTogether(kind, p))
      throw new Error(`applyEffectsTogetherStatement: instance ${p.instance.id} cannot be written with the ${kind}`);
  if (frame && (kind === 'starts' || !framableInStatement(frame)))
    throw new Error("applyEffectsTogetherStatement: only a batch's transitions without incidents frame in their statement");
  // Framing here, the frame heads must be the statement's last locks (they are held until the
  // commit that follows): every part that may lock a row or wait for one answers a row, and
  // the framing runs after all of them (framingCtes).
  const held: string[] = [];
  const hold = (name: string): string => (frame ? (held.push(name), ' returning 1') : '');
  const values: unknown[] = [];
  const $ = (v: unknown): number => values.push(v);
  const ctes: string[] = [];
  // One entry per row of a part: its instance's id and generation, then the part's columns.
  const rows = <T>(pick: (p: ApplyEffectsParams) => T[]) => list.flatMap((p) => pick(p).map((item) => ({ p, item })));
  const idsOf = (r: { p: ApplyEffectsParams }[]) => $(r.map((x) => x.p.instance.id));
  const gensOf = (r: { p: ApplyEffectsParams }[]) => $(r.map((x) => x.p.instance.generation));
  let shape = 0;

  const ids = $(list.map((p) => p.instance.id));
  const status = $(list.map((p) => p.status));
  const vars = $(list.map((p) => p.variables));
  const ended = $(list.map((p) => p.status === 'completed' || p.status === 'canceled' || p.status === 'compensated'));
  if (kind === 'starts') {
    const bks = $(list.map((p) => p.instance.business_key));
    const defs = $(list.map((p) => p.instance.definition_id));
    const latest = list.some((p) => p.insert?.latestOnly === true);
    const latestOnly = latest ? $(list.map((p) => p.insert?.latestOnly === true)) : 0;
    if (latest) shape += PART.latestOnly;
    // Inserted in business-key order: two statements inserting the same keys wait for each
    // other in one order, never in a cycle.
    ctes.push(
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
             order by x.bk, x.id
            on conflict (definition_key, business_key) where business_key is not null do nothing
         returning id, created_at)`,
    );
  } else if (kind === 'locked') {
    // The caller's transaction holds every instance's row lock: no guard but their presence.
    ctes.push(
      `x as (select * from unnest($${ids}::uuid[], $${status}::text[], $${vars}::jsonb[], $${ended}::boolean[]) as x(id, status, vars, ended))`,
      `i as (update instances n set status = x.status, variables = x.vars, revision = n.revision + 1, updated_at = now(),
                   ended_at = case when x.ended then now() end
              from x
             where n.id = x.id
         returning n.id, n.created_at)`,
    );
  } else {
    const gens = $(list.map((p) => p.instance.generation));
    const revs = $(list.map((p) => p.guard!.revision));
    const tasks = $(list.map((p) => p.guard!.completes!.taskId));
    const workers = $(list.map((p) => p.guard!.completes!.workerId));
    const tokens = $(list.map((p) => p.guard!.completes!.lockToken));
    ctes.push(
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
    );
  }

  const steps = rows((p) => lastStatusPerStep(p.effects.steps));
  if (steps.length > 0) {
    shape += PART.steps;
    const [iid, gen] = [idsOf(steps), gensOf(steps)];
    const sid = $(steps.map((s) => s.item.stepId));
    const st = $(steps.map((s) => s.item.status));
    const loop = $(steps.map((s) => s.p.effects.loops[s.item.stepId] ?? null));
    ctes.push(
      `s as (insert into steps (instance_id, step_id, generation, status, ended_at, completed_seq, loop)
            select y.iid, y.step_id, y.gen, y.status,
                   case when y.status in ('completed', 'skipped', 'canceled', 'failed', 'compensated') then now() end,
                   case when y.status = 'completed' then nextval('events_seq') end,
                   y.loop
              from unnest($${iid}::uuid[], $${gen}::int[], $${sid}::text[], $${st}::text[], $${loop}::jsonb[]) with ordinality as y(iid, gen, step_id, status, loop, n)
             order by y.n
            on conflict (instance_id, step_id)
            do update set status = excluded.status, ended_at = excluded.ended_at,
                          completed_seq = coalesce(excluded.completed_seq, steps.completed_seq),
                          loop = coalesce(excluded.loop, steps.loop)` +
        hold('s') +
        ')',
    );
  }
  const flows = rows((p) => p.effects.flows);
  if (flows.length > 0) {
    shape += PART.flows;
    const [iid, gen] = [idsOf(flows), gensOf(flows)];
    const fid = $(flows.map((f) => f.item.flowId));
    const st = $(flows.map((f) => f.item.state));
    ctes.push(
      `f as (insert into flows (instance_id, flow_id, generation, state)
            select y.iid, y.flow_id, y.gen, y.state from unnest($${iid}::uuid[], $${gen}::int[], $${fid}::text[], $${st}::text[]) as y(iid, gen, flow_id, state)` +
        hold('f') +
        ')',
    );
  }
  const tasks = rows((p) => p.effects.tasks);
  if (tasks.length > 0) {
    shape += PART.tasks;
    const [iid, gen] = [idsOf(tasks), gensOf(tasks)];
    const sid = $(tasks.map((t) => t.item.stepId));
    const topic = $(tasks.map((t) => t.item.topic));
    const prio = $(tasks.map((t) => t.item.priority));
    const retries = $(tasks.map((t) => t.item.retries));
    const keys = $(tasks.map((t) => idempotencyKey(t.p.instance.id, t.item.stepId, t.p.instance.generation, t.item.loopIndex)));
    const loopIdx = $(tasks.map((t) => t.item.loopIndex ?? 0));
    const locals = $(tasks.map((t) => t.item.localVariables ?? {}));
    ctes.push(
      `t as (insert into external_tasks (instance_id, step_id, generation, topic, priority, retries, retries_left, idempotency_key, loop_index, local_variables)
            select y.iid, y.step_id, y.gen, y.topic, y.priority, y.retries, y.retries, y.idempotency_key, y.loop_index, y.local_variables
              from unnest($${iid}::uuid[], $${gen}::int[], $${sid}::text[], $${topic}::text[], $${prio}::int[], $${retries}::int[], $${keys}::text[], $${loopIdx}::int[], $${locals}::jsonb[])
                   as y(iid, gen, step_id, topic, priority, retries, idempotency_key, loop_index, local_variables)` +
        hold('t') +
        ')',
    );
  }
  const incidents = rows((p) => p.effects.incidents.map((x, k) => ({ ...x, taskId: p.incidentTaskIds?.[k] ?? null })));
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
  // Every transition has events (writableTogether); their seqs follow this order, instance by instance.
  shape += PART.events;
  const events = rows((p) => p.effects.events);
  {
    const [iid, gen] = [idsOf(events), gensOf(events)];
    const kinds = $(events.map((e) => e.item.kind));
    const sid = $(events.map((e) => e.item.stepId ?? null));
    const data = $(events.map((e) => e.item.data ?? {}));
    const taskIds = $(events.map((e) => e.item.taskId ?? null));
    ctes.push(`e as (insert into events (instance_id, generation, kind, step_id, task_id, data, framed)
            select y.iid, y.gen, y.kind, y.step_id, y.task_id, y.data, true
              from unnest($${iid}::uuid[], $${gen}::int[], $${kinds}::text[], $${sid}::text[], $${data}::jsonb[], $${taskIds}::uuid[])
                   with ordinality as y(iid, gen, kind, step_id, data, task_id, n)
             order by y.n)`);
  }
  const timers = rows((p) => waitingTimers(p.effects));
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
  const subscriptions = rows((p) =>
    p.effects.subscriptions
      .filter((x) => !p.effects.endedWaits.includes(x.stepId))
      .map((x) => ({ ...x, correlationKey: x.correlationKey ?? p.instance.business_key })),
  );
  if (subscriptions.length > 0) {
    shape += PART.subscriptions;
    const [iid, gen] = [idsOf(subscriptions), gensOf(subscriptions)];
    const sid = $(subscriptions.map((x) => x.item.stepId));
    const kinds = $(subscriptions.map((x) => x.item.kind));
    const names = $(subscriptions.map((x) => x.item.name));
    const keys = $(subscriptions.map((x) => x.item.correlationKey));
    ctes.push(
      `sb as (insert into subscriptions (instance_id, step_id, generation, kind, name, correlation_key)
            select y.iid, y.step_id, y.gen, y.kind, y.name, y.correlation_key
              from unnest($${iid}::uuid[], $${gen}::int[], $${sid}::text[], $${kinds}::text[], $${names}::text[], $${keys}::text[])
                   as y(iid, gen, step_id, kind, name, correlation_key)` +
        hold('sb') +
        ')',
    );
  }
  const endedWaits = rows((p) => p.effects.endedWaits);
  if (endedWaits.length > 0) {
    shape += PART.endedWaits;
    const waitIds = idsOf(endedWaits);
    const pairs = `(select * from unnest($${waitIds}::uuid[], $${$(endedWaits.map((w) => w.item))}::text[]))`;
    // `instance_id = any(…)` gives timers_instance_idx a condition to search by: statistics
    // from when no timer waited made that index look empty, and the planner read all of it
    // for each batch, the pairs joined to every waiting timer (docs/PERFORMANCE.md, "Session 16").
    ctes.push(
      `tc as (update timers set state = 'canceled' where instance_id = any($${waitIds}::uuid[]) and (instance_id, step_id) in ${pairs} and ${OPEN_TIMER_SQL}` +
        hold('tc') +
        ')',
      `sd as (delete from subscriptions where (instance_id, step_id) in ${pairs}` + hold('sd') + ')',
    );
  }
  const canceled = rows((p) => p.effects.canceledTasks);
  if (canceled.length > 0) {
    shape += PART.canceledTasks;
    const pairs = `(select * from unnest($${idsOf(canceled)}::uuid[], $${$(canceled.map((c) => c.item))}::text[]))`;
    ctes.push(
      `kc as (update external_tasks set state = 'canceled', ended_at = now()
              where (instance_id, step_id) in ${pairs} and ${OPEN_TASK_SQL}` +
        hold('kc') +
        ')',
      `ki as (update incidents set status = 'resolved', resolved_at = now()
              where (instance_id, step_id) in ${pairs} and ${OPEN_INCIDENT_SQL}` +
        hold('ki') +
        ')',
    );
  }
  if (kind === 'starts') {
    // New instances: their heads are new, their frames numbered from 1 (framesOf, as the trigger would).
    const frames = list.map((p) => framesOf(p.effects.events));
    const hid = $(list.map((p) => p.instance.id));
    const hn = $(frames.map((f) => f.kinds.length));
    const hends = $(frames.map((f) => f.kinds.at(-1) === 'instance:ended'));
    const fid = $(list.flatMap((p, k) => frames[k]!.kinds.map(() => p.instance.id)));
    const seq = $(frames.flatMap((f) => f.kinds.map((_, j) => j + 1)));
    const fkinds = $(frames.flatMap((f) => f.kinds));
    const fdata = $(frames.flatMap((f) => f.data));
    ctes.push(
      `head as (insert into frame_heads (instance_id, generation, last_seq, ended_at)
            select y.iid, 1, y.n, case when y.ends then now() end
              from unnest($${hid}::uuid[], $${hn}::int[], $${hends}::boolean[]) as y(iid, n, ends))`,
      `fw as (insert into frames (instance_id, generation, seq, kind, data, at)
            select y.iid, 1, y.seq, y.kind, y.data, now()
              from unnest($${fid}::uuid[], $${seq}::int[], $${fkinds}::text[], $${fdata}::jsonb[]) as y(iid, seq, kind, data))`,
    );
  }
  const guard =
    kind === 'completes'
      ? `(select count(*) from i) = cardinality($${ids}::uuid[]) and (select count(*) from done) = cardinality($${ids}::uuid[])`
      : `(select count(*) from i) = cardinality($${ids}::uuid[])`;
  ctes.push(`guarded as (select baton_transition_guard(${guard}) as ok)`);
  const framing = frame ? framingCtes(frame, $, ['guarded', 'i', ...(kind === 'completes' ? ['done'] : []), ...held]) : undefined;
  if (!framing) {
    const text =
      'with\n      ' + ctes.join(',\n      ') + '\n      select (select created_at from i limit 1) as created_at from guarded';
    return { name: `apply_together_${kind}_${shape.toString(36)}`, text, values };
  }
  // One row per head framed (at least one row: the guard's); the heads after the guard.
  const text =
    'with\n      ' +
    [...ctes, ...framing].join(',\n      ') +
    '\n      select (select created_at from i limit 1) as created_at, head.instance_id, head.generation, head.last_seq from guarded left join head on true';
  return { name: `apply_together_${kind}_framed_${shape.toString(36)}`, text, values };
}

/** A transition written with framesAtEnd, to be framed at the end of its transaction. */
export interface FramedTransition {
  instance: { id: string; generation: number };
  effects: Effects;
}

/**
 * The CTEs that frame transitions written with framesAtEnd: every instance's head (in
 * instance order, as the trigger takes them at commit, migration 0011) and its frames
 * (framesOf); several transitions of one instance (two of its timers in one batch, a
 * batch's rounds) are framed as one run of events in the order written, as the trigger
 * frames all of a transaction's events of an instance (a row may be upserted once per
 * statement). `head` answers (instance_id, generation, last_seq) of each head it moved;
 * `ended_at is null` as append_frame. With progress pending for any of the instances the
 * check raises BT409 and nothing is written. Undefined when no transition has events.
 *
 * `after`: CTEs of the same statement (each answering rows) that must have run before the
 * check and the heads: the writes' guard and every part that may lock a row. The check then
 * asks baton_progress_pending (volatile: its own snapshot), so it sees a report that
 * committed while one of those parts waited for its task row, as a later statement would.
 */
export function framingCtes(transitions: FramedTransition[], $: (v: unknown) => number, after?: string[]): string[] | undefined {
  // stable: an instance's transitions keep the order they were written in (their seqs' order)
  const runs: { instance: { id: string; generation: number }; events: Effects['events'] }[] = [];
  for (const x of transitions
    .filter((t) => t.effects.events.length > 0)
    .sort((a, b) => (a.instance.id < b.instance.id ? -1 : a.instance.id > b.instance.id ? 1 : 0))) {
    const last = runs.at(-1);
    if (last?.instance.id === x.instance.id && last.instance.generation === x.instance.generation)
      last.events = [...last.events, ...x.effects.events];
    else runs.push({ instance: x.instance, events: x.effects.events });
  }
  if (runs.length === 0) return undefined;
  const frames = runs.map((x) => framesOf(x.events));
  const ids = $(runs.map((x) => x.instance.id));
  const gens = $(runs.map((x) => x.instance.generation));
  const counts = $(frames.map((f) => f.kinds.length));
  const ends = $(frames.map((f) => f.kinds.at(-1) === 'instance:ended'));
  const fk = $(frames.flatMap((f, i) => f.kinds.map(() => i + 1)));
  const pos = $(frames.flatMap((f) => f.kinds.map((_, j) => j + 1)));
  const kinds = $(frames.flatMap((f) => f.kinds));
  const data = $(frames.flatMap((f) => f.data));
  // `locks` is materialized and its column used: a CTE referenced once is otherwise inlined,
  // and a column nobody reads is never computed, which would leave those parts to the end.
  const quiet = after
    ? [
        'locks as materialized (select ' + after.map((name) => '(select count(*) from ' + name + ')').join(' + ') + ' as n)',
        `quiet as materialized (select baton_transition_guard(not coalesce(bool_or(baton_progress_pending(q.id)), false)) as ok
                                from locks, unnest($${ids}::uuid[]) as q(id) where locks.n >= 0)`,
      ]
    : [
        `quiet as (select baton_transition_guard(not exists (select 1 from progress_reports where instance_id = any($${ids}::uuid[]))) as ok)`,
      ];
  return [
    `hx as (select * from unnest($${ids}::uuid[], $${gens}::int[], $${counts}::int[], $${ends}::boolean[]) with ordinality as y(id, gen, n, ends, k))`,
    ...quiet,
    `head as (insert into frame_heads as h (instance_id, generation, last_seq, ended_at)
            select hx.id, hx.gen, hx.n, case when hx.ends then now() end from hx, quiet where quiet.ok order by hx.k
            on conflict (instance_id, generation) do update set last_seq = h.last_seq + excluded.last_seq, ended_at = excluded.ended_at
             where h.ended_at is null
         returning h.instance_id, h.generation, h.last_seq)`,
    `fw as (insert into frames (instance_id, generation, seq, kind, data, at)
            select hx.id, hx.gen, head.last_seq - hx.n + f.pos, f.kind, f.data, now()
              from unnest($${fk}::int[], $${pos}::int[], $${kinds}::text[], $${data}::jsonb[]) as f(k, pos, kind, data)
              join hx on hx.k = f.k
              join head on head.instance_id = hx.id and head.generation = hx.gen)`,
  ];
}
