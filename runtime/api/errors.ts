// The one table from error codes to HTTP, and the middleware that answers { type, message, details }.
import type { ErrorRequestHandler, RequestHandler } from 'express';
import type { Logger } from 'pino';
import { BatonError, type ErrorCode } from '../shared/errors.ts';

const HTTP: Record<ErrorCode, { status: number; type: string }> = {
  validation: { status: 400, type: 'ValidationError' },
  compile: { status: 400, type: 'CompileError' },
  not_found: { status: 404, type: 'NotFound' },
  forbidden: { status: 403, type: 'Forbidden' },
  conflict: { status: 409, type: 'Conflict' },
  lock_lost: { status: 409, type: 'LockLost' },
  payload_too_large: { status: 413, type: 'PayloadTooLarge' },
  unsupported_media_type: { status: 415, type: 'UnsupportedMediaType' },
  no_match: { status: 404, type: 'NoMatch' },
  unavailable: { status: 503, type: 'Unavailable' },
};

// body-parser reports its own failures with a `type` field.
function fromBodyParser(err: { type?: string; limit?: number; message?: string }): BatonError | undefined {
  switch (err.type) {
    case 'entity.parse.failed':
      return new BatonError('validation', `Request body is not valid JSON: ${err.message ?? ''}`);
    case 'entity.too.large':
      return new BatonError('payload_too_large', `Request body is larger than the limit of ${err.limit ?? '?'} bytes`, {
        limit: err.limit,
      });
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return new BatonError('unsupported_media_type', err.message ?? 'Unsupported body encoding');
    default:
      return undefined;
  }
}

/** The answer to an error a route threw or passed on: a known one as { type, message, details }, anything else a logged 500. */
export function errorAnswer(
  err: unknown,
  log: Logger,
  method: string,
  path: string,
): { status: number; body: { type: string; message: string; details?: unknown } } {
  const known = err instanceof BatonError ? err : fromBodyParser(err as { type?: string });
  if (!known) {
    log.error({ err, method, path }, 'api:error');
    return { status: 500, body: { type: 'InternalError', message: 'Internal error; the server log has the details' } };
  }
  const { status, type } = HTTP[known.code];
  return { status, body: { type, message: known.message, ...(known.details !== undefined ? { details: known.details } : {}) } };
}

export function errorMiddleware(log: Logger): ErrorRequestHandler {
  return (err: unknown, req, res, _next) => {
    const { status, body } = errorAnswer(err, log, req.method, req.path);
    if (status === 503) res.setHeader('retry-after', '1');
    res.status(status).json(body);
  };
}

export const notFoundRoute: RequestHandler = (req, _res, next) => {
  next(new BatonError('not_found', `No route ${req.method} ${req.path}`));
};
