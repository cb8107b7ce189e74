import { Router, type Response } from 'express';
import type { Engine } from '../engine/context.ts';
import { cancelInstance, startInstance, type StartInstanceRequest } from '../engine/instances.ts';
import { editVariables, type EditVariablesRequest } from '../engine/instance-variables.ts';
import { REPLAYABLE, replayInstance } from '../engine/replay.ts';
import { resumeInstance, suspendInstance, type SuspensionResult } from '../engine/suspension.ts';
import { migrateInstance, type MigrateRequest, type MigrateResult } from '../engine/migration.ts';
import { modifyInstance, type ModifyRequest, type ModifyResult } from '../engine/modification.ts';
import type { Caller } from '../security/auth.ts';
import { withPlannerDefaults } from '../store/db.ts';
import {
  countInstances,
  getInstanceDetail,
  instanceFilterOf,
  HISTORY_SETTLE_MS,
  listHistory,
  listInstances,
  type InstanceFilter,
  type InstanceSearch,
} from '../store/queries.ts';
import { BatonError } from '../shared/errors.ts';
import { sendAnswer } from './answer.ts';
import { isUuid, requireUuid, validateBody, validateQuery } from '../shared/validate.ts';
import { eventView, instanceDetailView, instanceSummaryView } from './views.ts';

type FilterQuery = InstanceSearch;

interface ListQuery extends FilterQuery {
  limit?: number;
  cursor?: string;
}

/** The store's filter from the query, without the paging fields. */
function filterOf(q: FilterQuery): InstanceFilter {
  const { limit: _limit, cursor: _cursor, ...search } = q as ListQuery;
  return instanceFilterOf(search);
}

export function instancesRouter(engine: Engine): Router {
  const router = Router();

  router.post('/', async (req, res) => {
    const body = validateBody<StartInstanceRequest>('start-instance-request', req.body);
    const result = await startInstance(engine, body);
    if (!result.ok) {
      const which = body.version ? `version ${body.version} of "${body.definitionKey}"` : `"${body.definitionKey}"`;
      throw new BatonError('not_found', `No deployed definition ${which}`);
    }
    sendAnswer(res, { status: result.created ? 201 : 200, body: instanceSummaryView(result.instance) });
  });

  router.get('/', async (req, res) => {
    const q = validateQuery<ListQuery>('list-instances-query', req.query);
    const limit = q.limit ?? 50;
    const items = await withPlannerDefaults(engine.pool, (db) =>
      listInstances(db, {
        ...filterOf(q),
        ...(q.cursor ? { after: decodeCursor(q.cursor) } : {}),
        limit,
      }),
    );
    const last = items[items.length - 1];
    res.json({ items: items.map(instanceSummaryView), nextCursor: items.length === limit && last ? encodeCursor(last) : null });
  });

  router.get('/count', async (req, res) => {
    // A query string names the ids separated by commas; a batch's JSON filter as a list.
    const ids = req.query.instanceIds;
    const query = typeof ids === 'string' ? { ...req.query, instanceIds: ids.split(',') } : req.query;
    const q = validateQuery<FilterQuery>('count-instances-query', query);
    res.json(await withPlannerDefaults(engine.pool, (db) => countInstances(db, filterOf(q))));
  });

  router.get('/:id', async (req, res) => {
    const detail = await getInstanceDetail(engine.pool, requireUuid(req.params.id, 'instance'));
    if (!detail) throw new BatonError('not_found', `No instance with id "${req.params.id}"`);
    res.json(instanceDetailView(detail));
  });

  router.get('/:id/history', async (req, res) => {
    const id = requireUuid(req.params.id, 'instance');
    const q = validateQuery<{ afterSeq?: number; limit?: number }>('history-query', req.query);
    const items = await listHistory(engine.pool, id, q.afterSeq ?? 0, q.limit ?? 1000);
    if (items === 'busy') {
      throw new BatonError(
        'unavailable',
        `The history of instance ${id} cannot be read yet: transactions writing it stayed open for ${HISTORY_SETTLE_MS} ms; read it again`,
      );
    }
    if (items.length === 0 && !(await getInstanceDetail(engine.pool, id))) {
      throw new BatonError('not_found', `No instance with id "${id}"`);
    }
    res.json({ items: items.map(eventView) });
  });

  router.post('/:id/cancel', async (req, res) => {
    const result = await cancelInstance(engine, requireUuid(req.params.id, 'instance'), callerName(res));
    if (!result.ok && result.reason === 'not_found') throw new BatonError('not_found', `No instance with id "${req.params.id}"`);
    if (!result.ok && result.reason === 'called')
      throw new BatonError(
        'conflict',
        `Instance ${req.params.id} was started by call activity ${result.parentStepId} of instance ${result.parentInstanceId}: cancel that instance, and its cancel ends this one`,
        { parentInstanceId: result.parentInstanceId, parentStepId: result.parentStepId },
      );
    if (!result.ok)
      throw new BatonError('conflict', `Instance ${req.params.id} already ended (${result.status ?? ''}); nothing to cancel`, {
        status: result.status,
      });
    res.json({ id: req.params.id, status: result.status });
  });

  router.patch('/:id/variables', async (req, res) => {
    const instanceId = requireUuid(req.params.id, 'instance');
    const body = validateBody<Omit<EditVariablesRequest, 'instanceId' | 'by'>>('edit-variables-request', req.body ?? {});
    const by = callerName(res);
    const result = await editVariables(engine, { ...body, instanceId, ...(by ? { by } : {}) });
    if (!result.ok && result.reason === 'not_found') throw new BatonError('not_found', `No instance with id "${instanceId}"`);
    if (!result.ok && result.reason === 'stale')
      throw new BatonError(
        'conflict',
        `Instance ${instanceId} changed meanwhile: it is at revision ${result.revision}, the edit was made on revision ${body.revision}; read it again and edit that`,
        { revision: result.revision },
      );
    if (!result.ok && result.reason === 'no_scope')
      throw new BatonError('conflict', `Instance ${instanceId}: ${result.message}`, { scope: body.scope });
    if (!result.ok)
      throw new BatonError(
        'conflict',
        `Instance ${instanceId} already ended (${result.status}); its variables stay as they were`,
        {
          status: result.status,
        },
      );
    res.json({
      id: instanceId,
      revision: result.revision,
      status: result.status,
      ...(body.scope !== undefined ? { scope: body.scope } : {}),
      variables: result.variables,
    });
  });

  // Suspend and resume answer 200 also when there was nothing to change (`changed: false`): a retried call is harmless.
  for (const [action, run] of [
    ['suspend', suspendInstance],
    ['resume', resumeInstance],
  ] as const) {
    router.post(`/:id/${action}`, async (req, res) => {
      const instanceId = requireUuid(req.params.id, 'instance');
      const by = callerName(res);
      res.json(suspensionAnswer(instanceId, action, await run(engine, { instanceId, ...(by ? { by } : {}) })));
    });
  }

  router.post('/:id/migrate', async (req, res) => {
    const instanceId = requireUuid(req.params.id, 'instance');
    const body = validateBody<Omit<MigrateRequest, 'instanceId' | 'by'>>('migrate-instance-request', req.body ?? {});
    const by = callerName(res);
    res.json(migrationAnswer(instanceId, await migrateInstance(engine, { ...body, instanceId, ...(by ? { by } : {}) })));
  });

  router.post('/:id/modify', async (req, res) => {
    const instanceId = requireUuid(req.params.id, 'instance');
    const body = validateBody<Omit<ModifyRequest, 'instanceId' | 'by'>>('modify-instance-request', req.body ?? {});
    const by = callerName(res);
    res.json(modificationAnswer(instanceId, await modifyInstance(engine, { ...body, instanceId, ...(by ? { by } : {}) })));
  });

  router.post('/:id/replay', async (req, res) => {
    const result = await replayInstance(engine, requireUuid(req.params.id, 'instance'), callerName(res));
    if (!result.ok && result.reason === 'not_found') throw new BatonError('not_found', `No instance with id "${req.params.id}"`);
    if (!result.ok && result.reason === 'suspended')
      throw new BatonError('conflict', `Instance ${req.params.id} is suspended; resume it, then replay`, { suspended: true });
    if (!result.ok) {
      throw new BatonError(
        'conflict',
        `Instance ${req.params.id} is ${result.status}; only an instance in ${REPLAYABLE.join(', ')} can be replayed`,
        { status: result.status },
      );
    }
    res.json({ instanceId: req.params.id, generation: result.generation, status: result.status });
  });

  return router;
}

function modificationAnswer(instanceId: string, result: ModifyResult) {
  if (result.ok) {
    const { status, dryRun, started, canceled } = result;
    return { id: instanceId, status, dryRun, started, canceled };
  }
  switch (result.reason) {
    case 'not_found':
      throw new BatonError('not_found', `No instance with id "${instanceId}"`);
    case 'not_running':
      throw new BatonError(
        'conflict',
        `Instance ${instanceId} is ${result.status}; only a running instance or one in an incident is modified`,
        {
          status: result.status,
        },
      );
    case 'suspended':
      throw new BatonError('conflict', `Instance ${instanceId} is suspended; resume it, then modify it`, { suspended: true });
    case 'invalid':
      return refusedFor(instanceId, 'cannot be modified', result.problems);
  }
}

/** A refusal naming each element's problem: the first in the message, all in details. */
function refusedFor(instanceId: string, what: string, problems: { elementId: string; message: string }[]): never {
  const [first, ...rest] = problems;
  throw new BatonError(
    'validation',
    `Instance ${instanceId} ${what}: ${first?.message ?? ''}${rest.length > 0 ? ` (and ${rest.length} more in details)` : ''}`,
    { problems },
  );
}

function migrationAnswer(instanceId: string, result: MigrateResult) {
  if (result.ok) return { id: instanceId, status: result.status, dryRun: result.dryRun, ...result.summary };
  switch (result.reason) {
    case 'not_found':
      throw new BatonError('not_found', `No instance with id "${instanceId}"`);
    case 'no_version':
      throw new BatonError('not_found', `No version ${result.version} of definition "${result.key}" to migrate to`);
    case 'same_version':
      throw new BatonError('conflict', `Instance ${instanceId} already runs version ${result.version}`);
    case 'not_running':
      throw new BatonError(
        'conflict',
        `Instance ${instanceId} is ${result.status}; only a running instance or one in an incident moves`,
        {
          status: result.status,
        },
      );
    case 'suspended':
      throw new BatonError('conflict', `Instance ${instanceId} is suspended; resume it, then migrate`, { suspended: true });
    case 'invalid':
      return refusedFor(instanceId, 'cannot move', result.problems);
  }
}

/** The caller's token name, which the history records with an operator's action. */
function callerName(res: Response): string | undefined {
  return (res.locals.caller as Caller | undefined)?.name;
}

function suspensionAnswer(instanceId: string, action: 'suspend' | 'resume', result: SuspensionResult) {
  if (!result.ok && result.reason === 'not_found') throw new BatonError('not_found', `No instance with id "${instanceId}"`);
  if (!result.ok)
    throw new BatonError('conflict', `Instance ${instanceId} already ended (${result.status}); there is nothing to ${action}`, {
      status: result.status,
    });
  const { changed, status, suspended, revision } = result;
  return { id: instanceId, status, suspended, changed, revision };
}

function encodeCursor(row: { cursor_at: string; id: string }): string {
  return Buffer.from(`${row.cursor_at}|${row.id}`).toString('base64url');
}

function decodeCursor(cursor: string): { createdAt: string; id: string } {
  const [createdAt, id] = Buffer.from(cursor, 'base64url').toString().split('|');
  if (!createdAt || !id || Number.isNaN(Date.parse(createdAt)) || !isUuid(id)) {
    throw new BatonError('validation', 'Invalid cursor: pass nextCursor from the previous page');
  }
  return { createdAt, id };
}
