// An empty fetch-and-lock is one statement: it answers whether a flow limit covers the
// topics itself (it used to ask flow_limits_cover after, on the way of every long poll to
// parking). With a limit covering the topic, the limited fetch still decides.
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, type Engine } from '../../../runtime/engine/context.ts';
import { deployDefinition } from '../../../runtime/engine/definitions.ts';
import { startInstance } from '../../../runtime/engine/instances.ts';
import { createPool, type Pool } from '../../../runtime/store/db.ts';
import { putFlowLimit } from '../../../runtime/store/flow-limits.ts';
import { fetchAndLock } from '../../../runtime/store/tasks.ts';
import { singleTaskBpmn } from '../../support/bpmn.ts';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';

const log = pino({ level: 'silent' });
let db: TestDatabase;
let engine: Engine;
let counting: Pool;
const sent: string[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  engine = createEngine(db.pool, log);
  await deployDefinition(engine, singleTaskBpmn('fetch-empty', 'fetch-empty-task'));
  await deployDefinition(engine, singleTaskBpmn('fetch-limited', 'fetch-limited-task'));
  counting = createPool({ connectionString: db.url });
  const query = counting.query.bind(counting) as (...args: unknown[]) => unknown;
  (counting as { query: unknown }).query = (...args: unknown[]) => {
    sent.push((args[0] as { name?: string }).name ?? '?');
    return query(...args);
  };
});
afterAll(async () => {
  await counting?.end();
  await db?.drop();
});

const fetch = (topic: string) =>
  fetchAndLock(counting, { workerId: 'w', maxTasks: 5, topics: [{ name: topic, lockDurationMs: 30_000 }] });

describe('empty fetch-and-lock', () => {
  it('given no ready task and no flow limit, then the fetch answers [] in one statement; given ready tasks, then it answers them and nothing else', async () => {
    sent.length = 0;
    expect(await fetch('fetch-empty-task')).toEqual({ tasks: [] });
    expect(sent).toEqual(['fetch_and_lock_priority']);

    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const started = await startInstance(engine, { definitionKey: 'fetch-empty' });
      if (started.ok) ids.push(started.instance.id);
    }
    sent.length = 0;
    const { tasks } = await fetch('fetch-empty-task');
    expect(sent).toEqual(['fetch_and_lock_priority']);
    expect(tasks.map((t) => t.instance_id).sort()).toEqual([...ids].sort());
    for (const t of tasks) {
      expect(t).not.toHaveProperty('flow_limited');
      expect(t).toMatchObject({ state: 'locked', worker_id: 'w', topic: 'fetch-empty-task' });
      expect(t.lock_token).toBeTruthy();
    }
  });

  it('given a flow limit covering the topic, then the unlimited statement locks nothing and the limited fetch locks the task within the limit', async () => {
    expect(
      (
        await putFlowLimit(db.pool, {
          resource: 'fetch-limited-res',
          topics: ['fetch-limited-task'],
          maxConcurrent: 1,
          maxStartsPerSecond: 0,
        })
      ).ok,
    ).toBe(true);
    await startInstance(engine, { definitionKey: 'fetch-limited' });
    await startInstance(engine, { definitionKey: 'fetch-limited' });
    sent.length = 0;
    const first = await fetch('fetch-limited-task');
    expect(sent[0]).toBe('fetch_and_lock_priority');
    expect(sent).not.toContain('flow_limits_cover');
    expect(first.tasks).toHaveLength(1); // maxConcurrent 1
    expect((await fetch('fetch-limited-task')).tasks).toHaveLength(0);
  });
});
