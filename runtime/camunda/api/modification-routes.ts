// /engine-rest/process-instance/{id}/modification and /activity-instances: Camunda 7's
// modification on Baton's (engine/modification.ts), and the tree of an instance's open activity
// instances. Baton starts an element before it and cancels an open step; every other Camunda
// instruction or option is refused with 400 naming it, nothing changed.
import { Router } from 'express';
import type { Engine } from '../../engine/context.ts';
import { modifyInstance, type ModificationInstruction } from '../../engine/modification.ts';
import type { Caller } from '../../security/auth.ts';
import { isUuid } from '../../shared/validate.ts';
import { listCamundaActivityInstances, type CamundaActivityInstanceRow } from '../store/history-queries.ts';
import { listCamundaIncidents, listCamundaInstances } from '../store/process-queries.ts';
import { CamundaError, invalidRequest, notFound, sendJson, sendNoContent } from './errors.ts';
import { validateCamundaBody } from './validate.ts';

interface CamundaModificationInstruction {
  type: string;
  activityId?: string | null;
  transitionId?: string | null;
  activityInstanceId?: string | null;
  transitionInstanceId?: string | null;
  ancestorActivityInstanceId?: string | null;
  variables?: Record<string, unknown> | null;
  cancelCurrentActiveActivityInstances?: boolean | null;
}

interface ModificationBody {
  instructions: CamundaModificationInstruction[];
  skipCustomListeners?: boolean | null;
  skipIoMappings?: boolean | null;
  annotation?: string | null;
}

/** Most open activity instances one tree lists. */
const MAX_OPEN_ACTIVITIES = 10_000;

export function processInstanceModificationRouter(engine: Engine): Router {
  const router = Router();

  router.post('/:id/modification', async (req, res) => {
    const id = String(req.params.id);
    const body = validateCamundaBody<ModificationBody>('modification-request', req.body ?? {});
    // Baton's start runs the element as its flow would: its listeners and io mappings run.
    if (body.skipCustomListeners)
      throw invalidRequest(
        'skipCustomListeners: true is not supported: Baton runs the listeners of the elements it starts and cancels',
      );
    if (body.skipIoMappings)
      throw invalidRequest('skipIoMappings: true is not supported: Baton runs the io mappings of the elements it starts');
    const instructions = body.instructions.map((i, n) => instructionOf(id, i, n));
    if (!isUuid(id)) throw notFound(`Process instance with id ${id} does not exist`);
    for (const [n, i] of body.instructions.entries())
      if (i.type === 'cancel' && !i.activityId && i.activityInstanceId) await checkOpenHere(engine, id, i.activityInstanceId, n);
    const r = await modifyInstance(engine, {
      instanceId: id,
      instructions,
      ...(body.annotation ? { annotation: body.annotation } : {}),
      ...(callerName(res.locals) !== undefined ? { by: callerName(res.locals) } : {}),
    });
    if (r.ok) return sendNoContent(res);
    switch (r.reason) {
      case 'not_found':
        throw notFound(`Process instance with id ${id} does not exist`);
      case 'not_running':
        throw new CamundaError(400, 'ProcessInstanceModificationException', `Process instance ${id} is ${r.status}`);
      case 'suspended':
        throw new CamundaError(
          400,
          'ProcessInstanceModificationException',
          `Process instance ${id} is suspended: activate it, then modify`,
        );
      case 'invalid':
        throw new CamundaError(
          400,
          'ProcessInstanceModificationException',
          r.problems.map((p) => `${p.elementId}: ${p.message}`).join('; '),
          { problems: r.problems },
        );
    }
  });

  router.get('/:id/activity-instances', async (req, res) => {
    const id = String(req.params.id);
    const [instance] = isUuid(id)
      ? await listCamundaInstances(engine.pool, { processInstanceIds: [id], sorting: [], firstResult: 0, maxResults: 1 })
      : [];
    if (!instance) throw notFound(`Process instance with id ${id} does not exist`);
    const [open, incidents] = await Promise.all([
      listCamundaActivityInstances(engine.pool, {
        processInstanceId: id,
        unfinished: true,
        sorting: [],
        firstResult: 0,
        maxResults: MAX_OPEN_ACTIVITIES,
      }),
      listCamundaIncidents(engine.pool, { processInstanceId: id, sorting: [], firstResult: 0, maxResults: MAX_OPEN_ACTIVITIES }),
    ]);
    const incidentsOf = (stepId: string) =>
      incidents.filter((x) => x.step_id === stepId).map((x) => ({ id: x.id, activityId: x.step_id }));
    const node = (a: CamundaActivityInstanceRow): ActivityInstanceNode => {
      const own = incidentsOf(a.step_id);
      return {
        id: a.id,
        parentActivityInstanceId: a.scope ? `${a.scope}:${a.instance_id}` : a.instance_id,
        activityId: a.step_id,
        activityType: a.activity_type,
        processInstanceId: a.instance_id,
        processDefinitionId: a.definition_id,
        childActivityInstances: open.filter((c) => c.scope === a.step_id).map(node),
        childTransitionInstances: [],
        executionIds: [a.instance_id],
        activityName: a.activity_name,
        name: a.activity_name,
        incidentIds: own.map((x) => x.id),
        incidents: own,
      };
    };
    sendJson(res, 200, {
      id: instance.id,
      parentActivityInstanceId: null,
      activityId: instance.definition_key,
      activityType: 'processDefinition',
      processInstanceId: instance.id,
      processDefinitionId: instance.definition_id,
      childActivityInstances: open.filter((a) => a.scope === null).map(node),
      childTransitionInstances: [],
      executionIds: [instance.id],
      activityName: null,
      name: null,
      incidentIds: [],
      incidents: [],
    });
  });

  return router;
}

interface ActivityInstanceNode {
  id: string;
  parentActivityInstanceId: string;
  activityId: string;
  activityType: string;
  processInstanceId: string;
  processDefinitionId: string;
  childActivityInstances: ActivityInstanceNode[];
  childTransitionInstances: never[];
  executionIds: string[];
  activityName: string | null;
  name: string | null;
  incidentIds: string[];
  incidents: { id: string; activityId: string }[];
}

/** One Camunda instruction as Baton's, or a 400 naming what Baton does not do. */
function instructionOf(instanceId: string, i: CamundaModificationInstruction, n: number): ModificationInstruction {
  const at = `instructions[${n}] (${i.type})`;
  if (i.variables && Object.keys(i.variables).length > 0)
    throw invalidRequest(
      `${at}: variables on an instruction are not supported: set them with POST /process-instance/${instanceId}/variables first`,
    );
  if (i.transitionInstanceId)
    throw invalidRequest(`${at}: transitionInstanceId is not supported: Baton has no transition instances`);
  if (i.ancestorActivityInstanceId && i.ancestorActivityInstanceId !== instanceId)
    throw invalidRequest(`${at}: ancestorActivityInstanceId is not supported: Baton starts an element in its one running scope`);
  switch (i.type) {
    case 'startBeforeActivity':
      if (!i.activityId) throw invalidRequest(`${at}: activityId is required`);
      return { type: 'startBefore', elementId: i.activityId };
    case 'cancel': {
      const elementId = i.activityId ?? activityOfInstance(at, instanceId, i.activityInstanceId);
      return { type: 'cancel', elementId };
    }
    case 'startAfterActivity':
    case 'startTransition':
      throw invalidRequest(
        `${at}: ${i.type} is not supported: Baton starts an element before it (startBeforeActivity); start the element the flow leads to instead`,
      );
    default:
      throw invalidRequest(`${at}: unknown instruction type ${i.type}`);
  }
}

/** The element of an activity instance id `<activityId>:<taskId or instanceId>` (as /activity-instances answers it). */
function activityOfInstance(at: string, instanceId: string, activityInstanceId: string | null | undefined): string {
  if (!activityInstanceId) throw invalidRequest(`${at}: give activityId or activityInstanceId`);
  const split = activityInstanceId.lastIndexOf(':');
  if (split <= 0) throw invalidRequest(`${at}: activity instance ${activityInstanceId} is not one of instance ${instanceId}`);
  return activityInstanceId.slice(0, split);
}

/** A canceled activity instance must be open in this instance: its id's activity alone could name another instance's. */
async function checkOpenHere(engine: Engine, instanceId: string, activityInstanceId: string, n: number): Promise<void> {
  const [open] = await listCamundaActivityInstances(engine.pool, {
    activityInstanceId,
    processInstanceId: instanceId,
    unfinished: true,
    sorting: [],
    firstResult: 0,
    maxResults: 1,
  });
  if (!open)
    throw invalidRequest(
      `instructions[${n}] (cancel): activity instance ${activityInstanceId} is not open in process instance ${instanceId}`,
    );
}

function callerName(locals: Record<string, unknown>): string | undefined {
  return (locals.caller as Caller | undefined)?.name;
}
