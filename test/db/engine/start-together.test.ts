// Starts written together (engine/start-queue.ts, store/transition-statement.ts): while a start's
// statement is in flight, the starts that arrive wait and go as one statement. Each must
// write exactly what a lone start writes, a batch-mate's lost guard or refused input must
// not cost the others their start, and every combination of parts must prepare and run.
import { randomUUID } from 'node:crypto';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emptyEffects, type Effects } from '../../../runtime/model/effects.ts';
import { createEngine, type Engine } from '../../../runtime/engine/context.ts';
import { startInstance, type StartInstanceRequest } from '../../../runtime/engine/instances.ts';
import { transitionStatement, type TransitionWrite } from '../../../runtime/store/transition-statement.ts';

type TogetherKind = 'starts' | 'completes' | 'locked';
import { buildBpmn, singleTaskBpmn } from '../../support/bpmn.ts';
import { deploy } from '../../support/flows.ts';
import { startTestServer, waitFor, type TestServer } from '../../support/server.ts';

let t: TestServer;
let engine: Engine;
const log = pino({ level: 'silent' });

beforeAll(async () => {
  t = await startTestServer();
  // One start statement in flight at a time: whatever arrives meanwhile goes together next.
  engine = createEngine(t.db.pool, log, { startLanes: 1 });
  await deploy(t.api, singleTaskBpmn('st-single', 'st-single'));
  await deploy(
    t.api,
    buildBpmn(
      'st-waits',
      [
        { id: 'start', type: 'startEvent' },
        { id: 'fork', type: 'parallelGateway' },
        { id: 'a', type: 'serviceTask', topic: 'st-a', priority: 5, retries: 2 },
        { id: 'wait', type: 'catchEvent', timer: { duration: 'PT1H' } },
        { id: 'hear', type: 'catchEvent', signal: 'st-go' },
        { id: 'loop', type: 'serviceTask', topic: 'st-loop', multiInstance: { collection: '${items}', elementVariable: 'item' } },
        { id: 'join', type: 'parallelGateway' },
        { id: 'end', type: 'endEvent' },
      ],
      [
        { from: 'start', to: 'fork' },
        { from: 'fork', to: 'a' },
        { from: 'fork', to: 'wait' },
        { from: 'fork', to: 'hear' },
        { from: 'fork', to: 'loop' },
        { from: 'a', to: 'join' },
        { from: 'wait', to: 'join' },
        { from: 'hear', to: 'join' },
        { from: 'loop', to: 'join' },
        { from: 'join', to: 'end' },
      ],
    ),
  );
  await deploy(
    t.api,
    buildBpmn(
      'st-instant',
      [
        { id: 'start', type: 'startEvent' },
        { id: 'end', type: 'endEvent' },
      ],
      [{ from: 'start', to: 'end' }],
    ),
  );
});
afterAll(async () => {
  await t.close();
});

/** Starts them all in one turn of the event loop: the first goes alone, the others wait for it and go together. */
async function startAtOnce(reqs: StartInstanceRequest[]) {
  return Promise.all(reqs.map((req) => startInstance(engine, req)));
}

async function createdIds(reqs: StartInstanceRequest[]): Promise<string[]> {
  return (await startAtOnce(reqs)).map((r) => {
    if (!r.ok) throw new Error(`not started: ${r.reason}`);
    return r.instance.id;
  });
}

/** The transactions that wrote these instance rows. */
async function transactionsOf(ids: string[]): Promise<number> {
  const {
    rows: [r],
  } = await t.db.pool.query('select count(distinct xmin::text)::int as n from instances where id = any($1::uuid[])', [ids]);
  return r.n;
}

/** Everything a start wrote for the instance, with its ids, times and global seqs left out. */
async function written(id: string): Promise<Record<string, unknown>> {
  const q = async (sql: string) =>
    (await t.db.pool.query(sql, [id])).rows.map((row) => JSON.parse(JSON.stringify(row).replaceAll(id, 'ID')));
  return {
    instance: await q(
      `select definition_key, definition_version, business_key, status, variables, generation, revision, ended_at is null as open, created_at = updated_at as fresh from instances where id = $1`,
    ),
    steps: await q(
      `select step_id, generation, status, loop, ended_at is null as open, completed_seq is null as no_seq from steps where instance_id = $1 order by step_id`,
    ),
    flows: await q(`select flow_id, generation, state from flows where instance_id = $1 order by flow_id`),
    tasks:
      await q(`select step_id, generation, topic, priority, retries, retries_left, state, attempt, idempotency_key, loop_index, local_variables, worker_id, lock_token
                      from external_tasks where instance_id = $1 order by step_id, loop_index`),
    events: await q(
      `select kind, step_id, data, task_id is null as no_task, framed, generation from events where instance_id = $1 order by seq`,
    ),
    frames: await q(`select generation, seq, kind, data from frames where instance_id = $1 order by seq`),
    head: await q(`select generation, last_seq, ended_at is null as open from frame_heads where instance_id = $1`),
    timers: await q(`select step_id, generation, state, due_at - created_at as due_in from timers where instance_id = $1`),
    subscriptions: await q(`select step_id, generation, kind, name, correlation_key from subscriptions where instance_id = $1`),
    incidents: await q(`select step_id, kind from incidents where instance_id = $1`),
  };
}

describe('starts written together', () => {
  it('given starts of several processes arriving while one is written, then they go as one statement and each writes what a lone start writes', async () => {
    const kinds: StartInstanceRequest[] = [
      { definitionKey: 'st-single', variables: { n: 1 } },
      { definitionKey: 'st-waits', businessKey: `bk-${randomUUID()}`, variables: { items: ['x', 'y', 'z'] } },
      { definitionKey: 'st-instant', variables: { done: true } },
    ];
    // Each kind started alone first: the reference rows.
    const alone: string[] = [];
    for (const req of kinds) alone.push(...(await createdIds([req])));
    const reqs = [kinds[0]!, ...kinds.map((k) => ({ ...k, ...(k.businessKey ? { businessKey: `bk-${randomUUID()}` } : {}) }))];
    const ids = await createdIds(reqs);
    // the first alone, the other three in one statement
    expect(await transactionsOf(ids)).toBe(2);
    expect(await transactionsOf(ids.slice(1))).toBe(1);
    for (const [k, id] of ids.entries()) {
      const ref = await written(alone[kinds.indexOf(kinds.find((x) => x.definitionKey === reqs[k]!.definitionKey)!)]!);
      const got = await written(id);
      // the business keys differ by construction
      if (reqs[k]!.businessKey) {
        expect((got.instance as { business_key: string }[])[0]!.business_key).toBe(reqs[k]!.businessKey);
        // a wait without a key of its own waits on the business key, as a lone start's does
        expect((got.subscriptions as { correlation_key: unknown }[]).map((x) => x.correlation_key)).toEqual([
          reqs[k]!.businessKey,
        ]);
        for (const x of [ref, got]) (x.instance as { business_key: unknown }[])[0]!.business_key = 'BK';
        for (const x of [ref, got])
          for (const e of x.events as { data: { businessKey?: unknown } }[]) if (e.data.businessKey) e.data.businessKey = 'BK';
        for (const x of [ref, got])
          for (const f of x.frames as { data: { businessKey?: unknown } }[]) if (f.data.businessKey) f.data.businessKey = 'BK';
        for (const x of [ref, got]) for (const s of x.subscriptions as { correlation_key: unknown }[]) s.correlation_key = 'BK';
      }
      expect(got, reqs[k]!.definitionKey).toEqual(ref);
    }
    const waits = await written(ids[2]!);
    // the parts of the process with waits were all there to compare
    expect([
      (waits.tasks as unknown[]).length,
      (waits.timers as unknown[]).length,
      (waits.subscriptions as unknown[]).length,
    ]).toEqual([4, 1, 1]);
    expect((await written(ids[3]!)).instance).toMatchObject([{ status: 'completed', open: false }]);
  });

  it('given a batch in which one business key is taken and two starts share a new one, then the others start, and each key has one instance', async () => {
    const taken = `taken-${randomUUID()}`;
    const shared = `shared-${randomUUID()}`;
    const [holder] = await createdIds([{ definitionKey: 'st-single', businessKey: taken }]);
    const results = await startAtOnce([
      { definitionKey: 'st-single' },
      { definitionKey: 'st-single', businessKey: taken },
      { definitionKey: 'st-single', businessKey: shared },
      { definitionKey: 'st-single', businessKey: shared },
      { definitionKey: 'st-single' },
    ]);
    const got = results.map((r) => (r.ok ? { created: r.created, id: r.instance.id } : { created: undefined, id: r.reason }));
    expect(got[1]).toEqual({ created: false, id: holder });
    expect([got[2]!.created, got[3]!.created].sort()).toEqual([false, true]);
    expect(got[2]!.id).toBe(got[3]!.id);
    expect([got[0]!.created, got[4]!.created]).toEqual([true, true]);
    const { rows } = await t.db.pool.query(
      `select business_key, count(*)::int as n from instances where business_key = any($1::text[]) group by 1 order by 1`,
      [[taken, shared]],
    );
    expect(rows).toEqual(
      [
        { business_key: shared, n: 1 },
        { business_key: taken, n: 1 },
      ].sort((a, b) => (a.business_key < b.business_key ? -1 : 1)),
    );
    // the lone starts' tasks each once
    const {
      rows: [tasks],
    } = await t.db.pool.query('select count(*)::int as n from external_tasks where instance_id = any($1::uuid[])', [
      [got[0]!.id, got[2]!.id, got[4]!.id],
    ]);
    expect(tasks.n).toBe(3);
  });

  it('given a newer version deployed after the node cached the old one, then a batch of starts falls back and every start gets the newest', async () => {
    const key = `st-versioned-${randomUUID().slice(0, 8)}`;
    await deploy(t.api, singleTaskBpmn(key, 'st-v1'));
    await createdIds([{ definitionKey: key }]); // caches version 1 as the target
    // A second node deploys version 2; this engine still aims at version 1.
    await deploy(t.api, singleTaskBpmn(key, 'st-v2'));
    const ids = await createdIds(Array.from({ length: 4 }, () => ({ definitionKey: key })));
    const { rows } = await t.db.pool.query('select distinct definition_version as v from instances where id = any($1::uuid[])', [
      ids,
    ]);
    expect(rows).toEqual([{ v: 2 }]);
    const { rows: topics } = await t.db.pool.query(
      'select distinct topic from external_tasks where instance_id = any($1::uuid[])',
      [ids],
    );
    expect(topics).toEqual([{ topic: 'st-v2' }]);
  });

  it('given a start whose variables PostgreSQL refuses in a batch, then that start fails alone and its batch-mates start', async () => {
    const results = await Promise.allSettled([
      startInstance(engine, { definitionKey: 'st-single', variables: { k: 'first' } }),
      startInstance(engine, { definitionKey: 'st-single', variables: { k: 'a' } }),
      startInstance(engine, { definitionKey: 'st-single', variables: { k: 'bad \u0000 byte' } }),
      startInstance(engine, { definitionKey: 'st-single', variables: { k: 'b' } }),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    expect((results[2] as PromiseRejectedResult).reason.code).toBe('22P05');
    const ids = results.filter((r) => r.status === 'fulfilled').map((r) => (r.value as { instance: { id: string } }).instance.id);
    const {
      rows: [n],
    } = await t.db.pool.query(
      `select count(*)::int as n from external_tasks where instance_id = any($1::uuid[]) and state = 'ready'`,
      [ids],
    );
    expect(n.n).toBe(3);
  });

  it('given the connection of a batch of starts lost while its statement waits, then every start of it fails and none is written, nor tried again', async () => {
    const key = `held-${randomUUID()}`;
    const marker = randomUUID();
    // Another transaction inserts the key and stays open: the batch's insert of that key waits for it.
    const holder = await t.db.pool.connect();
    try {
      await holder.query('begin');
      await holder.query(
        `insert into instances (id, definition_id, definition_key, definition_version, business_key, variables, status, revision)
                          select gen_random_uuid(), id, key, version, $1, '{}', 'running', 1 from definitions where key = 'st-single' order by version desc limit 1`,
        [key],
      );
      const settled = (p: Promise<unknown>) =>
        p.then(
          () => ({ ok: true as const }),
          (err: { severity?: string }) => ({ ok: false as const, severity: err.severity }),
        );
      const starts = [
        settled(startInstance(engine, { definitionKey: 'st-single', variables: { marker, k: 'alone' } })),
        settled(startInstance(engine, { definitionKey: 'st-single', businessKey: key, variables: { marker, k: 'keyed' } })),
        settled(startInstance(engine, { definitionKey: 'st-single', variables: { marker, k: 'mate' } })),
      ];
      // the batch's backend waits for the holder's row: its connection is cut
      const holderPid = (holder as unknown as { processID: number }).processID;
      await waitFor(
        async () => {
          const { rows } = await t.db.pool.query(
            `select pid from pg_stat_activity where wait_event_type = 'Lock' and query like '%insert into instances%' and pid <> $1`,
            [holderPid],
          );
          return rows.length === 1 ? t.db.pool.query('select pg_terminate_backend($1)', [rows[0].pid]) : undefined;
        },
        5_000,
        'the batch waiting for the held key',
      );
      const singles = await Promise.all(starts);
      // the first start went alone and stands; its two batch-mates failed with the lost connection
      expect(singles.map((x) => x.ok)).toEqual([true, false, false]);
      expect(singles.slice(1).map((x) => (x.ok ? 'written' : x.severity))).toEqual(['FATAL', 'FATAL']);
    } finally {
      await holder.query('rollback').catch(() => undefined);
      holder.release();
    }
    const { rows } = await t.db.pool.query(
      `select variables->>'k' as k from instances where variables->>'marker' = $1 order by 1`,
      [marker],
    );
    expect(rows).toEqual([{ k: 'alone' }]);
  });

  it('given an idle node, then a lone start is written at once by its own statement', async () => {
    const t0 = performance.now();
    const [id] = await createdIds([{ definitionKey: 'st-single' }]);
    expect(performance.now() - t0).toBeLessThan(2_000);
    expect(await transactionsOf([id!])).toBe(1);
  });
});

const PARTS: ((fx: Effects) => void)[] = [
  (fx) => fx.steps.push({ stepId: 'x1', status: 'active' }),
  (fx) => fx.flows.push({ flowId: 'fx1', state: 'taken' }),
  (fx) => fx.tasks.push({ stepId: 'x1', topic: 'st-shapes', priority: 0, retries: 1 }),
  (fx) => fx.incidents.push({ stepId: 'x1', kind: 'task_failed', message: 'm' }),
  (fx) => fx.timers.push({ stepId: 'w1', due: { interval: 'PT1H' } }),
  (fx) => fx.subscriptions.push({ stepId: 's1', kind: 'signal', name: 'n', correlationKey: null }),
  (fx) => fx.endedWaits.push('w2'),
  (fx) => fx.canceledTasks.push('x2'),
];

describe('the statements of transitions written together', () => {
  it("given every combination of parts, for starts, a batch's completes (framing the batch or not) and a batch's timer firings, then each statement prepares and runs, and one name always has one text", async () => {
    const definitionId = (await deploy(t.api, singleTaskBpmn('st-shapes', 'st-shapes'))).id;
    const existing = await createdIds([{ definitionKey: 'st-shapes' }, { definitionKey: 'st-shapes' }]);
    const texts = new Map<string, string>();
    const client = await t.db.pool.connect();
    try {
      for (let mask = 0; mask < 1 << PARTS.length; mask++) {
        for (const [kind, framing] of [
          ['starts', false],
          ['completes', false],
          ['completes', true],
          ['locked', false],
        ] as [TogetherKind, boolean][]) {
          // a start raising an incident is never written together (the trigger frames it), nor framed by a batch's statement
          if ((kind === 'starts' || framing) && mask & 8) continue;
          const list: TransitionWrite[] = [0, 1].map((k) => {
            const fx = emptyEffects();
            PARTS.forEach((add, i) => (mask & (1 << i) ? add(fx) : undefined));
            fx.events.push({ kind: 'step:activated', stepId: 'x1' });
            const id = kind === 'starts' ? randomUUID() : existing[k]!;
            return {
              instance: {
                id,
                definition_id: definitionId,
                definition_key: 'st-shapes',
                definition_version: 1,
                business_key: k === 0 ? null : `shape-${randomUUID()}`,
                status: 'running',
                variables: {},
                generation: 1,
                revision: 1,
                created_at: new Date(),
                updated_at: new Date(),
                ended_at: null,
              },
              effects: fx,
              status: 'running',
              variables: { mask },
              ...(kind === 'starts' ? { insert: { latestOnly: k === 1 } } : { framesAtEnd: true }),
              ...(kind === 'completes'
                ? { guard: { revision: 1, completes: { taskId: randomUUID(), workerId: 'w', lockToken: randomUUID() } } }
                : {}),
            };
          });
          const st = transitionStatement(list, { alone: kind === 'starts', ...(framing ? { frameBatch: list } : {}) });
          expect(texts.get(st.name) ?? st.text, st.name).toBe(st.text);
          texts.set(st.name, st.text);
          await client.query('begin');
          try {
            await client.query(st);
            // completes names tasks nobody holds: that guard must lose
            expect(kind, st.name).not.toBe('completes');
          } catch (err) {
            expect([kind, (err as { code?: string }).code], `${st.name}: ${(err as Error).message}`).toEqual([
              'completes',
              'BT409',
            ]);
          } finally {
            await client.query('rollback');
          }
        }
      }
    } finally {
      client.release();
    }
    expect(texts.size).toBeGreaterThan(700);
  });
});
