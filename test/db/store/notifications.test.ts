// Notifications (store/notifications.ts): the hot statements answer what they ring instead of
// calling pg_notify (PostgreSQL serializes the commits of notifying transactions). This
// process hears them right after the commit; the other nodes get them from a relay that
// sends the notifications of a turn of the event loop together, several per payload.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { pino } from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createEngine } from '../../../runtime/engine/context.ts';
import { deployDefinition } from '../../../runtime/engine/definitions.ts';
import { startInstance } from '../../../runtime/engine/instances.ts';
import { completeTask } from '../../../runtime/engine/tasks.ts';
import { createPool, withTransaction } from '../../../runtime/store/db.ts';
import {
  announceListener,
  flushNotifications,
  onNotifications,
  PROCESS_TAG,
  readNotifications,
  RELAY_STATEMENT,
  relayFailures,
  notifyAfterCommit,
  type FrameNotice,
} from '../../../runtime/store/notifications.ts';
import { flushProgress, flushStaleProgress, recordProgress } from '../../../runtime/store/progress.ts';
import { fetchAndLock } from '../../../runtime/store/tasks.ts';
import { singleTaskBpmn } from '../../support/bpmn.ts';
import { createTestDatabase, type TestDatabase } from '../../support/db.ts';
import { waitFor } from '../../support/server.ts';

const log = pino({ level: 'silent' });
let db: TestDatabase;
let listener: pg.Client;
/** every NOTIFY heard on the three channels, as sent */
const heard: { channel: string; payload: string }[] = [];
/** what this process's listeners were told */
const local: { topics: string[]; timers: number; frames: FrameNotice[] } = { topics: [], timers: 0, frames: [] };
let unsubscribe: () => void;

beforeAll(async () => {
  db = await createTestDatabase();
  await deployDefinition(createEngine(db.pool, log), singleTaskBpmn('bells', 'bells-task'));
  listener = new pg.Client({ connectionString: db.url });
  await listener.connect();
  listener.on('notification', (m) => heard.push({ channel: m.channel, payload: m.payload ?? '' }));
  await announceListener(listener, 'test-observer'); // heard as another node: this process's relays send to it
  await listener.query('listen baton_tasks; listen baton_timers; listen baton_frames');
  unsubscribe = onNotifications({
    tasks: (topics) => local.topics.push(...topics),
    timers: () => local.timers++,
    frames: (bells) => local.frames.push(...bells),
  });
});
afterAll(async () => {
  unsubscribe?.();
  await listener?.end();
  await db?.drop();
});
beforeEach(() => {
  heard.length = 0;
  local.topics.length = 0;
  local.timers = 0;
  local.frames.length = 0;
});

/** Everything relayed so far has been heard: a NOTIFY sent after the flush arrives after it. */
async function heardSoFar(): Promise<{ channel: string; payload: string }[]> {
  await flushNotifications(db.pool);
  const mark = `mark-${crypto.randomUUID()}`;
  await db.pool.query('select pg_notify($1, $2)', ['baton_tasks', mark]);
  await waitFor(async () => (heard.some((h) => h.payload === mark) ? true : undefined), 5_000, 'the marker');
  return heard.filter((h) => h.payload !== mark);
}

/** A pool whose relay statements go nowhere: what the other nodes hear is then only what the statements sent. */
function silencedPool(): { pool: pg.Pool; dropped: () => number } {
  const pool = createPool({ connectionString: db.url, max: 4 });
  let dropped = 0;
  pool.on('connect', (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as { query: unknown }).query = (...args: unknown[]) => {
      if ((args[0] as { name?: unknown } | undefined)?.name === RELAY_STATEMENT) {
        dropped++;
        const answered = { rows: [], rowCount: 0 };
        const callback = args.find((a) => typeof a === 'function') as ((err: null, r: unknown) => void) | undefined;
        if (!callback) return Promise.resolve(answered);
        setImmediate(() => callback(null, answered)); // the pool's own calls answer by callback
        return undefined;
      }
      return query(...args);
    };
  });
  return { pool, dropped: () => dropped };
}

const bellsOn = (channel: string, got: { channel: string; payload: string }[]) =>
  got.filter((h) => h.channel === channel).flatMap((h) => readNotifications(h.payload).bells);

describe('notifications', () => {
  it('given a start, a fetch and a complete, then this process hears the topic and each frame head after its commit, and the relay tells the other nodes the same', async () => {
    const engine = createEngine(db.pool, log);
    const started = await startInstance(engine, { definitionKey: 'bells' });
    if (!started.ok) throw new Error('not started');
    const id = started.instance.id;
    const {
      tasks: [task],
    } = await fetchAndLock(db.pool, { workerId: 'w', maxTasks: 1, topics: [{ name: 'bells-task', lockDurationMs: 30_000 }] });
    expect(task?.instance_id).toBe(id);
    expect(Object.keys(task!)).not.toContain('frame_seq');
    expect((await completeTask(engine, { taskId: task!.id, workerId: 'w', lockToken: task!.lock_token! })).ok).toBe(true);
    const {
      rows: [head],
    } = await db.pool.query('select last_seq from frame_heads where instance_id = $1 and generation = 1', [id]);

    expect(local.topics).toEqual(['bells-task']);
    const seqs = local.frames.filter((b) => b.instanceId === id).map((b) => b.seq);
    expect(seqs).toHaveLength(3); // the start, the fetch, the complete
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(seqs.at(-1)).toBe(head.last_seq);

    const got = await heardSoFar();
    expect(bellsOn('baton_tasks', got)).toEqual(['bells-task']);
    expect(
      bellsOn('baton_frames', got)
        .filter((b) => b.startsWith(id))
        .at(-1),
    ).toBe(`${id} 1 ${head.last_seq}`);
    for (const h of got) expect(readNotifications(h.payload).fromHere, h.payload).toBe(true);
  });

  it("given notifications rung by many commits in one turn, then one NOTIFY per channel carries them, a generation's highest seq only, and a payload PostgreSQL would refuse is split", async () => {
    const frames: FrameNotice[] = [];
    for (let i = 0; i < 300; i++) frames.push({ instanceId: crypto.randomUUID(), generation: 1, seq: i + 1 });
    const twice = crypto.randomUUID();
    notifyAfterCommit(db.pool, { frames: [{ instanceId: twice, generation: 2, seq: 3 }], topics: ['x'] });
    for (const f of frames) notifyAfterCommit(db.pool, { frames: [f] });
    notifyAfterCommit(db.pool, {
      frames: [{ instanceId: twice, generation: 2, seq: 5 }],
      topics: ['x', 'y', 'z'.repeat(9000)],
      timers: true,
    });
    notifyAfterCommit(db.pool, { timers: true });

    const got = await heardSoFar();
    const framePayloads = got.filter((h) => h.channel === 'baton_frames');
    expect(framePayloads.length).toBeGreaterThan(1);
    for (const h of got) expect(Buffer.byteLength(h.payload)).toBeLessThan(8000);
    const bells = bellsOn('baton_frames', got);
    expect(bells.sort()).toEqual([...frames.map((f) => `${f.instanceId} 1 ${f.seq}`), `${twice} 2 5`].sort());
    // No payload can carry a 9,000-character topic: it is left to the polls' re-check, the others go.
    expect(got.filter((h) => h.channel === 'baton_tasks')).toHaveLength(1);
    expect(bellsOn('baton_tasks', got).sort()).toEqual(['x', 'y']);
    expect(got.filter((h) => h.channel === 'baton_timers')).toHaveLength(1);
    expect(local.timers).toBe(2);
  });

  it('given a transaction that rolls back, then nothing rings, here or elsewhere', async () => {
    await expect(
      withTransaction(db.pool, async (tx) => {
        await tx.query('select 1');
        notifyAfterCommit(tx, { topics: ['rolled-back'], frames: [{ instanceId: crypto.randomUUID(), generation: 1, seq: 1 }] });
        throw new Error('changed my mind');
      }),
    ).rejects.toThrow('changed my mind');
    expect(local).toEqual({ topics: [], timers: 0, frames: [] });
    expect(await heardSoFar()).toEqual([]);
  });

  it('given a transaction that commits, then its notifications ring only after the commit', async () => {
    let ringsInside = -1;
    await withTransaction(db.pool, async (tx) => {
      await tx.query('select 1');
      notifyAfterCommit(tx, { topics: ['after-commit'] });
      ringsInside = local.topics.length;
    });
    expect(ringsInside).toBe(0);
    expect(local.topics).toEqual(['after-commit']);
    expect(bellsOn('baton_tasks', await heardSoFar())).toEqual(['after-commit']);
  });

  it('given the relay silenced, then the hot statements (start, fetch, complete) send no NOTIFY of their own', async () => {
    const { pool: silenced, dropped } = silencedPool();
    try {
      const engine = createEngine(silenced, log);
      const started = await startInstance(engine, { definitionKey: 'bells' });
      if (!started.ok) throw new Error('not started');
      const {
        tasks: [task],
      } = await fetchAndLock(silenced, { workerId: 'w', maxTasks: 1, topics: [{ name: 'bells-task', lockDurationMs: 30_000 }] });
      expect((await completeTask(engine, { taskId: task!.id, workerId: 'w', lockToken: task!.lock_token! })).ok).toBe(true);
      await flushNotifications(silenced);
      expect(dropped()).toBeGreaterThan(0);
      expect(local.frames.filter((b) => b.instanceId === started.instance.id)).toHaveLength(3);
      expect(await heardSoFar()).toEqual([]);
    } finally {
      await silenced.end();
    }
  });

  it('given progress flushed (by the coalescer, then by the sweeper), then its frames ring here after the commit, reach the other nodes by the relay only, and the flushes send no NOTIFY', async () => {
    const engine = createEngine(db.pool, log);
    const started = await startInstance(engine, { definitionKey: 'bells' });
    if (!started.ok) throw new Error('not started');
    const {
      tasks: [task],
    } = await fetchAndLock(db.pool, { workerId: 'w', maxTasks: 1, topics: [{ name: 'bells-task', lockDurationMs: 30_000 }] });
    const holder = { taskId: task!.id, workerId: 'w', lockToken: task!.lock_token! };
    const step = { instanceId: started.instance.id, generation: 1, stepId: task!.step_id };
    await heardSoFar();
    heard.length = 0;
    local.frames.length = 0;
    const { pool: silenced, dropped } = silencedPool();
    try {
      expect((await recordProgress(silenced, { ...holder, data: { done: 1 } })).ok).toBe(true);
      const seq = await flushProgress(silenced, step);
      expect(seq).toBeGreaterThan(0);
      expect(local.frames).toEqual([{ instanceId: step.instanceId, generation: 1, seq }]);
      expect((await recordProgress(silenced, { ...holder, data: { done: 2 } })).ok).toBe(true);
      await waitFor(
        async () =>
          (await silenced.query(`select now() > max(at) as past from progress_reports`)).rows[0].past ? true : undefined,
        2_000,
        'the report in the past',
      );
      expect(await flushStaleProgress(silenced, 0)).toBe(1);
      expect(local.frames.map((b) => b.seq)).toEqual([seq, seq! + 1]);
      await flushNotifications(silenced);
      expect(dropped()).toBeGreaterThan(0);
      expect(await heardSoFar()).toEqual([]); // the flushes' statements rang nothing themselves
    } finally {
      await silenced.end();
    }
    // Through a pool that relays, the other node hears the frame's head.
    heard.length = 0;
    expect((await recordProgress(db.pool, { ...holder, data: { done: 3 } })).ok).toBe(true);
    const last = await flushProgress(db.pool, step);
    const got = await heardSoFar();
    expect(got.every((h) => readNotifications(h.payload).fromHere)).toBe(true); // relayed, not sent by the flush
    expect(bellsOn('baton_frames', got)).toContain(`${step.instanceId} 1 ${last}`);
    const { rows } = await db.pool.query(`select seq, kind from frames where instance_id = $1 and seq > $2 order by seq`, [
      step.instanceId,
      last! - 3,
    ]);
    expect(rows).toEqual([
      { seq: last! - 2, kind: 'task:progress' },
      { seq: last! - 1, kind: 'task:progress' },
      { seq: last, kind: 'task:progress' },
    ]);
  });

  it('given no other process listening, then the relay sends nothing; once one listens, within about a second it does', async () => {
    const lone = createPool({ connectionString: db.url, max: 2 });
    await listener.query(`select set_config('application_name', 'not a baton node', false)`);
    try {
      notifyAfterCommit(lone, { topics: ['alone'] });
      await flushNotifications(lone);
      expect(local.topics).toEqual(['alone']);
      expect(await heardSoFar()).toEqual([]);
      await announceListener(listener, 'test-observer');
      const began = performance.now();
      await waitFor(
        async () => {
          notifyAfterCommit(lone, { topics: ['heard'] });
          await flushNotifications(lone);
          return heard.some((h) => readNotifications(h.payload).bells.includes('heard')) ? true : undefined;
        },
        5_000,
        'the relay to see the listener',
      );
      expect(performance.now() - began).toBeLessThan(2_500);
      expect(bellsOn('baton_tasks', await heardSoFar())).not.toContain('alone');
    } finally {
      await announceListener(listener, 'test-observer');
      await lone.end();
    }
  });

  it('given a relay statement that fails (its pool has ended), then this process still heard the notifications, and the failure is counted', async () => {
    const gone = createPool({ connectionString: db.url, max: 1 });
    await gone.query('select 1');
    await gone.end();
    const before = relayFailures();
    notifyAfterCommit(gone, { topics: ['unsent'] });
    await flushNotifications(gone);
    expect(local.topics).toEqual(['unsent']);
    expect(relayFailures()).toBe(before + 1);
  });

  it('given payloads, then a relayed one is read as its notifications and marked when this process sent it; any other is one notification', () => {
    expect(readNotifications(' ' + JSON.stringify({ from: PROCESS_TAG, bells: ['a', 'b c'] }))).toEqual({
      fromHere: true,
      bells: ['a', 'b c'],
    });
    expect(readNotifications(' ' + JSON.stringify({ from: 'another', bells: ['a'] }))).toEqual({ fromHere: false, bells: ['a'] });
    expect(readNotifications('orders')).toEqual({ fromHere: false, bells: ['orders'] });
    expect(readNotifications('')).toEqual({ fromHere: false, bells: [''] });
    expect(readNotifications(undefined)).toEqual({ fromHere: false, bells: [''] });
    expect(readNotifications(' {not json')).toEqual({ fromHere: false, bells: [] });
  });

  it("given the runtime's TypeScript, then only the relay calls pg_notify (SQL triggers of the migrations aside)", () => {
    const root = path.resolve(import.meta.dirname, '../../../runtime');
    const callers = readdirSync(root, { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.ts') && readFileSync(path.join(root, f), 'utf8').includes('pg_notify('))
      .map((f) => f.split(path.sep).join('/'));
    expect(callers).toEqual(['store/notifications.ts']);
  });
});
