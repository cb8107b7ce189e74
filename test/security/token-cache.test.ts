// Stored tokens are looked up once and kept while changes to the tokens table are heard
// (migration 0020's trigger): a revoke by another connection is refused as soon as its
// notification arrives, a lookup that raced a change is not kept, and while the listening
// connection is down every request reads the table again.
import type { AddressInfo } from 'node:net';
import express from 'express';
import { pino } from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { authMiddleware, createAuthorizer } from '../../runtime/security/auth.ts';
import { hashToken } from '../../runtime/security/tokens.ts';
import { createPool, type Pool } from '../../runtime/store/db.ts';
import { TOKEN_CHANGES_APPLICATION, watchTokenChanges, type TokenChanges } from '../../runtime/store/token-changes.ts';
import { insertToken, revokeToken } from '../../runtime/store/tokens.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';

let db: TestDatabase;
let counted: Pool;
let changes: TokenChanges;
let server: ReturnType<ReturnType<typeof express>['listen']>;
let url: string;
/** find_active_token statements the authorizer sent */
let lookups = 0;
/** when set, a lookup's answer is held back this long after the database gave it */
let lookupDelayMs = 0;
/** changes the listener has passed on */
let heard = 0;

beforeAll(async () => {
  db = await createTestDatabase();
  // The real pool, counting (and on demand delaying) the token lookups it sends.
  counted = createPool({ connectionString: db.url });
  const query = counted.query.bind(counted) as (...args: unknown[]) => Promise<unknown>;
  (counted as { query: unknown }).query = async (...args: unknown[]) => {
    const lookup = (args[0] as { name?: string }).name === 'find_active_token';
    if (lookup) lookups++;
    const result = await query(...args);
    if (lookup && lookupDelayMs > 0) await new Promise((r) => setTimeout(r, lookupDelayMs));
    return result;
  };
  const log = pino({ level: 'silent' });
  // Reconnects 3 s after a drop: the down-connection case has that long to look.
  changes = await watchTokenChanges(db.url, log, 3000);
  changes.onChange(() => heard++);
  const app = express();
  app.use(authMiddleware(createAuthorizer(counted, log, { changes, openWithoutTokens: false }), log));
  app.get('/api/instances', (_req, res) => res.json([]));
  server = app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/instances`;
});
afterAll(async () => {
  await new Promise((r) => server?.close(r));
  await changes?.stop();
  await counted?.end();
  await db?.drop();
});

let n = 0;
let secret: string;
let name: string;
beforeEach(async () => {
  n++;
  name = `dash-${n}`;
  secret = `dash-secret-0123456789-${n}`;
  lookupDelayMs = 0;
  await insertToken(db.pool, { name, role: 'viewer', tokenHash: hashToken(secret) });
  await expect.poll(() => changes.listening, { timeout: 5000 }).toBe(true);
});

const get = async (token: string | undefined = secret): Promise<number> =>
  (await fetch(url, token ? { headers: { authorization: `Bearer ${token}` } } : {})).status;

describe('stored token cache', () => {
  it('given changes are heard, then a token is read once, and a revoke from another connection is refused once its notification arrives', async () => {
    expect(await get()).toBe(200);
    const before = lookups;
    for (let i = 0; i < 5; i++) expect(await get()).toBe(200);
    expect(lookups).toBe(before); // answered from the cache
    expect(await get('')).toBe(401);

    expect(await revokeToken(db.pool, name)).toBe(true);
    const revokedAt = performance.now();
    await expect.poll(() => get(), { timeout: 2000, interval: 5 }).toBe(401);
    expect(performance.now() - revokedAt).toBeLessThan(1000);
    for (let i = 0; i < 3; i++) expect(await get()).toBe(401);
  });

  it('given a lookup is under way when the token is revoked, then its answer is not kept', async () => {
    lookupDelayMs = 400;
    const racing = get(); // reads the row before the revoke, answers after it
    await expect.poll(() => lookups > 0 && lookupDelayMs > 0, { timeout: 2000 }).toBe(true);
    await new Promise((r) => setTimeout(r, 100)); // the lookup's statement is answered by now; the answer is held back
    expect(await revokeToken(db.pool, name)).toBe(true);
    expect(await racing).toBe(200); // it read the token before the revoke
    lookupDelayMs = 0;
    await expect.poll(() => get(), { timeout: 2000, interval: 5 }).toBe(401);
    const settled = lookups;
    expect(await get()).toBe(401);
    expect(lookups).toBe(settled + 1); // a revoked token is never kept: each request looks it up
  });

  it('given the listening connection is down, then every request reads the table and a revoke is refused on the next request; once it is back, the cache resumes', async () => {
    expect(await get()).toBe(200);
    const { rows } = await db.pool.query<{ ended: boolean }>(
      'select pg_terminate_backend(pid) as ended from pg_stat_activity where datname = current_database() and application_name = $1',
      [TOKEN_CHANGES_APPLICATION],
    );
    expect(rows).toEqual([{ ended: true }]);
    await expect.poll(() => changes.listening, { timeout: 2000, interval: 5 }).toBe(false);

    const down = lookups;
    expect(await get()).toBe(200);
    expect(await get()).toBe(200);
    expect(lookups).toBe(down + 2); // no cache while a change could go unheard
    expect(await revokeToken(db.pool, name)).toBe(true);
    expect(await get()).toBe(401); // the very next request
    expect(changes.listening).toBe(false); // all of the above happened while down

    await expect.poll(() => changes.listening, { timeout: 5000 }).toBe(true);
    const other = `dash-secret-0123456789-back-${n}`;
    const heardBefore = heard;
    await insertToken(db.pool, { name: `back-${n}`, role: 'viewer', tokenHash: hashToken(other) });
    // A lookup racing the insert's own notification is not kept; once it is heard, one is.
    await expect.poll(() => heard > heardBefore, { timeout: 2000 }).toBe(true);
    expect(await get(other)).toBe(200);
    const back = lookups;
    expect(await get(other)).toBe(200);
    expect(lookups).toBe(back);
  });
});
