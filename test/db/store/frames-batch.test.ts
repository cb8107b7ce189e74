// Migration 0011: a transaction's events of one (instance, generation) become frames
// together at commit: dense seqs in insert order, one notification with the last seq,
// nothing after instance:ended, and pending progress still flushed before the frame
// that ends its step.
import pg from 'pg';
import { readNotifications } from '../../../runtime/store/notifications.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';
import { waitFor } from '../../support/server.ts';

let db: TestDatabase;
let listener: pg.Client;
const bells: string[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  await db.pool.query(`with d as (insert into deployments (name) values ('frames-batch') returning id)
                       insert into definitions (key, version, fingerprint, xml_sha256, xml, plan, deployment_id, resource_name)
                       select 'frames-batch', 1, 'fp', 'sha', '<x/>', '{}'::jsonb, d.id, 'frames-batch.bpmn' from d`);
  listener = new pg.Client({ connectionString: db.url });
  await listener.connect();
  listener.on('notification', (m) => bells.push(...readNotifications(m.payload).bells));
  await listener.query('listen baton_frames');
});
afterAll(async () => {
  await listener.end();
  await db.drop();
});

async function newInstance(): Promise<string> {
  const { rows } = await db.pool
    .query(`insert into instances (definition_id, definition_key, definition_version, variables, revision)
                                        select id, key, version, '{}', 0 from definitions where key = 'frames-batch' returning id`);
  return rows[0].id;
}

type Ev = [instanceId: string, kind: string, stepId?: string];

/** Inserts the events in one transaction, one statement each. */
async function inOneTransaction(events: Ev[]): Promise<void> {
  const client = await db.pool.connect();
  try {
    await client.query('begin');
    for (const [instanceId, kind, stepId] of events) {
      await client.query(
        `insert into events (seq, instance_id, generation, kind, step_id, data) values (baton_event_seq($1), $1, 1, $2, $3, '{}')`,
        [instanceId, kind, stepId ?? null],
      );
    }
    await client.query('commit');
  } finally {
    client.release();
  }
}

async function frames(instanceId: string): Promise<{ seq: number; kind: string; data: Record<string, unknown> }[]> {
  const { rows } = await db.pool.query(
    'select seq, kind, data from frames where instance_id = $1 and generation = 1 order by seq',
    [instanceId],
  );
  return rows;
}

describe('frames written per transaction (migration 0011)', () => {
  it("given two instances' events interleaved in one transaction, then each gets dense seqs in insert order and one notification with its last seq", async () => {
    const [a, b] = [await newInstance(), await newInstance()];
    await inOneTransaction([
      [a, 'instance:started'],
      [b, 'instance:started'],
    ]);
    await waitFor(async () => (bells.length >= 2 ? true : undefined), 5_000, "the first transaction's notifications");
    bells.length = 0;
    await inOneTransaction([
      [a, 'step:completed', 'start'],
      [b, 'step:completed', 'start'],
      [a, 'step:activated', 'work'],
      [b, 'task:locked', 'work'],
      [a, 'task:locked', 'work'],
    ]);
    expect((await frames(a)).map((f) => [f.seq, f.kind, f.data.stepId])).toEqual([
      [1, 'instance:started', undefined],
      [2, 'step:completed', 'start'],
      [3, 'step:activated', 'work'],
      [4, 'task:locked', 'work'],
    ]);
    expect((await frames(b)).map((f) => [f.seq, f.kind])).toEqual([
      [1, 'instance:started'],
      [2, 'step:completed'],
      [3, 'task:locked'],
    ]);
    await waitFor(async () => (bells.length >= 2 ? true : undefined), 5_000, 'two notifications');
    expect(bells.sort()).toEqual([`${a} 1 4`, `${b} 1 3`].sort());
    const { rows } = await db.pool.query(
      'select instance_id, last_seq from frame_heads where instance_id = any($1) order by last_seq',
      [[a, b]],
    );
    expect(rows.map((r) => r.last_seq)).toEqual([3, 4]);
  });

  it('given an ending event followed by more events in the same transaction, then instance:ended is the last frame and later events get none', async () => {
    const a = await newInstance();
    await inOneTransaction([
      [a, 'instance:started'],
      [a, 'instance:completed'],
      [a, 'step:canceled', 'late'],
    ]);
    expect((await frames(a)).map((f) => [f.seq, f.kind, f.data.status])).toEqual([
      [1, 'instance:started', undefined],
      [2, 'instance:completed', undefined],
      [3, 'instance:ended', 'completed'],
    ]);
    await inOneTransaction([[a, 'task:late_result', 'work']]);
    expect(await frames(a)).toHaveLength(3);
    const { rows } = await db.pool.query(
      'select last_seq, ended_at is not null as ended from frame_heads where instance_id = $1',
      [a],
    );
    expect(rows[0]).toEqual({ last_seq: 3, ended: true });
  });

  it('given pending progress of a step, then it is framed just before the event that ends that step, and the rest of the transaction follows in order', async () => {
    const a = await newInstance();
    await inOneTransaction([
      [a, 'instance:started'],
      [a, 'task:locked', 'work'],
    ]);
    const {
      rows: [task],
    } = await db.pool.query(
      `insert into external_tasks (instance_id, step_id, generation, topic, retries, retries_left, idempotency_key)
                                                  values ($1::uuid, 'work', 1, 'frames', 0, 0, $1::text || '/work/1') returning id`,
      [a],
    );
    for (const n of [1, 2]) {
      await db.pool.query(
        `insert into progress_reports (task_id, instance_id, generation, step_id, data, bytes) values ($1, $2, 1, 'work', $3, 10)`,
        [task.id, a, { n }],
      );
    }
    await inOneTransaction([
      [a, 'step:activated', 'other'],
      [a, 'task:completed', 'work'],
      [a, 'step:completed', 'work'],
    ]);
    const got = await frames(a);
    expect(got.map((f) => [f.seq, f.kind])).toEqual([
      [1, 'instance:started'],
      [2, 'task:locked'],
      [3, 'step:activated'],
      [4, 'task:progress'],
      [5, 'task:completed'],
      [6, 'step:completed'],
    ]);
    expect(got[3]!.data.reports).toEqual([{ n: 1 }, { n: 2 }]);
    const { rows } = await db.pool.query('select count(*)::int as n from progress_reports where instance_id = $1', [a]);
    expect(rows[0].n).toBe(0);
  });

  it('given 20 transactions writing events of one instance at once, then its seqs stay dense and each event has exactly one frame', async () => {
    const a = await newInstance();
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        inOneTransaction([
          [a, 'task:locked', `s${i}`],
          [a, 'task:completed', `s${i}`],
        ]),
      ),
    );
    const got = await frames(a);
    expect(got.map((f) => f.seq)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
    // Each transaction's two frames are adjacent: a head lock is held from the first frame to commit.
    for (let i = 0; i < 40; i += 2) {
      expect(got[i]!.kind).toBe('task:locked');
      expect(got[i + 1]!.data.stepId).toBe(got[i]!.data.stepId);
    }
  });
});
