// Authentication and role checks in front of every router (docs/security.md).
// Bearer tokens everywhere; Basic (the password is the token) for clients that only
// speak Basic, such as the Camunda client's BasicAuthInterceptor.
import { timingSafeEqual } from 'node:crypto';
import type { RequestHandler } from 'express';
import type { Logger } from 'pino';
import { refusalAnswer, sendAnswer, type Refusal } from '../api/answer.ts';
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

/** What the check reads of a request. */
export interface AuthRequest {
  method: string;
  path: string;
  authorization: string | undefined;
  client: string;
}

/** A refusal is answered as JSON { type, message } with its status and headers. */
export type AuthVerdict = { pass: true; caller?: Caller } | ({ pass: false } & Refusal);

export type Authorizer = (req: AuthRequest) => Promise<AuthVerdict>;

function presentedSecret(header: string | undefined): string | undefined {
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

const refuse = (status: number, type: string, message: string, headers: Record<string, string> = {}): AuthVerdict => ({
  pass: false,
  status,
  type,
  message,
  headers,
});

/** The unavailable answer, when the tokens cannot be read. */
const AUTH_UNAVAILABLE = refuse(503, 'Unavailable', 'Tokens cannot be checked: the database does not answer') as Extract<
  AuthVerdict,
  { pass: false }
>;

/** One per server: the failure limiter and the stored-token count are shared by every route that checks. */
export function createAuthorizer(pool: Pool, log: Logger, opts: AuthOptions = {}): Authorizer {
  const configured = opts.tokens ?? [];
  const limiter = new FailureLimiter(opts.failures ?? { burst: 20, perMinute: 60 });
  let stored = { count: 0, at: -Infinity };
  let counting: Promise<void> | undefined;
  const recount = (): Promise<void> =>
    (counting ??= countActiveTokens(pool)
      .then((count) => {
        stored = { count, at: Date.now() };
      })
      .finally(() => {
        counting = undefined;
      }));

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

  return async (req) => {
    const access = accessFor(req.method, req.path);
    if (access === 'open' || !(await authEnabled())) return { pass: true };
    const client = req.client;
    const waitMs = limiter.retryAfterMs(client);
    const denied = (reason: string, caller?: Caller) =>
      log.warn(
        { method: req.method, path: req.path, client, reason, ...(caller ? { caller: caller.name, role: caller.role } : {}) },
        'auth:denied',
      );
    if (waitMs > 0) {
      denied('rate_limited');
      return refuse(
        429,
        'TooManyRequests',
        `Too many requests without a valid token from this address (limit: auth failures, ${limiter.describe()}); retry in ${Math.ceil(waitMs / 1000)} s`,
        { 'retry-after': String(Math.ceil(waitMs / 1000)) },
      );
    }
    const secret = presentedSecret(req.authorization);
    const caller = secret ? await identify(secret) : undefined;
    if (!caller) {
      limiter.recordFailure(client);
      denied(secret ? 'unknown_token' : 'no_token');
      const message = secret
        ? 'The token is not valid (unknown or revoked)'
        : 'This route needs a token: send "Authorization: Bearer <token>"';
      // Basic is offered on /engine-rest only (the Camunda client): on /api a browser would answer it with its own password prompt.
      const challenge = normalizePath(req.path).startsWith('/engine-rest')
        ? 'Bearer realm="baton", Basic realm="baton"'
        : 'Bearer realm="baton"';
      return refuse(401, 'Unauthorized', message, { 'www-authenticate': challenge });
    }
    if (!access.includes(caller.role)) {
      denied('wrong_role', caller);
      return refuse(
        403,
        'Forbidden',
        `The ${caller.role} role may not ${req.method} ${req.path}; it needs one of: ${access.join(', ')}`,
      );
    }
    return { pass: true, caller };
  };
}

/** Express's side of the authorizer: a refusal answers, a pass goes on with res.locals.caller set. */
export function authMiddleware(authorize: Authorizer, log: Logger): RequestHandler {
  return (req, res, next) => {
    authorize({
      method: req.method,
      path: req.path,
      authorization: req.headers.authorization,
      client: req.socket.remoteAddress ?? 'unknown',
    }).then(
      (verdict) => {
        if (verdict.pass) {
          if (verdict.caller) res.locals.caller = verdict.caller;
          return next();
        }
        sendAnswer(res, refusalAnswer(verdict));
      },
      (err: Error) => {
        log.error({ err: err.message, method: req.method, path: req.path }, 'auth:unavailable');
        sendAnswer(res, refusalAnswer(AUTH_UNAVAILABLE));
      },
    );
  };
}
