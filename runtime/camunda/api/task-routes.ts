// /engine-rest/task: Camunda 7's task resource over Baton's user tasks, so that a Camunda
// tasklist client queries, claims, reads form variables and submits forms unchanged. Who acts:
// a person token acts as itself, claims only what it is a candidate for and completes only
// what it holds; an operator (an admin token, or anyone on a server without tokens) acts as
// Camunda's REST API does: claims for any user, completes whoever holds the task.
import { Router, type Response } from 'express';
import type { Engine } from '../../engine/context.ts';
import {
  assignUserTask,
  claimUserTask,
  readUserTask,
  throwUserTaskError,
  throwUserTaskEscalation,
  unclaimUserTask,
  withStep,
  type UserTaskActor,
} from '../../engine/user-tasks.ts';
import type { FormFieldSpec } from '../../compiler/plan.ts';
import type { Caller } from '../../security/auth.ts';
import type { GroupDirectory } from '../../security/people.ts';
import { Role } from '../../security/roles.ts';
import { BatonError } from '../../shared/errors.ts';
import { isUuid } from '../../shared/validate.ts';
import { withPlannerDefaults, type PoolClient } from '../../store/db.ts';
import type { UserTaskRow } from '../../store/user-tasks.ts';
import { completeCamundaUserTask } from '../engine/user-tasks.ts';
import { countCamundaUserTasks, listCamundaUserTasks } from '../store/user-task-queries.ts';
import { loadInstanceVariables, writeVariableTypes } from '../store/variables.ts';
import { CamundaError, invalidRequest, sendJson, sendNoContent } from './errors.ts';
import { bodyObject } from './query-params.ts';
import { readUserTaskQuery } from './user-task-query.ts';
import { validateCamundaBody } from './validate.ts';
import { readVariables, renderVariables, type WireVariable } from './variables.ts';
import { camundaUserTaskView } from './views.ts';

type Vars = Record<string, WireVariable> | null | undefined;

/** Camunda's types of camunda:formData field types. */
const FIELD_TYPES: Record<FormFieldSpec['type'], string> = {
  string: 'String',
  long: 'Long',
  boolean: 'Boolean',
  date: 'Date',
  enum: 'String',
};

export function taskRouter(engine: Engine, groups: GroupDirectory): Router {
  const router = Router();
  const groupsOf = (user: string) => groups.get(user) ?? [];

  const list = async (res: Response, input: Record<string, unknown>, from: 'query' | 'body', paging: Record<string, unknown>) => {
    const q = readUserTaskQuery(input, from, groupsOf, paging);
    const rows = await withPlannerDefaults(engine.pool, (db) => listCamundaUserTasks(db, q));
    sendJson(res, 200, await Promise.all(rows.map((row) => view(engine, row))));
  };
  const count = async (res: Response, input: Record<string, unknown>, from: 'query' | 'body') => {
    const q = readUserTaskQuery(input, from, groupsOf, {});
    sendJson(res, 200, { count: await withPlannerDefaults(engine.pool, (db) => countCamundaUserTasks(db, q)) });
  };
  router.get('/', (req, res) => list(res, req.query, 'query', req.query));
  router.post('/', (req, res) => list(res, bodyObject(req.body), 'body', req.query));
  router.get('/count', (req, res) => count(res, req.query, 'query'));
  router.post('/count', (req, res) => count(res, bodyObject(req.body), 'body'));

  router.get('/:id', async (req, res) => {
    const { task } = await read(engine, req.params.id);
    sendJson(res, 200, await view(engine, task));
  });

  router.get('/:id/form', async (req, res) => {
    const { spec } = await read(engine, req.params.id);
    sendJson(res, 200, { key: spec.formKey ?? null, contextPath: null, camundaFormRef: null });
  });

  // The form's fields with the instance's values (else their defaults); without camunda:formData, every variable.
  router.get('/:id/form-variables', async (req, res) => {
    const { task, spec } = await read(engine, req.params.id);
    const names = namesParam(req.query.variableNames);
    const instance = await loadInstanceVariables(engine.pool, task.instance_id);
    // An element of a multi-instance task sees its own variables over the instance's.
    const values = { ...instance?.variables, ...task.local_variables };
    const fields = spec.formFields;
    if (!fields) return sendJson(res, 200, renderVariables(values, instance?.types ?? [], names));
    const rendered = renderVariables(values, instance?.types ?? []);
    const out: Record<string, WireVariable> = {};
    for (const field of fields) {
      if (names && !names.includes(field.id)) continue;
      // The field's type, as Camunda converts the value to it; the instance's value, else the default.
      const current = rendered[field.id];
      out[field.id] = {
        type: FIELD_TYPES[field.type],
        value: current ? current.value : field.defaultValue === undefined ? null : defaultOf(field),
        valueInfo: {},
      };
    }
    sendJson(res, 200, out);
  });

  router.get('/:id/variables', async (req, res) => {
    const { task } = await read(engine, req.params.id);
    const instance = await loadInstanceVariables(engine.pool, task.instance_id);
    const values = { ...instance?.variables, ...task.local_variables };
    sendJson(res, 200, renderVariables(values, instance?.types ?? [], namesParam(req.query.variableNames)));
  });

  router.post('/:id/claim', async (req, res) => {
    const id = taskIdOf(req.params.id);
    const body = validateCamundaBody<{ userId: string | null }>('user-id-request', req.body);
    if (!body.userId) throw invalidRequest('userId names the user who claims the task');
    await claimed(() => claimUserTask(engine, id, actorFor(res, body.userId!, groupsOf)), id);
    sendNoContent(res);
  });

  router.post('/:id/unclaim', async (req, res) => {
    const id = taskIdOf(req.params.id);
    const caller = callerOf(res);
    if (caller?.role === Role.person) await inCamundaTerms(() => unclaimUserTask(engine, id, personActor(caller)), id);
    else await assignUserTask(engine, id, null, caller?.name);
    sendNoContent(res);
  });

  router.post('/:id/assignee', async (req, res) => {
    const id = taskIdOf(req.params.id);
    const body = validateCamundaBody<{ userId: string | null }>('user-id-request', req.body);
    const caller = callerOf(res);
    if (caller?.role === Role.person)
      throw new CamundaError(
        403,
        'AuthorizationException',
        `The user '${caller.name}' may not set the assignee of task ${id}: claim it, or ask an operator`,
      );
    await assignUserTask(engine, id, body.userId || null, caller?.name);
    sendNoContent(res);
  });

  const completion = (checkForm: boolean) =>
    async function complete(req: { params: { id: string }; body: unknown }, res: Response) {
      const id = taskIdOf(req.params.id);
      const body = validateCamundaBody<{ variables?: Vars; withVariablesInReturn?: boolean | null }>(
        'task-complete-request',
        req.body ?? {},
      );
      const variables = readVariables(body.variables);
      const transient = Object.keys(variables.transient);
      if (transient.length > 0)
        throw invalidRequest(`Baton does not support transient variables when completing a task: ${transient.join(', ')}`);
      const caller = callerOf(res);
      const person = caller?.role === Role.person;
      const actor = person ? personActor(caller) : operatorActor(caller);
      const after = await inCamundaTerms(
        () =>
          completeCamundaUserTask(engine, id, actor, variables, {
            checkForm,
            needsClaim: person,
            withVariablesInReturn: body.withVariablesInReturn === true,
          }),
        id,
      );
      if (body.withVariablesInReturn !== true || !after) return sendNoContent(res);
      sendJson(res, 200, renderVariables(after.variables, after.types));
    };
  /**
   * What bpmnError and bpmnEscalation share: the variables (transient ones refused), who acts
   * (a person on a task they hold, an operator on any), and their Camunda types kept alongside.
   */
  const raising = (res: Response, wire: Vars | undefined, what: string) => {
    const variables = readVariables(wire);
    if (Object.keys(variables.transient).length > 0)
      throw invalidRequest(`Baton does not support transient variables when ${what}`);
    const caller = callerOf(res);
    const person = caller?.role === Role.person;
    return {
      actor: person ? personActor(caller) : operatorActor(caller),
      values: variables.values,
      opts: {
        needsClaim: person,
        alongside: (tx: PoolClient, instanceId: string) => writeVariableTypes(tx, instanceId, variables.types),
      },
    };
  };

  router.post('/:id/bpmnError', async (req, res) => {
    const id = taskIdOf(req.params.id);
    const body = validateCamundaBody<{ errorCode: string; errorMessage?: string | null; variables?: Vars }>(
      'task-bpmn-error-request',
      req.body,
    );
    const { actor, values, opts } = raising(res, body.variables, 'reporting an error');
    const error = {
      errorCode: body.errorCode,
      ...(body.errorMessage ? { errorMessage: body.errorMessage } : {}),
      variables: values,
    };
    await inCamundaTerms(() => throwUserTaskError(engine, id, actor, error, opts), id);
    sendNoContent(res);
  });

  router.post('/:id/bpmnEscalation', async (req, res) => {
    const id = taskIdOf(req.params.id);
    const body = validateCamundaBody<{ escalationCode: string; variables?: Vars }>('task-bpmn-escalation-request', req.body);
    const { actor, values, opts } = raising(res, body.variables, 'raising an escalation');
    const escalation = { escalationCode: body.escalationCode, variables: values };
    await inCamundaTerms(() => throwUserTaskEscalation(engine, id, actor, escalation, opts), id);
    sendNoContent(res);
  });

  router.post('/:id/complete', completion(false));
  router.post('/:id/submit-form', completion(true));

  return router;
}

async function view(engine: Engine, row: UserTaskRow) {
  const { spec } = await withStep(engine, row);
  return camundaUserTaskView(row, spec.formKey ?? null);
}

async function read(engine: Engine, rawId: string) {
  const id = taskIdOf(rawId);
  try {
    return await readUserTask(engine, id);
  } catch (err) {
    if (err instanceof BatonError && err.code === 'not_found')
      throw new CamundaError(404, 'InvalidRequestException', `No matching task with id ${id}`);
    throw err;
  }
}

/** A claim on a task someone else holds, as Camunda names it (with 409, not Camunda's 500: the server did not fail). */
async function claimed<T>(act: () => Promise<T>, id: string): Promise<T> {
  try {
    return await act();
  } catch (err) {
    if (err instanceof BatonError && err.code === 'conflict')
      throw new CamundaError(
        409,
        'TaskAlreadyClaimedException',
        `Task '${id}' is already claimed by someone else. ${err.message}`,
      );
    throw err;
  }
}

/** A form that refuses the variables answers 400 naming the fields; a task held by someone else 409. */
async function inCamundaTerms<T>(act: () => Promise<T>, id: string): Promise<T> {
  try {
    return await act();
  } catch (err) {
    if (err instanceof BatonError && err.code === 'validation')
      throw new CamundaError(400, 'RestException', `Cannot submit task form ${id}: ${err.message}`, {
        ...(err.details ? { details: err.details } : {}),
      });
    if (err instanceof BatonError && err.code === 'conflict') throw new CamundaError(409, 'RestException', err.message);
    throw err;
  }
}

function callerOf(res: Response): Caller | undefined {
  return res.locals.caller as Caller | undefined;
}

function personActor(caller: Caller): UserTaskActor {
  return { userId: caller.name, groups: [...caller.groups], caller: caller.name };
}

function operatorActor(caller: Caller | undefined): UserTaskActor {
  return { userId: caller?.name ?? '', groups: [], anyTask: true, ...(caller ? { caller: caller.name } : {}) };
}

/** The claimer: a person only as themselves (a candidate check follows); an operator for anyone, as Camunda's claim is. */
function actorFor(res: Response, userId: string, groupsOf: (user: string) => readonly string[]): UserTaskActor {
  const caller = callerOf(res);
  if (caller?.role === Role.person) {
    if (userId !== caller.name)
      throw new CamundaError(
        403,
        'AuthorizationException',
        `The user '${caller.name}' may not claim a task for '${userId}'; claim it as '${caller.name}'`,
      );
    return personActor(caller);
  }
  return { userId, groups: [...groupsOf(userId)], anyTask: true, ...(caller ? { caller: caller.name } : {}) };
}

function defaultOf(field: FormFieldSpec): unknown {
  const raw = field.defaultValue!;
  if (field.type === 'long' && /^-?\d+$/.test(raw)) return Number(raw);
  if (field.type === 'boolean') return raw === 'true';
  return raw;
}

function namesParam(value: unknown): string[] | null {
  if (value === undefined) return null;
  if (typeof value !== 'string') throw invalidRequest('variableNames must be comma-separated names');
  return value.split(',').map((n) => n.trim());
}

function taskIdOf(raw: string): string {
  if (!isUuid(raw)) throw new CamundaError(404, 'InvalidRequestException', `No matching task with id ${raw}`);
  return raw.toLowerCase();
}
