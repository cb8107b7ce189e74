// Signals thrown by processes, between the throwing transition and their delivery
// (migration 0027, engine/signal-broadcasts.ts).
import { afterCommit, type Queryable } from './db.ts';
import type { Variables } from '../model/effects.ts';

export interface SignalBroadcastRow {
  id: string;
  name: string;
  instance_id: string;
  step_id: string;
  /** what the signal carries to each receiver */
  variables: Variables;
  created_at: Date;
}

export async function insertSignalBroadcasts(
  db: Queryable,
  instanceId: string,
  signals: readonly { stepId: string; name: string; variables?: Variables }[],
): Promise<void> {
  await db.query({
    name: 'insert_signal_broadcasts',
    text: `insert into signal_broadcasts (name, instance_id, step_id, variables)
           select name, $1, step_id, variables
             from unnest($2::text[], $3::text[], $4::jsonb[]) as s(name, step_id, variables)`,
    values: [
      instanceId,
      signals.map((s) => s.name),
      signals.map((s) => s.stepId),
      signals.map((s) => JSON.stringify(s.variables ?? {})),
    ],
  });
  afterCommit(db, () => {
    for (const fn of listeners) fn();
  });
}

/** Whether any broadcast waits, read without a transaction: the idle re-check costs one statement. */
export async function anySignalBroadcast(db: Queryable): Promise<boolean> {
  const { rows } = await db.query<{ waiting: boolean }>({
    name: 'any_signal_broadcast',
    text: 'select exists (select 1 from signal_broadcasts) as waiting',
  });
  return rows[0]?.waiting === true;
}

/** The oldest broadcast no other transaction is delivering, deleted: its delivery commits with the delete, or neither does. */
export async function takeSignalBroadcast(db: Queryable): Promise<SignalBroadcastRow | undefined> {
  const { rows } = await db.query<SignalBroadcastRow>({
    name: 'take_signal_broadcast',
    text: `delete from signal_broadcasts
            where id = (select id from signal_broadcasts order by id limit 1 for update skip locked)
        returning *`,
  });
  return rows[0];
}

const listeners = new Set<() => void>();

/** Called after a commit of this process that threw a signal; answers the unsubscribe. */
export function onSignalBroadcast(fn: () => void): () => void {
  listeners.add(fn);
  return () => listeners.delete(fn);
}
