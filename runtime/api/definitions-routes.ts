import { Router } from 'express';
import type { Engine } from '../engine/context.ts';
import { deployDefinition } from '../engine/definitions.ts';
import { findDefinition, listLatestDefinitions } from '../store/definitions.ts';
import { BatonError } from '../shared/errors.ts';
import { validateBody, validateQuery } from '../shared/validate.ts';
import { generatedMapping } from '../engine/migration-plan.ts';
import { definitionSummaryView, definitionView } from './views.ts';

export function definitionsRouter(engine: Engine): Router {
  const router = Router();

  // JSON { xml, processId?, javaTasksAsTopics? } or the BPMN itself as application/xml (options as query parameters).
  router.post('/', async (req, res) => {
    let xml: string;
    let processId: string | undefined;
    let javaTasksAsTopics: boolean | undefined;
    if (req.is('application/json')) {
      ({ xml, processId, javaTasksAsTopics } = validateBody<{ xml: string; processId?: string; javaTasksAsTopics?: boolean }>(
        'deploy-request',
        req.body,
      ));
    } else if (req.is(['application/xml', 'text/xml']) && typeof req.body === 'string' && req.body.length > 0) {
      xml = req.body;
      processId = typeof req.query.processId === 'string' ? req.query.processId : undefined;
      javaTasksAsTopics = req.query.javaTasksAsTopics === 'true';
    } else {
      throw new BatonError('unsupported_media_type', 'Send JSON {"xml": "..."} or the BPMN file as application/xml');
    }
    const { created, definition, warnings, javaTasks } = await deployDefinition(engine, xml, processId, {
      ...(javaTasksAsTopics ? { javaTasksAsTopics } : {}),
    });
    res
      .status(created ? 201 : 200)
      .json({ ...definitionSummaryView(definition), created, warnings, ...(javaTasks ? { javaTasks } : {}) });
  });

  router.get('/', async (_req, res) => {
    res.json({ items: (await listLatestDefinitions(engine.pool)).map(definitionSummaryView) });
  });

  router.get('/:key', async (req, res) => {
    const definition = await findDefinition(engine.pool, req.params.key);
    if (!definition) throw new BatonError('not_found', `No definition with key "${req.params.key}"`);
    res.json(definitionView(definition));
  });

  // The migration plan by equal element ids between two versions, for an operator to edit and pass to a migration.
  router.get('/:key/migration-plan', async (req, res) => {
    const q = validateQuery<{ from: number; to: number }>('migration-plan-query', req.query);
    const [from, to] = await Promise.all([q.from, q.to].map((v) => findDefinition(engine.pool, req.params.key, v)));
    for (const [version, found] of [
      [q.from, from],
      [q.to, to],
    ] as const)
      if (!found) throw new BatonError('not_found', `No version ${version} of definition "${req.params.key}"`);
    const { mapped, onlyInSource, onlyInTarget } = generatedMapping(from!.plan, to!.plan);
    res.json({
      key: req.params.key,
      fromVersion: q.from,
      toVersion: q.to,
      sameFingerprint: from!.fingerprint === to!.fingerprint,
      mapping: mapped,
      onlyInSource,
      onlyInTarget,
    });
  });

  router.get('/:key/versions/:version', async (req, res) => {
    const version = Number(req.params.version);
    const definition =
      Number.isInteger(version) && version > 0 && version < 2 ** 31
        ? await findDefinition(engine.pool, req.params.key, version)
        : undefined;
    if (!definition) throw new BatonError('not_found', `No version "${req.params.version}" of definition "${req.params.key}"`);
    res.json(definitionView(definition));
  });

  return router;
}
