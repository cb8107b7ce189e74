import type { Logger } from 'pino';
import type { Plan } from '../compiler/plan.ts';
import type { PollClaims } from './parked-polls.ts';
import type { Pool, Queryable } from '../store/db.ts';
import { findDefinitionById } from '../store/definitions.ts';
import { FetchActivity } from './fetch-activity.ts';
import { createStartQueue, type StartQueue } from './start-queue.ts';

export interface EngineOptions {
  /** first retry delay after a failure; doubles with each further failure */
  retryBackoffMs: number;
  /** longest retry delay */
  retryBackoffMaxMs: number;
  /**
   * Lease expiries a task may have beyond its retries before it ends like a failure with
   * none left: a node restart or a network cut expires healthy leases too, so they get
   * room of their own; a task that kills every worker still ends in an incident.
   */
  leaseExpiryAllowance: number;
  /**
   * Statements of starts in flight at once; starts arriving meanwhile are written together
   * by the next one (engine/start-queue.ts), at most startBatchMax in one statement.
   */
  startLanes: number;
  startBatchMax: number;
  /** how large a result may grow an instance's variables (jsonb text bytes); unlimited unless the server sets its limit */
  maxVariablesBytes: number;
  /** how often at most a node writes the fetches it saw (engine/fetch-activity.ts) */
  fetchActivityFlushMs: number;
}

export const defaultEngineOptions: EngineOptions = {
  retryBackoffMs: 1000,
  retryBackoffMaxMs: 5 * 60_000,
  leaseExpiryAllowance: 3,
  startLanes: 2,
  startBatchMax: 32,
  maxVariablesBytes: Infinity,
  fetchActivityFlushMs: 5_000,
};

export interface Engine {
  pool: Pool;
  log: Logger;
  options: EngineOptions;
  /** plans by definition id; definitions never change once deployed */
  plans: Map<string, Plan>;
  /**
   * The definition a start by key (and version) last used: a hint only, a newer deployed
   * version makes the optimistic start's guard fail and the entry is dropped.
   */
  startTargets: Map<string, { id: string; key: string; version: number }>;
  /** the long polls parked on this node, to which a start or a complete may deliver its new tasks (the server's ParkedPolls) */
  delivery?: PollClaims;
  /** where optimistic starts are written, several in one statement under load */
  starts: StartQueue;
  /** which workers fetched which topics: held in memory, written every few seconds */
  fetchActivity: FetchActivity;
}

export function createEngine(pool: Pool, log: Logger, options: Partial<EngineOptions> = {}): Engine {
  const opts = { ...defaultEngineOptions, ...options };
  return {
    pool,
    log,
    options: opts,
    plans: new Map(),
    startTargets: new Map(),
    starts: createStartQueue(pool, { lanes: opts.startLanes, maxBatch: opts.startBatchMax }),
    fetchActivity: new FetchActivity(pool, log, opts.fetchActivityFlushMs),
  };
}

/**
 * The plan of a definition, cached. Inside a transition pass its transaction: a
 * cold cache read through the pool would need a second connection while the
 * transaction holds one, and with every connection held by such a transition
 * (a restarted node under load) none would ever be free.
 */
export async function planOf(engine: Engine, definitionId: string, db: Queryable = engine.pool): Promise<Plan> {
  const cached = engine.plans.get(definitionId);
  if (cached) return cached;
  const row = await findDefinitionById(db, definitionId);
  if (!row) throw new Error(`Definition ${definitionId} vanished`);
  engine.plans.set(definitionId, row.plan);
  return row.plan;
}
