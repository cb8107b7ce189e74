// Authentication and role checks in front of every router (docs/security.md).
// Bearer tokens everywhere; Basic (the password is the token) for clients that only
// speak Basic, such as the Camunda client's BasicAuthInterceptor.
import { timingSafeEqual } from 'node:crypto';
import type { Request, RequestHandler, Response } from 'express';
import type { Logger } from 'pino';
import type { Pool } from '../store/db.ts';
import { countActiveTokens, findActiveToken } from '../store/tokens.ts';
import { FailureLimiter, type FailureLimiterOptions } from './failure-limiter.ts';
import { accessFor, normalizePath, type Role } from './roles.ts';
import { hashToken, type ConfiguredToken } from './tokens.ts';

export interface AuthOptions {
  /** tokens from BATON_TOKENS; tokens in the `tokens` table are always honoured too */
  tokens?: ConfiguredToken[];
  /** rate limit of requests without a valid token, per client address */
  failures?: FailureLimiterOptions;
}

export interface Caller {
  name: string;
  role: Role;
}

/**
 * How long "are there stored tokens at all?" is remembered; a created token takes effect
 * within it (and one count's round trip). Past it, the request is answered from the last
 * count while a new one is taken in the background: a request once a second used to wait
 * for that extra round trip, which showed in the bench's pickup p99.
 */
const STORED_COUNT_TTL_MS = 1000;

function presentedSecret(req: Request): string | undefined {
  const header = req.headers.authorization;
  if (!header) return undefined;
  const [scheme, value = ''] = header.trim().split(/\s+/, 2);
  if (scheme?.toLowerCase() === 'bearer') return value || undefined;
  if (scheme?.toLowerCase() === 'basic') {
    const decoded = Buffer.from(value, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    return colon >= 0 ? decoded.slice(colon + 1) || undefined : undefined;
  }
  return undefined;
}

function sameHash(a: string, b: string): boolean {
  return timingSafeEqual(Buffer.from(a, 'hex'), Buffer.from(b, 'hex'));
}

function deny(res: Response, status: number, type: string, message: string, extra: Record<string, string> = {}): void {
  for (const [k, v] of Object.entries(extra)) res.setHeader(k, v);
  res.status(status).json({ type, message });
}

export function authMiddleware(pool: Pool, log: Logger, opts: AuthOptions = {}): RequestHandler {
  const configured = opts.tokens ?? [];
  const limiter = new FailureLimiter(opts.failures ?? { burst: 20, perMinute: 60 });
  let stored = { count: 0, at: -Infinity };
  let counting: Promise<void> | undefined;
  const recount = (): Promise<void> => (counting ??= countActiveTokens(pool)
    .then((count) => { stored = { count, at: Date.now() }; })
    .finally(() => { counting = undefined; }));

  const authEnabled = async (): Promise<boolean> => {
    if (configured.length > 0) return true;
    // Only the first request waits for a count; later ones use the last and refresh it aside.
    if (stored.at === -Infinity) await recount();
    else if (Date.now() - stored.at > STORED_COUNT_TTL_MS) {
      recount().catch((err: Error) => log.warn({ err: err.message }, 'auth:count_failed'));
    }
    return stored.count > 0;
  };

  const identify = async (secret: string): Promise<Caller | undefined> => {
    const hash = hashToken(secret);
    const fromEnv = configured.find((t) => sameHash(t.hash, hash));
    if (fromEnv) return { name: fromEnv.name, role: fromEnv.role };
    const row = await findActiveToken(pool, hash);
    return row ? { name: row.name, role: row.role } : undefined;
  };

  const check = async (req: Request, res: Response): Promise<boolean> => {
    const access = accessFor(req.method, req.path);
    if (access === 'open' || !(await authEnabled())) return true;
    const client = req.socket.remoteAddress ?? 'unknown';
    const waitMs = limiter.retryAfterMs(client);
    const denied = (reason: string, caller?: Caller) =>
      log.warn({ method: req.method, path: req.path, client, reason, ...(caller ? { caller: caller.name, role: caller.role } : {}) }, 'auth:denied');
    if (waitMs > 0) {
      denied('rate_limited');
      deny(res, 429, 'TooManyRequests', `Too many requests without a valid token from this address (limit: auth failures, ${limiter.describe()}); retry in ${Math.ceil(waitMs / 1000)} s`, { 'retry-after': String(Math.ceil(waitMs / 1000)) });
      return false;
    }
    const secret = presentedSecret(req);
    const caller = secret ? await identify(secret) : undefined;
    if (!caller) {
      limiter.recordFailure(client);
      denied(secret ? 'unknown_token' : 'no_token');
      const message = secret ? 'The token is not valid (unknown or revoked)' : 'This route needs a token: send "Authorization: Bearer <token>"';
      // Basic is offered on /engine-rest only (the Camunda client): on /api a browser would answer it with its own password prompt.
      const challenge = normalizePath(req.path).startsWith('/engine-rest') ? 'Bearer realm="baton", Basic realm="baton"' : 'Bearer realm="baton"';
      deny(res, 401, 'Unauthorized', message, { 'www-authenticate': challenge });
      return false;
    }
    if (!access.includes(caller.role)) {
      denied('wrong_role', caller);
      deny(res, 403, 'Forbidden', `The ${caller.role} role may not ${req.method} ${req.path}; it needs one of: ${access.join(', ')}`);
      return false;
    }
    res.locals.caller = caller;
    return true;
  };

  return (req, res, next) => {
    check(req, res).then(
      (pass) => (pass ? next() : undefined),
      (err: Error) => {
        log.error({ err: err.message, method: req.method, path: req.path }, 'auth:unavailable');
        deny(res, 503, 'Unavailable', 'Tokens cannot be checked: the database does not answer');
      },
    );
  };
}
