// /readyz follows the database: 503 while it refuses connections, 200 again once it is back.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { startTestServer, waitFor, type TestServer } from '../support/server.ts';

let t: TestServer;
let dbName = '';
beforeAll(async () => {
  t = await startTestServer();
  dbName = new URL(t.db.url).pathname.slice(1);
});
afterAll(async () => {
  await admin(`alter database ${pg.escapeIdentifier(dbName)} allow_connections true`).catch(() => undefined);
  await t?.close();
});

async function admin(sql: string, values: unknown[] = []): Promise<void> {
  const c = new pg.Client({ connectionString: inject('adminUrl') });
  await c.connect();
  try {
    await c.query(sql, values);
  } finally {
    await c.end();
  }
}

describe('/readyz', () => {
  it('is 200 when the database answers and every migration is applied; /healthz too', async () => {
    expect(await t.api.get('/readyz')).toMatchObject({ status: 200, body: { status: 'ready' } });
    expect((await t.api.get('/healthz')).status).toBe(200);
  });

  it('is 503 while the database refuses connections, and recovers when it takes them again', async () => {
    await admin(`alter database ${pg.escapeIdentifier(dbName)} allow_connections false`);
    await admin('select pg_terminate_backend(pid) from pg_stat_activity where datname = $1', [dbName]);
    const down = await waitFor(
      async () => {
        const res = await t.api.get('/readyz');
        return res.status === 503 ? res : undefined;
      },
      15_000,
      '/readyz to answer 503',
    );
    expect(down.body).toMatchObject({ type: 'Unavailable', message: expect.stringContaining('database') });

    await admin(`alter database ${pg.escapeIdentifier(dbName)} allow_connections true`);
    await waitFor(async () => ((await t.api.get('/readyz')).status === 200 ? true : undefined), 15_000, '/readyz to recover');
    expect((await t.api.get('/api/instances')).status).toBe(200);
  });
});
