// writeTransitions writes transitions with a statement of only the parts they use, one
// named prepared statement per shape (store/transition-statement.ts). PostgreSQL refuses a
// prepared statement that leaves a parameter unused or of unknown type, and the driver
// refuses one name with two texts: every shape is run here against a real instance.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emptyEffects, type Effects } from '../../../runtime/model/effects.ts';
import { transitionStatement, type TransitionWrite } from '../../../runtime/store/transition-statement.ts';
import { singleTaskBpmn } from '../../support/bpmn.ts';
import { deploy, start } from '../../support/flows.ts';
import { startTestServer, type TestServer } from '../../support/server.ts';

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
  // a loop's next pass: x1 and fx1 are written again by their parts when present, r1 and rf1 only removed
  (fx) => {
    fx.resetSteps.push('x1', 'r1');
    fx.resetFlows.push('fx1', 'rf1');
  },
];
// '-alone': the statement is its own transaction and frames its events itself
// '-end': inside a transaction that frames at its end (frameTransitions): a batch of
// completes (guarded), a batch of timer firings (the instance locked, no guard)
// '-batch': the batch's last write, which also frames the batch
// '-delivery': a start, or an optimistic complete, that delivers its new task to a parked poll (engine/poll-delivery.ts)
const MODES = [
  'update',
  'completes',
  'insert',
  'insert-latest',
  'update-alone',
  'completes-alone',
  'insert-alone',
  'update-end',
  'completes-end',
  'update-end-batch',
  'completes-end-batch',
  'insert-delivery',
  'insert-delivery-alone',
  'completes-delivery',
  'completes-delivery-alone',
] as const;

describe('transition statement shapes', () => {
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
          const write: TransitionWrite = {
            instance: {
              id: insert ? randomUUID() : instanceId,
              generation: row.generation,
              business_key: null,
              definition_id: definitionId,
              definition_key: 'shapes',
            },
            effects: fx,
            status: 'running',
            variables: { mask },
            incidentTaskIds: fx.incidents.map(() => null),
            ...(mode.startsWith('completes')
              ? { guard: { revision: row.revision, completes: { taskId: randomUUID(), workerId: 'w', lockToken: randomUUID() } } }
              : {}),
            ...(insert ? { insert: { latestOnly: mode === 'insert-latest' } } : {}),
            framesAtEnd: mode.includes('-end'),
            ...(mode.includes('delivery')
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
          };
          // a batch frames only transitions without incidents (framableInStatement)
          if (mode.endsWith('-batch') && fx.incidents.length > 0) continue;
          const st = transitionStatement([write], {
            alone: mode.endsWith('-alone'),
            ...(mode.endsWith('-batch') ? { frameBatch: [write] } : {}),
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
    expect(texts.size).toBeGreaterThanOrEqual((1 << PARTS.length) * 6);
  }, 120_000);

  it('given a complete of a one-task instance, then its statement has only steps, flows, events and their frames, the instance row and the task', () => {
    const fx = emptyEffects();
    fx.steps.push({ stepId: 'work', status: 'completed' }, { stepId: 'end', status: 'completed' });
    fx.flows.push({ flowId: 'f2', state: 'taken' });
    fx.events.push({ kind: 'task:completed', stepId: 'work' }, { kind: 'instance:completed' });
    const write: TransitionWrite = {
      instance: { id: randomUUID(), generation: 1, business_key: null, definition_id: randomUUID(), definition_key: 'k' },
      effects: fx,
      status: 'completed' as const,
      variables: {},
      incidentTaskIds: [],
      guard: { revision: 2, completes: { taskId: randomUUID(), workerId: 'w', lockToken: randomUUID() } },
    };
    const st = transitionStatement([write], { alone: true });
    const ctes = (text: string) => [...text.matchAll(/(?:with|,)\s+(\w+) as (?:materialized )?\(/g)].map((m) => m[1]);
    expect(ctes(st.text)).toEqual(['x', 'i', 'done', 's', 'f', 'guarded', 'locks', 'pend', 'e', 'hx', 'head', 'fw']);
    expect(Math.max(...[...st.text.matchAll(/\$(\d+)/g)].map((m) => Number(m[1])))).toBe(st.values.length);
    // inside a transaction the trigger frames at commit
    const inTransaction = transitionStatement([write], { alone: false });
    expect(ctes(inTransaction.text)).toEqual(['x', 'i', 'done', 's', 'f', 'guarded', 'e']);
  });

  it("given a complete that starts a chain's next task delivered to a parked poll, then the task insert is among the parts run before the progress check and the frame head, and the flow-limit check joins the guard", () => {
    const fx = emptyEffects();
    fx.steps.push({ stepId: 'one', status: 'completed' }, { stepId: 'two', status: 'active' });
    fx.flows.push({ flowId: 'f2', state: 'taken' });
    fx.tasks.push({ stepId: 'two', topic: 'two', priority: 0, retries: 3 });
    fx.events.push(
      { kind: 'task:completed', stepId: 'one' },
      { kind: 'step:completed', stepId: 'one' },
      { kind: 'step:activated', stepId: 'two' },
    );
    const st = transitionStatement(
      [
        {
          instance: { id: randomUUID(), generation: 1, business_key: 'bk', definition_id: randomUUID(), definition_key: 'k' },
          effects: fx,
          status: 'running',
          variables: {},
          incidentTaskIds: [],
          guard: { revision: 2, completes: { taskId: randomUUID(), workerId: 'w', lockToken: randomUUID() } },
          delivery: [{ index: 0, taskId: randomUUID(), workerId: 'poller', lockToken: randomUUID(), lockDurationMs: 1000 }],
        },
      ],
      { alone: true },
    );
    const ctes = (text: string) => [...text.matchAll(/(?:with|,)\s+(\w+) as (?:materialized )?\(/g)].map((m) => m[1]);
    expect(ctes(st.text)).toEqual(['x', 'i', 'done', 's', 'f', 't', 'guarded', 'locks', 'pend', 'e', 'hx', 'head', 'fw']);
    expect(st.text).toMatch(
      /locks as materialized \(select \(select count\(\*\) from guarded\) \+ \(select count\(\*\) from i\) \+ \(select count\(\*\) from done\) \+ \(select count\(\*\) from s\) \+ \(select count\(\*\) from f\) \+ \(select count\(\*\) from t\)/,
    );
    expect(st.text).toMatch(
      /and \(select count\(\*\) from done\) = cardinality\(\$\d+::uuid\[\]\) and not exists \(select 1 from flow_limit_topics/,
    );
    expect(Math.max(...[...st.text.matchAll(/\$(\d+)/g)].map((m) => Number(m[1])))).toBe(st.values.length);
    // a write under the instance's lock never delivers: only a guard can refuse a flow-limited topic
    expect(() =>
      transitionStatement(
        [
          {
            instance: { id: randomUUID(), generation: 1, business_key: null, definition_id: randomUUID(), definition_key: 'k' },
            effects: fx,
            status: 'running',
            variables: {},
            incidentTaskIds: [],
            delivery: [{ index: 0, taskId: randomUUID(), workerId: 'poller', lockToken: randomUUID(), lockDurationMs: 1000 }],
          },
        ],
        { alone: true },
      ),
    ).toThrow(/only a start or a guarded complete/);
  });
});
