// Idle connections outlive a quiet spell: with pg's default of 10 s the pool emptied between
// bursts of work, and each burst opened its connections again (bench workload 5's first
// bursts of due timers ran twice as late). The idle timer is pg-pool's setTimeout, so a fake
// clock stands in for the minutes; the connections are real.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createPool, POOL_IDLE_MS } from '../../../runtime/store/db.ts';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});

describe('pool idle connections', () => {
  it('given three connections released, then they stay open through a quiet minute, are used again, and close after POOL_IDLE_MS', async () => {
    const pool = createPool({ connectionString: db.url, max: 3 });
    try {
      const clients = await Promise.all([pool.connect(), pool.connect(), pool.connect()]);
      const pids = await Promise.all(
        clients.map(async (c) => (await c.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid),
      );
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
      try {
        for (const c of clients) c.release();
        vi.advanceTimersByTime(60_000);
        expect(pool.totalCount).toBe(3);
        expect(pool.idleCount).toBe(3);
        vi.useRealTimers();
        // the next statements run on the backends of before: nothing was reconnected
        const again = await Promise.all([pool.connect(), pool.connect(), pool.connect()]);
        const pidsAgain = await Promise.all(
          again.map(async (c) => (await c.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid),
        );
        expect(new Set(pidsAgain)).toEqual(new Set(pids));
        vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
        for (const c of again) c.release();
        vi.advanceTimersByTime(POOL_IDLE_MS - 1);
        expect(pool.idleCount).toBe(3);
        vi.advanceTimersByTime(2);
        expect(pool.totalCount).toBe(0);
      } finally {
        vi.useRealTimers();
      }
    } finally {
      await pool.end();
    }
  });
});
