// Two nodes on one PostgreSQL with the same tokens: a deploy on one is startable on the other,
// a poll parked on one is woken by work created through the other, results go through either.
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseTokens } from '../../runtime/security/tokens.ts';
import { startBatonServer, type BatonServer } from '../../runtime/server.ts';
import { singleTaskBpmn } from '../support/bpmn.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { apiClient, waitFor, type ApiClient } from '../support/server.ts';

const ADMIN = 'admin-secret-0123456789';
const WORKER = 'worker-secret-0123456789';
let db: TestDatabase;
const nodes: BatonServer[] = [];
let adminA: ApiClient;
let adminB: ApiClient;
let workerB: ApiClient;

beforeAll(async () => {
  db = await createTestDatabase();
  for (let i = 0; i < 2; i++) {
    nodes.push(
      await startBatonServer({
        databaseUrl: db.url,
        port: 0,
        host: '127.0.0.1',
        log: pino({ level: 'silent' }),
        sweepIntervalMs: 60_000,
        auth: { tokens: parseTokens(`admin:ops:${ADMIN},worker:billing:${WORKER}`) },
      }),
    );
  }
  adminA = apiClient(nodes[0]!.url, ADMIN);
  adminB = apiClient(nodes[1]!.url, ADMIN);
  workerB = apiClient(nodes[1]!.url, WORKER);
});
afterAll(async () => {
  for (const n of nodes) await n.close();
  await db?.drop();
});

describe('two nodes', () => {
  it('deploy on A, start on B, a poll parked on B wakes for work started on A, complete on A', async () => {
    expect((await adminA.post('/api/definitions', { xml: singleTaskBpmn('shared', 'shared-task') })).status).toBe(201);
    const parked = workerB.post('/api/external-tasks/fetch-and-lock', {
      workerId: 'w',
      maxTasks: 1,
      waitMs: 20_000,
      topics: [{ name: 'shared-task', lockDurationMs: 30_000 }],
    });
    await waitFor(async () => (nodes[1]!.parkedPolls.parked > 0 ? true : undefined), 10_000, 'a poll parked on B');
    const started = await adminA.post('/api/instances', { definitionKey: 'shared', businessKey: 'one' });
    expect(started.status).toBe(201);
    const fetched = await parked;
    expect(fetched.status).toBe(200);
    expect(fetched.body).toHaveLength(1);
    const [task] = fetched.body;
    const workerA = apiClient(nodes[0]!.url, WORKER);
    expect(
      (await workerA.post(`/api/external-tasks/${task.id}/complete`, { workerId: 'w', lockToken: task.lockToken })).status,
    ).toBe(204);
    expect((await adminB.get(`/api/instances/${started.body.id}`)).body.status).toBe('completed');
    // The same business key through B finds A's instance.
    expect((await adminB.post('/api/instances', { definitionKey: 'shared', businessKey: 'one' })).body.id).toBe(started.body.id);
  });

  it('both are ready and report the same live instances in /metrics', async () => {
    expect((await adminA.post('/api/instances', { definitionKey: 'shared', businessKey: 'two' })).status).toBe(201);
    for (const client of [adminA, adminB]) {
      expect((await client.get('/readyz')).status).toBe(200);
      const res = await fetch(`${client === adminA ? nodes[0]!.url : nodes[1]!.url}/metrics`, {
        headers: { authorization: `Bearer ${ADMIN}` },
      });
      expect(await res.text()).toContain('baton_instances{definition_key="shared",status="running"} 1');
    }
  });
});
