// POST /engine-rest/message and /engine-rest/signal on the engine's message and signal waits.
// Camunda correlates at once or fails: messages are published with ttlMs 0, so nothing is
// kept in Baton's inbox for a later catch (the native /api/messages keeps them).
import { Router } from 'express';
import type { Engine } from '../../engine/context.ts';
import { broadcastSignal, publishMessage } from '../../engine/waits.ts';
import { writeVariableTypes } from '../store/variables.ts';
import { BatonError } from '../../shared/errors.ts';
import { CamundaError, invalidRequest, sendJson, sendNoContent } from './errors.ts';
import { validateCamundaBody } from './validate.ts';
import { readVariables, type WireVariable } from './variables.ts';

type Vars = Record<string, WireVariable> | null | undefined;

interface MessageBody {
  messageName: string;
  businessKey?: string | null;
  processInstanceId?: string | null;
  correlationKeys?: Vars;
  processVariables?: Vars;
  all?: boolean | null;
  resultEnabled?: boolean | null;
}

export function messageRouter(engine: Engine): Router {
  const router = Router();
  router.post('/', async (req, res) => {
    const body = validateCamundaBody<MessageBody>('message-request', req.body);
    const keys = Object.values(readVariables(body.correlationKeys).values);
    if (keys.length > 1) throw invalidRequest('Baton correlates a message on one key: send at most one entry in correlationKeys');
    const variables = readVariables(body.processVariables);
    const request = {
      name: body.messageName,
      ...(keys[0] !== undefined && keys[0] !== null ? { correlationKey: String(keys[0]) } : {}),
      ...(body.businessKey ? { businessKey: body.businessKey } : {}),
      ...(body.processInstanceId ? { instanceId: body.processInstanceId } : {}),
      variables: variables.values,
      ttlMs: 0,
    };
    const matched: string[] = [];
    // `all` delivers to every waiting instance: one publication per match until none is left.
    for (;;) {
      const result = await publishMessage(engine, request).catch((err: unknown) => {
        if (err instanceof BatonError && err.code === 'no_match' && matched.length > 0) return undefined;
        throw err instanceof BatonError && err.code === 'no_match'
          ? new CamundaError(
              400,
              'RestException',
              `Cannot correlate message '${body.messageName}': No process definition or execution matches the parameters`,
            )
          : err;
      });
      // 'started': no instance waited and a message start event started one (as Camunda does).
      if (!result || (result.status !== 'matched' && result.status !== 'started')) break;
      matched.push(result.instanceId);
      // The engine's transaction is its own: the types follow right after (a type row applies only to the value it names).
      await writeVariableTypes(engine.pool, result.instanceId, variables.types);
      if (!body.all || result.status === 'started') break;
    }
    if (!body.resultEnabled) return sendNoContent(res);
    sendJson(
      res,
      200,
      matched.map((id) => ({
        resultType: 'Execution',
        execution: { id, processInstanceId: id, ended: false, tenantId: null },
        processInstance: null,
      })),
    );
  });
  return router;
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
