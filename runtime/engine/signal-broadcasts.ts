// Signals thrown by processes (a signal intermediate throw or end event): the throwing transition
// leaves a signal_broadcasts row; its delivery is one transaction that deletes the row, fires every
// signal subscription that was waiting when the signal was thrown (each instance locked in id
// order, so two broadcasts at once lock in the same order) and starts every latest definition with
// a signal start event of that name, each with the variables the signal carries. Either all of it commits or none, and a crash in between leaves
// the row for the relay's re-check: no receiver is lost and none gets it twice.
import type { Logger } from 'pino';
import type { Engine } from './context.ts';
import { startInTransaction } from './instances.ts';
import { startRelay, type Relay } from './relay.ts';
import { deliverToSubscription } from './waits.ts';
import { withTransaction, type PoolClient } from '../store/db.ts';
import { lockInstance } from '../store/instances.ts';
import { anySignalBroadcast, onSignalBroadcast, takeSignalBroadcast } from '../store/signals.ts';
import { findEventStarts, listSignalSubscriptions } from '../store/waits.ts';
import { fault } from '../shared/faults.ts';

/** Delivers one thrown signal; answers false when none was left to take. */
export async function deliverSignalBroadcast(engine: Engine): Promise<boolean> {
  return withTransaction(engine.pool, async (tx) => {
    const row = await takeSignalBroadcast(tx);
    if (!row) return false;
    await fault('signal:before-delivery');
    const thrownBy = { signal: row.name, thrownBy: row.instance_id, throwStep: row.step_id };
    const subscriptions = await listSignalSubscriptions(tx, row.name, row.created_at);
    subscriptions.sort((a, b) => (a.instance_id < b.instance_id ? -1 : a.instance_id > b.instance_id ? 1 : 0));
    let delivered = 0;
    for (const sub of subscriptions) {
      const ok = await receiverApart(engine, tx, async () => {
        // Locked afresh for each subscription: one instance may wait for the signal at several steps.
        const instance = await lockInstance(tx, sub.instance_id);
        return instance ? deliverToSubscription(engine, tx, instance, sub, row.variables, thrownBy) : false;
      });
      if (ok) delivered++;
    }
    const started: string[] = [];
    for (const start of await findEventStarts(tx, 'signal', row.name)) {
      await receiverApart(engine, tx, async () => {
        const result = await startInTransaction(
          engine,
          tx,
          { definitionKey: start.key, version: start.version, variables: { ...row.variables } },
          start.step_id,
        );
        if (result.ok) started.push(result.instance.id);
        return result.ok;
      });
    }
    engine.log.info({ signal: row.name, instanceId: row.instance_id, delivered, started }, 'signal:broadcast');
    return true;
  });
}

/**
 * One receiver's delivery, behind a savepoint: a receiver whose transition fails (a fault in
 * its own instance) is logged and left out, and the others still get the signal.
 */
async function receiverApart(engine: Engine, tx: PoolClient, deliver: () => Promise<boolean>): Promise<boolean> {
  await tx.query('savepoint signal_receiver');
  try {
    const ok = await deliver();
    await tx.query('release savepoint signal_receiver');
    return ok;
  } catch (err) {
    await tx.query('rollback to savepoint signal_receiver');
    engine.log.error({ err }, 'signal:receiver_failed');
    return false;
  }
}

export function startSignalBroadcasts(engine: Engine, log: Logger, opts: { intervalMs: number; lanes: number }): Relay {
  return startRelay(log, {
    name: 'signal:broadcast',
    deliverOne: () => deliverSignalBroadcast(engine),
    anyWaiting: () => anySignalBroadcast(engine.pool),
    subscribe: onSignalBroadcast,
    ...opts,
  });
}
