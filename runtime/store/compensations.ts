// Compensation queues: one row per completed step to undo, in the order its handler runs.
import type { Queryable } from './db.ts';

export interface CompensationRow {
  host_step_id: string;
  handler_step_id: string;
  position: number;
  throw_step_id: string | null;
  state: 'pending' | 'running' | 'done';
}

/** Queues handlers for the given hosts (most recently completed first); a host already queued in this generation is skipped. */
export async function queueCompensations(
  db: Queryable,
  p: { instanceId: string; generation: number; hosts: { host: string; handler: string }[]; throwStepId: string | null },
): Promise<void> {
  const next = await db.query<{ n: number }>(
    'select coalesce(max(position), 0)::int as n from compensations where instance_id = $1 and generation = $2',
    [p.instanceId, p.generation],
  );
  await db.query(
    `insert into compensations (instance_id, generation, host_step_id, handler_step_id, position, throw_step_id)
     select $1, $2, x.host, x.handler, $3::int + x.n, $4 from unnest($5::text[], $6::text[]) with ordinality as x(host, handler, n)
     on conflict (instance_id, generation, host_step_id) do nothing`,
    [p.instanceId, p.generation, next.rows[0]?.n ?? 0, p.throwStepId, p.hosts.map((h) => h.host), p.hosts.map((h) => h.handler)],
  );
}

export async function listCompensations(db: Queryable, instanceId: string, generation: number): Promise<CompensationRow[]> {
  const { rows } = await db.query<CompensationRow>(
    `select host_step_id, handler_step_id, position, throw_step_id, state from compensations
      where instance_id = $1 and generation = $2 order by position`,
    [instanceId, generation],
  );
  return rows;
}

/** Moves a queue row forward (pending -> running -> done); the guard makes a repeat a no-op. */
export async function advanceCompensation(
  db: Queryable,
  p: { instanceId: string; generation: number; host: string; from: 'pending' | 'running'; to: 'running' | 'done' },
): Promise<boolean> {
  const { rowCount } = await db.query(
    `update compensations set state = $5, done_at = case when $5 = 'done' then now() end
      where instance_id = $1 and generation = $2 and host_step_id = $3 and state = $4`,
    [p.instanceId, p.generation, p.host, p.from, p.to],
  );
  return (rowCount ?? 0) > 0;
}

/**
 * Keeps the completions of a loop pass that ends (engine/compensate.ts): a copy of each step's
 * row under its kept id, run before the transition's own write removes the row. A step that
 * completed in this very transition has no completion on its row yet: it gets one now.
 */
export async function keepPassCompletions(
  db: Queryable,
  p: { instanceId: string; generation: number; kept: { stepId: string; as: string }[] },
): Promise<void> {
  await db.query(
    `insert into steps (instance_id, step_id, generation, status, activated_at, ended_at, completed_seq)
     select $1, k.as_id, $2, 'completed', coalesce(o.activated_at, now()), coalesce(o.ended_at, now()),
            coalesce(o.completed_seq, nextval('events_seq'))
       from unnest($3::text[], $4::text[]) with ordinality as k(step_id, as_id, n)
       left join steps o on o.instance_id = $1 and o.step_id = k.step_id and o.status = 'completed'
      order by k.n
     on conflict (instance_id, step_id) do nothing`,
    [p.instanceId, p.generation, p.kept.map((k) => k.stepId), p.kept.map((k) => k.as)],
  );
}
