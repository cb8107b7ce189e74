// Read-only helpers of the designer under /api/definitions: lint without deploying, and
// the per-element heatmap of a definition's instances.
import { Router } from 'express';
import { compileBpmn } from '../compiler/index.ts';
import type { Diagnostic, Plan } from '../compiler/plan.ts';
import type { Engine } from '../engine/context.ts';
import { findUnservedTopics } from '../engine/element-templates.ts';
import { takenMessageStarts } from '../engine/event-starts.ts';
import { sampleHeatmap } from '../store/diagrams.ts';
import { findDefinition } from '../store/definitions.ts';
import { BatonError } from '../shared/errors.ts';
import { validateBody, validateQuery } from '../shared/validate.ts';

/** Instances a heatmap counts unless asked for another number (at most 100,000: the schema). */
export const HEATMAP_LIMIT = 1_000;

export function lintRouter(engine: Engine): Router {
  const router = Router();

  // The same compiler and the same check against what is deployed as deploy, so the designer's
  // problems are exactly the deploy's refusals; the warnings add what only the server knows
  // (topics no worker asks for), never a refusal.
  router.post('/lint', async (req, res) => {
    const { xml, processId, javaTasksAsTopics } = validateBody<{ xml: string; processId?: string; javaTasksAsTopics?: boolean }>(
      'diagram-lint-request',
      req.body,
    );
    const result = await compileBpmn(xml, {
      ...(processId ? { processId } : {}),
      ...(javaTasksAsTopics ? { javaTasksAsTopics } : {}),
    });
    const taken = result.ok ? await takenMessageStarts(engine.pool, result.plan) : [];
    if (taken.length > 0) {
      res.json({ ok: false, diagnostics: taken, warnings: [] });
      return;
    }
    res.json(
      result.ok
        ? {
            ok: true,
            processKey: result.plan.processKey,
            fingerprint: result.fingerprint,
            diagnostics: [],
            warnings: [
              ...result.warnings,
              // The tasks inside parallel subprocesses are the bodies' steps.
              ...(await unservedTopicWarnings(engine, [result.plan, ...(result.bodies ?? []).map((b) => b.plan)])),
            ],
            ...(result.javaTasks ? { javaTasks: result.javaTasks } : {}),
          }
        : { ok: false, diagnostics: result.diagnostics, warnings: [] },
    );
  });

  // Over the definition's newest instances (`limit`, default HEATMAP_LIMIT): `sample` says
  // how many were counted and since when, so a client can tell a sample from the whole.
  router.get('/:key/heatmap', async (req, res) => {
    const { version, limit = HEATMAP_LIMIT } = validateQuery<{ version?: number; limit?: number }>(
      'diagram-heatmap-query',
      req.query,
    );
    const key = req.params.key;
    if (!(await findDefinition(engine.pool, key, version))) {
      throw new BatonError(
        'not_found',
        version ? `No version ${version} of definition "${key}"` : `No definition with key "${key}"`,
      );
    }
    const heat = await sampleHeatmap(engine.pool, key, version, limit);
    res.json({
      key,
      version: version ?? null,
      instances: heat.instances,
      elements: heat.elements,
      sample: { limit, size: heat.size, since: heat.since },
    });
  });

  return router;
}

/** A warning the compiler cannot give: the code says which, for the designer to act on. */
type ServerWarning = Diagnostic & { code: 'topic-without-worker' };

/** One warning per service task whose topic no worker fetched within the activity window and no template binds. */
async function unservedTopicWarnings(engine: Engine, plans: Plan[]): Promise<ServerWarning[]> {
  const tasks = plans.flatMap((plan) => plan.steps.filter((s) => s.task !== undefined));
  const unserved = await findUnservedTopics(
    engine,
    tasks.map((s) => s.task!.topic),
  );
  const hours = Math.round(engine.fetchActivity.windowMs / 3_600_000);
  return tasks
    .filter((s) => unserved.has(s.task!.topic))
    .map((s) => ({
      elementId: s.id,
      severity: 'warning' as const,
      code: 'topic-without-worker' as const,
      message: `No worker has fetched topic '${s.task!.topic}' of '${s.name ?? s.id}' in the last ${hours} h and no element template binds it: start a worker for topic '${s.task!.topic}' or check the spelling`,
    }));
}
