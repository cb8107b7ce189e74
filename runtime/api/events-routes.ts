// Messages, signals and start conditions from outside: POST /api/messages, POST /api/signals, POST /api/conditions.
import { Router } from 'express';
import type { Engine } from '../engine/context.ts';
import { broadcastSignal, publishMessage } from '../engine/waits.ts';
import { startOnConditions, type ConditionEvaluation } from '../engine/event-starts.ts';
import type { PublishMessageRequest } from '../model/messages.ts';
import type { Variables } from '../model/effects.ts';
import { validateBody } from '../shared/validate.ts';

export function eventsRouter(engine: Engine): Router {
  const router = Router();

  // matched and duplicate answer 200, started 201, buffered 202; no subscription with ttlMs 0 is 404 NoMatch.
  router.post('/messages', async (req, res) => {
    const body = validateBody<PublishMessageRequest>('message-request', req.body);
    const result = await publishMessage(engine, body);
    res.status(result.status === 'buffered' ? 202 : result.status === 'started' ? 201 : 200).json(result);
  });

  router.post('/signals', async (req, res) => {
    const body = validateBody<{ name: string; variables?: Variables }>('signal-request', req.body);
    const { delivered, started } = await broadcastSignal(engine, body.name, body.variables);
    res.json({ name: body.name, delivered, started });
  });

  router.post('/conditions', async (req, res) => {
    const body = validateBody<Partial<ConditionEvaluation>>('conditions-request', req.body);
    const { evaluated, started } = await startOnConditions(engine, { ...body, variables: body.variables ?? {} });
    res.json({ evaluated, started: started.map((i) => i.id) });
  });

  return router;
}
