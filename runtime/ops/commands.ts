// Operator commands that talk to the database directly (no server needed):
//   baton token create --role <admin|worker|viewer> --name <name>
//   baton token list
//   baton token revoke <name>
//   baton export --before <date> [--out <file>]
import { createWriteStream } from 'node:fs';
import type { Writable } from 'node:stream';
import type { Config } from '../config.ts';
import { createPool, type Pool } from '../store/db.ts';
import { applyMigrations } from '../store/migrate.ts';
import { insertToken, listTokens, revokeToken } from '../store/tokens.ts';
import { ROLES, type Role } from '../security/roles.ts';
import { generateToken, hashToken } from '../security/tokens.ts';
import { exportHistory } from './export.ts';

export const OPS_USAGE = `       baton token create --role <admin|worker|viewer> --name <name>
       baton token list
       baton token revoke <name>
       baton export --before <YYYY-MM-DD or ISO date> [--out <file.jsonl>]`;

function flag(args: string[], name: string): string | undefined {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : undefined;
}

/** DATABASE_URL, else the embedded PostgreSQL of a running `baton serve` (same password as store/embedded.ts). */
function databaseUrl(config: Config): string {
  return config.databaseUrl ?? `postgres://postgres:baton@127.0.0.1:${config.embeddedPgPort}/baton`;
}

async function withPool<T>(config: Config, fn: (pool: Pool) => Promise<T>): Promise<T> {
  const pool = createPool({ connectionString: databaseUrl(config), max: 2 });
  try {
    await applyMigrations(pool).catch((err: Error) => {
      throw new Error(
        `Cannot reach the database (${err.message}): set DATABASE_URL, or start \`baton serve\` first for the embedded one`,
      );
    });
    return await fn(pool);
  } finally {
    await pool.end();
  }
}

async function tokenCommand(config: Config, args: string[], out: (line: string) => void): Promise<number> {
  const [sub, arg] = args;
  if (sub === 'create') {
    const role = flag(args, 'role') as Role | undefined;
    const name = flag(args, 'name');
    if (!role || !ROLES.includes(role) || !name || name.length > 100) {
      out(`token create needs --role ${ROLES.join('|')} and --name <1-100 characters>`);
      return 2;
    }
    const secret = generateToken();
    const result = await withPool(config, (pool) => insertToken(pool, { name, role, tokenHash: hashToken(secret) }));
    if (!result.ok) {
      out(`A token named "${name}" exists already (revoked ones keep their name); choose another name`);
      return 1;
    }
    out(secret);
    process.stderr.write(`Created ${role} token "${name}". It is shown only this once: store it now.\n`);
    return 0;
  }
  if (sub === 'list') {
    const rows = await withPool(config, listTokens);
    for (const r of rows)
      out(
        `${r.name}\t${r.role}\tcreated ${new Date(r.created_at).toISOString()}${r.revoked_at ? `\trevoked ${new Date(r.revoked_at).toISOString()}` : ''}`,
      );
    return 0;
  }
  if (sub === 'revoke' && arg) {
    const revoked = await withPool(config, (pool) => revokeToken(pool, arg));
    out(revoked ? `Revoked "${arg}"` : `No active token named "${arg}"`);
    return revoked ? 0 : 1;
  }
  out(OPS_USAGE);
  return 2;
}

async function exportCommand(config: Config, args: string[], out: (line: string) => void): Promise<number> {
  const before = new Date(flag(args, 'before') ?? '');
  if (Number.isNaN(before.getTime())) {
    out('export needs --before <date>, e.g. --before 2026-01-01');
    return 2;
  }
  const file = flag(args, 'out');
  const stream: Writable = file ? createWriteStream(file) : process.stdout;
  const count = await withPool(config, (pool) => exportHistory(pool, before, stream));
  if (file) await new Promise<void>((resolve, reject) => stream.end((err?: Error | null) => (err ? reject(err) : resolve())));
  process.stderr.write(`Exported ${count} instances that ended before ${before.toISOString()}\n`);
  return 0;
}

/** Runs `token …` or `export …`; answers the exit code. */
export async function runOpsCommand(
  config: Config,
  command: string,
  args: string[],
  out = (line: string) => console.log(line),
): Promise<number> {
  return command === 'token' ? tokenCommand(config, args, out) : exportCommand(config, args, out);
}
