// The `baton` command as a user runs it (runtime/bin/baton.js, a child process): help, which
// server `deploy` and `start` talk to, one readable line when that server is out of reach,
// and what a start with a business key already used says.
import { execFile } from 'node:child_process';
import { accessSync, constants, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serverUrl } from '../../runtime/ops/server-calls.ts';
import { singleTaskBpmn } from '../support/bpmn.ts';
import { deploy } from '../support/flows.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const root = path.resolve(import.meta.dirname, '../..');
const bin = path.join(root, 'runtime/bin/baton.js');

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
  await deploy(t.api, singleTaskBpmn('cli_start', 'cli-start'));
});
afterAll(async () => {
  await t?.close();
});

/** Runs the bin itself (its shebang and executable bit) with only the given server settings. */
async function baton(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  const { BATON_URL: _u, PORT: _p, BATON_TOKEN: _t, ...rest } = process.env;
  try {
    const { stdout, stderr } = await promisify(execFile)(bin, args, { cwd: root, env: { ...rest, ...env }, timeout: 60_000 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

describe('baton (the bin)', () => {
  it('given package.json, then its bin names an executable launcher, and --help prints the usage with exit code 0', async () => {
    expect(JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')).bin).toEqual({ baton: 'runtime/bin/baton.js' });
    accessSync(bin, constants.X_OK);
    const help = await baton(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('baton start <definitionKey>');
    expect(help.stdout).toContain('BATON_URL');
  });

  it('given BATON_URL, PORT or neither, then the server URL is BATON_URL, else 127.0.0.1:$PORT, else 127.0.0.1:8080', () => {
    expect(serverUrl({ BATON_URL: 'http://baton.example:9000/', PORT: '7000' })).toEqual({
      url: 'http://baton.example:9000',
      from: 'BATON_URL',
    });
    expect(serverUrl({ PORT: '7000' })).toEqual({ url: 'http://127.0.0.1:7000', from: 'PORT' });
    expect(serverUrl({})).toEqual({ url: 'http://127.0.0.1:8080', from: 'default' });
  });

  it('given BATON_URL where nothing listens, then one line names that URL and how to set it, and the exit code is 1', async () => {
    const url = `http://127.0.0.1:${await closedPort()}`;
    const res = await baton(['start', 'cli_start'], { BATON_URL: url });
    expect(res.code).toBe(1);
    const lines = res.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(`Cannot reach the Baton server at ${url} (from BATON_URL)`);
    expect(lines[0]).toContain('BATON_URL');
    expect(res.stderr).not.toMatch(/fetch failed|at .*\.ts:\d+/);
  });

  it('given only PORT, then the CLI calls 127.0.0.1 on that port: the message names it, and with the test server port a start works', async () => {
    const port = await closedPort();
    const refused = await baton(['start', 'cli_start'], { PORT: String(port) });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`Cannot reach the Baton server at http://127.0.0.1:${port} (from PORT)`);

    const served = await baton(['start', 'cli_start'], { PORT: new URL(t.url).port });
    expect(served.code).toBe(0);
    expect(JSON.parse(served.stdout)).toMatchObject({ definitionKey: 'cli_start', status: 'running' });
  });

  it('given a business key already used, when start is run again, then it says the instance already exists and answers it', async () => {
    const first = await baton(['start', 'cli_start', 'order-77'], { BATON_URL: t.url });
    expect(first.code).toBe(0);
    const created = JSON.parse(first.stdout);
    expect(first.stderr).toBe('');
    const again = await baton(['start', 'cli_start', 'order-77'], { BATON_URL: t.url });
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout).id).toBe(created.id);
    expect(again.stderr.trim()).toBe(`instance ${created.id} already exists for business key order-77`);
  });

  it('given a refused call, then the answer is printed and the exit code is 1', async () => {
    const res = await baton(['start', 'no_such_definition'], { BATON_URL: t.url });
    expect(res.code).toBe(1);
    expect(JSON.parse(res.stdout)).toMatchObject({ type: 'NotFound' });
  });
});
