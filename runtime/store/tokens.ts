// API tokens: only their SHA-256 is stored; the secret is shown once at creation.
import type { Queryable } from './db.ts';

export interface TokenRow {
  name: string;
  role: 'admin' | 'worker' | 'viewer' | 'person';
  created_at: string;
  revoked_at: string | null;
}

export type InsertTokenResult = { ok: true; token: TokenRow } | { ok: false; reason: 'name_taken' };

export async function insertToken(
  db: Queryable,
  p: { name: string; role: TokenRow['role']; tokenHash: string },
): Promise<InsertTokenResult> {
  const { rows } = await db.query<TokenRow>({
    name: 'insert_token',
    text: `insert into tokens (name, role, token_hash) values ($1, $2, $3)
           on conflict (name) do nothing
           returning name, role, created_at, revoked_at`,
    values: [p.name, p.role, p.tokenHash],
  });
  return rows[0] ? { ok: true, token: rows[0] } : { ok: false, reason: 'name_taken' };
}

/** The active token with this hash, if any. */
export async function findActiveToken(db: Queryable, tokenHash: string): Promise<TokenRow | undefined> {
  const { rows } = await db.query<TokenRow>({
    name: 'find_active_token',
    text: `select name, role, created_at, revoked_at from tokens where token_hash = $1 and revoked_at is null`,
    values: [tokenHash],
  });
  return rows[0];
}

export async function countActiveTokens(db: Queryable): Promise<number> {
  const { rows } = await db.query<{ count: number }>({
    name: 'count_active_tokens',
    text: `select count(*)::int as count from tokens where revoked_at is null`,
  });
  return rows[0]?.count ?? 0;
}

export async function listTokens(db: Queryable): Promise<TokenRow[]> {
  const { rows } = await db.query<TokenRow>({
    name: 'list_tokens',
    text: `select name, role, created_at, revoked_at from tokens order by created_at, name`,
  });
  return rows;
}

/** true when an active token of that name was revoked now */
export async function revokeToken(db: Queryable, name: string): Promise<boolean> {
  const { rowCount } = await db.query({
    name: 'revoke_token',
    text: `update tokens set revoked_at = now() where name = $1 and revoked_at is null`,
    values: [name],
  });
  return (rowCount ?? 0) > 0;
}
