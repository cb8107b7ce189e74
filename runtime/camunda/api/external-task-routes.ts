// /engine-rest/external-task: Camunda 7's external task resource.
import { Router, type Response } from 'express';
import type { Engine } from '../../engine/context.ts';
import { fetchCamundaTasks } from '../engine/fetch.ts';
import { extendCamundaLock, lockCamundaTask, setCamundaRetries, unlockCamundaTask } from '../engine/leases.ts';
import { completeCamundaTask, failCamundaTask, reportCamundaBpmnError, type CamundaCallResult } from '../engine/tasks.ts';
import type { ParkedPolls } from '../../engine/parked-polls.ts';
import type { ProgressCoalescer } from '../../engine/progress.ts';
import { reportCamundaProgress } from '../engine/progress.ts';
import type { CamundaTopicFilter } from '../store/fetch.ts';
import { countCamundaTasks, findCamundaTask, listCamundaTasks } from '../store/queries.ts';
import { withPlannerDefaults } from '../../store/db.ts';
import { isUuid } from '../../shared/validate.ts';
import { abortedByHangUp } from '../../api/answer.ts';
import { CamundaError, invalidRequest, sendJson, sendNoContent } from './errors.ts';
import { readTaskQuery } from './task-query.ts';
import { validateCamundaBody } from './validate.ts';
import { readVariables, type WireVariable } from './variables.ts';
import { externalTaskView, lockedTaskView } from './views.ts';

/** Camunda refuses longer long polls. */
export const MAX_ASYNC_RESPONSE_TIMEOUT_MS = 1_800_000;

interface FetchBody {
  workerId: string;
  maxTasks: number;
  usePriority?: boolean | null;
  asyncResponseTimeout?: number | null;
  sorting?: { sortBy: 'createTime'; sortOrder: 'asc' | 'desc' }[] | null;
  topics?: (CamundaTopicFilter & { variables?: string[] | null; includeExtensionProperties?: boolean | null })[] | null;
}

type Vars = Record<string, WireVariable> | null | undefined;

export function externalTaskRouter(engine: Engine, parkedPolls: ParkedPolls, progress: ProgressCoalescer): Router {
  const router = Router();

  router.post('/fetchAndLock', async (req, res) => {
    const body = validateCamundaBody<FetchBody>('fetch-and-lock-request', req.body);
    const waitMs = body.asyncResponseTimeout ?? 0;
    if (waitMs > MAX_ASYNC_RESPONSE_TIMEOUT_MS) {
      throw invalidRequest(
        `The asynchronous response timeout cannot be set to a value greater than ${MAX_ASYNC_RESPONSE_TIMEOUT_MS} milliseconds`,
      );
    }
    const topics = body.topics ?? [];
    if (topics.length === 0 || body.maxTasks === 0) return sendJson(res, 200, []);
    // A caller that hangs up while parked must not be left holding locks.
    const gone = abortedByHangUp(res);
    const tasks = await fetchCamundaTasks(engine, parkedPolls, {
      workerId: body.workerId,
      maxTasks: body.maxTasks,
      usePriority: body.usePriority ?? true,
      createTimeOrder: body.sorting?.[0]?.sortOrder ?? 'asc',
      topics,
      waitMs,
      signal: gone,
    });
    if (gone.aborted) return;
    const topicOf = new Map(topics.map((t) => [t.topicName, t] as const));
    sendJson(
      res,
      200,
      tasks.map((t) => lockedTaskView(t, topicOf.get(t.topic) ?? {})),
    );
  });

  router.post('/:id/complete', async (req, res) => {
    const body = validateCamundaBody<{ workerId: string; variables?: Vars; localVariables?: Vars }>('complete-request', req.body);
    const taskId = taskIdOf(req.params.id);
    const variables = readVariables({ ...body.variables, ...body.localVariables });
    const result = await completeCamundaTask(engine, { taskId, workerId: body.workerId, variables });
    answer(res, result, taskId, body.workerId, 'completed');
  });

  router.post('/:id/failure', async (req, res) => {
    const body = validateCamundaBody<{
      workerId: string;
      errorMessage?: string | null;
      errorDetails?: string | null;
      retries?: number | null;
      retryTimeout?: number | null;
      variables?: Vars;
      localVariables?: Vars;
    }>('failure-request', req.body);
    const taskId = taskIdOf(req.params.id);
    const variables = readVariables({ ...body.variables, ...body.localVariables });
    const result = await failCamundaTask(engine, {
      taskId,
      workerId: body.workerId,
      retries: body.retries ?? 0,
      retryTimeoutMs: body.retryTimeout ?? 0,
      errorMessage: body.errorMessage ?? null,
      errorDetails: body.errorDetails ?? null,
      variables,
    });
    answer(res, result, taskId, body.workerId, 'failed');
  });

  router.post('/:id/bpmnError', async (req, res) => {
    const body = validateCamundaBody<{ workerId: string; errorCode: string; errorMessage?: string | null; variables?: Vars }>(
      'bpmn-error-request',
      req.body,
    );
    const taskId = taskIdOf(req.params.id);
    const variables = readVariables(body.variables);
    const result = await reportCamundaBpmnError(engine, {
      taskId,
      workerId: body.workerId,
      errorCode: body.errorCode,
      errorMessage: body.errorMessage ?? null,
      variables,
    });
    answer(res, result, taskId, body.workerId, 'reported as a BPMN error');
  });

  // A Baton extension: the native progress report, authorized by the worker holding the lock (docs/camunda-compatibility.md).
  router.post('/:id/progress', async (req, res) => {
    const body = validateCamundaBody<{ workerId: string; data: unknown }>('progress-request', req.body);
    const taskId = taskIdOf(req.params.id);
    const result = await reportCamundaProgress(engine, progress, { taskId, workerId: body.workerId, data: body.data });
    answer(res, result, taskId, body.workerId, 'given progress');
  });

  router.post('/:id/extendLock', async (req, res) => {
    const body = validateCamundaBody<{ workerId: string; newDuration: number }>('extend-lock-request', req.body);
    const taskId = taskIdOf(req.params.id);
    const result = await extendCamundaLock(engine, { taskId, workerId: body.workerId, lockDurationMs: body.newDuration });
    answer(res, result, taskId, body.workerId, 'extended');
  });

  router.post('/:id/lock', async (req, res) => {
    const body = validateCamundaBody<{ workerId: string; lockDuration: number }>('lock-request', req.body);
    const taskId = taskIdOf(req.params.id);
    const result = await lockCamundaTask(engine, { taskId, workerId: body.workerId, lockDurationMs: body.lockDuration });
    answer(res, result, taskId, body.workerId, 'locked');
  });

  router.post('/:id/unlock', async (req, res) => {
    const taskId = taskIdOf(req.params.id);
    answer(res, await unlockCamundaTask(engine, taskId), taskId, '', 'unlocked');
  });

  router.put('/:id/retries', async (req, res) => {
    const body = validateCamundaBody<{ retries: number }>('retries-request', req.body);
    const taskId = taskIdOf(req.params.id);
    answer(res, await setCamundaRetries(engine, taskId, body.retries), taskId, '', 'given retries');
  });

  router.get('/count', async (req, res) => {
    const query = readTaskQuery(req.query);
    sendJson(res, 200, { count: await withPlannerDefaults(engine.pool, (db) => countCamundaTasks(db, query)) });
  });

  router.get('/:id', async (req, res) => {
    const taskId = taskIdOf(req.params.id);
    const task = await findCamundaTask(engine.pool, taskId);
    if (!task) throw missing(taskId);
    sendJson(res, 200, externalTaskView(task));
  });

  router.get('/', async (req, res) => {
    const query = readTaskQuery(req.query);
    sendJson(res, 200, (await withPlannerDefaults(engine.pool, (db) => listCamundaTasks(db, query))).map(externalTaskView));
  });

  return router;
}

function taskIdOf(raw: string | undefined): string {
  const id = raw ?? '';
  // Ids are uuids: anything else cannot exist.
  if (!isUuid(id)) throw missing(id);
  return id;
}

function missing(taskId: string): CamundaError {
  return new CamundaError(404, 'RestException', `External task with id ${taskId} does not exist`);
}

/** 204 for a call that took effect; a refused one is thrown, for Camunda's error table to answer. */
function answer(res: Response, result: CamundaCallResult, taskId: string, workerId: string, verb: string): void {
  if (result.ok) return sendNoContent(res);
  if (result.reason === 'not_found') throw missing(taskId);
  const holder =
    result.task?.state === 'locked'
      ? `It is locked by worker '${result.task.worker_id ?? ''}'`
      : `It is not locked (state ${result.task?.state ?? 'unknown'})`;
  throw new CamundaError(400, 'RestException', `External Task ${taskId} cannot be ${verb} by worker '${workerId}'. ${holder}.`);
}
