// A cold plan cache inside transitions: every transition reads its plan through its
// own transaction, so a node whose pool is fully held by transitions (a restart
// under load) still makes progress instead of waiting for a free connection forever.
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { createEngine } from '../../../runtime/engine/context.ts';
import { deployDefinition } from '../../../runtime/engine/definitions.ts';
import { startInstance } from '../../../runtime/engine/instances.ts';
import { createPool } from '../../../runtime/store/db.ts';
import { singleTaskBpmn } from '../../support/bpmn.ts';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';

let db: TestDatabase | undefined;
afterAll(async () => {
  await db?.drop();
});

describe('plan cache', () => {
  it('given a cold cache and as many concurrent starts as pool connections, then all of them finish', async () => {
    db = await createTestDatabase();
    const pool = createPool({ connectionString: db.url, max: 2 });
    try {
      const warm = createEngine(pool, pino({ level: 'silent' }));
      await deployDefinition(warm, singleTaskBpmn('cold-plan', 'cold-plan'));
      const cold = createEngine(pool, pino({ level: 'silent' })); // a restarted node: nothing cached
      const starts = Promise.all(
        Array.from({ length: 6 }, (_, i) => startInstance(cold, { definitionKey: 'cold-plan', businessKey: `cold-${i}` })),
      );
      const outcome = await Promise.race([starts.then(() => 'done'), new Promise((r) => setTimeout(() => r('stuck'), 10_000))]);
      expect(outcome).toBe('done');
      const { rows } = await pool.query<{ n: number }>(
        `select count(*)::int as n from instances where definition_key = 'cold-plan'`,
      );
      expect(rows[0]?.n).toBe(6);
    } finally {
      // A stuck pool never ends: do not wait for it longer than a moment.
      await Promise.race([pool.end().catch(() => undefined), new Promise((r) => setTimeout(r, 1000))]);
    }
  });
});
