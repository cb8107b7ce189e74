// Shared steps of the drills: a fresh database with the ledger, history and ledger
// queries, and the closing invariant check.
import { expect } from 'vitest';
import type { TestDatabase } from '../support/db.ts';
import { createTestDatabase } from '../support/db.ts';
import type { ApiClient } from '../support/server.ts';
import { checkInvariants, formatReport } from './check.ts';
import { createLedger, LEDGER_ATTEMPTS } from './ledger.ts';

export async function chaosDatabase(): Promise<TestDatabase> {
  const db = await createTestDatabase();
  await createLedger(db.pool);
  return db;
}

export interface HistoryEvent {
  seq: number;
  kind: string;
  stepId?: string;
  taskId?: string;
  attempt?: number;
  data: Record<string, any>;
  at: string;
}

export async function history(db: TestDatabase, instanceId: string): Promise<HistoryEvent[]> {
  const { rows } = await db.pool.query(
    `select seq::int, kind, step_id as "stepId", task_id as "taskId", attempt, data, at from events where instance_id = $1 order by seq`,
    [instanceId],
  );
  return rows;
}

export function kinds(events: HistoryEvent[], kind: string): HistoryEvent[] {
  return events.filter((e) => e.kind === kind);
}

export interface LedgerAttempt {
  worker_id: string;
  attempt: number;
  outcome: 'applied' | 'already_applied';
  worker_clock: Date;
  at: Date;
}

/** Every attempt at the side effects of one instance, oldest first. */
export async function ledgerOf(db: TestDatabase, instanceId: string): Promise<LedgerAttempt[]> {
  const { rows } = await db.pool.query(
    `select a.worker_id, a.attempt, a.outcome, a.worker_clock, a.at from ${LEDGER_ATTEMPTS} a
       join external_tasks t on t.id = a.task_id where t.instance_id = $1 order by a.id`,
    [instanceId],
  );
  return rows;
}

/** Every drill ends here: the whole database satisfies every invariant. */
export async function expectInvariants(db: TestDatabase): Promise<void> {
  const report = await checkInvariants(db.url);
  expect(report.violations, formatReport(report)).toBe(0);
}

export async function startMany(api: ApiClient, definitionKey: string, n: number, prefix: string): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const res = await api.post('/api/instances', { definitionKey, businessKey: `${prefix}-${i}` });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    ids.push(res.body.id);
  }
  return ids;
}

export async function statusCounts(db: TestDatabase, definitionKey: string): Promise<Record<string, number>> {
  const { rows } = await db.pool.query<{ status: string; n: number }>(
    'select status, count(*)::int as n from instances where definition_key = $1 group by status',
    [definitionKey],
  );
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}
