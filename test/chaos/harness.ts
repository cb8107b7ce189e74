// Real processes for the drills: runtime nodes (`baton serve` on a shared
// database) and SDK workers (test/chaos/worker.ts), each a child process that
// can be SIGKILLed, with its output kept for the failure message.
import { spawn, type ChildProcess } from 'node:child_process';
import { freePort } from '../support/ports.ts';
import { fileURLToPath } from 'node:url';
import type { ChaosWorkerOptions } from './worker.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const WORKER = fileURLToPath(new URL('./worker.ts', import.meta.url));

export interface Proc {
  child: ChildProcess;
  output(): string;
  /** lines the process printed so far, in order */
  lines(): string[];
  exited: Promise<number | null>;
  alive(): boolean;
  /** SIGKILL and wait for the exit */
  kill(): Promise<void>;
  /** waits until a printed line matches */
  waitForLine(pattern: RegExp, timeoutMs?: number): Promise<string>;
}

const everyProc = new Set<Proc>();

function launch(args: string[], env: NodeJS.ProcessEnv): Proc {
  const { DATABASE_URL: _a, BATON_FAULTS: _b, ...rest } = process.env;
  const child = spawn(process.execPath, ['--import', 'tsx', ...args], {
    cwd: ROOT,
    env: { ...rest, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += String(d)));
  child.stderr!.on('data', (d) => (out += String(d)));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const proc: Proc = {
    child,
    output: () => out,
    lines: () => out.split('\n').filter(Boolean),
    exited,
    alive: () => child.exitCode === null && child.signalCode === null,
    async kill() {
      if (proc.alive()) child.kill('SIGKILL');
      await exited;
    },
    waitForLine: (pattern, timeoutMs = 20_000) =>
      waitFor(
        async () => proc.lines().find((l) => pattern.test(l)),
        timeoutMs,
        () => `a line matching ${pattern}; output:\n${out.slice(-4000)}`,
      ),
  };
  everyProc.add(proc);
  void exited.then(() => everyProc.delete(proc));
  return proc;
}

/** For afterAll/afterEach: no drill leaves a process behind. */
export async function killAll(): Promise<void> {
  await Promise.all([...everyProc].map((p) => p.kill()));
}

export interface NodeOptions {
  port?: number;
  /** BATON_FAULTS of this node */
  faults?: string;
  sweepIntervalMs?: number;
  retryBackoffMs?: number;
  env?: NodeJS.ProcessEnv;
}

export interface RuntimeNode extends Proc {
  url: string;
  port: number;
}

/** `baton serve` on databaseUrl (no samples), healthy before it returns. */
export async function startNode(databaseUrl: string, opts: NodeOptions = {}): Promise<RuntimeNode> {
  const port = opts.port ?? (await freePort());
  const proc = launch(['runtime/cli.ts', 'serve'], {
    DATABASE_URL: databaseUrl,
    PORT: String(port),
    HOST: '127.0.0.1',
    BATON_SAMPLES_DIR: '',
    BATON_SWEEP_INTERVAL_MS: String(opts.sweepIntervalMs ?? 100),
    BATON_RETRY_BACKOFF_MS: String(opts.retryBackoffMs ?? 50),
    LOG_LEVEL: 'warn',
    ...(opts.faults ? { BATON_FAULTS: opts.faults } : {}),
    ...opts.env,
  });
  const url = `http://127.0.0.1:${port}`;
  await waitFor(
    async () => {
      if (!proc.alive()) throw new Error(`node on port ${port} exited while starting:\n${proc.output()}`);
      try {
        return (await fetch(`${url}/healthz`)).ok ? true : undefined;
      } catch {
        return undefined;
      }
    },
    120_000,
    () => `node ${url} to be healthy; output:\n${proc.output()}`,
  ).catch(async (err: unknown) => {
    await proc.kill(); // a node too slow to start must not keep the port from the next try
    throw err;
  });
  return Object.assign(proc, { url, port });
}

/** An SDK worker process; it prints `locked|applied|short-circuited|done <taskId> <attempt>` and SDK log events. */
export function startWorker(opts: ChaosWorkerOptions, faults?: string): Proc {
  return launch([WORKER, JSON.stringify(opts)], { LOG_LEVEL: 'warn', ...(faults ? { BATON_FAULTS: faults } : {}) });
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Polls until check answers a value other than undefined (no vitest here: the soak runs outside it). */
export async function waitFor<T>(
  check: () => Promise<T | undefined>,
  timeoutMs: number,
  what: string | (() => string),
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline)
      throw new Error(`Timed out after ${timeoutMs} ms waiting for ${typeof what === 'function' ? what() : what}`);
    await sleep(50);
  }
}
