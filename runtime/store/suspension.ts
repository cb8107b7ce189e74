// Suspension parks an instance's work where nothing picks it: its ready and held tasks become
// 'suspended' (a holder's lease is taken back, so its complete or failure is refused as any
// call of a worker that lost its lock), its waiting timers 'suspended' with their due times.
// Its waits stay: a message or signal meant for them is refused at delivery (engine/waits.ts)
// and a message kept in the inbox. Resuming turns the rows back (migration 0030).
import type { Queryable } from './db.ts';
import { notifyAfterCommit, readyTaskNotices } from './notifications.ts';

/** Parks the instance's open work and marks it suspended, in the transaction that holds its row. */
export async function suspendOpenWork(db: Queryable, instanceId: string): Promise<{ tasks: number; timers: number }> {
  const { rows } = await db.query<{ tasks: number; timers: number }>({
    name: 'suspend_open_work',
    text: `with t as (update external_tasks set state = 'suspended', worker_id = null, lock_token = null, lock_expires_at = null
                       where instance_id = $1 and state in ('ready', 'locked') returning 1),
                tm as (update timers set state = 'suspended' where instance_id = $1 and state = 'waiting' returning 1),
                i as (update instances set suspended_at = now() where id = $1)
           select (select count(*)::int from t) as tasks, (select count(*)::int from tm) as timers`,
    values: [instanceId],
  });
  return rows[0]!;
}

/**
 * Turns the instance's parked work back and clears the mark. The ready tasks are announced to
 * waiting polls and the timers to the scheduler after the commit; a timer due meanwhile fires at
 * once. Answers whether a child's return waits for the instance.
 */
export async function resumeOpenWork(
  db: Queryable,
  instanceId: string,
): Promise<{ tasks: number; timers: number; callReturns: boolean }> {
  const { rows } = await db.query<{ topics: string[]; timers: number; call_returns: boolean }>({
    name: 'resume_open_work',
    text: `with t as (update external_tasks set state = 'ready' where instance_id = $1 and state = 'suspended' returning topic),
                tm as (update timers set state = 'waiting' where instance_id = $1 and state = 'suspended' returning 1),
                i as (update instances set suspended_at = null where id = $1)
           select coalesce((select array_agg(topic) from t), '{}') as topics, (select count(*)::int from tm) as timers,
                  exists (select 1 from call_returns where parent_instance_id = $1) as call_returns`,
    values: [instanceId],
  });
  const row = rows[0]!;
  notifyAfterCommit(db, { ...readyTaskNotices(row.topics), ...(row.timers > 0 ? { timers: true } : {}) });
  return { tasks: row.topics.length, timers: row.timers, callReturns: row.call_returns };
}
