// Every connection of Baton's pools plans with plan_cache_mode = force_generic_plan and
// enable_seqscan = off (store/db.ts PLANNER_SETTINGS_SQL): a hot statement first planned on an
// empty table must still go by its index once the table has grown (with the defaults it
// kept scanning `instances` whole until the next analyze: about 3,500 scans of it in a
// three-step bench round, docs/PERFORMANCE.md "Session 19"). The API's lists run with
// PostgreSQL's defaults (withPlannerDefaults): a plan for the filter's value, so a rare
// status is searched by its index; planned once for any value, the instance list by status
// walked the whole of instances_list_idx.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countCamundaTasks, findCamundaTask, listCamundaTasks } from '../../../runtime/camunda/store/queries.ts';
import { createPool, withPlannerDefaults, type Queryable } from '../../../runtime/store/db.ts';
import { listIncidents } from '../../../runtime/store/incidents.ts';
import { lockInstancesOfTasks, readTaskTransitions } from '../../../runtime/store/instances.ts';
import { readGauges, readGaugesIn } from '../../../runtime/store/ops.ts';
import { sampleHeatmap } from '../../../runtime/store/diagrams.ts';
import { listInstances } from '../../../runtime/store/queries.ts';
import { listEndedInstancesWithHistory } from '../../../runtime/store/retention.ts';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';
import type { PlanNode } from '../../support/plans.ts';

let db: TestDatabase;
const RUNNING = 5;
const ENDED = 3000;

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

type Explained = { 'QUERY PLAN': [{ Plan: PlanNode }] };

/** The scans of `table` in a plan, as "Node Type on index [cond]" strings. */
function scans(rows: Explained[], table: string): string[] {
  const out: string[] = [];
  const walk = (n: PlanNode) => {
    if (n['Relation Name'] === table && n['Node Type'].endsWith('Scan')) {
      out.push(
        `${n['Node Type']}${n['Index Name'] ? ` on ${n['Index Name']}` : ''}${n['Index Cond'] ? ` ${n['Index Cond']}` : ''}`,
      );
    }
    (n.Plans ?? []).forEach(walk);
  };
  walk(rows[0]!['QUERY PLAN'][0].Plan);
  return out;
}

/** The statement a read sends (unnamed), prepared on `c` as `name`; then the plan `execute name(literals)` gets. */
async function explainUnnamed(
  c: Queryable,
  name: string,
  literals: string,
  read: (q: Queryable) => Promise<unknown>,
): Promise<Explained[]> {
  let text = '';
  await read({
    query: ((config: string, values: unknown[]) => {
      text = config;
      return c.query(config, values);
    }) as Queryable['query'],
  });
  await c.query(`prepare ${name} as ${text}`);
  const { rows } = await c.query<Explained>(`explain (format json) execute ${name}(${literals})`);
  await c.query(`deallocate ${name}`);
  return rows;
}

describe('planner settings of the pool', () => {
  it('given a URL with options of its own, then a pool connection keeps them and plans generically without sequential scans', async () => {
    const u = new URL(db.url);
    u.searchParams.set('options', '-c work_mem=7MB');
    const pool = createPool({ connectionString: u.toString(), max: 1 });
    try {
      const {
        rows: [s],
      } = await pool.query(`select current_setting('plan_cache_mode') as mode, current_setting('enable_seqscan') as seqscan,
                                                     current_setting('jit') as jit, current_setting('work_mem') as work_mem`);
      expect(s).toEqual({ mode: 'force_generic_plan', seqscan: 'off', jit: 'off', work_mem: '7MB' });
      // A scan nothing can replace costs 10^10 now: never JIT-compiled (on a server built with LLVM it took 100-300 ms).
      const {
        rows: [plan],
      } = await pool.query<{ 'QUERY PLAN': [Record<string, unknown>] }>(
        `explain (analyze, format json) select md5(string_agg(x::text, '|')) from schema_migrations x`,
      );
      expect(plan!['QUERY PLAN'][0]['JIT']).toBeUndefined();
    } finally {
      await pool.end();
    }
  });

  it("given withPlannerDefaults, then its reads plan with PostgreSQL's defaults and the connection goes back to the pool's settings", async () => {
    const pool = createPool({ connectionString: db.url, max: 1 });
    // reset_val: the server's setting, which `set local jit = default` brings back
    const settings = `select current_setting('plan_cache_mode') as mode, current_setting('enable_seqscan') as seqscan, current_setting('jit') as jit,
                              (select reset_val from pg_settings where name = 'jit') as server_jit`;
    try {
      const inside = (await withPlannerDefaults(pool, (q) => q.query(settings))).rows[0];
      expect(inside).toEqual({ mode: 'auto', seqscan: 'on', jit: inside.server_jit, server_jit: expect.any(String) });
      expect((await pool.query(settings)).rows[0]).toMatchObject({ mode: 'force_generic_plan', seqscan: 'off', jit: 'off' });
    } finally {
      await pool.end();
    }
  });

  it("given the batch complete's statements first planned on empty tables, then after the tables grew they still find instances by index", async () => {
    const c = await db.pool.connect();
    try {
      // planned now, on empty tables (the template database was never analyzed)
      await c.query('begin');
      expect(await lockInstancesOfTasks(c, [crypto.randomUUID()])).toEqual([]);
      expect((await readTaskTransitions(c, [crypto.randomUUID()])).size).toBe(0);
      await c.query('commit');
      await c.query('set session_replication_role = replica'); // rows only: no foreign-key triggers for the load
      await c.query(`insert into instances (id, definition_id, definition_key, definition_version, status, revision)
                     select gen_random_uuid(), gen_random_uuid(), 'grown', 1, 'canceled', 1 from generate_series(1, 3000)`); // not running: that status stays rare below
      await c.query(`insert into external_tasks (instance_id, step_id, generation, topic, retries, retries_left, idempotency_key, state, worker_id, lock_token, lock_expires_at)
                     select id, 'work', 1, 'grown', 3, 3, id::text, 'locked', 'w', gen_random_uuid(), now() + interval '1 hour' from instances where definition_key = 'grown'`);
      await c.query('set session_replication_role = origin');
      const {
        rows: [task],
      } = await c.query<{ id: string }>(`select id from external_tasks where topic = 'grown' limit 1`);
      const ids = `array['${task!.id}']::uuid[]`; // an id read back from the table
      const { rows: lock } = await c.query<Explained>(`explain (format json) execute lock_instances_of_tasks(${ids})`);
      expect(scans(lock, 'instances')).toEqual([expect.stringMatching(/^Index Scan on instances_pkey/)]);
      const { rows: read } = await c.query<Explained>(`explain (format json) execute read_task_transitions(${ids})`);
      expect(scans(read, 'instances')).toEqual([expect.stringMatching(/^Index Scan on instances_pkey/)]);
    } finally {
      c.release();
    }
  });

  describe('given 3,000 ended instances and a few running ones, analyzed', () => {
    beforeAll(async () => {
      const c = await db.pool.connect();
      try {
        await c.query('set session_replication_role = replica');
        // One definition row for them: a version's heatmap finds its instances by definition id.
        await c.query(`with d as (insert into deployments (name) values ('listed') returning id)
                       insert into definitions (id, key, version, fingerprint, xml_sha256, xml, plan, deployment_id, resource_name)
                       select '00000000-0000-4000-8000-00000000a001', 'listed', 1, 'f', 's', '<x/>', '{}', d.id, 'listed.bpmn' from d`);
        await c.query(
          `insert into instances (id, definition_id, definition_key, definition_version, business_key, status, revision, created_at, ended_at)
                       select gen_random_uuid(), '00000000-0000-4000-8000-00000000a001', 'listed', 1, 'bk-' || n, case when n <= $1 then 'running' else 'completed' end, 1,
                              now() - n * interval '1 second', case when n > $1 then now() - n * interval '1 second' end
                         from generate_series(1, $2::int) n`,
          [RUNNING, RUNNING + ENDED],
        );
        await c.query(`insert into incidents (instance_id, step_id, generation, kind, message, status, resolved_at)
                       select id, 'work', 1, 'task_failed', 'boom', 'resolved', now() from instances where definition_key = 'listed'`);
        // a done task and its history per ended instance; a ready task per running one, one of them locked
        await c.query(`insert into external_tasks (instance_id, step_id, generation, topic, state, retries, retries_left, idempotency_key, worker_id, lock_token, lock_expires_at)
                       select id, 'work', 1, 'listed-task', case when status = 'running' then 'ready' else 'done' end, 3, 3, id::text, 'w', gen_random_uuid(), now()
                         from instances where definition_key = 'listed'`);
        await c.query(`update external_tasks set state = 'locked', lock_expires_at = now() + interval '1 hour'
                        where id = (select id from external_tasks where topic = 'listed-task' and state = 'ready' limit 1)`);
        await c.query(`update external_tasks set state = 'failed', retries_left = 0
                        where id = (select id from external_tasks where topic = 'listed-task' and state = 'done' limit 1)`);
        await c.query(
          `insert into events (seq, instance_id, generation, kind, step_id) select baton_event_seq(instance_id), instance_id, 1, 'task:completed', 'work' from external_tasks where state = 'done'`,
        );
        await c.query('set session_replication_role = origin');
        await c.query('analyze instances; analyze incidents; analyze external_tasks; analyze events');
      } finally {
        c.release();
      }
    });

    it('then the instance list by a rare status, planned with the defaults, searches instances_status_idx and answers the running ones', async () => {
      const running = await withPlannerDefaults(db.pool, (q) =>
        listInstances(q, { status: 'running', definitionKey: 'listed', limit: 50 }),
      );
      expect(running.map((r) => r.business_key).sort()).toEqual(['bk-1', 'bk-2', 'bk-3', 'bk-4', 'bk-5']);
      const plan = await withPlannerDefaults(db.pool, (c) =>
        explainUnnamed(c, 'list_by_status', `'running', 50`, (q) => listInstances(q, { status: 'running', limit: 50 })),
      );
      expect(scans(plan, 'instances')).toEqual([expect.stringMatching(/^Index Scan on instances_status_idx \(status = /)]);
    });

    it('then /metrics counts live instances and open tasks through their partial indexes, never the ended ones', async () => {
      const gauges = await readGauges(db.pool);
      expect(gauges.instances.filter((r) => r.definition_key === 'listed')).toEqual([
        { definition_key: 'listed', status: 'running', count: RUNNING },
      ]);
      expect(
        gauges.tasks
          .filter((r) => r.topic === 'listed-task')
          .map(({ state, count }) => ({ state, count }))
          .sort((a, b) => a.state.localeCompare(b.state)),
      ).toEqual([
        { state: 'locked', count: 1 },
        { state: 'ready', count: RUNNING - 1 },
      ]);
      const texts: string[] = [];
      const plans = await withPlannerDefaults(db.pool, async (c) => {
        await readGaugesIn({
          query: ((config: { text: string }) => {
            texts.push(config.text);
            return c.query(config);
          }) as Queryable['query'],
        });
        return Promise.all(texts.map(async (text) => (await c.query<Explained>(`explain (format json) ${text}`)).rows));
      });
      const scansOf = (table: string) => plans.flatMap((plan) => scans(plan, table));
      expect(scansOf('instances')).toEqual([expect.stringMatching(/^(Index|Bitmap Index) Scan on instances_status_idx/)]);
      expect(scansOf('external_tasks')).toEqual([
        expect.stringMatching(/^(Index|Bitmap Index|Index Only) Scan on external_tasks_ready(_age)?_idx/),
        expect.stringMatching(/^(Index|Bitmap Index|Index Only) Scan on external_tasks_locked_topic_idx/),
      ]);
      expect(scansOf('events')).toEqual([
        expect.stringMatching(/^(Index|Bitmap Index|Index Only) Scan on events_lock_expired_idx/),
      ]);
      expect(scansOf('incidents')).toEqual([
        expect.stringMatching(/^(Index|Bitmap Index|Index Only) Scan on incidents_open_idx/),
      ]);
    });

    it("then a Camunda look-up of a task by id, or of an instance's tasks, reads them by index, not every task", async () => {
      const {
        rows: [one],
      } = await db.pool.query<{ id: string; instance_id: string }>(
        `select id, instance_id from external_tasks where state = 'ready' limit 1`,
      );
      expect((await findCamundaTask(db.pool, one!.id.toUpperCase()))?.id).toBe(one!.id);
      expect(await findCamundaTask(db.pool, 'not-a-uuid')).toBeUndefined();
      const c = await db.pool.connect(); // the pool's settings, as findCamundaTask runs
      const byId = await explainUnnamed(
        c,
        'camunda_task_by_id',
        `'${one!.id}', 0, 1`, // an id read back from the table
        (q) => listCamundaTasks(q, { externalTaskId: one!.id, firstResult: 0, maxResults: 1 }),
      ).finally(() => c.release());
      expect(scans(byId, 'external_tasks')).toEqual([expect.stringMatching(/^Index Scan on external_tasks_pkey/)]);
      const ofInstance = await withPlannerDefaults(db.pool, (c) =>
        explainUnnamed(c, 'camunda_tasks_of_instance', `'${one!.instance_id}', 0, 10`, (q) =>
          listCamundaTasks(q, { processInstanceId: one!.instance_id, firstResult: 0, maxResults: 10 }),
        ),
      );
      expect(scans(ofInstance, 'external_tasks')).toEqual([
        expect.stringMatching(/^(Index|Bitmap Index) Scan on external_tasks_element_key/),
      ]);
    });

    it('then the Camunda list and count of open tasks read the ready, locked, failed and suspended tasks by their indexes, not the done ones', async () => {
      const all = { topicName: 'listed-task', firstResult: 0, maxResults: 100 };
      const listed = await withPlannerDefaults(db.pool, (q) => listCamundaTasks(q, all));
      expect(listed.map((t) => t.state).sort()).toEqual(['failed', 'locked', 'ready', 'ready', 'ready', 'ready']);
      expect(listed.map((t) => t.created_at.getTime())).toEqual(listed.map((t) => t.created_at.getTime()).sort((a, b) => a - b));
      expect(await withPlannerDefaults(db.pool, (q) => countCamundaTasks(q, all))).toBe(RUNNING + 1);
      const texts: string[] = [];
      const plans = await withPlannerDefaults(db.pool, async (c) => {
        const capture = {
          query: ((text: string, values: unknown[]) => {
            texts.push(text);
            return c.query(text, values);
          }) as Queryable['query'],
        };
        await listCamundaTasks(capture, all);
        await countCamundaTasks(capture, all);
        return [
          (
            await c.query<Explained>(
              `explain (format json) ${texts[0]!.replaceAll('$1', `'listed-task'`).replace('$2', '0').replace('$3', '100')}`,
            )
          ).rows,
          (await c.query<Explained>(`explain (format json) ${texts[1]!.replaceAll('$1', `'listed-task'`)}`)).rows,
        ];
      });
      for (const plan of plans) {
        expect(scans(plan, 'external_tasks')).toEqual([
          expect.stringMatching(/^(Index|Bitmap Index|Index Only) Scan on external_tasks_ready(_age)?_idx/),
          expect.stringMatching(/^(Index|Bitmap Index|Index Only) Scan on external_tasks_(lock_expiry|locked_topic)_idx/),
          expect.stringMatching(/^(Index|Bitmap Index|Index Only) Scan on external_tasks_failed_idx/),
          expect.stringMatching(/^(Index|Bitmap Index|Index Only) Scan on external_tasks_suspended_idx/),
        ]);
      }
    });

    it('then the incidents of one instance, planned with the defaults, are searched by incidents_instance_idx', async () => {
      const {
        rows: [one],
      } = await db.pool.query<{ instance_id: string }>(`select instance_id from incidents limit 1`);
      const id = one!.instance_id;
      expect(
        (await withPlannerDefaults(db.pool, (q) => listIncidents(q, { instanceId: id, limit: 10 }))).map((i) => i.instance_id),
      ).toEqual([id]);
      const plan = await withPlannerDefaults(db.pool, (c) =>
        explainUnnamed(
          c,
          'list_incidents_of',
          `'resolved', '${id}', 10`, // an id read back from the table
          (q) => listIncidents(q, { status: 'resolved', instanceId: id, limit: 10 }),
        ),
      );
      expect(scans(plan, 'incidents')).toEqual([expect.stringMatching(/incidents_instance_idx/)]);
    });

    it('then the instance list by definition key, by business key alone or by a rare ended status reads an index of its own, not the whole list', async () => {
      const c = await db.pool.connect();
      try {
        // a definition whose few instances are older than every other one, and an ended status no other instance has
        await c.query('set session_replication_role = replica');
        await c.query(`insert into instances (id, definition_id, definition_key, definition_version, status, revision, created_at, ended_at)
                       select gen_random_uuid(), gen_random_uuid(), 'old-key', 1, case when n = 1 then 'compensated' else 'completed' end, 1,
                              now() - interval '1 day' - n * interval '1 second', now() - interval '1 day'
                         from generate_series(1, 10) n`);
        await c.query('set session_replication_role = origin');
        await c.query('analyze instances');
      } finally {
        c.release();
      }
      const list = (p: Omit<Parameters<typeof listInstances>[1], 'limit'>) =>
        withPlannerDefaults(db.pool, (q) => listInstances(q, { ...p, limit: 50 }));
      expect(await list({ definitionKey: 'old-key' })).toHaveLength(10);
      expect((await list({ businessKey: 'bk-77' })).map((r) => r.definition_key)).toEqual(['listed']);
      expect((await list({ status: 'compensated' })).map((r) => r.definition_key)).toEqual(['old-key']);
      const explain = (name: string, literals: string, p: Omit<Parameters<typeof listInstances>[1], 'limit'>) =>
        withPlannerDefaults(db.pool, (c) => explainUnnamed(c, name, literals, (q) => listInstances(q, { ...p, limit: 50 })));
      expect(scans(await explain('list_by_key', `'old-key', 50`, { definitionKey: 'old-key' }), 'instances')).toEqual([
        expect.stringMatching(/^Index Scan on instances_definition_idx \(definition_key = /),
      ]);
      expect(scans(await explain('list_by_business_key', `'bk-77', 50`, { businessKey: 'bk-77' }), 'instances')).toEqual([
        expect.stringMatching(/^(Index|Bitmap Index) Scan on instances_business_key_uq \(business_key = /),
      ]);
      expect(scans(await explain('list_compensated', `'compensated', 50`, { status: 'compensated' }), 'instances')).toEqual([
        expect.stringMatching(/^Index Scan on instances_rare_status_idx \(status = /),
      ]);
    });

    it('then the heatmap counts the newest instances of the key or of one version, found by index, and reads only their steps', async () => {
      const c = await db.pool.connect(); // the pool's settings, as the route runs it
      try {
        await c.query(`insert into steps (instance_id, step_id, generation, status)
                       select id, s, 1, case when s = 'work' and status = 'running' then 'active' else 'completed' end
                         from instances, unnest(array['start', 'work']) s where definition_key = 'listed'`);
        await c.query('analyze steps');
        const newest = await sampleHeatmap(c, 'listed', 1, 10);
        expect(newest).toMatchObject({
          size: 10,
          instances: { running: RUNNING, completed: 10 - RUNNING },
          elements: { start: { completed: 10 }, work: { active: RUNNING, completed: 10 - RUNNING } },
        });
        const {
          rows: [tenth],
        } = await c.query<{ created_at: Date }>(
          `select created_at from instances where definition_key = 'listed' order by created_at desc offset 9 limit 1`,
        );
        expect(newest.since).toEqual(tenth!.created_at);
        expect(await sampleHeatmap(c, 'listed', 2, 10)).toEqual({ size: 0, instances: {}, elements: {}, since: null });
        // The key's heatmap walks the key's index; a version's, the index that leads with its definition.
        expect(await sampleHeatmap(c, 'listed', undefined, 10)).toEqual(newest);
        const plan = await explainUnnamed(c, 'heatmap', `'listed', 1, 10000`, (q) => sampleHeatmap(q, 'listed', 1, 10));
        expect(scans(plan, 'instances')).toEqual([
          expect.stringMatching(/^Index Scan on instances_definition_idx \(definition_key = /),
          expect.stringMatching(/^Index Scan on instances_version_idx \(definition_id = /),
        ]);
        expect(scans(plan, 'steps')).toEqual([expect.stringMatching(/^Index Scan on steps_pkey \(instance_id = /)]);
      } finally {
        c.release();
      }
    });

    it('then an export page after a cursor starts its search of instances_retention_idx at the cursor', async () => {
      const c = await db.pool.connect();
      try {
        const before = new Date(Date.now() + 60_000);
        const first = await listEndedInstancesWithHistory(c, { before, limit: 10 });
        const last = first.at(-1)!;
        const next = await listEndedInstancesWithHistory(c, {
          before,
          limit: 10,
          after: { endedAt: last.cursor_at, id: last.id },
        });
        expect(next).toHaveLength(10);
        expect(next.filter((r) => first.some((f) => f.id === r.id))).toEqual([]);
        const { rows: plan } = await c.query<Explained>(`explain (format json) execute list_ended_instances_with_history_after(
          '${before.toISOString()}', 10, '${last.cursor_at}', '${last.id}')`); // values the statement answered
        expect(scans(plan, 'instances')).toEqual([expect.stringMatching(/^Index Scan on instances_retention_idx .*ended_at.*>/)]);
      } finally {
        c.release();
      }
    });
  });
});
