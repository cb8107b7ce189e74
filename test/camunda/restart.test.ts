// The server restarts (same port, same database) while Camunda clients poll and hold tasks.
import { pino } from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startBatonServer, type BatonServer } from '../../runtime/server.ts';
import { singleTaskBpmn } from '../support/bpmn.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { apiClient, waitFor } from '../support/server.ts';
import { deploy, waitForStatus } from '../support/flows.ts';
import { clientPool, deferred, startByKey } from './support.ts';

let db: TestDatabase;
let server: BatonServer;
const clients = clientPool();

function startServer(port: number): Promise<BatonServer> {
  return startBatonServer({
    databaseUrl: db.url,
    port,
    host: '127.0.0.1',
    log: pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }),
    sweepIntervalMs: 60_000,
  });
}

beforeAll(async () => {
  db = await createTestDatabase();
  server = await startServer(0);
});
afterAll(async () => {
  clients.stopAll();
  await server.close();
  await db.drop();
});

it('clients keep polling through a restart: a held task completes afterwards, new tasks are fetched', async () => {
  const api = apiClient(server.url);
  await deploy(api, singleTaskBpmn('rs_held', 'rs-held'));
  await deploy(api, singleTaskBpmn('rs_new', 'rs-new'));
  const port = Number(new URL(server.url).port);
  const client = clients.create(server.url, { asyncResponseTimeout: 5000, interval: 50 });
  const held = deferred<string>();
  const release = deferred();
  client.subscribe('rs-held', async ({ task, taskService }: any) => {
    held.resolve(task.id);
    await release.promise;
    await taskService.complete(task);
  });
  const fresh = deferred<string>();
  client.subscribe('rs-new', async ({ task, taskService }: any) => {
    await taskService.complete(task);
    fresh.resolve(task.processInstanceId);
  });
  client.start();
  const heldInstance = await startByKey(server.url, 'rs_held');
  await held.promise;
  await waitFor(async () => (server.parkedPolls.parked > 0 ? true : undefined), 10_000, 'a parked poll');

  await server.close(); // parked polls answer at once; further polls fail until the new server listens
  server = await startServer(port);
  expect(server.url).toBe(`http://127.0.0.1:${port}`);

  release.resolve();
  await waitForStatus(api, heldInstance, 'completed');
  const newInstance = await startByKey(server.url, 'rs_new');
  expect(await fresh.promise).toBe(newInstance);
  await waitForStatus(api, newInstance, 'completed');
});
