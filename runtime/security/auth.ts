// Authentication and role checks in front of every router (docs/security.md).
// Bearer tokens everywhere; Basic (the password is the token) for clients that only
// speak Basic, such as the Camunda client's BasicAuthInterceptor.
import { timingSafeEqual } from 'node:crypto';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Logger } from 'pino';
import { refusalAnswer, sendAnswer, type Refusal } from '../api/answer.ts';
import type { Pool } from '../store/db.ts';
import type { TokenChanges } from '../store/token-changes.ts';
import { countActiveTokens, findActiveToken } from '../store/tokens.ts';
import { FailureLimiter, type FailureLimiterOptions } from './failure-limiter.ts';
import type { GroupDirectory } from './people.ts';
import { accessFor, normalizePath, type Role } from './roles.ts';
import { hashToken, type ConfiguredToken } from './tokens.ts';

export interface AuthOptions {
  /** tokens from BATON_TOKENS; tokens in the `tokens` table are always honoured too */
  tokens?: ConfiguredToken[];
  /** rate limit of requests without a valid token, per client address */
  failures?: FailureLimiterOptions;
  /**
   * Changes to the tokens table as they happen: while they are heard, stored tokens once
   * looked up and the count of them are kept until one changes; without it (or while its
   * connection is down) every request with a stored token reads the table.
   */
  changes?: TokenChanges;
  /**
   * Whether every route is open while no token exists at all: only on a loopback address
   * (server.ts). Elsewhere a request without a valid token is refused even after the last
   * token was revoked.
   */
  openWithoutTokens?: boolean;
  /** the groups each token name belongs to (BATON_GROUPS) */
  groups?: GroupDirectory;
}

export interface Caller {
  name: string;
  role: Role;
  /** the candidate groups of user tasks this caller answers for */
  groups: readonly string[];
}

/**
 * While changes to the tokens table are not heard: how long "are there stored tokens at
 * all?" is remembered; a created token takes effect
 * within it (and one count's round trip). Past it, the request is answered from the last
 * count while a new one is taken in the background, so no request waits for that extra
 * round trip (once a second one would, and it shows in the bench's pickup p99).
 */
const STORED_COUNT_TTL_MS = 1000;
/** Stored tokens kept at most; past it the cache starts over (a deployment has a handful). */
const KNOWN_TOKENS_MAX = 1000;

/** What the check reads of a request. */
export interface AuthRequest {
  method: string;
  path: string;
  authorization: string | undefined;
  client: string;
}

/** A refusal is answered as JSON { type, message } with its status and headers. */
export type AuthVerdict = { pass: true; caller?: Caller } | ({ pass: false } & Refusal);

/**
 * The verdict, at once when nothing needs the database (no tokens at all, BATON_TOKENS'
 * tokens, a refusal): a request then goes on without waiting for a promise's turn.
 */
export type Authorizer = (req: AuthRequest) => AuthVerdict | Promise<AuthVerdict>;

const PASS: AuthVerdict = { pass: true };

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
  const changes = opts.changes;
  const openWithoutTokens = opts.openWithoutTokens ?? false;
  const groups = opts.groups ?? new Map<string, readonly string[]>();
  const callerOf = (name: string, role: Role): Caller => ({ name, role, groups: groups.get(name) ?? [] });
  // Bumped by every change: a read that began before one is answered but not kept.
  let version = 0;
  /** stored tokens by hash, kept while changes are heard; only valid ones (a guess is not worth a slot) */
  const known = new Map<string, Caller>();
  let stored = { count: 0, at: -Infinity };
  let counting: Promise<number> | undefined;
  const recount = (): Promise<number> => {
    if (counting) return counting;
    const since = version;
    const count: Promise<number> = countActiveTokens(pool)
      .then((n) => {
        if (since === version) stored = { count: n, at: Date.now() };
        return n;
      })
      .finally(() => {
        if (counting === count) counting = undefined;
      });
    return (counting = count);
  };
  changes?.onChange(() => {
    version++;
    known.clear();
    stored = { count: 0, at: -Infinity };
    counting = undefined;
  });
  const countIsFresh = (): boolean => changes?.listening === true || Date.now() - stored.at <= STORED_COUNT_TTL_MS;

  /** The caller a stored token names, from the cache while changes are heard. */
  const storedCaller = (hash: string): Caller | undefined | Promise<Caller | undefined> => {
    if (changes?.listening) {
      const caller = known.get(hash);
      if (caller) return caller;
    }
    const since = version;
    return findActiveToken(pool, hash).then((row) => {
      const caller = row ? callerOf(row.name, row.role) : undefined;
      if (caller && changes?.listening && since === version) {
        if (known.size >= KNOWN_TOKENS_MAX) known.clear();
        known.set(hash, caller);
      }
      return caller;
    });
  };

  /** The verdict on a request to a route that needs a token, once tokens are known to exist. */
  const check = (req: AuthRequest, access: readonly Role[]): AuthVerdict | Promise<AuthVerdict> => {
    const waitMs = limiter.retryAfterMs(req.client);
    if (waitMs > 0) {
      logDenied(log, req, 'rate_limited');
      return refuse(
        429,
        'TooManyRequests',
        `Too many requests without a valid token from this address (limit: auth failures, ${limiter.describe()}); retry in ${Math.ceil(waitMs / 1000)} s`,
        { 'retry-after': String(Math.ceil(waitMs / 1000)) },
      );
    }
    const secret = presentedSecret(req.authorization);
    if (!secret) return judge(req, access, undefined, false);
    const hash = hashToken(secret);
    const fromEnv = configured.find((t) => sameHash(t.hash, hash));
    if (fromEnv) return judge(req, access, callerOf(fromEnv.name, fromEnv.role), true);
    const caller = storedCaller(hash);
    if (!(caller instanceof Promise)) return judge(req, access, caller, true);
    return caller.then((found) => judge(req, access, found, true));
  };

  const judge = (req: AuthRequest, access: readonly Role[], caller: Caller | undefined, presented: boolean): AuthVerdict => {
    if (!caller) {
      limiter.recordFailure(req.client);
      logDenied(log, req, presented ? 'unknown_token' : 'no_token');
      const message = presented
        ? 'The token is not valid (unknown or revoked)'
        : 'This route needs a token: send "Authorization: Bearer <token>"';
      // Basic is offered on /engine-rest only (the Camunda client): on /api a browser would answer it with its own password prompt.
      const challenge = normalizePath(req.path).startsWith('/engine-rest')
        ? 'Bearer realm="baton", Basic realm="baton"'
        : 'Bearer realm="baton"';
      return refuse(401, 'Unauthorized', message, { 'www-authenticate': challenge });
    }
    if (!access.includes(caller.role)) {
      logDenied(log, req, 'wrong_role', caller);
      return refuse(
        403,
        'Forbidden',
        `The ${caller.role} role may not ${req.method} ${req.path}; it needs one of: ${access.join(', ')}`,
      );
    }
    return { pass: true, caller };
  };

  return (req) => {
    const access = accessFor(req.method, req.path);
    if (access === 'open') return PASS;
    if (configured.length > 0 || !openWithoutTokens) return check(req, access);
    // Only the first request (and the first after a change) waits for a count of the stored
    // tokens; while changes are not heard, later ones use the last and refresh it aside.
    if (stored.at === -Infinity) return recount().then((count) => (count > 0 ? check(req, access) : PASS));
    if (!countIsFresh()) {
      recount().catch((err: Error) => log.warn({ err: err.message }, 'auth:count_failed'));
    }
    return stored.count > 0 ? check(req, access) : PASS;
  };
}

function logDenied(log: Logger, req: AuthRequest, reason: string, caller?: Caller): void {
  log.warn(
    {
      method: req.method,
      path: req.path,
      client: req.client,
      reason,
      ...(caller ? { caller: caller.name, role: caller.role } : {}),
    },
    'auth:denied',
  );
}

/** Express's side of the authorizer: a refusal answers, a pass goes on with res.locals.caller set. */
export function authMiddleware(authorize: Authorizer, log: Logger): RequestHandler {
  return (req, res, next) => {
    let verdict: AuthVerdict | Promise<AuthVerdict>;
    try {
      verdict = authorize({
        method: req.method,
        path: req.path,
        authorization: req.headers.authorization,
        client: req.socket.remoteAddress ?? 'unknown',
      });
    } catch (err) {
      return unavailable(log, req, res, err as Error);
    }
    if (!(verdict instanceof Promise)) return follow(verdict, res, next);
    verdict.then(
      (later) => follow(later, res, next),
      (err: Error) => unavailable(log, req, res, err),
    );
  };
}

function follow(verdict: AuthVerdict, res: Response, next: NextFunction): void {
  if (!verdict.pass) return sendAnswer(res, refusalAnswer(verdict));
  if (verdict.caller) res.locals.caller = verdict.caller;
  next();
}

function unavailable(log: Logger, req: Request, res: Response, err: Error): void {
  log.error({ err: err.message, method: req.method, path: req.path }, 'auth:unavailable');
  sendAnswer(res, refusalAnswer(AUTH_UNAVAILABLE));
}
