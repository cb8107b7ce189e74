// Read-only helpers of the designer under /api/definitions: lint without deploying, and
// the per-element heatmap of a definition's instances.
import { Router } from 'express';
import { compileBpmn } from '../compiler/index.ts';
import type { Engine } from '../engine/context.ts';
import { withPlannerDefaults } from '../store/db.ts';
import { countInstancesByStatus, countStepsByStatus } from '../store/diagrams.ts';
import { findDefinition } from '../store/definitions.ts';
import { BatonError } from '../shared/errors.ts';
import { validateBody, validateQuery } from './validate.ts';

export function lintRouter(engine: Engine): Router {
  const router = Router();

  // The same compiler as deploy, so the designer's problems are exactly the deploy's refusals.
  router.post('/lint', async (req, res) => {
    const { xml, processId } = validateBody<{ xml: string; processId?: string }>('diagram-lint-request', req.body);
    const result = await compileBpmn(xml, processId ? { processId } : {});
    res.json(result.ok
      ? { ok: true, processKey: result.plan.processKey, fingerprint: result.fingerprint, diagnostics: [], warnings: result.warnings }
      : { ok: false, diagnostics: result.diagnostics, warnings: [] });
  });

  router.get('/:key/heatmap', async (req, res) => {
    const { version } = validateQuery<{ version?: number }>('diagram-heatmap-query', req.query);
    const key = req.params.key;
    if (!(await findDefinition(engine.pool, key, version))) {
      throw new BatonError('not_found', version ? `No version ${version} of definition "${key}"` : `No definition with key "${key}"`);
    }
    const [steps, instances] = await withPlannerDefaults(engine.pool, async (db) => [await countStepsByStatus(db, key, version), await countInstancesByStatus(db, key, version)] as const);
    const elements: Record<string, Record<string, number>> = {};
    for (const row of steps) (elements[row.step_id] ??= {})[row.status] = row.count;
    res.json({
      key,
      version: version ?? null,
      instances: Object.fromEntries(instances.map((r) => [r.status, r.count])),
      elements,
    });
  });

  return router;
}
