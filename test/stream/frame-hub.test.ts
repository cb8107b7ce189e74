// The frames notification is LISTENed to only while someone follows: a node nobody watches is
// not woken by every committed transaction. A follow resolves once the hub listens, so a
// frame committed after it always rings. A notification that never comes (its node died before
// relaying it) is made up for by the hub's reading of the followed heads.
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FrameHub, type NewFrames } from '../../runtime/stream/frame-hub.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { waitFor } from '../support/server.ts';

let db: TestDatabase;
let hub: FrameHub;
beforeAll(async () => {
  db = await createTestDatabase();
  hub = new FrameHub(db.url, pino({ level: 'silent' }), 200);
  await hub.start();
});
afterAll(async () => {
  await hub.stop();
  await db.drop();
});

const ring = (payload: string) => db.pool.query(`select pg_notify('baton_frames', $1)`, [payload]);

describe('FrameHub', () => {
  it('given no follower, then it does not listen; a follow resolves listening and the next notification rings; after the last unfollow it stops listening', async () => {
    expect(hub.isListening).toBe(false);
    const bells: (NewFrames | undefined)[] = [];
    const listener = { ring: (b: NewFrames | undefined) => bells.push(b) };
    const id = '00000000-0000-4000-8000-000000000001';
    await hub.follow(id, listener);
    expect(hub.isListening).toBe(true);
    await ring(`${id} 1 7`);
    await waitFor(async () => (bells.length > 0 ? true : undefined), 5_000, 'the notification');
    expect(bells).toEqual([{ instanceId: id, generation: 1, seq: 7 }]);

    hub.unfollow(id, listener);
    expect(hub.isListening).toBe(true); // kept a while: subscriptions come and go
    await waitFor(async () => (hub.isListening ? undefined : true), 5_000, 'the hub to stop listening');

    // Following again listens anew before it resolves.
    await hub.follow(id, listener);
    expect(hub.isListening).toBe(true);
    await ring(`${id} 1 8`);
    await waitFor(async () => (bells.length > 1 ? true : undefined), 5_000, 'the second notification');
    expect(bells[1]).toEqual({ instanceId: id, generation: 1, seq: 8 });
    hub.unfollow(id, listener);
  });

  it("given frames whose notification never rings, then the hub rings the followers with the heads as they are, each followed instance's every generation", async () => {
    const rechecking = new FrameHub(db.url, pino({ level: 'silent' }), 200, 50);
    await rechecking.start();
    try {
      const [followed, other] = [crypto.randomUUID(), crypto.randomUUID()];
      const bells: (NewFrames | undefined)[] = [];
      await rechecking.follow(followed, { ring: (b) => bells.push(b) });
      // written as a node that died before relaying would leave them: heads moved, no NOTIFY
      await db.pool.query(
        `insert into frame_heads (instance_id, generation, last_seq) values ($1, 1, 4), ($1, 2, 1), ($2, 1, 9)`,
        [followed, other],
      );
      await waitFor(async () => (bells.some((b) => b?.generation === 2) ? true : undefined), 5_000, 'the heads');
      expect(bells).toContainEqual({ instanceId: followed, generation: 1, seq: 4 });
      expect(bells).toContainEqual({ instanceId: followed, generation: 2, seq: 1 });
      expect(bells.filter((b) => b?.instanceId !== followed)).toEqual([]);
    } finally {
      await rechecking.stop();
    }
  });
});
