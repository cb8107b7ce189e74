import type { ServerResponse } from 'node:http';
import { Router } from 'express';
import type { Engine } from '../engine/context.ts';
import { fetchAndWait } from '../engine/fetch.ts';
import type { ParkedPolls } from '../engine/parked-polls.ts';
import type { Variables } from '../model/effects.ts';
import {
  completeTask,
  completeTasks,
  failTask,
  reportBpmnError,
  type BpmnErrorRequest,
  type CompleteTaskRequest,
  type FailTaskRequest,
  type TaskCallResult,
} from '../engine/tasks.ts';
import { extendLock, recordLateResult, unlockTask, type GuardedTaskResult, type LockHolder } from '../store/tasks.ts';
import { BatonError } from '../shared/errors.ts';
import { faultAfter } from '../shared/faults.ts';
import { abortedByHangUp, sendAnswer } from './answer.ts';
import { requireUuid, validateBody } from '../shared/validate.ts';
import { lockedTaskView } from './views.ts';

interface CompleteBatchBody {
  workerId: string;
  tasks: { id: string; lockToken: string; variables?: Variables }[];
}

interface FetchBody {
  workerId: string;
  maxTasks: number;
  waitMs?: number;
  topics: { name: string; lockDurationMs: number }[];
}

export function tasksRouter(engine: Engine, parkedPolls: ParkedPolls): Router {
  const router = Router();

  router.post('/fetch-and-lock', async (req, res) => {
    const body = validateBody<FetchBody>('fetch-and-lock-request', req.body);
    const gone = abortedByHangUp(res);
    const tasks = await fetchAndWait(engine, parkedPolls, { ...body, waitMs: body.waitMs ?? 0, signal: gone });
    // Nobody to answer once the caller has hung up.
    if (!gone.aborted)
      sendAnswer(res, { status: 200, body: tasks.map((t) => lockedTaskView(t, engine.options.leaseExpiryAllowance)) });
  });

  // Many completes of one worker with one commit; the answer lists each task's result.
  router.post('/complete-batch', async (req, res) => {
    const body = validateBody<CompleteBatchBody>('complete-batch-request', req.body);
    const ids = body.tasks.map((t) => t.id.toLowerCase());
    const twice = ids.find((id, i) => ids.indexOf(id) !== i);
    if (twice)
      throw new BatonError('validation', `Task ${twice} appears more than once in the batch`, [
        { path: '/tasks', message: `duplicate id ${twice}` },
      ]);
    const results = await completeTasks(
      engine,
      body.workerId,
      body.tasks.map((t, i) => ({ taskId: ids[i]!, lockToken: t.lockToken, ...(t.variables ? { variables: t.variables } : {}) })),
    );
    sendAnswer(res, { status: 200, body: { results: body.tasks.map((t, i) => ({ id: t.id, result: results[i] })) } });
  });

  router.post('/:id/complete', async (req, res) => {
    const body = validateBody<Omit<CompleteTaskRequest, 'taskId'>>('complete-request', req.body);
    const result = completeTask(engine, { ...body, taskId: taskIdOf(req.params.id) });
    answer(res, await faultAfter('api:after-complete-commit', result), req.params.id);
  });

  router.post('/:id/failure', async (req, res) => {
    const body = validateBody<Omit<FailTaskRequest, 'taskId'>>('failure-request', req.body);
    answer(res, await failTask(engine, { ...body, taskId: taskIdOf(req.params.id) }), req.params.id);
  });

  router.post('/:id/bpmn-error', async (req, res) => {
    const body = validateBody<Omit<BpmnErrorRequest, 'taskId'>>('bpmn-error-request', req.body);
    answer(res, await reportBpmnError(engine, { ...body, taskId: taskIdOf(req.params.id) }), req.params.id);
  });

  router.post('/:id/extend-lock', async (req, res) => {
    const body = validateBody<Omit<LockHolder, 'taskId'> & { lockDurationMs: number }>('extend-lock-request', req.body);
    const holder = { ...body, taskId: taskIdOf(req.params.id) };
    answer(res, await leaseCall(engine, holder, 'extend-lock', extendLock(engine.pool, holder)), req.params.id);
  });

  router.post('/:id/unlock', async (req, res) => {
    const body = validateBody<Omit<LockHolder, 'taskId'>>('unlock-request', req.body);
    const holder = { ...body, taskId: taskIdOf(req.params.id) };
    answer(res, await leaseCall(engine, holder, 'unlock', unlockTask(engine.pool, holder)), req.params.id);
  });

  return router;
}

function taskIdOf(id: string | undefined): string {
  return requireUuid(id, 'external task');
}

// Lease calls touch only the task row; a refused one is kept like a late result.
async function leaseCall(
  engine: Engine,
  holder: LockHolder,
  kind: 'extend-lock' | 'unlock',
  call: Promise<GuardedTaskResult>,
): Promise<TaskCallResult> {
  const result = await call;
  if (result.ok) return { ok: true, duplicate: false };
  if (result.reason === 'lock_lost') await recordLateResult(engine.pool, { ...holder, kind, payloadBytes: 0 });
  return { ok: false, reason: result.reason === 'already_applied' ? 'lock_lost' : result.reason };
}

/** 204 for a call that took effect; a refused one is thrown, for the error table to answer. */
function answer(res: ServerResponse, result: TaskCallResult, taskId: string): void {
  if (result.ok) return sendAnswer(res, { status: 204 });
  if (result.reason === 'not_found') throw new BatonError('not_found', `No external task with id "${taskId}"`);
  throw new BatonError(
    'lock_lost',
    `The lock on task ${taskId} is not held by this worker and token: it expired and was taken by another worker, the task was canceled, or it already finished. Nothing was changed; the call is kept in the history as a late result.`,
  );
}
