import { Router, type RequestHandler } from 'express';
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
import { abortedByHangUp, sendAnswer, type JsonAnswer } from './answer.ts';
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

// Every route here is served by express's router and by the lean lane (lean-lane.ts) alike.

/** POST /api/external-tasks/fetch-and-lock; no answer once the caller has hung up. */
export async function fetchRoute(
  engine: Engine,
  parkedPolls: ParkedPolls,
  raw: unknown,
  gone: AbortSignal,
): Promise<JsonAnswer | undefined> {
  const body = validateBody<FetchBody>('fetch-and-lock-request', raw);
  const tasks = await fetchAndWait(engine, parkedPolls, { ...body, waitMs: body.waitMs ?? 0, signal: gone });
  return gone.aborted ? undefined : { status: 200, body: tasks.map(lockedTaskView) };
}

/** POST /api/external-tasks/complete-batch: many completes of one worker with one commit; the answer lists each task's result. */
export async function completeBatchRoute(engine: Engine, raw: unknown): Promise<JsonAnswer> {
  const body = validateBody<CompleteBatchBody>('complete-batch-request', raw);
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
  return { status: 200, body: { results: body.tasks.map((t, i) => ({ id: t.id, result: results[i] })) } };
}

/** POST /api/external-tasks/:id/complete */
async function completeRoute(engine: Engine, id: string | undefined, raw: unknown): Promise<JsonAnswer> {
  const body = validateBody<Omit<CompleteTaskRequest, 'taskId'>>('complete-request', raw);
  return answerOf(await faultAfter('api:after-complete-commit', completeTask(engine, { ...body, taskId: taskIdOf(id) })), id);
}

/** POST /api/external-tasks/:id/failure */
async function failureRoute(engine: Engine, id: string | undefined, raw: unknown): Promise<JsonAnswer> {
  const body = validateBody<Omit<FailTaskRequest, 'taskId'>>('failure-request', raw);
  return answerOf(await failTask(engine, { ...body, taskId: taskIdOf(id) }), id);
}

/** POST /api/external-tasks/:id/bpmn-error */
async function bpmnErrorRoute(engine: Engine, id: string | undefined, raw: unknown): Promise<JsonAnswer> {
  const body = validateBody<Omit<BpmnErrorRequest, 'taskId'>>('bpmn-error-request', raw);
  return answerOf(await reportBpmnError(engine, { ...body, taskId: taskIdOf(id) }), id);
}

/** POST /api/external-tasks/:id/extend-lock */
async function extendLockRoute(engine: Engine, id: string | undefined, raw: unknown): Promise<JsonAnswer> {
  const body = validateBody<Omit<LockHolder, 'taskId'> & { lockDurationMs: number }>('extend-lock-request', raw);
  const holder = { ...body, taskId: taskIdOf(id) };
  return answerOf(await leaseCall(engine, holder, 'extend-lock', extendLock(engine.pool, holder)), id);
}

/** POST /api/external-tasks/:id/unlock */
async function unlockRoute(engine: Engine, id: string | undefined, raw: unknown): Promise<JsonAnswer> {
  const body = validateBody<Omit<LockHolder, 'taskId'>>('unlock-request', raw);
  const holder = { ...body, taskId: taskIdOf(id) };
  return answerOf(await leaseCall(engine, holder, 'unlock', unlockTask(engine.pool, holder)), id);
}

export type TaskCall = 'complete' | 'failure' | 'bpmn-error' | 'extend-lock' | 'unlock';

/** The calls a lock holder makes on one task, POST /api/external-tasks/:id/<call>, by call. */
export const TASK_CALL_ROUTES: Record<TaskCall, (engine: Engine, id: string | undefined, raw: unknown) => Promise<JsonAnswer>> = {
  complete: completeRoute,
  failure: failureRoute,
  'bpmn-error': bpmnErrorRoute,
  'extend-lock': extendLockRoute,
  unlock: unlockRoute,
};

export function tasksRouter(engine: Engine, parkedPolls: ParkedPolls): Router {
  const router = Router();

  router.post('/fetch-and-lock', async (req, res) => {
    const answer = await fetchRoute(engine, parkedPolls, req.body, abortedByHangUp(res));
    if (answer) sendAnswer(res, answer);
  });

  router.post('/complete-batch', async (req, res) => {
    sendAnswer(res, await completeBatchRoute(engine, req.body));
  });

  const call =
    (route: (typeof TASK_CALL_ROUTES)[TaskCall]): RequestHandler<{ id: string }> =>
    async (req, res) => {
      sendAnswer(res, await route(engine, req.params.id, req.body));
    };
  router.post('/:id/complete', call(TASK_CALL_ROUTES.complete));
  router.post('/:id/failure', call(TASK_CALL_ROUTES.failure));
  router.post('/:id/bpmn-error', call(TASK_CALL_ROUTES['bpmn-error']));
  router.post('/:id/extend-lock', call(TASK_CALL_ROUTES['extend-lock']));
  router.post('/:id/unlock', call(TASK_CALL_ROUTES.unlock));

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

function answerOf(result: TaskCallResult, taskId: string | undefined): JsonAnswer {
  if (result.ok) return { status: 204 };
  if (result.reason === 'not_found') throw new BatonError('not_found', `No external task with id "${taskId ?? ''}"`);
  throw new BatonError(
    'lock_lost',
    `The lock on task ${taskId ?? ''} is not held by this worker and token: it expired and was taken by another worker, the task was canceled, or it already finished. Nothing was changed; the call is kept in the history as a late result.`,
  );
}
