// What runtime/server.ts mounts from the operations layer.
import { Router } from 'express';
import type { ParkedPolls } from '../engine/parked-polls.ts';
import type { Pool } from '../store/db.ts';
import { createMetricsRegistry, metricsRouter } from './metrics.ts';
import { openApiRouter } from './openapi.ts';
import { readinessRouter } from './readiness.ts';

export { startRetention, type RetentionJob, type RetentionOptions } from './retention.ts';

/** GET /readyz, GET /metrics, GET /api/openapi.json */
export function opsRouter(pool: Pool, parkedPolls: ParkedPolls): Router {
  const router = Router();
  router.use(readinessRouter(pool), metricsRouter(createMetricsRegistry(pool, parkedPolls)), openApiRouter());
  return router;
}
