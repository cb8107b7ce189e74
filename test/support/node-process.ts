// A Baton server as a real child process (`node runtime/cli.ts serve`) on a test database.
import { spawn, type ChildProcess } from 'node:child_process';
import { freePort } from './ports.ts';
import type { TestDatabase } from './db.ts';
import { apiClient, waitFor, type ApiClient } from './server.ts';

export interface NodeProcess {
  url: string;
  api: ApiClient;
  child: ChildProcess;
  exited: Promise<number | null>;
  output(): string;
  stop(): Promise<void>;
}

/** Starts a node and waits until /readyz answers; `env` adds or overrides variables. */
export async function spawnNode(db: TestDatabase, env: Record<string, string> = {}): Promise<NodeProcess> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  let output = '';
  const child = spawn(process.execPath, ['--import', 'tsx', 'runtime/cli.ts', 'serve'], {
    env: { ...process.env, DATABASE_URL: db.url, PORT: String(port), BATON_SAMPLES_DIR: '', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', (d) => (output += String(d)));
  child.stderr?.on('data', (d) => (output += String(d)));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  await waitFor(
    async () => ((await fetch(`${url}/readyz`).catch(() => undefined))?.ok ? true : undefined),
    60_000,
    () => `the node to be ready: ${output}`,
  );
  return {
    url,
    api: apiClient(url),
    child,
    exited,
    output: () => output,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}
