// Each role can do exactly what it should: every declared route, every caller.
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseTokens } from '../../runtime/security/tokens.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { databaseDigest } from './digest.ts';
import { concretePath, declaredRoutes } from './routes.ts';

const SECRETS = {
  admin: 'admin-secret-0123456789',
  worker: 'worker-secret-0123456789',
  viewer: 'viewer-secret-0123456789',
  person: 'person-secret-0123456789',
};
type Caller = 'none' | 'bad' | keyof typeof SECRETS;
const CALLERS: Caller[] = ['none', 'bad', 'admin', 'worker', 'viewer', 'person'];

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({
    auth: {
      tokens: parseTokens(
        `admin:ops:${SECRETS.admin},worker:billing:${SECRETS.worker},viewer:dash:${SECRETS.viewer},person:alice:${SECRETS.person}`,
      ),
      failures: { burst: 1_000_000, perMinute: 1_000_000 },
    },
  });
});
afterAll(async () => t?.close());

/** The issue's rules, written out independently of runtime/security/roles.ts. */
function expectedRoles(method: string, p: string): Caller[] | 'open' {
  if (p === '/healthz' || p === '/readyz') return 'open';
  const read = method === 'GET';
  const everyone: Caller[] = ['admin', 'worker', 'viewer', 'person'];
  if (p === '/api/me') return everyone;
  if (p.startsWith('/api/user-tasks') || p.startsWith('/engine-rest/task'))
    return read ? ['admin', 'viewer', 'person'] : ['admin', 'person'];
  if (p.startsWith('/api/external-tasks')) return ['admin', 'worker'];
  if (p.startsWith('/engine-rest/external-task')) return read ? everyone : ['admin', 'worker'];
  if (p === '/engine-rest/engine' || p === '/engine-rest/version') return everyone;
  if (p.startsWith('/api/element-templates')) return read ? everyone : ['admin', 'worker'];
  if (p.startsWith('/api/topics')) return read ? everyone : ['admin'];
  if (p === '/metrics') return read ? ['admin', 'viewer'] : ['admin'];
  if (read || p === '/api/definitions/lint') return ['admin', 'viewer', 'person'];
  return ['admin'];
}

function headersFor(caller: Caller, p: string): Record<string, string> {
  if (caller === 'none') return {};
  const secret = caller === 'bad' ? 'not-a-token-at-all-123' : SECRETS[caller];
  // Camunda clients authenticate with Basic; the password is the token.
  if (p.startsWith('/engine-rest') && caller === 'worker')
    return { authorization: `Basic ${Buffer.from(`billing:${secret}`).toString('base64')}` };
  return { authorization: `Bearer ${secret}` };
}

const routes = declaredRoutes(path.resolve(import.meta.dirname, '../..'));

describe('role table', () => {
  it("finds the routers' routes", () => {
    expect(routes.length).toBeGreaterThan(40);
    expect(routes.map((r) => `${r.method} ${r.path}`)).toContain('POST /api/external-tasks/:id/complete');
  });

  it('answers each caller of each route as the issue says, and denied calls change nothing', async () => {
    const before = await databaseDigest(t.db.pool);
    const wrong: string[] = [];
    for (const route of routes) {
      const p = concretePath(route.path);
      const allowed = expectedRoles(route.method, route.path);
      for (const caller of CALLERS) {
        const res = await fetch(`${t.url}${p}`, {
          method: route.method,
          headers: {
            ...headersFor(caller, route.path),
            ...(route.method === 'GET' || route.method === 'DELETE' ? {} : { 'content-type': 'application/json' }),
          },
          ...(route.method === 'GET' || route.method === 'DELETE' ? {} : { body: '{}' }),
        });
        const body = await res.text();
        const ok = allowed === 'open' || allowed.includes(caller);
        const expected = ok ? 'not 401/403' : caller === 'none' || caller === 'bad' ? 401 : 403;
        const fine = ok
          ? res.status !== 401 && res.status !== 403 && res.status < 500
          : res.status === expected && JSON.parse(body).type !== undefined;
        if (!fine) wrong.push(`${caller} ${route.method} ${p}: ${res.status} (expected ${expected}) ${body.slice(0, 120)}`);
      }
    }
    expect(wrong).toEqual([]);
    expect(await databaseDigest(t.db.pool)).toBe(before);
  });

  it('matches paths case-insensitively, as express routes them', async () => {
    const res = await fetch(`${t.url}/API/Instances/00000000-0000-4000-8000-000000000000/cancel`, {
      method: 'POST',
      headers: { authorization: `Bearer ${SECRETS.viewer}` },
    });
    expect(res.status).toBe(403);
  });

  it('opens the designer files and health, and answers 401 with JSON and a challenge', async () => {
    expect((await fetch(`${t.url}/healthz`)).status).toBe(200);
    const res = await fetch(`${t.url}/api/instances`);
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toContain('Bearer');
    expect(await res.json()).toMatchObject({ type: 'Unauthorized' });
  });
});
