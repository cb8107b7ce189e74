// POST /api/external-tasks/:id/progress: worker progress reports (docs/progress.md).
import { Router } from 'express';
import type { ProgressCoalescer } from '../engine/progress.ts';
import type { LockHolder } from '../store/tasks.ts';
import { BatonError } from '../shared/errors.ts';
import { sendAnswer } from './answer.ts';
import { requireUuid, validateBody } from '../shared/validate.ts';

export function progressRouter(progress: ProgressCoalescer): Router {
  const router = Router();

  router.post('/:id/progress', async (req, res) => {
    const body = validateBody<Omit<LockHolder, 'taskId'> & { data: unknown }>('progress-request', req.body);
    const taskId = requireUuid(req.params.id, 'external task');
    const result = await progress.report({ ...body, taskId });
    if (result.ok) return sendAnswer(res, { status: 202, body: { accepted: true } });
    if (result.reason === 'not_found') throw new BatonError('not_found', `No external task with id "${taskId}"`);
    throw new BatonError(
      'lock_lost',
      `Task ${taskId} is not locked by this worker and token (the lock expired, the task ended, or the instance was replayed): the report was not kept`,
    );
  });

  return router;
}
