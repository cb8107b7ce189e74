// Several statements of one transaction in one write, answered in order: node-postgres'
// pipeline mode, switched on for one group of calls and off again. Sent one by one, 21
// statements are 21 round trips, each a socket write and a wake-up of the backend on both
// sides (about 0.25 ms of Node CPU per write on the 2-core bench machine); pipelined, they
// are one write, and the backend runs the statements back to back (docs/PERFORMANCE.md,
// "Batches in two round trips").
import type { Queryable } from './db.ts';

/** The parts of a pg client a pipelined group uses (pg 8.23: `pipeline`, `connection.stream`). */
interface PipelineClient {
  pipeline?: unknown;
  query: (...args: unknown[]) => unknown;
  connection?: { stream?: { cork?: () => void; uncork?: () => void } };
}

/**
 * Runs the calls in order on one connection; the statement each sends first is written
 * together with the others' and they run in call order. Meant for calls that each send
 * one statement that depends on nothing another call reads (transitions of different
 * instances in one transaction): a call that sends a second statement after awaiting its
 * first still works, but that statement goes behind the later calls' first ones.
 * Answers every call's outcome in call order (like Promise.allSettled). A client without
 * pipeline mode runs the calls one after the other.
 */
export async function runPipelined<T>(db: Queryable, calls: (() => Promise<T>)[]): Promise<PromiseSettledResult<T>[]> {
  const client = db as unknown as PipelineClient;
  const stream = client.connection?.stream;
  if (calls.length < 2 || typeof client.pipeline !== 'boolean' || !stream?.cork || !stream.uncork) return runInTurn(calls);
  const ownQuery = Object.prototype.hasOwnProperty.call(client, 'query') ? client.query : undefined;
  const query = client.query;
  let sent: (() => void) | undefined;
  client.query = function (this: unknown, ...args: unknown[]) {
    const result = query.apply(this, args);
    sent?.();
    return result;
  };
  client.pipeline = true;
  stream.cork();
  let corked = true;
  const running: Promise<T>[] = [];
  try {
    for (const call of calls) {
      // The next call starts once this one has queued its statement (or ended without one):
      // the order on the wire is the call order.
      const queued = new Promise<void>((resolve) => (sent = resolve));
      const result = call();
      running.push(result);
      await Promise.race([queued, result.then(noop, noop)]);
    }
    sent = undefined;
    stream.uncork();
    corked = false;
    return await Promise.allSettled(running);
  } finally {
    sent = undefined;
    if (corked) stream.uncork();
    if (ownQuery) client.query = ownQuery;
    else delete (client as { query?: unknown }).query;
    // Every statement of the group has been answered (allSettled), or none was sent.
    await Promise.allSettled(running);
    client.pipeline = false;
  }
}

/** The first failure of a group, thrown; else every value in call order. */
export function valuesOf<T>(results: PromiseSettledResult<T>[]): T[] {
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
  return results.map((r) => (r as PromiseFulfilledResult<T>).value);
}

async function runInTurn<T>(calls: (() => Promise<T>)[]): Promise<PromiseSettledResult<T>[]> {
  const results: PromiseSettledResult<T>[] = [];
  for (const call of calls) {
    try {
      results.push({ status: 'fulfilled', value: await call() });
    } catch (reason) {
      results.push({ status: 'rejected', reason });
    }
  }
  return results;
}

function noop(): void {}
