// A task whose workers keep dying on it: its leases expire, and past `retries +
// leaseExpiryAllowance` expiries it ends like a failure with no retries left instead of
// cycling forever (RELIABILITY.md, "lease expiry never uses a retry").
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { singleTaskBpmn } from '../../support/bpmn.ts';
import { complete, deploy, fetchTasks, historyKinds, start, waitForStatus, type LockedTask } from '../../support/flows.ts';
import { startTestServer, waitFor, type TestServer } from '../../support/server.ts';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({ sweepIntervalMs: 50, engine: { leaseExpiryAllowance: 2 } });
  await deploy(t.api, singleTaskBpmn('poison', 'poison', { retries: 1 }));
});
afterAll(async () => {
  await t.close();
});

/** Takes the task with a short lease, as a worker that dies at once would. */
async function takeAndDie(worker: string): Promise<LockedTask> {
  return waitFor(
    async () => (await fetchTasks(t.api, worker, ['poison'], { maxTasks: 1, lockDurationMs: 100 }))[0],
    10_000,
    'the task to be fetchable',
  );
}

describe('lease expiries', () => {
  it('given a task whose leases keep expiring, then it comes back retries + allowance times and then ends in an incident naming the expiries; a retry of the incident gives it a fresh budget', async () => {
    const id = await start(t.api, 'poison');
    // retries 1 + allowance 2: three expiries send it back to ready, the fourth ends it.
    let last: LockedTask | undefined;
    for (let i = 1; i <= 4; i++) last = await takeAndDie(`w${i}`);
    const stuck = await waitForStatus(t.api, id, 'incident');
    expect(stuck.status).toBe('incident');
    expect(await fetchTasks(t.api, 'w5', ['poison'], { maxTasks: 1 })).toEqual([]);
    const { rows: expiries } = await t.db.pool.query(
      `select data from events where instance_id = $1 and kind = 'task:lock_expired' order by seq`,
      [id],
    );
    expect(expiries.map((e) => [e.data.workerId, e.data.leaseExpiries, e.data.exhausted ?? false])).toEqual([
      ['w1', 1, false],
      ['w2', 2, false],
      ['w3', 3, false],
      ['w4', 4, true],
    ]);
    const incidents = (await t.api.get(`/api/incidents?status=open`)).body.items.filter(
      (x: { instanceId: string }) => x.instanceId === id,
    );
    expect(incidents).toHaveLength(1);
    expect(incidents[0]).toMatchObject({ kind: 'task_failed', stepId: 'work' });
    expect(incidents[0].message).toContain('lease expired 4 times');
    expect(incidents[0].message).toContain('w4');
    // The last holder answering late is refused and kept as a late result.
    expect((await complete(t.api, last!, 'w4')).status).toBe(409);

    // An operator retry: the task is fetchable again with a fresh expiry budget, and completes.
    expect((await t.api.post(`/api/incidents/${incidents[0].id}/retry`, {})).status).toBeLessThan(300);
    const again = await takeAndDie('w6');
    const {
      rows: [task],
    } = await t.db.pool.query('select lease_expiries from external_tasks where id = $1', [again.id]);
    expect(task.lease_expiries).toBe(0);
    expect((await complete(t.api, again, 'w6')).status).toBe(204);
    await waitForStatus(t.api, id, 'completed');
    const kinds = await historyKinds(t.api, id);
    expect(kinds.filter((k) => k === 'task:late_result')).toHaveLength(1);
    expect(kinds.filter((k) => k === 'task:completed')).toHaveLength(1);
  });

  it('given a task whose lease expired once, then the next fetch answers one fewer lease expiry left', async () => {
    const id = await start(t.api, 'poison');
    const first = await takeAndDie('x1');
    // retries 1 + allowance 2
    expect(first.leaseExpiriesLeft).toBe(3);
    const second = await takeAndDie('x2');
    expect(second).toMatchObject({ id: first.id, attempt: 2, leaseExpiriesLeft: 2, retriesLeft: 1 });
    expect((await complete(t.api, second, 'x2')).status).toBe(204);
    await waitForStatus(t.api, id, 'completed');
  });
});
