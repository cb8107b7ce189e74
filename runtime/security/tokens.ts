// Tokens: parsing BATON_TOKENS, hashing, and telling a loopback bind from a public one.
import { createHash, randomBytes } from 'node:crypto';
import { ROLES, type Role } from './roles.ts';

export interface ConfiguredToken {
  name: string;
  role: Role;
  /** SHA-256 hex of the secret; the secret itself is not kept */
  hash: string;
}

/** Shorter secrets are refused: a token is the only thing between the network and deploys. */
export const MIN_SECRET_LENGTH = 16;

export function hashToken(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

/** A new random token: 32 bytes, base64url, prefixed so leaked ones are easy to grep for. */
export function generateToken(): string {
  return `baton_${randomBytes(32).toString('base64url')}`;
}

/**
 * BATON_TOKENS: comma-separated `role:secret` or `role:name:secret` entries, e.g.
 * `admin:ops:4c1f…,worker:billing:9e2a…`. A name defaults to the role plus its position.
 */
export function parseTokens(raw: string | undefined): ConfiguredToken[] {
  if (!raw || raw.trim() === '') return [];
  return raw.split(',').map((entry, i) => {
    const parts = entry.trim().split(':');
    const role = parts[0] as Role;
    const [name, secret] = parts.length >= 3 ? [parts[1] ?? '', parts.slice(2).join(':')] : [`${role}-${i + 1}`, parts[1] ?? ''];
    if (!ROLES.includes(role))
      throw new Error(
        `BATON_TOKENS entry ${i + 1}: role must be one of ${ROLES.join(', ')}, got "${parts[0] ?? ''}" (format: role:secret or role:name:secret)`,
      );
    if (!name) throw new Error(`BATON_TOKENS entry ${i + 1}: empty name (format: role:secret or role:name:secret)`);
    if (secret.length < MIN_SECRET_LENGTH)
      throw new Error(`BATON_TOKENS entry ${i + 1} (${name}): the secret must be at least ${MIN_SECRET_LENGTH} characters`);
    return { name, role, hash: hashToken(secret) };
  });
}

/** true for addresses only this machine can reach */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/** Refuses a server reachable from other hosts that would let anyone in. */
export function assertSafeToServe(host: string, configuredTokens: number, storedTokens: number): void {
  if (configuredTokens > 0 || storedTokens > 0 || isLoopbackHost(host)) return;
  throw new Error(
    `Refusing to start: HOST=${host} is reachable from other machines and no API tokens are configured, ` +
      'so anyone could deploy, start and cancel processes. Set BATON_TOKENS (e.g. BATON_TOKENS="admin:ops:<secret of 16+ characters>") ' +
      'or create one with `baton token create --role admin --name ops`, or bind to 127.0.0.1.',
  );
}
