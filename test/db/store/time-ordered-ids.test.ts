// The ids the database makes for tasks, waits, timers, messages and incidents (migration 0041)
// and the ones the engine makes in Node are version 7 uuids: the time in milliseconds first, so
// a new row's key lands at the right edge of its index (docs/PERFORMANCE.md, "Time-ordered ids").
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newTaskId } from '../../../runtime/shared/uuid.ts';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});

const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
/** The milliseconds a version 7 id starts with. */
const msOf = (id: string) => parseInt(id.replace(/-/g, '').slice(0, 12), 16);

describe('time-ordered ids', () => {
  it('given time_ordered_uuid(), then each id is version 7 with the RFC variant, holds the time it was made, and ids made later sort after earlier ones', async () => {
    const before = Date.now();
    const { rows: first } = await db.pool.query<{ id: string }>(
      'select time_ordered_uuid()::text as id from generate_series(1, 500)',
    );
    await new Promise((resolve) => setTimeout(resolve, 5));
    const { rows: later } = await db.pool.query<{ id: string }>(
      'select time_ordered_uuid()::text as id from generate_series(1, 500)',
    );
    const after = Date.now();
    const ids = [...first, ...later].map((r) => r.id);
    for (const id of ids) expect(id).toMatch(V7);
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids) {
      expect(msOf(id)).toBeGreaterThanOrEqual(before - 1000);
      expect(msOf(id)).toBeLessThanOrEqual(after + 1000);
    }
    const lastOfFirst = [...first.map((r) => r.id)].sort().at(-1)!;
    const firstOfLater = [...later.map((r) => r.id)].sort()[0]!;
    expect(msOf(firstOfLater)).toBeGreaterThan(msOf(lastOfFirst));
    expect(firstOfLater > lastOfFirst).toBe(true);
  });

  it('given the tables whose rows outlive their transitions, then their ids default to time_ordered_uuid(), and a task id made in Node is version 7', async () => {
    const { rows } = await db.pool.query<{ table_name: string; column_default: string }>(
      `select table_name, column_default from information_schema.columns
        where table_schema = 'public' and column_name = 'id'
          and table_name in ('external_tasks', 'subscriptions', 'timers', 'messages', 'incidents') order by 1`,
    );
    expect(rows.map((r) => [r.table_name, r.column_default])).toEqual(
      ['external_tasks', 'incidents', 'messages', 'subscriptions', 'timers'].map((t) => [t, 'time_ordered_uuid()']),
    );
    expect(newTaskId()).toMatch(V7);
  });
});
