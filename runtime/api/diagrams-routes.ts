// Designer drafts: a diagram is a name and its current XML, saved without deploying.
import { Router } from 'express';
import { checkBpmnReadable } from '../compiler/index.ts';
import type { Engine } from '../engine/context.ts';
import {
  deleteDiagram,
  findDiagram,
  insertDiagram,
  listDiagrams,
  updateDiagram,
  type DiagramRow,
  type DiagramSummaryRow,
} from '../store/diagrams.ts';
import { BatonError } from '../shared/errors.ts';
import { requireUuid, validateBody } from '../shared/validate.ts';

interface DiagramBody {
  name?: string;
  xml?: string;
}

export function diagramSummaryView(d: DiagramSummaryRow) {
  return { id: d.id, name: d.name, createdAt: d.created_at, updatedAt: d.updated_at };
}

export function diagramView(d: DiagramRow) {
  return { ...diagramSummaryView(d), xml: d.xml };
}

function notFound(id: string): BatonError {
  return new BatonError('not_found', `No diagram with id "${id}"`);
}

/** A draft need not compile, but it must open: XML that does not parse as BPMN is refused. */
async function requireReadableBpmn(xml: string | undefined): Promise<void> {
  if (xml === undefined) return;
  const readable = await checkBpmnReadable(xml);
  if (!readable.ok) throw new BatonError('validation', readable.message, [{ path: '/xml', message: readable.message }]);
}

export function diagramsRouter(engine: Engine): Router {
  const router = Router();

  router.get('/', async (_req, res) => {
    res.json({ items: (await listDiagrams(engine.pool)).map(diagramSummaryView) });
  });

  router.post('/', async (req, res) => {
    const body = validateBody<Required<DiagramBody>>('diagram-create-request', req.body);
    await requireReadableBpmn(body.xml);
    res.status(201).json(diagramView(await insertDiagram(engine.pool, { name: body.name.trim(), xml: body.xml })));
  });

  router.get('/:id', async (req, res) => {
    const id = requireUuid(req.params.id, 'diagram');
    const diagram = await findDiagram(engine.pool, id);
    if (!diagram) throw notFound(id);
    res.json(diagramView(diagram));
  });

  router.patch('/:id', async (req, res) => {
    const id = requireUuid(req.params.id, 'diagram');
    const body = validateBody<DiagramBody>('diagram-update-request', req.body);
    await requireReadableBpmn(body.xml);
    const diagram = await updateDiagram(engine.pool, id, { ...body, ...(body.name ? { name: body.name.trim() } : {}) });
    if (!diagram) throw notFound(id);
    res.json(diagramView(diagram));
  });

  router.delete('/:id', async (req, res) => {
    const id = requireUuid(req.params.id, 'diagram');
    if (!(await deleteDiagram(engine.pool, id))) throw notFound(id);
    res.status(204).end();
  });

  return router;
}
