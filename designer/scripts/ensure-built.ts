// Builds the designer into designer/dist when it is missing or older than its sources.
// Run before `npm start` (prestart) and by the browser tests; a lock directory keeps two
// callers at once (parallel test files) from building over each other.
import { mkdir, readdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const designerDir = path.join(repoRoot, 'designer');
const builtIndex = path.join(designerDir, 'dist', 'index.html');
const lockDir = path.join(designerDir, '.build-lock');

async function newestSourceMtime(dir: string): Promise<number> {
  let newest = 0;
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    if (entry.name === 'dist' || entry.name.startsWith('.')) continue;
    const full = path.join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? await newestSourceMtime(full) : (await stat(full)).mtimeMs);
  }
  return newest;
}

async function isFresh(): Promise<boolean> {
  const built = await stat(builtIndex).catch(() => undefined);
  if (!built) return false;
  const sources = Math.max(await newestSourceMtime(designerDir), (await stat(path.join(repoRoot, 'vite.config.ts'))).mtimeMs);
  return built.mtimeMs >= sources;
}

async function takeLock(): Promise<void> {
  for (;;) {
    try {
      await mkdir(lockDir);
      return;
    } catch {
      // A lock older than a minute belongs to a build that died (a build takes seconds).
      const age = Date.now() - ((await stat(lockDir).catch(() => undefined))?.mtimeMs ?? Date.now());
      if (age > 60_000) await rm(lockDir, { recursive: true, force: true });
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

/** Resolves when designer/dist is up to date; `rebuildStale: false` builds only when it is missing. */
export async function ensureDesignerBuilt(opts: { rebuildStale?: boolean; log?: (m: string) => void } = {}): Promise<void> {
  const log = opts.log ?? (() => undefined);
  const ready = async () => ((opts.rebuildStale ?? true) ? isFresh() : Boolean(await stat(builtIndex).catch(() => undefined)));
  // Checked under the lock only: a caller must never see a dist that another one is rewriting.
  await takeLock();
  try {
    if (await ready()) return;
    log('building the designer (vite build)…');
    const { build } = await import('vite');
    await build({ configFile: path.join(repoRoot, 'vite.config.ts'), root: designerDir, mode: 'production', logLevel: 'warn' });
  } finally {
    await rm(lockDir, { recursive: true, force: true });
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  ensureDesignerBuilt({ log: (m) => console.log(m) }).catch((err: Error) => {
    console.error(`The designer could not be built: ${err.message}`);
    process.exit(1);
  });
}
