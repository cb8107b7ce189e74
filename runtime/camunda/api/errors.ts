// Camunda's error shape { type, message } and exact JSON responses. Camunda clients
// compare Content-Type with "application/json" exactly (the official JS client treats
// anything else as raw bytes), so JSON is written here, never through res.json().
import type { ErrorRequestHandler, RequestHandler, Response } from 'express';
import type { Logger } from 'pino';
import { BatonError } from '../../shared/errors.ts';
import { sendAnswer, type JsonAnswer } from '../../api/answer.ts';

/** Exception names as Camunda 7's REST API reports them in `type`. */
export const CamundaErrorType = {
  /** bad request: body, query or variable value */
  InvalidRequestException: 'InvalidRequestException',
  /** a valid request the engine refuses (e.g. the worker does not hold the lock), or an unknown task */
  RestException: 'RestException',
  /** a deployed BPMN resource does not compile */
  ParseException: 'ParseException',
  /** anything unexpected */
  ProcessEngineException: 'ProcessEngineException',
  /** the caller may not act on the resource as asked (a person acting for someone else) */
  AuthorizationException: 'AuthorizationException',
  /** a migration plan whose instructions are not valid */
  MigrationPlanValidationException: 'MigrationPlanValidationException',
  /** a migration plan that a process instance cannot follow */
  MigratingProcessInstanceValidationException: 'MigratingProcessInstanceValidationException',
  /** a modification that an instance cannot take, or asks for what Baton does not do */
  ProcessInstanceModificationException: 'ProcessInstanceModificationException',
  /** a claim on a task someone else holds */
  TaskAlreadyClaimedException: 'TaskAlreadyClaimedException',
} as const;
export type CamundaErrorType = (typeof CamundaErrorType)[keyof typeof CamundaErrorType];

export class CamundaError extends Error {
  constructor(
    readonly status: number,
    readonly type: CamundaErrorType,
    message: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'CamundaError';
  }
}

export const invalidRequest = (message: string) => new CamundaError(400, 'InvalidRequestException', message);
export const notFound = (message: string) => new CamundaError(404, 'InvalidRequestException', message);

const CAMUNDA_JSON = { 'content-type': 'application/json' };

/** An answer of JSON with exactly `Content-Type: application/json`. */
export function camundaJson(status: number, body: unknown): JsonAnswer {
  return { status, headers: CAMUNDA_JSON, body };
}

export function sendJson(res: Response, status: number, body: unknown): void {
  sendAnswer(res, camundaJson(status, body));
}

export function sendNoContent(res: Response): void {
  res.status(204).end();
}

// body-parser failures carry a `type` field.
function fromBodyParser(err: { type?: string; limit?: number; message?: string }): CamundaError | undefined {
  switch (err.type) {
    case 'entity.parse.failed':
      return invalidRequest(`The request body is not valid JSON: ${err.message ?? ''}`);
    case 'entity.too.large':
      return new CamundaError(
        413,
        'InvalidRequestException',
        `The request body is larger than the limit of ${err.limit ?? '?'} bytes`,
      );
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return new CamundaError(415, 'InvalidRequestException', err.message ?? 'Unsupported body encoding');
    default:
      return undefined;
  }
}

// Engine and store errors thrown below the Camunda routes, in Camunda's words.
function fromBatonError(err: BatonError): CamundaError {
  switch (err.code) {
    case 'validation':
      return invalidRequest(err.message);
    case 'compile':
      return new CamundaError(400, 'ParseException', err.message);
    case 'not_found':
      return new CamundaError(404, 'RestException', err.message);
    case 'forbidden':
      return new CamundaError(403, 'AuthorizationException', err.message);
    case 'payload_too_large':
      return new CamundaError(413, 'InvalidRequestException', err.message);
    case 'unsupported_media_type':
      return new CamundaError(415, 'InvalidRequestException', err.message);
    default:
      return new CamundaError(400, 'RestException', err.message);
  }
}

/** The answer to an error below the Camunda routes (or in their body's parse), in Camunda's shape. */
export function camundaErrorAnswer(err: unknown, log: Logger, method: string, path: string): JsonAnswer {
  const known =
    err instanceof CamundaError
      ? err
      : err instanceof BatonError
        ? fromBatonError(err)
        : fromBodyParser(err as { type?: string });
  if (!known) {
    log.error({ err, method, path }, 'api:error');
    return camundaJson(500, {
      type: CamundaErrorType.ProcessEngineException,
      message: 'Internal error; the server log has the details',
      code: 0,
    });
  }
  return camundaJson(known.status, { type: known.type, message: known.message, ...known.extra });
}

export function camundaErrorHandler(log: Logger): ErrorRequestHandler {
  return (err: unknown, req, res, _next) => {
    sendAnswer(res, camundaErrorAnswer(err, log, req.method, req.path));
  };
}

export const camundaNotFoundRoute: RequestHandler = (req, _res, next) => {
  next(notFound(`No Camunda REST resource ${req.method} ${req.baseUrl}${req.path} in Baton (see docs/camunda-compatibility.md)`));
};
