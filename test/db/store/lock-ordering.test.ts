// Task-only statements (fetch, lease expiry, late results) insert history rows whose
// foreign key touches the instance row while instance transitions hold it. These
// races must never deadlock or answer 5xx.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { singleTaskBpmn } from '../../support/bpmn.ts';
import { complete, deploy, fetchOne, fetchTasks, start } from '../../support/flows.ts';
import { startTestServer, type TestServer } from '../../support/server.ts';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
  await deploy(t.api, singleTaskBpmn('ordering', 'ordering-task'));
});
afterAll(async () => {
  await t.close();
});

describe('lock ordering', () => {
  it('given a cancel racing a fetch of the same instance task, then neither fails (30 rounds)', async () => {
    for (let round = 0; round < 30; round++) {
      const id = await start(t.api, 'ordering');
      const [fetched, canceled] = await Promise.all([
        t.api.post('/api/external-tasks/fetch-and-lock', {
          workerId: 'w',
          maxTasks: 5,
          topics: [{ name: 'ordering-task', lockDurationMs: 10_000 }],
        }),
        t.api.post(`/api/instances/${id}/cancel`),
      ]);
      expect(fetched.status, JSON.stringify(fetched.body)).toBe(200);
      expect(canceled.status, JSON.stringify(canceled.body)).toBe(200);
    }
  });

  it('given a lease expiring while its holder completes, then the complete either wins (204) or is refused (409), never an error (30 rounds)', async () => {
    for (let round = 0; round < 30; round++) {
      await start(t.api, 'ordering');
      const task = await fetchOne(t.api, 'w', 'ordering-task', 100);
      await new Promise((r) => setTimeout(r, 100 + (round % 5)));
      const [res, swept] = await Promise.all([complete(t.api, task, 'w'), t.server.sweeper.sweep()]);
      expect([204, 409], JSON.stringify(res.body)).toContain(res.status);
      if (res.status === 409) {
        expect(swept).toBeGreaterThan(0);
        const again = await fetchOne(t.api, 'w2', 'ordering-task');
        expect((await complete(t.api, again, 'w2')).status).toBe(204);
      }
    }
    expect(await fetchTasks(t.api, 'w', ['ordering-task'])).toEqual([]);
  });
});
