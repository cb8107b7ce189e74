// The side-effect ledger of the chaos harness (test-only tables, not a runtime
// migration): an external system that honours idempotency keys. Every attempt is
// counted; the effect itself is applied at most once per key, so the checker can
// tell "attempted twice" (allowed) from "applied twice" (never).
import type pg from 'pg';

export const LEDGER_EFFECTS = 'chaos_ledger_effects';
export const LEDGER_ATTEMPTS = 'chaos_ledger_attempts';

type Db = Pick<pg.Pool, 'query'>;

export async function createLedger(db: Db): Promise<void> {
  await db.query(`
    create table if not exists ${LEDGER_EFFECTS} (
      idempotency_key text primary key,
      task_id uuid not null,
      instance_id uuid not null,
      worker_id text not null,
      attempt integer not null,
      applied_at timestamptz not null default now());
    create table if not exists ${LEDGER_ATTEMPTS} (
      id bigserial primary key,
      idempotency_key text not null,
      task_id uuid not null,
      topic text not null,
      worker_id text not null,
      attempt integer not null,
      outcome text not null check (outcome in ('applied', 'already_applied')),
      -- the worker's clock: drill 13 skews it and nothing may depend on it
      worker_clock timestamptz not null,
      at timestamptz not null default now())`);
}

export interface LedgerTask {
  id: string;
  topic: string;
  instanceId: string;
  attempt: number;
  idempotencyKey: string;
}

/** One attempt: applies the effect unless its key already did; answers whether this attempt applied it. */
export async function applyEffect(db: Db, task: LedgerTask, workerId: string): Promise<boolean> {
  const { rows } = await db.query(
    `with e as (insert into ${LEDGER_EFFECTS} (idempotency_key, task_id, instance_id, worker_id, attempt)
                values ($1, $2, $3, $4, $5) on conflict (idempotency_key) do nothing returning 1)
     insert into ${LEDGER_ATTEMPTS} (idempotency_key, task_id, topic, worker_id, attempt, outcome, worker_clock)
     select $1, $2, $6, $4, $5, case when exists (select 1 from e) then 'applied' else 'already_applied' end, $7
     returning outcome`,
    [task.idempotencyKey, task.id, task.instanceId, workerId, task.attempt, task.topic, new Date()],
  );
  return rows[0]?.outcome === 'applied';
}

export interface LedgerSummary {
  attempts: number;
  applied: number;
  shortCircuited: number;
  /** keys applied by more than one attempt: must be 0 */
  appliedTwice: number;
}

export async function summarizeLedger(db: Db): Promise<LedgerSummary> {
  const { rows } = await db.query<LedgerSummary>(
    `select count(*)::int as attempts, count(*) filter (where outcome = 'applied')::int as applied,
            count(*) filter (where outcome = 'already_applied')::int as "shortCircuited",
            (select count(*)::int from (select 1 from ${LEDGER_ATTEMPTS} where outcome = 'applied' group by idempotency_key having count(*) > 1) d) as "appliedTwice"
       from ${LEDGER_ATTEMPTS}`,
  );
  return rows[0]!;
}
