// POST /engine-rest/message, /engine-rest/signal and /engine-rest/condition on the engine's
// message and signal waits and its conditional start events.
// Messages correlate as Camunda 7 correlates them (camunda/engine/messages.ts): at once or
// not at all, nothing is kept in Baton's inbox for a later catch (the native /api/messages
// keeps them).
import { Router } from 'express';
import type { Engine } from '../../engine/context.ts';
import { broadcastSignal } from '../../engine/waits.ts';
import { startOnConditions } from '../../engine/event-starts.ts';
import { writeVariableTypes } from '../store/variables.ts';
import { correlateCamundaMessage, type CamundaCorrelationResult, type Correlation } from '../engine/messages.ts';
import type { CorrelationKey } from '../store/correlations.ts';
import { CamundaError, invalidRequest, sendJson, sendNoContent } from './errors.ts';
import { validateCamundaBody } from './validate.ts';
import { readVariable, readVariables, renderVariables, type WireVariable } from './variables.ts';
import { processInstanceView } from './views.ts';

type Vars = Record<string, WireVariable> | null | undefined;

interface MessageBody {
  messageName: string;
  businessKey?: string | null;
  processInstanceId?: string | null;
  tenantId?: string | null;
  withoutTenantId?: boolean | null;
  correlationKeys?: Vars;
  localCorrelationKeys?: Vars;
  processVariables?: Vars;
  processVariablesLocal?: Vars;
  processVariablesToTriggeredScope?: Vars;
  all?: boolean | null;
  resultEnabled?: boolean | null;
  variablesInResultEnabled?: boolean | null;
}

// Baton has no variables local to the execution a message reaches: these fields are refused
// when they hold anything, never ignored (an empty map means nothing in Camunda either).
const LOCAL_FIELDS = ['localCorrelationKeys', 'processVariablesLocal', 'processVariablesToTriggeredScope'] as const;

// Camunda queries primitive values only ("Object values cannot be used to query").
const UNQUERYABLE_TYPES = new Set(['Json', 'Object', 'Bytes', 'File']);

export function messageRouter(engine: Engine): Router {
  const router = Router();
  router.post('/', async (req, res) => {
    const body = validateCamundaBody<MessageBody>('message-request', req.body);
    if (body.tenantId != null && body.withoutTenantId)
      throw invalidRequest("Parameter 'tenantId' cannot be used together with parameter 'withoutTenantId'.");
    if (body.variablesInResultEnabled && !body.resultEnabled)
      throw invalidRequest("Parameter 'variablesInResultEnabled' cannot be used without 'resultEnabled' set to true.");
    for (const field of LOCAL_FIELDS)
      if (Object.keys(body[field] ?? {}).length > 0)
        throw invalidRequest(
          `Baton does not support '${field}': it keeps no variables local to the execution a message reaches (send the values in processVariables and correlationKeys instead)`,
        );
    const correlationKeys = readCorrelationKeys(body.correlationKeys);
    const variables = readVariables(body.processVariables);
    const transient = Object.keys(variables.transient);
    if (transient.length > 0)
      throw invalidRequest(`Baton does not support transient processVariables in a message: ${transient.join(', ')}`);
    const all = body.all === true;
    // No Baton instance or definition belongs to a tenant: a tenant id matches nothing.
    const result: CamundaCorrelationResult =
      body.tenantId != null
        ? all
          ? { ok: true, correlations: [] }
          : { ok: false, reason: 'no_match' }
        : await correlateCamundaMessage(engine, {
            messageName: body.messageName,
            businessKey: body.businessKey ?? null,
            instanceId: body.processInstanceId ?? null,
            correlationKeys,
            variables,
            all,
            readInstances: body.resultEnabled === true,
          });
    if (!result.ok && result.reason === 'no_match')
      throw new CamundaError(
        400,
        'RestException',
        `Cannot correlate message '${body.messageName}': No process definition or execution matches the parameters`,
      );
    if (!result.ok)
      throw new CamundaError(
        400,
        'RestException',
        `Cannot correlate a message with name '${body.messageName}' to a single execution. ${result.executions} executions match the correlation keys: ${describeCorrelationSet(body, correlationKeys)}`,
      );
    if (!body.resultEnabled) return sendNoContent(res);
    sendJson(
      res,
      200,
      result.correlations.map((c) => correlationView(c, body.variablesInResultEnabled === true)),
    );
  });
  return router;
}

/** correlationKeys as the values and types they must match; a type Camunda cannot query is refused. */
function readCorrelationKeys(input: Vars): CorrelationKey[] {
  return Object.entries(input ?? {}).map(([name, wire]) => {
    if (name === '__proto__') throw invalidRequest('A variable may not be named __proto__');
    const key = readVariable(name, wire);
    if (UNQUERYABLE_TYPES.has(key.type))
      throw invalidRequest(
        `Correlation key '${name}' has type ${key.type}: a message correlates on primitive values only (String, Xml, Integer, Short, Long, Double, Boolean, Date, Null)`,
      );
    return { name, value: key.nativeValue, type: key.type };
  });
}

function describeCorrelationSet(body: MessageBody, keys: CorrelationKey[]): string {
  const values = keys.map((k) => `${k.name}=${String(k.value)}`).join(', ');
  return `CorrelationSet [businessKey=${body.businessKey ?? null}, processInstanceId=${body.processInstanceId ?? null}, correlationKeys={${values}}]`;
}

/** Camunda's MessageCorrelationResult: an execution id is its instance's id (docs/camunda-compatibility.md). */
function correlationView(c: Correlation, withVariables: boolean) {
  const instance = c.instance;
  if (!instance) throw new Error(`The correlation to ${c.instanceId} was not read back`);
  const view =
    c.resultType === 'Execution'
      ? {
          resultType: c.resultType,
          execution: {
            id: c.instanceId,
            processInstanceId: c.instanceId,
            ended: instance.status === 'completed' || instance.status === 'canceled',
            tenantId: null,
          },
          processInstance: null,
        }
      : { resultType: c.resultType, execution: null, processInstance: processInstanceView(instance) };
  return withVariables ? { ...view, variables: renderVariables(instance.variables, instance.types) } : view;
}

export function signalRouter(engine: Engine): Router {
  const router = Router();
  router.post('/', async (req, res) => {
    const body = validateCamundaBody<{ name: string; variables?: Vars; executionId?: string | null }>('signal-request', req.body);
    if (body.executionId)
      throw invalidRequest('Baton broadcasts signals to every waiting instance: executionId is not supported');
    await broadcastSignal(engine, body.name, readVariables(body.variables).values);
    sendNoContent(res);
  });
  return router;
}

interface ConditionBody {
  variables?: Vars;
  businessKey?: string | null;
  processDefinitionId?: string | null;
  tenantId?: string | null;
  withoutTenantId?: boolean | null;
}

/**
 * Camunda's condition evaluation: the conditional start events of the latest versions (or of
 * `processDefinitionId`) are evaluated over the variables, and an instance starts at each whose
 * condition holds; the answer lists them as ProcessInstanceDtos.
 */
export function conditionRouter(engine: Engine): Router {
  const router = Router();
  router.post('/', async (req, res) => {
    const body = validateCamundaBody<ConditionBody>('condition-request', req.body ?? {});
    if (body.tenantId) throw invalidRequest('Baton has no tenants: tenantId is not supported');
    const variables = readVariables(body.variables);
    const { started } = await startOnConditions(
      engine,
      {
        variables: variables.values,
        ...(body.businessKey ? { businessKey: body.businessKey } : {}),
        ...(body.processDefinitionId ? { definitionId: body.processDefinitionId } : {}),
      },
      async (tx, ids) => {
        for (const id of ids) await writeVariableTypes(tx, id, variables.types);
      },
    );
    sendJson(res, 200, started.map(processInstanceView));
  });
  return router;
}
