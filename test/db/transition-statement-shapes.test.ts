// applyEffects writes each transition with a statement of only the parts it uses, one
// named prepared statement per shape (store/apply-effects.ts). PostgreSQL refuses a
// prepared statement that leaves a parameter unused or of unknown type, and the driver
// refuses one name with two texts: every shape is run here against a real instance.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emptyEffects, type Effects } from '../../runtime/model/effects.ts';
import { applyEffectsStatement } from '../../runtime/store/apply-effects.ts';
import { singleTaskBpmn } from '../support/bpmn.ts';
import { deploy, start } from '../support/flows.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

let t: TestServer;
let definitionId: string;
let instanceId: string;
beforeAll(async () => {
  t = await startTestServer();
  definitionId = (await deploy(t.api, singleTaskBpmn('shapes', 'shapes'))).id;
  instanceId = await start(t.api, 'shapes');
});
afterAll(async () => {
  await t.close();
});

const PARTS: ((fx: Effects) => void)[] = [
  (fx) => fx.steps.push({ stepId: 'x1', status: 'active' }),
  (fx) => fx.flows.push({ flowId: 'fx1', state: 'taken' }),
  (fx) => fx.tasks.push({ stepId: 'x1', topic: 'shapes-x', priority: 0, retries: 1 }),
  (fx) => fx.incidents.push({ stepId: 'x1', kind: 'task_failed', message: 'm' }),
  (fx) => fx.events.push({ kind: 'step:activated', stepId: 'x1' }),
  (fx) => fx.timers.push({ stepId: 'w1', due: { interval: 'PT1H' } }),
  (fx) => fx.subscriptions.push({ stepId: 's1', kind: 'signal', name: 'n', correlationKey: null }),
  (fx) => fx.endedWaits.push('w2'),
  (fx) => fx.canceledTasks.push('x2'),
];
// '-alone': the statement is its own transaction and frames its events itself
// '-end': inside a transaction that frames at its end (frameTransitions): a batch of
// completes (guarded), a batch of timer firings (the instance locked, no guard)
// '-handoff': a start, or an optimistic complete, that hands its new task to a parked poll (engine/poll-delivery.ts)
const MODES = [
  'update',
  'guard',
  'completes',
  'insert',
  'insert-latest',
  'guard-alone',
  'completes-alone',
  'insert-alone',
  'update-end',
  'guard-end',
  'completes-end',
  'insert-handoff',
  'insert-handoff-alone',
  'completes-handoff',
  'completes-handoff-alone',
] as const;

describe('applyEffects shapes', () => {
  it('given every combination of parts and every way of writing the row, then each statement prepares and runs, and one name always has one text', async () => {
    const {
      rows: [row],
    } = await t.db.pool.query('select revision, generation from instances where id = $1', [instanceId]);
    const texts = new Map<string, string>();
    const client = await t.db.pool.connect();
    try {
      for (let mask = 0; mask < 1 << PARTS.length; mask++) {
        for (const mode of MODES) {
          const fx = emptyEffects();
          PARTS.forEach((add, i) => (mask & (1 << i) ? add(fx) : undefined));
          const insert = mode.startsWith('insert');
          const st = applyEffectsStatement({
            instance: {
              id: insert ? randomUUID() : instanceId,
              generation: row.generation,
              business_key: null,
              definition_id: definitionId,
            },
            effects: fx,
            status: 'running',
            variables: { mask },
            incidentTaskIds: fx.incidents.map(() => null),
            ...(mode.startsWith('guard') ? { guard: { revision: row.revision } } : {}),
            ...(mode.startsWith('completes')
              ? { guard: { revision: row.revision, completes: { taskId: randomUUID(), workerId: 'w', lockToken: randomUUID() } } }
              : {}),
            ...(insert ? { insert: { latestOnly: mode === 'insert-latest' } } : {}),
            alone: mode.endsWith('-alone'),
            framesAtEnd: mode.endsWith('-end'),
            ...(mode.includes('handoff')
              ? {
                  delivery: fx.tasks.map((_, index) => ({
                    index,
                    taskId: randomUUID(),
                    workerId: 'w',
                    lockToken: randomUUID(),
                    lockDurationMs: 1000,
                  })),
                }
              : {}),
          });
          expect(texts.get(st.name) ?? st.text, st.name).toBe(st.text);
          texts.set(st.name, st.text);
          await client.query('begin');
          try {
            await client.query(st);
            // completes names a task nobody holds: that guard must lose
            expect(mode.startsWith('completes'), st.name).toBe(false);
          } catch (err) {
            expect(
              [mode.startsWith('completes'), (err as { code?: string }).code],
              `${st.name}: ${(err as Error).message}`,
            ).toEqual([true, 'BT409']);
          } finally {
            await client.query('rollback');
          }
        }
      }
    } finally {
      client.release();
    }
    // without events or with an incident, '-alone' writes the same statement as without
    expect(texts.size).toBeGreaterThan((1 << PARTS.length) * 5);
  }, 120_000);

  it('given a complete of a one-task instance, then its statement has only steps, flows, events and their frames, the instance row and the task', () => {
    const fx = emptyEffects();
    fx.steps.push({ stepId: 'work', status: 'completed' }, { stepId: 'end', status: 'completed' });
    fx.flows.push({ flowId: 'f2', state: 'taken' });
    fx.events.push({ kind: 'task:completed', stepId: 'work' }, { kind: 'instance:completed' });
    const input = {
      instance: { id: randomUUID(), generation: 1, business_key: null, definition_id: randomUUID() },
      effects: fx,
      status: 'completed' as const,
      variables: {},
      incidentTaskIds: [],
      guard: { revision: 2, completes: { taskId: randomUUID(), workerId: 'w', lockToken: randomUUID() } },
    };
    const st = applyEffectsStatement({ ...input, alone: true });
    const ctes = (text: string) => [...text.matchAll(/(?:with|,)\s+(\w+) as (?:materialized )?\(/g)].map((m) => m[1]);
    expect(ctes(st.text)).toEqual(['i', 's', 'f', 'done', 'locks', 'pend', 'e', 'head', 'fw', 'guarded']);
    expect(Math.max(...[...st.text.matchAll(/\$(\d+)/g)].map((m) => Number(m[1])))).toBe(st.values.length);
    // inside a transaction (a batch of completes) the trigger frames at commit
    const inTransaction = applyEffectsStatement({ ...input, alone: false });
    expect(ctes(inTransaction.text)).toEqual(['i', 's', 'f', 'done', 'e', 'guarded']);
  });

  it("given a complete that starts a chain's next task handed to a parked poll, then the task insert is among the parts run before the progress check and the frame head, and the flow-limit check joins the guard", () => {
    const fx = emptyEffects();
    fx.steps.push({ stepId: 'one', status: 'completed' }, { stepId: 'two', status: 'active' });
    fx.flows.push({ flowId: 'f2', state: 'taken' });
    fx.tasks.push({ stepId: 'two', topic: 'two', priority: 0, retries: 3 });
    fx.events.push(
      { kind: 'task:completed', stepId: 'one' },
      { kind: 'step:completed', stepId: 'one' },
      { kind: 'step:activated', stepId: 'two' },
    );
    const st = applyEffectsStatement({
      instance: { id: randomUUID(), generation: 1, business_key: 'bk', definition_id: randomUUID() },
      effects: fx,
      status: 'running',
      variables: {},
      incidentTaskIds: [],
      alone: true,
      guard: { revision: 2, completes: { taskId: randomUUID(), workerId: 'w', lockToken: randomUUID() } },
      delivery: [{ index: 0, taskId: randomUUID(), workerId: 'poller', lockToken: randomUUID(), lockDurationMs: 1000 }],
    });
    const ctes = (text: string) => [...text.matchAll(/(?:with|,)\s+(\w+) as (?:materialized )?\(/g)].map((m) => m[1]);
    expect(ctes(st.text)).toEqual(['i', 's', 'f', 't', 'done', 'locks', 'pend', 'e', 'head', 'fw', 'guarded']);
    expect(st.text).toMatch(
      /locks as materialized \(select \(select count\(\*\) from s\) \+ \(select count\(\*\) from f\) \+ \(select count\(\*\) from t\) \+ \(select count\(\*\) from i\) \+ \(select count\(\*\) from done\)/,
    );
    expect(st.text).toMatch(
      /baton_transition_guard\(exists \(select 1 from i\) and not exists \(select 1 from flow_limit_topics/,
    );
    expect(Math.max(...[...st.text.matchAll(/\$(\d+)/g)].map((m) => Number(m[1])))).toBe(st.values.length);
    // an unguarded write never hands off: only a guard can refuse a flow-limited topic
    expect(() =>
      applyEffectsStatement({
        instance: { id: randomUUID(), generation: 1, business_key: null, definition_id: randomUUID() },
        effects: fx,
        status: 'running',
        variables: {},
        incidentTaskIds: [],
        delivery: [{ index: 0, taskId: randomUUID(), workerId: 'poller', lockToken: randomUUID(), lockDurationMs: 1000 }],
      }),
    ).toThrow(/only a start or a guarded complete/);
  });
});
