// The invariant checker: the eight promises of DESIGN.md §8 as SQL over one
// consistent snapshot of a Baton database (and the chaos ledger when present).
//   node --import tsx test/chaos/check.ts <DATABASE_URL>     prints a table, exits 1 on any violation
// As a library: checkInvariants(url or pg client) -> Report; formatReport(report).
import pg from 'pg';
import { LEDGER_ATTEMPTS, LEDGER_EFFECTS } from './ledger.ts';

export interface Violation {
  check: string;
  /** names the offending row: table and key */
  row: string;
  message: string;
}

export interface CheckResult {
  invariant: number;
  check: string;
  /** why it did not run (a table is absent); never counts as a pass of the promise */
  skipped?: string;
  violations: Violation[];
}

export interface Report {
  results: CheckResult[];
  violations: number;
  counts: Record<string, number>;
}

interface Check {
  invariant: number;
  check: string;
  needs?: string[];
  /** each row is one violation: { row, message } */
  sql: string;
}

const CHECKS: Check[] = [
  {
    invariant: 1,
    check: 'one instance per (key, business key) among those started on their own',
    sql: `select 'instances ' || definition_key || '/' || business_key as row, count(*) || ' instances: ' || string_agg(id::text, ', ') as message
            from instances where business_key is not null and parent_instance_id is null
           group by definition_key, business_key having count(*) > 1`,
  },
  {
    invariant: 2,
    check: 'one lock holder per attempt',
    sql: `select 'external_tasks ' || task_id || ' attempt ' || attempt as row, count(*) || ' task:locked events for one attempt' as message
            from events where kind = 'task:locked' group by task_id, attempt having count(*) > 1
          union all
          select 'external_tasks ' || task_id || ' events ' || prev_seq || ',' || seq, 'locked again (attempt ' || attempt || ') while attempt ' || prev_attempt || ' still held it until ' || prev_expiry
            from (select task_id, seq, attempt, kind, at, lag(kind) over w as prev_kind, lag(seq) over w as prev_seq, lag(attempt) over w as prev_attempt,
                         lag(data->>'lockExpiresAt') over w as prev_expiry
                    from events where task_id is not null and kind in ('task:locked', 'task:lock_expired', 'task:unlocked', 'task:failed', 'task:completed', 'task:bpmn_error')
                  window w as (partition by task_id order by seq)) x
           -- a Camunda lock of one task may take over an expired lease without a lock_expired event
           where kind = 'task:locked' and prev_kind = 'task:locked' and at < prev_expiry::timestamptz`,
  },
  {
    invariant: 2,
    check: 'only the holder completes, once',
    sql: `select 'external_tasks ' || task_id as row, count(*) || ' task:completed events' as message
            from events where kind = 'task:completed' group by task_id having count(*) > 1
          union all
          select 'events ' || instance_id || '/' || seq, 'task ' || task_id || ' completed by ' || coalesce(data->>'workerId', '?') || ', who did not hold attempt ' || coalesce(data->>'attempt', '?')
            from (select instance_id, seq, task_id, kind, data, lag(kind) over w as prev_kind, lag(attempt) over w as prev_attempt, lag(data->>'workerId') over w as prev_worker
                    from events where task_id is not null and kind in ('task:locked', 'task:completed')
                  window w as (partition by task_id order by seq)) x
           where kind = 'task:completed' and (prev_kind is distinct from 'task:locked'
                 or prev_attempt is distinct from (data->>'attempt')::int or prev_worker is distinct from data->>'workerId')`,
  },
  {
    invariant: 2,
    check: 'no attempt before its retry time',
    sql: `select 'events ' || instance_id || '/' || seq as row, 'task ' || task_id || ' attempt ' || attempt || ' locked at ' || at || ', before its retry time ' || prev_retry as message
            from (select instance_id, seq, task_id, attempt, kind, at, lag(kind) over w as prev_kind, lag(data->>'retryAt') over w as prev_retry
                    from events where task_id is not null and kind in ('task:locked', 'task:failed')
                  window w as (partition by task_id order by seq)) x
           where kind = 'task:locked' and prev_kind = 'task:failed' and prev_retry is not null and at < prev_retry::timestamptz`,
  },
  {
    invariant: 2,
    check: 'ledger: each side effect applied once, none lost',
    needs: [LEDGER_EFFECTS, LEDGER_ATTEMPTS],
    sql: `select '${LEDGER_ATTEMPTS} ' || idempotency_key as row, count(*) || ' attempts applied the side effect (attempts ' || string_agg(attempt::text, ',' order by id) || ')' as message
            from ${LEDGER_ATTEMPTS} where outcome = 'applied' group by idempotency_key having count(*) > 1
          union all
          select 'external_tasks ' || t.id, 'completed (step ' || t.step_id || ') but its side effect is not in the ledger'
            from external_tasks t
           where t.state = 'done' and t.last_result = 'complete'
             and t.topic in (select distinct topic from ${LEDGER_ATTEMPTS})
             and not exists (select 1 from ${LEDGER_EFFECTS} e where e.idempotency_key = t.idempotency_key)`,
  },
  {
    invariant: 3,
    check: 'each step completes once per generation and loop pass',
    sql: `select 'steps ' || instance_id || '/' || step_id || ' generation ' || generation || coalesce(' pass ' || (data->>'scopePath'), '') as row,
                 count(*) || ' step:completed events' as message
            from events where kind = 'step:completed' group by instance_id, generation, step_id, data->>'scopePath' having count(*) > 1`,
  },
  {
    invariant: 3,
    check: 'each join fires once, after all its inputs',
    sql: `with joins as (
            -- a loop's back flow is no input of its head
            select i.id as instance_id, s->>'id' as step_id,
                   (select coalesce(jsonb_agg(x), '[]') from jsonb_array_elements_text(s->'incoming') x
                     where not exists (select 1 from jsonb_array_elements(d.plan->'steps') l where l->'cycle'->'backFlows' ? x)) as incoming
              from instances i join definitions d on d.id = i.definition_id, jsonb_array_elements(d.plan->'steps') s
             where s->>'kind' = 'parallelGateway' and jsonb_array_length(s->'incoming') > 1)
          select 'steps ' || j.instance_id || '/' || j.step_id || ' generation ' || e.generation || coalesce(' pass ' || (e.data->>'scopePath'), '') as row,
                 'join fired ' || count(*) || ' times' as message
            from joins j join events e on e.instance_id = j.instance_id and e.step_id = j.step_id and e.kind = 'step:completed'
           group by j.instance_id, j.step_id, e.generation, e.data->>'scopePath' having count(*) > 1
          union all
          select 'steps ' || j.instance_id || '/' || j.step_id, 'join fired while input flow ' || f.value || ' was ' || coalesce(fl.state, 'unresolved')
            from joins j join steps s on s.instance_id = j.instance_id and s.step_id = j.step_id and s.status = 'completed'
            cross join jsonb_array_elements_text(j.incoming) f
            left join flows fl on fl.instance_id = j.instance_id and fl.flow_id = f.value
           where fl.state is distinct from 'taken'`,
  },
  {
    invariant: 4,
    check: 'one terminal state, or a visible wait',
    sql: `select 'instances ' || instance_id || ' generation ' || generation as row, 'ended ' || count(*) || ' times: ' || string_agg(kind, ', ' order by seq) as message
            from events where kind in ('instance:completed', 'instance:canceled', 'instance:compensated')
           group by instance_id, generation having count(*) > 1
          union all
          select 'instances ' || i.id, i.status || ' but ' || concat_ws(', ',
                   case when exists (select 1 from external_tasks t where t.instance_id = i.id and t.state in ('ready', 'locked')) then 'a task is still open' end,
                   case when exists (select 1 from timers m where m.instance_id = i.id and m.state = 'waiting') then 'a timer still waits' end,
                   case when exists (select 1 from subscriptions s where s.instance_id = i.id) then 'a subscription still waits' end,
                   case when exists (select 1 from steps s where s.instance_id = i.id and s.status = 'active') then 'a step is still active' end,
                   case when exists (select 1 from instances c where c.parent_instance_id = i.id and c.status not in ('completed', 'canceled', 'compensated')) then 'a called instance still runs' end)
            from instances i
           where i.status in ('completed', 'canceled', 'compensated') and (
                 exists (select 1 from external_tasks t where t.instance_id = i.id and t.state in ('ready', 'locked'))
              or exists (select 1 from timers m where m.instance_id = i.id and m.state = 'waiting')
              or exists (select 1 from subscriptions s where s.instance_id = i.id)
              or exists (select 1 from steps s where s.instance_id = i.id and s.status = 'active')
              or exists (select 1 from instances c where c.parent_instance_id = i.id and c.status not in ('completed', 'canceled', 'compensated')))
          union all
          select 'instances ' || i.id, 'incident status with no open incident'
            from instances i where i.status = 'incident' and not exists (select 1 from incidents n where n.instance_id = i.id and n.status = 'open')
          union all
          select 'instances ' || i.id, i.status || ' with nothing to wait for: no open task, timer, subscription, incident, called instance or return'
            from instances i
           where i.status in ('running', 'compensating')
             and not exists (select 1 from external_tasks t where t.instance_id = i.id and t.state in ('ready', 'locked'))
             and not exists (select 1 from timers m where m.instance_id = i.id and m.state = 'waiting')
             and not exists (select 1 from subscriptions s where s.instance_id = i.id)
             and not exists (select 1 from incidents n where n.instance_id = i.id and n.status = 'open')
             and not exists (select 1 from instances c where c.parent_instance_id = i.id and c.status not in ('completed', 'canceled', 'compensated'))
             and not exists (select 1 from call_returns r where r.parent_instance_id = i.id)`,
  },
  {
    invariant: 5,
    check: 'timers fire once, never early',
    sql: `select 'timers ' || id as row, 'fired at ' || fired_at || ', before its due time ' || due_at as message
            from timers where instance_id is not null and state = 'fired' and fired_at < due_at
          union all
          select 'timers ' || (data->>'timerId'), 'fired ' || count(*) || ' times' from events
           where data ? 'timerId' and kind = 'step:completed' group by data->>'timerId' having count(*) > 1
          union all
          select 'events ' || instance_id || '/' || seq, 'timer ' || (data->>'timerId') || ' fired at ' || at || ', before its due time ' || (data->>'dueAt')
            from events where kind = 'step:completed' and data ? 'timerId' and data ? 'dueAt' and at < (data->>'dueAt')::timestamptz`,
  },
  {
    invariant: 6,
    check: 'a message id acts once; an early message is not lost',
    sql: `select 'messages ' || message_id as row, count(*) || ' inbox rows' as message from messages group by message_id having count(*) > 1
          union all
          select 'messages ' || (data->>'messageId'), 'matched ' || count(*) || ' times' from events
           where kind = 'step:completed' and data ? 'messageId' group by data->>'messageId' having count(*) > 1
          union all
          select 'messages ' || m.message_id, 'pending while subscription ' || s.id || ' (' || s.instance_id || '/' || s.step_id || ') waits for it'
            from messages m join subscriptions s on s.kind = 'message' and s.name = m.name
                 and (s.correlation_key is not distinct from m.correlation_key or s.instance_id = m.instance_id)
           where m.state = 'pending' and m.expires_at > now()`,
  },
  {
    invariant: 7,
    check: 'compensation: completed hosts only, newest first, once',
    sql: `select 'compensations ' || c.instance_id || '/' || c.host_step_id || ' generation ' || c.generation as row, 'host ' || c.host_step_id || ' is compensated but never completed' as message
            from compensations c
           where not exists (select 1 from events e where e.instance_id = c.instance_id and e.generation = c.generation and e.step_id = c.host_step_id and e.kind = 'step:completed')
          union all
          select 'compensations ' || instance_id || '/' || step_id || ' generation ' || generation, 'compensated ' || count(*) || ' times'
            from events where kind = 'compensation:completed' group by instance_id, generation, step_id having count(*) > 1
          union all
          select 'compensations ' || a.instance_id || '/' || a.host_step_id, 'undone before ' || b.host_step_id || ', which completed after it'
            from compensations a join compensations b
              on b.instance_id = a.instance_id and b.generation = a.generation and b.throw_step_id is not distinct from a.throw_step_id and b.host_step_id <> a.host_step_id
            join lateral (select min(seq) as s from events where instance_id = a.instance_id and generation = a.generation and step_id = a.host_step_id and kind = 'step:completed') ad on true
            join lateral (select min(seq) as s from events where instance_id = b.instance_id and generation = b.generation and step_id = b.host_step_id and kind = 'step:completed') bd on true
            join lateral (select min(seq) as s from events where instance_id = a.instance_id and generation = a.generation and step_id = a.host_step_id and kind = 'compensation:started') ac on true
            join lateral (select min(seq) as s from events where instance_id = b.instance_id and generation = b.generation and step_id = b.host_step_id and kind = 'compensation:started') bc on true
           where ad.s < bd.s and ac.s < bc.s`,
  },
  {
    invariant: 8,
    check: 'frame seqs dense per generation, nothing after the end',
    needs: ['frames', 'frame_heads'],
    sql: `select 'frames ' || f.instance_id || ' generation ' || f.generation as row,
                 'seq ' || f.prev_seq || ' is followed by ' || f.seq || ' (gap)' as message
            from (select instance_id, generation, seq, lag(seq) over (partition by instance_id, generation order by seq) as prev_seq from frames) f
           where f.prev_seq is not null and f.seq <> f.prev_seq + 1
          union all
          select 'frame_heads ' || h.instance_id || ' generation ' || h.generation, 'last_seq ' || h.last_seq || ' but the newest frame is ' || coalesce(max(f.seq)::text, 'none')
            from frame_heads h left join frames f on f.instance_id = h.instance_id and f.generation = h.generation
           group by h.instance_id, h.generation, h.last_seq
          having count(f.seq) > 0 and max(f.seq) <> h.last_seq
          union all
          select 'frames ' || f.instance_id || ' generation ' || f.generation || ' seq ' || f.seq, f.kind || ' after instance:ended at seq ' || e.seq
            from frames f join frames e on e.instance_id = f.instance_id and e.generation = f.generation and e.kind = 'instance:ended' and f.seq > e.seq`,
  },
];

const COUNTS = `select
  (select count(*) from instances)::int as instances,
  (select count(*) from instances where status = 'completed')::int as completed,
  (select count(*) from instances where status = 'compensated')::int as compensated,
  (select count(*) from instances where status = 'incident')::int as incident,
  (select count(*) from instances where status in ('running', 'compensating'))::int as running,
  (select count(*) from events where kind = 'task:lock_expired')::int as lock_expiries,
  (select count(*) from events where kind = 'task:late_result')::int as late_results`;

type Db = pg.Client | pg.PoolClient;

/** Runs every check in one repeatable-read snapshot, so a live system is seen at one instant. */
export async function checkInvariants(target: string | Db): Promise<Report> {
  const client = typeof target === 'string' ? new pg.Client({ connectionString: target }) : target;
  if (typeof target === 'string') await (client as pg.Client).connect();
  try {
    await client.query('begin isolation level repeatable read read only');
    const { rows: tables } = await client.query<{ name: string }>(
      `select table_name as name from information_schema.tables where table_schema = current_schema()`,
    );
    const present = new Set(tables.map((t) => t.name));
    const results: CheckResult[] = [];
    for (const c of CHECKS) {
      const missing = (c.needs ?? []).filter((t) => !present.has(t));
      if (missing.length > 0) {
        results.push({ invariant: c.invariant, check: c.check, skipped: `table absent: ${missing.join(', ')}`, violations: [] });
        continue;
      }
      const { rows } = await client.query<{ row: string; message: string }>(c.sql);
      results.push({
        invariant: c.invariant,
        check: c.check,
        violations: rows.map((r) => ({ check: c.check, row: r.row, message: r.message })),
      });
    }
    const counts = (await client.query<Record<string, number>>(COUNTS)).rows[0] ?? {};
    if (present.has(LEDGER_ATTEMPTS)) {
      const { rows } = await client.query<{ attempts: number; applied: number; short_circuited: number }>(
        `select count(*)::int as attempts, count(*) filter (where outcome = 'applied')::int as applied,
                count(*) filter (where outcome = 'already_applied')::int as short_circuited from ${LEDGER_ATTEMPTS}`,
      );
      Object.assign(counts, {
        ledger_attempts: rows[0]?.attempts ?? 0,
        ledger_applied: rows[0]?.applied ?? 0,
        ledger_short_circuited: rows[0]?.short_circuited ?? 0,
      });
    }
    await client.query('commit');
    return { results, violations: results.reduce((n, r) => n + r.violations.length, 0), counts };
  } finally {
    if (typeof target === 'string') await (client as pg.Client).end();
  }
}

export function formatReport(report: Report): string {
  const lines = ['| # | invariant | result |', '|---|---|---|'];
  for (const r of report.results) {
    const result = r.skipped
      ? `skipped (${r.skipped})`
      : r.violations.length === 0
        ? 'ok'
        : `${r.violations.length} VIOLATION${r.violations.length > 1 ? 'S' : ''}`;
    lines.push(`| ${r.invariant} | ${r.check} | ${result} |`);
  }
  const details = report.results.flatMap((r) =>
    r.violations.slice(0, 20).map((v) => `  - [${r.invariant}] ${v.row}: ${v.message}`),
  );
  const counts = Object.entries(report.counts)
    .map(([k, v]) => `${k}=${v}`)
    .join(' ');
  return [...lines, ...(details.length ? ['', 'violations:', ...details] : []), '', counts].join('\n');
}

if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  const url = process.argv[2] ?? process.env.DATABASE_URL;
  if (!url) {
    process.stderr.write('usage: node --import tsx test/chaos/check.ts <DATABASE_URL>\n');
    process.exit(2);
  }
  const report = await checkInvariants(url);
  process.stdout.write(`${formatReport(report)}\n`);
  process.exit(report.violations === 0 ? 0 : 1);
}
