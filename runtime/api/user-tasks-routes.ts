// /api/user-tasks: the tasklist's API. A person token acts as the person it names, with the
// groups the server gives it; an admin token (or anyone on a server without tokens) acts for
// the person named in `userId`, as Camunda's task API does, and an admin may claim any task.
import { readCursor, writeCursor } from './cursors.ts';
import { Router, type Response } from 'express';
import type { Engine } from '../engine/context.ts';
import {
  assignUserTask,
  claimUserTask,
  completeUserTask,
  readUserTask,
  throwUserTaskError,
  throwUserTaskEscalation,
  unclaimUserTask,
  withStep,
  type UserTaskActor,
} from '../engine/user-tasks.ts';
import type { Variables } from '../model/effects.ts';
import type { Caller } from '../security/auth.ts';
import { Role } from '../security/roles.ts';
import { withPlannerDefaults } from '../store/db.ts';
import { listUserTasks } from '../store/user-tasks.ts';
import { BatonError } from '../shared/errors.ts';
import { requireUuid, validateBody, validateQuery } from '../shared/validate.ts';
import { userTaskView } from './views.ts';

interface ListQuery {
  assignee?: string;
  candidateUser?: string;
  candidateGroups?: string;
  unassigned?: boolean;
  instanceId?: string;
  definitionKey?: string;
  dueBefore?: string;
  dueAfter?: string;
  cursor?: string;
  limit?: number;
}

export function userTasksRouter(engine: Engine): Router {
  const router = Router();

  router.get('/', async (req, res) => {
    const q = validateQuery<ListQuery>('list-user-tasks-query', req.query);
    const limit = q.limit ?? 100;
    const rows = await withPlannerDefaults(engine.pool, (db) =>
      listUserTasks(db, {
        ...(q.assignee ? { assignee: q.assignee } : {}),
        ...(q.candidateUser
          ? { candidateUser: q.candidateUser, candidateGroups: groupsFor(q.candidateUser, q.candidateGroups, res) }
          : {}),
        ...(q.instanceId ? { instanceId: q.instanceId } : {}),
        ...(q.definitionKey ? { definitionKey: q.definitionKey } : {}),
        ...(q.unassigned ? { unassigned: true } : {}),
        ...(q.dueBefore ? { dueBefore: q.dueBefore } : {}),
        ...(q.dueAfter ? { dueAfter: q.dueAfter } : {}),
        ...(q.cursor ? { after: readCursor(q.cursor) } : {}),
        limit: limit + 1,
      }),
    );
    const page = rows.slice(0, limit);
    const last = page.at(-1);
    // The step's name from the deployed plan, which is cached: no query once a definition was read.
    const items = await Promise.all(page.map(async (row) => userTaskView(row, (await withStep(engine, row)).step.name)));
    res.json({
      items,
      ...(rows.length > limit && last ? { nextCursor: writeCursor(last.created_us, last.id) } : {}),
    });
  });

  router.get('/:id', async (req, res) => {
    const { task, step, spec, raises } = await readUserTask(engine, requireUuid(req.params.id, 'user task'));
    res.json(userTaskView(task, step.name, spec, raises));
  });

  router.post('/:id/claim', async (req, res) => {
    const id = requireUuid(req.params.id, 'user task');
    const actor = actorOf(validateBody<ActorBody>('user-task-claim-request', req.body ?? {}), res);
    res.json(userTaskView(await claimUserTask(engine, id, actor)));
  });

  router.post('/:id/unclaim', async (req, res) => {
    const id = requireUuid(req.params.id, 'user task');
    const actor = actorOf(validateBody<ActorBody>('user-task-claim-request', req.body ?? {}), res);
    res.json(userTaskView(await unclaimUserTask(engine, id, actor)));
  });

  router.post('/:id/assignee', async (req, res) => {
    const id = requireUuid(req.params.id, 'user task');
    const body = validateBody<{ assignee: string | null }>('user-task-assign-request', req.body ?? {});
    res.json(userTaskView(await assignUserTask(engine, id, body.assignee, callerOf(res)?.name)));
  });

  router.post('/:id/complete', async (req, res) => {
    const id = requireUuid(req.params.id, 'user task');
    const body = validateBody<{ userId?: string; variables?: Variables }>('user-task-complete-request', req.body ?? {});
    const done = await completeUserTask(
      engine,
      id,
      actorOf(body.userId ? { userId: body.userId } : {}, res),
      body.variables ?? {},
    );
    res.json({ id, status: 'completed', instanceId: done.instanceId });
  });

  router.post('/:id/bpmn-error', async (req, res) => {
    const id = requireUuid(req.params.id, 'user task');
    const body = validateBody<{ userId?: string; errorCode: string; errorMessage?: string; variables?: Variables }>(
      'user-task-bpmn-error-request',
      req.body ?? {},
    );
    const actor = actorOf(body.userId ? { userId: body.userId } : {}, res);
    const done = await throwUserTaskError(engine, id, actor, {
      errorCode: body.errorCode,
      ...(body.errorMessage ? { errorMessage: body.errorMessage } : {}),
      variables: body.variables ?? {},
    });
    res.json({ id, status: 'errored', instanceId: done.instanceId });
  });

  router.post('/:id/bpmn-escalation', async (req, res) => {
    const id = requireUuid(req.params.id, 'user task');
    const body = validateBody<{ userId?: string; escalationCode: string; variables?: Variables }>(
      'user-task-bpmn-escalation-request',
      req.body ?? {},
    );
    const actor = actorOf(body.userId ? { userId: body.userId } : {}, res);
    const done = await throwUserTaskEscalation(engine, id, actor, {
      escalationCode: body.escalationCode,
      variables: body.variables ?? {},
    });
    res.json({ id, status: 'escalated', instanceId: done.instanceId, caughtBy: done.caughtBy, taskOpen: done.taskOpen });
  });

  return router;
}

function callerOf(res: Response): Caller | undefined {
  return res.locals.caller as Caller | undefined;
}

interface ActorBody {
  userId?: string;
  groups?: string[];
}

/** Who acts: the person a person token names, or the one an admin (or an open server's caller) names. */
export function actorOf(body: ActorBody, res: Response): UserTaskActor {
  const caller = callerOf(res);
  if (caller?.role === Role.person) {
    if (body.userId !== undefined && body.userId !== caller.name)
      throw new BatonError(
        'forbidden',
        `This token acts as "${caller.name}" and may not act for "${body.userId}"; leave userId out or use an admin token`,
      );
    if (body.groups !== undefined)
      throw new BatonError('forbidden', `The groups of "${caller.name}" come from the server (BATON_GROUPS); leave groups out`);
    return { userId: caller.name, groups: [...caller.groups], caller: caller.name };
  }
  const userId = body.userId ?? caller?.name;
  if (!userId) throw new BatonError('validation', 'Invalid body: userId names the person who acts (a person token names itself)');
  return {
    userId,
    groups: body.groups ?? (userId === caller?.name ? [...caller.groups] : []),
    ...(caller ? { caller: caller.name, anyTask: caller.role === Role.admin } : {}),
  };
}

/** The groups a candidate query asks about: as named, else the caller's own when it asks about itself. */
function groupsFor(user: string, named: string | undefined, res: Response): string[] {
  const caller = callerOf(res);
  if (named !== undefined) return splitNames(named);
  return caller?.name === user ? [...caller.groups] : [];
}

function splitNames(text: string | undefined): string[] {
  return (text ?? '')
    .split(',')
    .map((n) => n.trim())
    .filter((n) => n !== '');
}
