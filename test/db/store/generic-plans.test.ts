// Statements whose custom plans would be made afresh on every call. read_task_transitions
// takes an array of task ids; PostgreSQL's custom plan knows the array's length, the
// generic plan assumes 10, so with batches of other sizes the custom plan always looked
// cheaper and was planned anew each time (about 0.4 ms under the bench's load, as much as
// running it). Its ids come from a sub-select the planner cannot see into, which let the
// default plan_cache_mode keep the generic plan after five custom ones; the pool now forces
// generic plans (store/db.ts PLANNER_SETTINGS_SQL), so none is made per call at all.
// lock_instances_of_tasks the same (in the bench it was planned on 886 of 926 calls).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lockInstancesOfTasks, readTaskTransitions } from '../../../runtime/store/instances.ts';
import { singleTaskBpmn } from '../../support/bpmn.ts';
import { deploy, fetchTasks, start } from '../../support/flows.ts';
import { startTestServer, waitFor, type TestServer } from '../../support/server.ts';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
  await deploy(t.api, singleTaskBpmn('plans', 'plans'));
});
afterAll(async () => {
  await t.close();
});

describe('generic plans', () => {
  it('given batches of 1 to 4 tasks locked and read on one connection, then each statement runs its one generic plan, never a custom plan per call', async () => {
    for (let i = 0; i < 4; i++) await start(t.api, 'plans');
    const tasks = await waitFor(
      async () => {
        const got = await fetchTasks(t.api, 'w', ['plans'], { maxTasks: 4 });
        return got.length === 4 ? got : undefined;
      },
      5_000,
      'four tasks',
    );
    const ids = tasks.map((x) => x.id);
    const client = await t.db.pool.connect();
    try {
      for (let i = 0; i < 12; i++) {
        const batch = ids.slice(0, 1 + (i % 4));
        await client.query('begin');
        await lockInstancesOfTasks(client, batch);
        const read = await readTaskTransitions(client, batch);
        await client.query('commit');
        expect([...read.keys()].sort()).toEqual([...batch].sort());
      }
      const { rows } = await client.query(`select name, generic_plans, custom_plans from pg_prepared_statements
                                            where name in ('read_task_transitions', 'lock_instances_of_tasks') order by name`);
      expect(rows).toEqual([
        { name: 'lock_instances_of_tasks', generic_plans: 12, custom_plans: 0 },
        { name: 'read_task_transitions', generic_plans: 12, custom_plans: 0 },
      ]);
    } finally {
      client.release();
    }
  });
});
