// /engine-rest/external-task: Camunda 7's external task resource.
import { Router, type RequestHandler } from 'express';
import type { Engine } from '../../engine/context.ts';
import { fetchCamundaTasks } from '../engine/fetch.ts';
import { extendCamundaLock, lockCamundaTask, setCamundaRetries, unlockCamundaTask } from '../engine/leases.ts';
import { completeCamundaTask, failCamundaTask, reportCamundaBpmnError, type CamundaCallResult } from '../engine/tasks.ts';
import type { ParkedPolls } from '../../engine/parked-polls.ts';
import type { CamundaTopicFilter } from '../store/fetch.ts';
import { countCamundaTasks, findCamundaTask, listCamundaTasks } from '../store/queries.ts';
import { withPlannerDefaults } from '../../store/db.ts';
import { isUuid } from '../../shared/validate.ts';
import { abortedByHangUp, sendAnswer, type JsonAnswer } from '../../api/answer.ts';
import { CamundaError, camundaJson, invalidRequest, sendJson } from './errors.ts';
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

// fetchAndLock and the lock holder's calls are served by the router below and by the lean
// lane (api/lean-lane.ts) alike.

/** POST /engine-rest/external-task/fetchAndLock; no answer once the caller has hung up. */
export async function camundaFetchRoute(
  engine: Engine,
  parkedPolls: ParkedPolls,
  raw: unknown,
  gone: AbortSignal,
): Promise<JsonAnswer | undefined> {
  const body = validateCamundaBody<FetchBody>('fetch-and-lock-request', raw);
  const waitMs = body.asyncResponseTimeout ?? 0;
  if (waitMs > MAX_ASYNC_RESPONSE_TIMEOUT_MS) {
    throw invalidRequest(
      `The asynchronous response timeout cannot be set to a value greater than ${MAX_ASYNC_RESPONSE_TIMEOUT_MS} milliseconds`,
    );
  }
  const topics = body.topics ?? [];
  if (topics.length === 0 || body.maxTasks === 0) return camundaJson(200, []);
  const tasks = await fetchCamundaTasks(engine, parkedPolls, {
    workerId: body.workerId,
    maxTasks: body.maxTasks,
    usePriority: body.usePriority ?? true,
    createTimeOrder: body.sorting?.[0]?.sortOrder ?? 'asc',
    topics,
    waitMs,
    // A caller that hangs up while parked must not be left holding locks.
    signal: gone,
  });
  if (gone.aborted) return undefined;
  const topicOf = new Map(topics.map((t) => [t.topicName, t] as const));
  return camundaJson(
    200,
    tasks.map((t) => lockedTaskView(t, topicOf.get(t.topic) ?? {})),
  );
}

async function completeRoute(engine: Engine, id: string | undefined, raw: unknown): Promise<JsonAnswer> {
  const body = validateCamundaBody<{ workerId: string; variables?: Vars; localVariables?: Vars }>('complete-request', raw);
  const taskId = taskIdOf(id);
  const variables = readVariables({ ...body.variables, ...body.localVariables });
  return answerOf(
    await completeCamundaTask(engine, { taskId, workerId: body.workerId, variables }),
    taskId,
    body.workerId,
    'completed',
  );
}

async function failureRoute(engine: Engine, id: string | undefined, raw: unknown): Promise<JsonAnswer> {
  const body = validateCamundaBody<{
    workerId: string;
    errorMessage?: string | null;
    errorDetails?: string | null;
    retries?: number | null;
    retryTimeout?: number | null;
    variables?: Vars;
    localVariables?: Vars;
  }>('failure-request', raw);
  const taskId = taskIdOf(id);
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
  return answerOf(result, taskId, body.workerId, 'failed');
}

async function bpmnErrorRoute(engine: Engine, id: string | undefined, raw: unknown): Promise<JsonAnswer> {
  const body = validateCamundaBody<{ workerId: string; errorCode: string; errorMessage?: string | null; variables?: Vars }>(
    'bpmn-error-request',
    raw,
  );
  const taskId = taskIdOf(id);
  const variables = readVariables(body.variables);
  const result = await reportCamundaBpmnError(engine, {
    taskId,
    workerId: body.workerId,
    errorCode: body.errorCode,
    errorMessage: body.errorMessage ?? null,
    variables,
  });
  return answerOf(result, taskId, body.workerId, 'reported as a BPMN error');
}

async function extendLockRoute(engine: Engine, id: string | undefined, raw: unknown): Promise<JsonAnswer> {
  const body = validateCamundaBody<{ workerId: string; newDuration: number }>('extend-lock-request', raw);
  const taskId = taskIdOf(id);
  return answerOf(
    await extendCamundaLock(engine, { taskId, workerId: body.workerId, lockDurationMs: body.newDuration }),
    taskId,
    body.workerId,
    'extended',
  );
}

async function lockRoute(engine: Engine, id: string | undefined, raw: unknown): Promise<JsonAnswer> {
  const body = validateCamundaBody<{ workerId: string; lockDuration: number }>('lock-request', raw);
  const taskId = taskIdOf(id);
  return answerOf(
    await lockCamundaTask(engine, { taskId, workerId: body.workerId, lockDurationMs: body.lockDuration }),
    taskId,
    body.workerId,
    'locked',
  );
}

async function unlockRoute(engine: Engine, id: string | undefined): Promise<JsonAnswer> {
  const taskId = taskIdOf(id);
  return answerOf(await unlockCamundaTask(engine, taskId), taskId, '', 'unlocked');
}

export type CamundaTaskCall = 'complete' | 'failure' | 'bpmnError' | 'extendLock' | 'lock' | 'unlock';

/** POST /engine-rest/external-task/:id/<call>, by call. */
export const CAMUNDA_TASK_CALL_ROUTES: Record<
  CamundaTaskCall,
  (engine: Engine, id: string | undefined, raw: unknown) => Promise<JsonAnswer>
> = {
  complete: completeRoute,
  failure: failureRoute,
  bpmnError: bpmnErrorRoute,
  extendLock: extendLockRoute,
  lock: lockRoute,
  unlock: unlockRoute,
};

export function externalTaskRouter(engine: Engine, parkedPolls: ParkedPolls): Router {
  const router = Router();

  router.post('/fetchAndLock', async (req, res) => {
    const answer = await camundaFetchRoute(engine, parkedPolls, req.body, abortedByHangUp(res));
    if (answer) sendAnswer(res, answer);
  });

  const call =
    (route: (typeof CAMUNDA_TASK_CALL_ROUTES)[CamundaTaskCall]): RequestHandler<{ id: string }> =>
    async (req, res) => {
      sendAnswer(res, await route(engine, req.params.id, req.body));
    };
  router.post('/:id/complete', call(CAMUNDA_TASK_CALL_ROUTES.complete));
  router.post('/:id/failure', call(CAMUNDA_TASK_CALL_ROUTES.failure));
  router.post('/:id/bpmnError', call(CAMUNDA_TASK_CALL_ROUTES.bpmnError));
  router.post('/:id/extendLock', call(CAMUNDA_TASK_CALL_ROUTES.extendLock));
  router.post('/:id/lock', call(CAMUNDA_TASK_CALL_ROUTES.lock));
  router.post('/:id/unlock', call(CAMUNDA_TASK_CALL_ROUTES.unlock));

  router.put('/:id/retries', async (req, res) => {
    const body = validateCamundaBody<{ retries: number }>('retries-request', req.body);
    const taskId = taskIdOf(req.params.id);
    sendAnswer(res, answerOf(await setCamundaRetries(engine, taskId, body.retries), taskId, '', 'given retries'));
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

function answerOf(result: CamundaCallResult, taskId: string, workerId: string, verb: string): JsonAnswer {
  if (result.ok) return { status: 204 };
  if (result.reason === 'not_found') throw missing(taskId);
  const holder =
    result.task?.state === 'locked'
      ? `It is locked by worker '${result.task.worker_id ?? ''}'`
      : `It is not locked (state ${result.task?.state ?? 'unknown'})`;
  throw new CamundaError(400, 'RestException', `External Task ${taskId} cannot be ${verb} by worker '${workerId}'. ${holder}.`);
}
