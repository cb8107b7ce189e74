// POST /api/external-tasks/:id/progress: worker progress reports (docs/progress.md).
import { Router } from 'express';
import type { ProgressCoalescer } from '../engine/progress.ts';
import type { LockHolder } from '../store/tasks.ts';
import { BatonError } from '../shared/errors.ts';
import { sendAnswer, type JsonAnswer } from './answer.ts';
import { requireUuid, validateBody } from '../shared/validate.ts';

/** POST /api/external-tasks/:id/progress, served by the router below and the lean lane (lean-lane.ts). */
export async function progressRoute(progress: ProgressCoalescer, id: string | undefined, raw: unknown): Promise<JsonAnswer> {
  const body = validateBody<Omit<LockHolder, 'taskId'> & { data: unknown }>('progress-request', raw);
  const taskId = requireUuid(id, 'external task');
  const result = await progress.report({ ...body, taskId });
  if (result.ok) return { status: 202, body: { accepted: true } };
  if (result.reason === 'not_found') throw new BatonError('not_found', `No external task with id "${taskId}"`);
  throw new BatonError(
    'lock_lost',
    `Task ${taskId} is not locked by this worker and token (the lock expired, the task ended, or the instance was replayed): the report was not kept`,
  );
}

export function progressRouter(progress: ProgressCoalescer): Router {
  const router = Router();

  router.post('/:id/progress', async (req, res) => {
    sendAnswer(res, await progressRoute(progress, req.params.id, req.body));
  });

  return router;
}
