// What runtime/server.ts mounts from the security layer.
import type { RequestHandler } from 'express';
import type { Logger } from 'pino';
import type { ParkedPolls } from '../engine/parked-polls.ts';
import type { Pool } from '../store/db.ts';
import { countActiveTokens } from '../store/tokens.ts';
import { authMiddleware, type AuthOptions, type Authorizer } from './auth.ts';
import { limitsMiddleware, type LimitOptions } from './limits.ts';
import { assertSafeToServe } from './tokens.ts';

export { createAuthorizer, type AuthOptions, type Authorizer } from './auth.ts';
export { DEFAULT_LIMITS, type LimitOptions } from './limits.ts';
export { designerHeaders } from './headers.ts';
export { isLoopbackHost } from './tokens.ts';

/** Throws when the server would be reachable from other hosts without any token. */
export async function checkAuthBeforeListening(pool: Pool, host: string, auth: AuthOptions = {}): Promise<void> {
  assertSafeToServe(host, auth.tokens?.length ?? 0, await countActiveTokens(pool));
}

/**
 * Auth first (nothing is parsed for a caller without a valid token), then the limits, which
 * read the body. One middleware: the hot routes' requests walk one layer for both.
 */
export function securityLayer(p: {
  authorize: Authorizer;
  log: Logger;
  parkedPolls: ParkedPolls;
  limits: LimitOptions;
}): RequestHandler {
  const authenticate = authMiddleware(p.authorize, p.log);
  const checkLimits = limitsMiddleware(p.limits, p.parkedPolls, p.log);
  return (req, res, next) =>
    authenticate(req, res, () => {
      // Called from the authorizer's promise: a throw would be an unhandled rejection, not the request's error.
      try {
        checkLimits(req, res, next);
      } catch (err) {
        next(err);
      }
    });
}
