// /api/element-templates: the element templates workers publish for their topics, which the
// designer offers (docs/workers.md, "Element templates"). Publishing is for workers and
// admins, reading for every role (runtime/security/roles.ts).
import { Router } from 'express';
import type { Engine } from '../engine/context.ts';
import { publishTemplate, type ElementTemplate } from '../engine/element-templates.ts';
import { listLatestElementTemplates, type ElementTemplateRow } from '../store/element-templates.ts';
import { validateBody, validateQuery } from '../shared/validate.ts';

export function elementTemplatesRouter(engine: Engine): Router {
  const router = Router();

  // 201 when new, 200 when this id and version already hold the same JSON, 409 when they hold other JSON.
  router.put('/', async (req, res) => {
    const template = validateBody<ElementTemplate>('element-template', req.body);
    const caller = res.locals.caller as { name: string } | undefined;
    const { created, row } = await publishTemplate(engine, template, caller?.name ?? null);
    res.status(created ? 201 : 200).json({ ...publishedTemplateView(row), created });
  });

  // The templates themselves, as bpmn-js-element-templates loads them: the newest version of each id.
  router.get('/', async (req, res) => {
    const { topic } = validateQuery<{ topic?: string }>('element-templates-query', req.query);
    res.json((await listLatestElementTemplates(engine.pool, topic)).map((r) => r.template));
  });

  return router;
}

function publishedTemplateView(r: ElementTemplateRow) {
  return {
    id: r.template_id,
    version: r.version,
    name: r.template.name,
    dialect: r.dialect,
    topic: r.topic,
    publishedAt: r.published_at.toISOString(),
    publishedBy: r.published_by,
  };
}
