// A transition committed by this process wakes its parked long polls in-process,
// without waiting for Postgres' NOTIFY to come back. The parkedPolls here listens on
// another database, so no NOTIFY can reach it: only the in-process path can wake it
// before the 2 s safety re-check.
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, type Engine } from '../../../runtime/engine/context.ts';
import { deployDefinition } from '../../../runtime/engine/definitions.ts';
import { fetchAndWait, SAFETY_RECHECK_MS } from '../../../runtime/engine/fetch.ts';
import { startInstance } from '../../../runtime/engine/instances.ts';
import { ParkedPolls } from '../../../runtime/engine/parked-polls.ts';
import { singleTaskBpmn } from '../../support/bpmn.ts';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';

const log = pino({ level: 'silent' });
let db: TestDatabase;
let elsewhere: TestDatabase;
let engine: Engine;
let parkedPolls: ParkedPolls;

beforeAll(async () => {
  [db, elsewhere] = await Promise.all([createTestDatabase(), createTestDatabase()]);
  engine = createEngine(db.pool, log);
  parkedPolls = new ParkedPolls(elsewhere.url, log);
  await parkedPolls.start();
  await deployDefinition(engine, singleTaskBpmn('local-wake', 'local-wake-task'));
});
afterAll(async () => {
  await parkedPolls?.stop();
  await Promise.all([db?.drop(), elsewhere?.drop()]);
});

const poll = (workerId: string, topic: string) =>
  fetchAndWait(engine, parkedPolls, {
    workerId,
    maxTasks: 1,
    waitMs: 10_000,
    topics: [{ name: topic, lockDurationMs: 30_000 }],
  });

describe('in-process wake-up of long polls', () => {
  it('given a parked poll and no NOTIFY reaching its node, when this process starts an instance, then the poll answers the task well before the safety re-check', async () => {
    for (let round = 0; round < 5; round++) {
      const parked = poll('local', 'local-wake-task');
      await new Promise((r) => setTimeout(r, 20)); // usually parked by now; if not, the ring is kept for its wait
      const began = performance.now();
      const started = await startInstance(engine, { definitionKey: 'local-wake' });
      const [task] = await parked;
      const waited = performance.now() - began;
      expect(started.ok && task?.instance_id).toBe(started.ok ? started.instance.id : 'started');
      expect(waited, `round ${round}`).toBeLessThan(SAFETY_RECHECK_MS / 2);
    }
  });
});
