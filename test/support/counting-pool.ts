// A pool that counts what its clients send: statements, how many were in flight at most
// (pipelining), and round trips (statements sent while none of that client's was answered yet).
// The notification relay's statements (store/notifications.ts) are counted apart: they follow commits,
// off any caller's path, one per turn of the event loop however many commits rang.
import type pg from 'pg';
import { createPool, type Pool } from '../../runtime/store/db.ts';
import { LISTENERS_STATEMENT, RELAY_STATEMENT } from '../../runtime/store/notifications.ts';

/**
 * A pool whose clients record the most statements they had sent and not yet seen answered,
 * and the round trips: statements sent while none of that client's was in flight.
 */
export function countingPool(url: string): {
  pool: Pool;
  maxInFlight: () => number;
  roundTrips: () => number;
  statements: () => number;
  relays: () => number;
  clients: pg.PoolClient[];
} {
  const pool = createPool({ connectionString: url });
  const clients: pg.PoolClient[] = [];
  let max = 0;
  let roundTrips = 0;
  let statements = 0;
  let relays = 0;
  pool.on('connect', (client) => {
    clients.push(client);
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    let inFlight = 0;
    (client as { query: unknown }).query = (...args: unknown[]) => {
      const name = (args[0] as { name?: unknown } | undefined)?.name;
      if (name === RELAY_STATEMENT || name === LISTENERS_STATEMENT) {
        relays++;
        return query(...args);
      }
      if (inFlight === 0) roundTrips++;
      statements++;
      inFlight++;
      max = Math.max(max, inFlight);
      const done = args.findIndex((a) => typeof a === 'function');
      if (done >= 0) {
        const callback = args[done] as (...r: unknown[]) => void;
        args[done] = (...r: unknown[]) => {
          inFlight--;
          callback(...r);
        };
        return query(...args);
      }
      const result = query(...args) as Promise<unknown>;
      void result.then(
        () => inFlight--,
        () => inFlight--,
      );
      return result;
    };
  });
  return {
    pool,
    maxInFlight: () => max,
    roundTrips: () => roundTrips,
    statements: () => statements,
    relays: () => relays,
    clients,
  };
}
