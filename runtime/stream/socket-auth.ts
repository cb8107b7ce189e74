// Who may open the /progress and /tasks namespaces: the same tokens and roles as the REST
// API (docs/security.md). Both are reads: admin, viewer and person.
import { timingSafeEqual } from 'node:crypto';
import type { Logger } from 'pino';
import type { Socket } from 'socket.io';
import { Role } from '../security/roles.ts';
import { hashToken, type ConfiguredToken } from '../security/tokens.ts';
import type { Pool } from '../store/db.ts';
import { countActiveTokens, findActiveToken } from '../store/tokens.ts';

export type SocketAuthResult = { ok: true } | { ok: false; type: 'Unauthorized' | 'Forbidden' | 'Unavailable'; message: string };

const SUBSCRIBERS: readonly Role[] = [Role.admin, Role.viewer, Role.person];
/** like the HTTP layer: a token created by the CLI takes effect within this */
const STORED_COUNT_TTL_MS = 1000;

export function socketAuthorizer(
  pool: Pool,
  log: Logger,
  configured: ConfiguredToken[] = [],
  /** open while no token exists at all (a loopback server), as for the REST API */
  openWithoutTokens = false,
  namespace = '/progress',
): (secret: string | undefined, client: string) => Promise<SocketAuthResult> {
  let stored = { count: 0, at: -Infinity };
  return async (secret, client) => {
    try {
      if (configured.length === 0 && openWithoutTokens) {
        if (Date.now() - stored.at > STORED_COUNT_TTL_MS) stored = { count: await countActiveTokens(pool), at: Date.now() };
        if (stored.count === 0) return { ok: true }; // open: loopback development without tokens
      }
      if (!secret) {
        log.warn({ client, reason: 'no_token', namespace }, 'auth:denied');
        return {
          ok: false,
          type: 'Unauthorized',
          message: `${namespace} needs a token: connect with io(url, { auth: { token } })`,
        };
      }
      const hash = hashToken(secret);
      const fromEnv = configured.find((t) => timingSafeEqual(Buffer.from(t.hash, 'hex'), Buffer.from(hash, 'hex')));
      const role = fromEnv?.role ?? (await findActiveToken(pool, hash))?.role;
      if (!role) {
        log.warn({ client, reason: 'unknown_token', namespace }, 'auth:denied');
        return { ok: false, type: 'Unauthorized', message: 'The token is not valid (unknown or revoked)' };
      }
      if (!SUBSCRIBERS.includes(role)) {
        log.warn({ client, reason: 'wrong_role', role, namespace }, 'auth:denied');
        return {
          ok: false,
          type: 'Forbidden',
          message: `The ${role} role may not open ${namespace}; it needs one of: ${SUBSCRIBERS.join(', ')}`,
        };
      }
      return { ok: true };
    } catch (err) {
      log.error({ err: (err as Error).message }, 'auth:unavailable');
      return { ok: false, type: 'Unavailable', message: 'Tokens cannot be checked: the database does not answer' };
    }
  };
}

/** The namespace middleware: a refusal ends the handshake with { type, message } as the error's data. */
export function socketAuthMiddleware(
  authorize: (secret: string | undefined, client: string) => Promise<SocketAuthResult>,
): (socket: Socket, next: (err?: Error) => void) => void {
  return (socket, next) => {
    authorize(presentedToken(socket), socket.handshake.address).then((result) => {
      if (result.ok) return next();
      const err = new Error(result.message) as Error & { data: unknown };
      err.data = { type: result.type, message: result.message };
      next(err);
    }, next);
  };
}

function presentedToken(socket: Socket): string | undefined {
  const fromAuth = (socket.handshake.auth as { token?: unknown } | undefined)?.token;
  if (typeof fromAuth === 'string' && fromAuth !== '') return fromAuth;
  const header = socket.handshake.headers.authorization;
  const [scheme, value] = (header ?? '').trim().split(/\s+/, 2);
  return scheme?.toLowerCase() === 'bearer' && value ? value : undefined;
}
