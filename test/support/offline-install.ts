// Installs a packed tarball in a folder of its own with no network: the folder gets a lockfile
// whose dependencies (the tarball's, e.g. pino) are copied from the repository's lockfile, so
// `npm ci --offline` takes every package from the npm cache that installed this repository.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

interface LockEntry {
  version?: string;
  dependencies?: Record<string, string>;
  [field: string]: unknown;
}

/** package.json and package-lock.json for `folder`, then `npm ci --offline` there. */
export async function installTarballOffline(
  folder: string,
  tarball: string,
  manifest: { name: string; version: string; dependencies: Record<string, string> },
  repoLock: string,
  timeoutMs: number,
): Promise<void> {
  const spec = `file:${basename(tarball)}`;
  const repo = (JSON.parse(readFileSync(repoLock, 'utf8')) as { packages: Record<string, LockEntry> }).packages;
  const packages: Record<string, LockEntry> = {
    '': { name: 'sdk-consumer', dependencies: { [manifest.name]: spec } },
    [`node_modules/${manifest.name}`]: {
      version: manifest.version,
      resolved: spec,
      integrity: `sha512-${createHash('sha512').update(readFileSync(tarball)).digest('base64')}`,
      dependencies: manifest.dependencies,
    },
  };
  copyClosure(repo, packages, Object.keys(manifest.dependencies));
  writeFileSync(
    join(folder, 'package.json'),
    JSON.stringify({ name: 'sdk-consumer', private: true, type: 'module', dependencies: { [manifest.name]: spec } }),
  );
  writeFileSync(
    join(folder, 'package-lock.json'),
    JSON.stringify({ name: 'sdk-consumer', lockfileVersion: 3, requires: true, packages }, null, 2),
  );
  await run('npm', ['ci', '--offline', '--ignore-scripts', '--no-audit', '--no-fund'], { cwd: folder, timeout: timeoutMs });
}

/** Copies the entries the named top-level packages need, keeping the repository's layout (a subset of a valid tree). */
function copyClosure(repo: Record<string, LockEntry>, into: Record<string, LockEntry>, names: string[]): void {
  const todo = names.map((name) => ({ from: '', name }));
  for (let next = todo.pop(); next; next = todo.pop()) {
    const key = resolveKey(repo, next.from, next.name);
    if (!key) throw new Error(`The repository's package-lock.json has no ${next.name} reachable from "${next.from}"`);
    if (into[key]) continue;
    const entry = repo[key]!;
    into[key] = entry;
    for (const dep of Object.keys(entry.dependencies ?? {})) todo.push({ from: key, name: dep });
  }
}

/** Node's lookup: node_modules/<name> next to the requiring package, then in each folder above it. */
function resolveKey(repo: Record<string, LockEntry>, from: string, name: string): string | undefined {
  for (let dir = from; ;) {
    const key = dir ? `${dir}/node_modules/${name}` : `node_modules/${name}`;
    if (repo[key]) return key;
    if (!dir) return undefined;
    const at = dir.lastIndexOf('/node_modules/');
    dir = at < 0 ? '' : dir.slice(0, at);
  }
}
