// GET /readyz: this node can serve requests — the database answers and every migration
// this code knows is applied. Load balancers route by it; /healthz only says "process up".
import { Router } from 'express';
import type { Pool } from '../store/db.ts';
import { readMigrations } from '../store/migrate.ts';
import { listAppliedMigrations } from '../store/ops.ts';

/** A hung database must not hang the probe. */
const PROBE_TIMEOUT_MS = 2000;

async function checkReady(pool: Pool): Promise<string[]> {
  const known = (await readMigrations()).map((m) => m.name);
  const applied = new Set(await listAppliedMigrations(pool));
  return known.filter((name) => !applied.has(name));
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

export function readinessRouter(pool: Pool): Router {
  const router = Router();
  router.get('/readyz', async (_req, res) => {
    try {
      const missing = await withTimeout(checkReady(pool), PROBE_TIMEOUT_MS);
      if (missing.length > 0) {
        res
          .status(503)
          .json({ type: 'Unavailable', message: `Migrations not applied yet: ${missing.join(', ')}`, details: { missing } });
        return;
      }
      res.json({ status: 'ready' });
    } catch (err) {
      res.status(503).json({ type: 'Unavailable', message: `The database does not answer: ${(err as Error).message}` });
    }
  });
  return router;
}
