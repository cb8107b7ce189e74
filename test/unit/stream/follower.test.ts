// The follower's own logic with a scripted reader: a failed read is retried from the
// same cursor (and never becomes an unhandled rejection), and a newer generation is
// announced only after the followed generation's frames are out.
import { describe, expect, it } from 'vitest';
import { Follower, type FollowerOutput } from '../../../runtime/stream/follower.ts';
import type { FrameQuery } from '../../../runtime/stream/frame-reader.ts';
import type { FrameRow } from '../../../runtime/store/frames.ts';

const ID = '00000000-0000-4000-8000-000000000001';
const frame = (seq: number, generation = 1): FrameRow => ({
  instance_id: ID,
  generation,
  seq,
  kind: 'test:tick',
  data: {},
  at: new Date(0).toISOString(),
});

function recorder() {
  const events: string[] = [];
  const out: FollowerOutput = {
    frame: (f) => events.push(`frame ${f.seq}`),
    gap: (g) => events.push(`gap ${g.fromSeq}-${g.toSeq}`),
    generation: (g) => events.push(`generation ${g.generation}`),
    resubscribe: (r) => events.push(`resubscribe ${r.afterSeq}`),
    backlog: () => 0,
  };
  return { events, out };
}

describe('Follower', () => {
  it('given a read that fails, then it is retried from the same cursor and every frame arrives once', async () => {
    const stored = [frame(1), frame(2), frame(3)];
    let calls = 0;
    const read = async (q: FrameQuery) => {
      calls++;
      if (calls === 2) throw new Error('connection terminated');
      return stored.filter((f) => f.seq > q.afterSeq).slice(0, q.limit);
    };
    const { events, out } = recorder();
    const f = new Follower(read, ID, 1, 0, out, { batchSize: 2, maxBacklog: 10 }, () => undefined, 1);
    await f.pump(); // reads 1-2, then the second read fails: resolves anyway
    expect(events).toEqual(['frame 1', 'frame 2']);
    for (const deadline = Date.now() + 5000; events.length < 3 && Date.now() < deadline;)
      await new Promise((r) => setTimeout(r, 20)); // the retry
    expect(events).toEqual(['frame 1', 'frame 2', 'frame 3']);
    f.close();
  });

  it('given a newer generation while frames of the followed one remain, then the announcement comes after them', async () => {
    const stored = [frame(1), frame(2)];
    const read = async (q: FrameQuery) => stored.filter((f) => f.seq > q.afterSeq).slice(0, q.limit);
    const { events, out } = recorder();
    const f = new Follower(read, ID, 1, 0, out, { batchSize: 10, maxBacklog: 10 }, () => undefined, 1);
    await f.pump();
    stored.push(frame(3));
    f.ring({ instanceId: ID, generation: 2, seq: 1 });
    await f.pump();
    expect(events).toEqual(['frame 1', 'frame 2', 'frame 3', 'generation 2']);
  });

  it('given a client past its backlog cap, then it is told to resubscribe from its last frame and dropped', async () => {
    const stored = [frame(1), frame(2), frame(3)];
    const read = async (q: FrameQuery) => stored.filter((f) => f.seq > q.afterSeq);
    const { events, out } = recorder();
    let sent = 0;
    const dropped: Follower[] = [];
    const f = new Follower(
      read,
      ID,
      1,
      0,
      {
        ...out,
        frame: (x) => {
          sent++;
          out.frame(x);
        },
        backlog: () => sent,
      },
      { batchSize: 10, maxBacklog: 1 },
      (d) => dropped.push(d),
      1,
    );
    await f.pump();
    expect(events).toEqual(['frame 1', 'frame 2', 'resubscribe 2']);
    expect(dropped).toEqual([f]);
  });
});
