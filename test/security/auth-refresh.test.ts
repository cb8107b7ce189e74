// The "are there stored tokens?" count is refreshed beside the requests, not in front of
// one of them: only the first request waits for it, and a created token still takes
// effect within about a second.
import type { AddressInfo } from 'node:net';
import express from 'express';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authMiddleware, createAuthorizer } from '../../runtime/security/auth.ts';
import { hashToken } from '../../runtime/security/tokens.ts';
import { createPool, type Pool } from '../../runtime/store/db.ts';
import { insertToken } from '../../runtime/store/tokens.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';

let db: TestDatabase;
let slow: Pool;
let server: ReturnType<ReturnType<typeof express>['listen']>;
let url: string;
const COUNT_DELAY_MS = 400;

beforeAll(async () => {
  db = await createTestDatabase();
  // The real count, answered COUNT_DELAY_MS late: a request that waits for it shows.
  slow = createPool({ connectionString: db.url });
  const query = slow.query.bind(slow) as (...args: unknown[]) => Promise<unknown>;
  (slow as { query: unknown }).query = async (...args: unknown[]) => {
    const result = await query(...args);
    if ((args[0] as { name?: string }).name === 'count_active_tokens') await new Promise((r) => setTimeout(r, COUNT_DELAY_MS));
    return result;
  };
  const app = express();
  const log = pino({ level: 'silent' });
  app.use(authMiddleware(createAuthorizer(slow, log, { openWithoutTokens: true }), log));
  app.get('/api/instances', (_req, res) => res.json([]));
  server = app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/instances`;
});
afterAll(async () => {
  await new Promise((r) => server?.close(r));
  await slow?.end();
  await db?.drop();
});

async function timedGet(): Promise<{ status: number; ms: number }> {
  const t0 = performance.now();
  const res = await fetch(url);
  return { status: res.status, ms: performance.now() - t0 };
}

describe('stored token count', () => {
  it('given the count is older than a second, then a request is answered without waiting for a new count; a token created meanwhile takes effect once the count comes back', async () => {
    const first = await timedGet();
    expect(first).toMatchObject({ status: 200 });
    expect(first.ms).toBeGreaterThanOrEqual(COUNT_DELAY_MS - 50); // the first request has nothing to go by
    await insertToken(db.pool, { name: 'dash', role: 'viewer', tokenHash: hashToken('dash-secret-0123456789') });
    await new Promise((r) => setTimeout(r, 1100));
    const stale = await timedGet();
    // Answered from the last count (no tokens: open on loopback), without the count's wait.
    expect(stale.status).toBe(200);
    expect(stale.ms).toBeLessThan(COUNT_DELAY_MS - 100);
    await expect.poll(async () => (await timedGet()).status, { timeout: 5000, interval: 100 }).toBe(401);
  });
});
