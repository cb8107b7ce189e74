// Tokens from the environment and from the tokens table, the start-up refusal on a
// public address, the failed-auth rate limit, and logs that never carry a token.
import { execFile } from 'node:child_process';
import { Writable } from 'node:stream';
import { promisify } from 'node:util';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { readConfig } from '../../runtime/config.ts';
import { runOpsCommand } from '../../runtime/ops/commands.ts';
import { parseTokens } from '../../runtime/security/tokens.ts';
import { startBatonServer, type BatonServer } from '../../runtime/server.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';

const cleanup: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const fn of cleanup.reverse()) await fn();
});

async function freshDb(): Promise<TestDatabase> {
  const db = await createTestDatabase();
  cleanup.push(() => db.drop());
  return db;
}

function logCapture(): { log: pino.Logger; text: () => string } {
  let text = '';
  const sink = new Writable({
    write(chunk, _enc, done) {
      text += String(chunk);
      done();
    },
  });
  return { log: pino({ level: 'info' }, sink), text: () => text };
}

async function serve(db: TestDatabase, opts: Partial<Parameters<typeof startBatonServer>[0]> = {}): Promise<BatonServer> {
  const server = await startBatonServer({
    databaseUrl: db.url,
    port: 0,
    host: '127.0.0.1',
    log: pino({ level: 'silent' }),
    sweepIntervalMs: 60_000,
    ...opts,
  });
  cleanup.push(() => server.close());
  return server;
}

const get = (url: string, token?: string) => fetch(url, token ? { headers: { authorization: `Bearer ${token}` } } : {});

describe('start-up', () => {
  it('refuses to start on a non-loopback address without tokens, naming the fix', async () => {
    const db = await freshDb();
    await expect(serve(db, { host: '0.0.0.0' })).rejects.toThrow(/Refusing to start: HOST=0\.0\.0\.0 .*BATON_TOKENS/);
  });

  it('starts on a non-loopback address once a token is configured', async () => {
    const db = await freshDb();
    const server = await serve(db, { host: '0.0.0.0', auth: { tokens: parseTokens('viewer:dash:viewer-secret-0123456789') } });
    expect(server.url).toMatch(/^http:\/\/0\.0\.0\.0:\d+$/);
  });

  it('refuses short secrets and unknown roles in BATON_TOKENS', () => {
    expect(() => parseTokens('admin:short')).toThrow(/at least 16 characters/);
    expect(() => parseTokens('root:x:0123456789abcdefgh')).toThrow(/role must be one of admin, worker, viewer/);
    expect(parseTokens('worker:0123456789abcdefgh')).toMatchObject([{ name: 'worker-1', role: 'worker' }]);
  });
});

describe('stored tokens', () => {
  it('are created by the CLI, take effect on a running server, and stop working when revoked', async () => {
    const db = await freshDb();
    const server = await serve(db);
    expect((await get(`${server.url}/api/instances`)).status).toBe(200); // no tokens yet: open (loopback)

    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', 'runtime/cli.ts', 'token', 'create', '--role', 'viewer', '--name', 'dash'],
      {
        env: { ...process.env, DATABASE_URL: db.url },
      },
    );
    const secret = stdout.trim();
    expect(secret).toMatch(/^baton_[\w-]{43}$/);
    const { rows } = await db.pool.query('select token_hash from tokens');
    expect(JSON.stringify(rows)).not.toContain(secret); // only the hash is kept

    const config = readConfig({ DATABASE_URL: db.url });
    const lines: string[] = [];
    expect(await runOpsCommand(config, 'token', ['create', '--role', 'viewer', '--name', 'dash'], (l) => lines.push(l))).toBe(1);
    expect(lines.join()).toMatch(/exists already/);

    // Stored tokens are counted once a second: a new one takes effect within that.
    await expect.poll(async () => (await get(`${server.url}/api/instances`)).status, { timeout: 5000 }).toBe(401);
    expect((await get(`${server.url}/api/instances`, secret)).status).toBe(200);
    expect(
      (await fetch(`${server.url}/api/instances`, { method: 'POST', headers: { authorization: `Bearer ${secret}` } })).status,
    ).toBe(403);

    lines.length = 0;
    expect(await runOpsCommand(config, 'token', ['list'], (l) => lines.push(l))).toBe(0);
    expect(lines.join('\n')).toMatch(/^dash\tviewer\tcreated /);
    // A second token keeps the server closed once dash is revoked.
    expect(await runOpsCommand(config, 'token', ['create', '--role', 'admin', '--name', 'ops'], () => undefined)).toBe(0);
    expect(await runOpsCommand(config, 'token', ['revoke', 'dash'], () => undefined)).toBe(0);
    // Refused once the revoke's notification reaches the server (milliseconds), and from then on.
    await expect
      .poll(async () => (await get(`${server.url}/api/instances`, secret)).status, { timeout: 2000, interval: 5 })
      .toBe(401);
    expect((await get(`${server.url}/api/instances`, secret)).status).toBe(401);
    expect(await runOpsCommand(config, 'token', ['revoke', 'dash'], () => undefined)).toBe(1);
    // With the last token revoked, a loopback server is open again, as before any token existed.
    expect(await runOpsCommand(config, 'token', ['revoke', 'ops'], () => undefined)).toBe(0);
    await expect.poll(async () => (await get(`${server.url}/api/instances`)).status, { timeout: 2000, interval: 5 }).toBe(200);
  });

  it('given a server on a public address, when its last stored token is revoked, then it stays closed', async () => {
    const db = await freshDb();
    const config = readConfig({ DATABASE_URL: db.url });
    const lines: string[] = [];
    expect(await runOpsCommand(config, 'token', ['create', '--role', 'viewer', '--name', 'last'], (l) => lines.push(l))).toBe(0);
    const secret = lines.join('').trim();
    const server = await serve(db, { host: '0.0.0.0' });
    const url = server.url.replace('0.0.0.0', '127.0.0.1');
    expect((await get(`${url}/api/instances`, secret)).status).toBe(200);
    expect((await get(`${url}/api/instances`)).status).toBe(401);
    expect(await runOpsCommand(config, 'token', ['revoke', 'last'], () => undefined)).toBe(0);
    await expect.poll(async () => (await get(`${url}/api/instances`, secret)).status, { timeout: 2000, interval: 5 }).toBe(401);
    // No token is left, and still nothing is open.
    expect((await get(`${url}/api/instances`)).status).toBe(401);
    expect((await get(`${url}/api/definitions`)).status).toBe(401);
  });
});

describe('denied requests', () => {
  it('are logged without the token, and rate limited per address past the burst', async () => {
    const db = await freshDb();
    const { log, text } = logCapture();
    const secret = 'admin-secret-0123456789';
    const server = await serve(db, {
      log,
      auth: { tokens: parseTokens(`admin:ops:${secret}`), failures: { burst: 3, perMinute: 1 } },
    });
    const guess = 'guessed-token-abcdefghijk';
    for (let i = 0; i < 3; i++) expect((await get(`${server.url}/api/instances`, guess)).status).toBe(401);
    const limited = await get(`${server.url}/api/instances`, secret);
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(await limited.json()).toMatchObject({
      type: 'TooManyRequests',
      message: expect.stringMatching(/limit: auth failures/),
    });
    expect(text()).toContain('auth:denied');
    expect(text()).not.toContain(guess);
    expect(text()).not.toContain(secret);
    // Open routes stay open for a limited address: a load balancer's probe is not locked out.
    expect((await get(`${server.url}/healthz`)).status).toBe(200);
  });

  it('accept Basic on /engine-rest with the token as password', async () => {
    const db = await freshDb();
    const secret = 'worker-secret-0123456789';
    const server = await serve(db, { auth: { tokens: parseTokens(`worker:billing:${secret}`) } });
    const basic = (pw: string) => ({
      authorization: `Basic ${Buffer.from(`billing:${pw}`).toString('base64')}`,
      'content-type': 'application/json',
    });
    const body = JSON.stringify({ workerId: 'w', maxTasks: 1, topics: [{ topicName: 't', lockDuration: 1000 }] });
    expect(
      (await fetch(`${server.url}/engine-rest/external-task/fetchAndLock`, { method: 'POST', headers: basic(secret), body }))
        .status,
    ).toBe(200);
    expect(
      (
        await fetch(`${server.url}/engine-rest/external-task/fetchAndLock`, {
          method: 'POST',
          headers: basic('wrong-password-000000'),
          body,
        })
      ).status,
    ).toBe(401);
  });
});
