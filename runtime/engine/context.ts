import type { Logger } from 'pino';
import type { Plan } from '../compiler/plan.ts';
import type { Pool } from '../store/db.ts';
import { findDefinitionById } from '../store/definitions.ts';

export interface EngineOptions {
  /** first retry delay after a failure; doubles with each further failure */
  retryBackoffMs: number;
  /** longest retry delay */
  retryBackoffMaxMs: number;
}

export const defaultEngineOptions: EngineOptions = { retryBackoffMs: 1000, retryBackoffMaxMs: 5 * 60_000 };

export interface Engine {
  pool: Pool;
  log: Logger;
  options: EngineOptions;
  /** plans by definition id; definitions never change once deployed */
  plans: Map<string, Plan>;
}

export function createEngine(pool: Pool, log: Logger, options: Partial<EngineOptions> = {}): Engine {
  return { pool, log, options: { ...defaultEngineOptions, ...options }, plans: new Map() };
}

export async function planOf(engine: Engine, definitionId: string): Promise<Plan> {
  const cached = engine.plans.get(definitionId);
  if (cached) return cached;
  const row = await findDefinitionById(engine.pool, definitionId);
  if (!row) throw new Error(`Definition ${definitionId} vanished`);
  engine.plans.set(definitionId, row.plan);
  return row.plan;
}
