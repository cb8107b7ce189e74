// When the timer scheduler wakes next: never at once when nothing waits (it used to
// spin, running its queries hundreds of times a second on an idle server).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { msUntilNextTimer } from '../../../runtime/store/waits.ts';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

describe('next timer wake-up', () => {
  it('given no waiting timer, then there is no wake-up time; given a due one, 0; given a future one, about its delay', async () => {
    expect(await msUntilNextTimer(db.pool)).toBeUndefined();
    const { rows } = await db.pool.query<{
      id: string;
    }>(`with d as (insert into deployments (name) values ('wake') returning id)
      insert into definitions (key, version, fingerprint, xml_sha256, xml, plan, deployment_id, resource_name)
      select 'wake', 1, 'f', 's', '<x/>', '{}', d.id, 'wake.bpmn' from d returning id`);
    const definitionId = rows[0]?.id;
    await db.pool.query(
      `insert into timers (definition_id, step_id, due_at) values ($1, 'later', now() + interval '30 seconds')`,
      [definitionId],
    );
    const later = await msUntilNextTimer(db.pool);
    expect(later).toBeGreaterThan(25_000);
    expect(later).toBeLessThanOrEqual(30_000);
    await db.pool.query(`insert into timers (definition_id, step_id, due_at) values ($1, 'past', now() - interval '5 seconds')`, [
      definitionId,
    ]);
    expect(await msUntilNextTimer(db.pool)).toBe(0);
  });
});
