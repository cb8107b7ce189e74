// The fast form of drill 12's finding: a connection ended by the server between two
// statements of a transaction fails that transaction; the process lives and the pool recovers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, withTransaction, type Pool } from '../../runtime/store/db.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';

let db: TestDatabase;
let pool: Pool;

beforeAll(async () => {
  db = await createTestDatabase();
  pool = createPool({ connectionString: db.url, max: 2 });
});
afterAll(async () => {
  await pool.end();
  await db.drop();
});

describe('connection loss inside a transaction', () => {
  it('given the server ends a connection while its transaction waits between statements, then the transaction fails and the pool serves the next one', async () => {
    const uncaught: unknown[] = [];
    const onUncaught = (err: unknown) => uncaught.push(err);
    process.on('uncaughtException', onUncaught);
    try {
      const failed = withTransaction(pool, async (tx) => {
        const { rows } = await tx.query<{ pid: number }>('select pg_backend_pid() as pid');
        await db.pool.query('select pg_terminate_backend($1)', [rows[0]!.pid]);
        // The termination notice arrives while no statement runs: the unheard 'error' of old.
        await new Promise((r) => setTimeout(r, 300));
        await tx.query('select 1');
      });
      await expect(failed).rejects.toThrow(/connection/i);
      const next = await withTransaction(pool, async (tx) => (await tx.query<{ one: number }>('select 1 as one')).rows[0]!.one);
      expect(next).toBe(1);
      expect(uncaught).toEqual([]);
    } finally {
      process.off('uncaughtException', onUncaught);
    }
  });
});
