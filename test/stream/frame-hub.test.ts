// The frames doorbell is LISTENed to only while someone follows: a node nobody watches is
// not woken by every committed transaction. A follow resolves once the hub listens, so a
// frame committed after it always rings.
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FrameHub, type Doorbell } from '../../runtime/stream/frame-hub.ts';
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
  it('given no follower, then it does not listen; a follow resolves listening and the next doorbell rings; after the last unfollow it stops listening', async () => {
    expect(hub.isListening).toBe(false);
    const bells: (Doorbell | undefined)[] = [];
    const listener = { ring: (b: Doorbell | undefined) => bells.push(b) };
    const id = '00000000-0000-4000-8000-000000000001';
    await hub.follow(id, listener);
    expect(hub.isListening).toBe(true);
    await ring(`${id} 1 7`);
    await waitFor(async () => (bells.length > 0 ? true : undefined), 5_000, 'the doorbell');
    expect(bells).toEqual([{ instanceId: id, generation: 1, seq: 7 }]);

    hub.unfollow(id, listener);
    expect(hub.isListening).toBe(true); // kept a while: subscriptions come and go
    await waitFor(async () => (hub.isListening ? undefined : true), 5_000, 'the hub to stop listening');

    // Following again listens anew before it resolves.
    await hub.follow(id, listener);
    expect(hub.isListening).toBe(true);
    await ring(`${id} 1 8`);
    await waitFor(async () => (bells.length > 1 ? true : undefined), 5_000, 'the second doorbell');
    expect(bells[1]).toEqual({ instanceId: id, generation: 1, seq: 8 });
    hub.unfollow(id, listener);
  });
});
