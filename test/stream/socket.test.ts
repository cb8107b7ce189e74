// The Socket.IO /progress namespace against a real server and PostgreSQL:
// replay then live with no gap or duplicate, reconnect with the last seq,
// generations, retention gaps, auth, and a client that stops reading.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { singleTaskBpmn } from '../support/bpmn.ts';
import { complete, deploy, fetchOne, start, waitForStatus } from '../support/flows.ts';
import { ProgressClient } from '../support/progress-client.ts';
import { startTestServer, waitFor, type TestServer } from '../support/server.ts';

let t: TestServer;
const clients: ProgressClient[] = [];
function client(url = t.url, token?: string): ProgressClient {
  const c = new ProgressClient(url, token ? { token } : {});
  clients.push(c);
  return c;
}

beforeAll(async () => {
  t = await startTestServer();
  await deploy(t.api, singleTaskBpmn('stream-one', 'stream-one'));
  await deploy(t.api, singleTaskBpmn('stream-fail', 'stream-fail', { retries: 0 }));
  // Each test its own topic: a fetch must find the task of its own instance.
  for (const key of ['stream-ticks', 'stream-reconnect', 'stream-unsub']) await deploy(t.api, singleTaskBpmn(key, key));
  await deploy(t.api, singleTaskBpmn('stream-pos', 'stream-pos'));
  await deploy(t.api, singleTaskBpmn('stream-pos-replay', 'stream-pos-replay', { retries: 0 }));
});
afterAll(async () => {
  for (const c of clients) c.close();
  await t?.close();
});

async function storedSeqs(instanceId: string, generation = 1): Promise<{ seq: number; kind: string }[]> {
  const { rows } = await t.db.pool.query<{ seq: number; kind: string }>(
    'select seq, kind from frames where instance_id = $1 and generation = $2 order by seq',
    [instanceId, generation],
  );
  return rows;
}

async function runToEnd(instanceId: string, topic = 'stream-one', reports = 0): Promise<void> {
  const task = await fetchOne(t.api, 'w', topic);
  expect(task.instanceId).toBe(instanceId);
  for (let i = 0; i < reports; i++) {
    expect(
      (await t.api.post(`/api/external-tasks/${task.id}/progress`, { workerId: 'w', lockToken: task.lockToken, data: { i } }))
        .status,
    ).toBe(202);
  }
  expect((await complete(t.api, task, 'w')).status).toBe(204);
}

const range = (from: number, to: number) => Array.from({ length: Math.max(0, to - from + 1) }, (_, i) => from + i);

describe('subscribe', () => {
  it('given a client subscribed while a worker runs, then it gets every frame of the generation once, in order, ending with instance:ended', async () => {
    const id = await start(t.api, 'stream-one');
    const c = client();
    const ack = await c.subscribe({ instanceId: id });
    expect(ack).toMatchObject({ ok: true, generation: 1 });
    await runToEnd(id, 'stream-one', 30);
    const ended = await c.waitForKind(id);
    expect(ended.data).toEqual({ status: 'completed' });
    const stored = await storedSeqs(id);
    expect(c.seqs(id)).toEqual(stored.map((f) => f.seq));
    expect(c.frames.filter((f) => f.instanceId === id).map((f) => f.kind)).toEqual(stored.map((f) => f.kind));
    expect(c.frames.some((f) => f.kind === 'task:progress')).toBe(true);
    expect(new Date(ended.at).toString()).not.toBe('Invalid Date');
  });

  it('given a finished instance, then subscribing replays everything and then the terminal frame; lastSeq in the ack is the last seq', async () => {
    const id = await start(t.api, 'stream-one');
    await runToEnd(id);
    await waitForStatus(t.api, id, 'completed');
    const stored = await storedSeqs(id);
    const c = client();
    const ack = await c.subscribe({ instanceId: id });
    expect(ack).toEqual({ ok: true, generation: 1, lastSeq: stored.length });
    await c.waitForKind(id);
    expect(c.seqs(id)).toEqual(range(1, stored.length));
    expect(c.frames.at(-1)?.kind).toBe('instance:ended');
  });

  it('given frames committed continuously while clients subscribe, then no frame is lost or doubled at the replay/live hand-over (20 rounds)', async () => {
    for (let round = 0; round < 20; round++) {
      const id = await start(t.api, 'stream-ticks');
      let writing = true;
      const writer = async () => {
        while (writing) await t.db.pool.query(`select append_frame($1, 1, 'test:tick', '{}'::jsonb, now())`, [id]);
      };
      const writers = [writer(), writer()];
      await new Promise((r) => setTimeout(r, 5 + (round % 5) * 5));
      const afterSeq = round % 3; // also from the middle
      const c = client();
      const ack = await c.subscribe({ instanceId: id, generation: 1, afterSeq });
      expect(ack.ok).toBe(true);
      await new Promise((r) => setTimeout(r, 20));
      writing = false;
      await Promise.all(writers);
      const last = (await storedSeqs(id)).at(-1)?.seq ?? 0;
      await c.waitForSeq(id, last);
      expect(c.seqs(id), `round ${round}`).toEqual(range(afterSeq + 1, last));
      c.close();
    }
  });

  it('given a client that disconnects mid-run, when it reconnects with its last seq, then it continues exactly', async () => {
    const id = await start(t.api, 'stream-reconnect');
    const first = client();
    await first.subscribe({ instanceId: id });
    const task = await fetchOne(t.api, 'w', 'stream-reconnect');
    await first.waitForKind(id, 'task:locked');
    first.close();
    const seen = first.seqs(id);
    for (let i = 0; i < 5; i++)
      await t.api.post(`/api/external-tasks/${task.id}/progress`, { workerId: 'w', lockToken: task.lockToken, data: { i } });
    expect((await complete(t.api, task, 'w')).status).toBe(204);

    const second = client();
    expect((await second.subscribe({ instanceId: id, generation: 1, afterSeq: seen.at(-1) })).ok).toBe(true);
    await second.waitForKind(id);
    const stored = (await storedSeqs(id)).map((f) => f.seq);
    expect([...seen, ...second.seqs(id)]).toEqual(stored);
  });

  it('given bad or unknown subscriptions, then the ack says why and nothing is sent', async () => {
    const c = client();
    const bad = await c.subscribe({ instanceId: 'nope' });
    expect(bad).toMatchObject({ ok: false, error: { type: 'ValidationError' } });
    expect(await c.subscribe({ instanceId: '00000000-0000-4000-8000-000000000000' })).toMatchObject({
      ok: false,
      error: { type: 'NotFound' },
    });
    const id = await start(t.api, 'stream-one');
    expect(await c.subscribe({ instanceId: id, generation: 2 })).toMatchObject({ ok: false, error: { type: 'NotFound' } });
    expect(await c.subscribe({ instanceId: id, afterSeq: -1 })).toMatchObject({ ok: false, error: { type: 'ValidationError' } });
    expect(c.frames).toEqual([]);
  });

  it('given an unsubscribe, then no more frames of that instance arrive', async () => {
    const id = await start(t.api, 'stream-unsub');
    const c = client();
    await c.subscribe({ instanceId: id });
    await c.waitForKind(id, 'instance:started');
    await c.socket.timeout(5000).emitWithAck('unsubscribe', { instanceId: id });
    const count = c.seqs(id).length;
    await runToEnd(id, 'stream-unsub');
    await waitForStatus(t.api, id, 'completed');
    const other = client();
    await other.subscribe({ instanceId: id });
    await other.waitForKind(id); // by then the first client would have had them too
    expect(c.seqs(id).length).toBe(count);
  });
});

describe('generations', () => {
  it('given a subscriber of generation 1, when the instance is replayed, then it gets generation 1 to its end and is told of generation 2; generation 1 stays readable', async () => {
    const id = await start(t.api, 'stream-fail');
    const c = client();
    await c.subscribe({ instanceId: id });
    const task = await fetchOne(t.api, 'w', 'stream-fail');
    expect(
      (
        await t.api.post(`/api/external-tasks/${task.id}/failure`, {
          workerId: 'w',
          lockToken: task.lockToken,
          errorMessage: 'no',
        })
      ).status,
    ).toBe(204);
    await waitForStatus(t.api, id, 'incident');
    expect((await t.api.post(`/api/instances/${id}/replay`)).status).toBe(200);

    await waitFor(async () => (c.generations.length > 0 ? true : undefined), 10_000, 'a generation event');
    expect(c.generations).toEqual([{ instanceId: id, generation: 2 }]);
    const ended = await c.waitForKind(id);
    expect(ended.data).toEqual({ status: 'incident', nextGeneration: 2 });
    expect(c.seqs(id)).toEqual((await storedSeqs(id, 1)).map((f) => f.seq));

    const next = client();
    expect(await next.subscribe({ instanceId: id })).toMatchObject({ ok: true, generation: 2 });
    await next.waitForKind(id, 'instance:replayed', 2);
    expect(next.seqs(id, 2)[0]).toBe(1);

    const old = client();
    expect(await old.subscribe({ instanceId: id, generation: 1 })).toMatchObject({ ok: true, generation: 1 });
    await old.waitForKind(id);
    expect(old.seqs(id)).toEqual(c.seqs(id));
    await waitFor(async () => (old.generations.length > 0 ? true : undefined), 10_000, 'the newer generation to be announced');
  });
});

describe('positions: a seq belongs to a generation', () => {
  it('given an afterSeq above 0 without a generation, then the subscribe is refused and says to pass the generation; afterSeq 0 alone starts the current generation, answered before its first frame', async () => {
    const id = await start(t.api, 'stream-pos');
    const c = client();
    expect(await c.subscribe({ instanceId: id, afterSeq: 2 })).toEqual({
      ok: false,
      error: {
        type: 'ValidationError',
        message:
          'afterSeq 2 needs the generation it belongs to: subscribe with {instanceId, generation, afterSeq}, ' +
          'or without afterSeq to follow the current generation from its start',
      },
    });
    expect(c.frames).toEqual([]);

    const stored = await storedSeqs(id);
    expect(await c.subscribe({ instanceId: id, afterSeq: 0 })).toEqual({ ok: true, generation: 1, lastSeq: stored.length });
    await c.waitForSeq(id, stored.length);
    expect(c.log.map((e) => e.event)).toEqual(['ack', 'ack', ...stored.map(() => 'frame')]);
    expect(c.seqs(id)).toEqual(range(1, stored.length));
  });

  it("given an afterSeq past the generation's last seq, then the subscribe is refused with a Conflict naming lastSeq and where to restart, and nothing is sent", async () => {
    const id = await start(t.api, 'stream-pos');
    const last = (await storedSeqs(id)).length;
    const c = client();
    const refused = await c.subscribe({ instanceId: id, generation: 1, afterSeq: last + 1 });
    expect(refused).toEqual({
      ok: false,
      error: {
        type: 'Conflict',
        message:
          `Generation 1 of instance ${id} ends at seq ${last} (lastSeq), so afterSeq ${last + 1} is no position in it: ` +
          'subscribe with the generation that seq came from, or with afterSeq 0 to replay generation 1 from its start',
      },
    });
    expect(await c.subscribe({ instanceId: id, generation: 1, afterSeq: last - 1 })).toEqual({
      ok: true,
      generation: 1,
      lastSeq: last,
    });
    await c.waitForSeq(id, last);
    expect(c.seqs(id)).toEqual([last]);
  });

  it("given a client of generation 1 that comes back after a replay, then a bare afterSeq and one past generation 2's end are refused, and {generation: 1, afterSeq} gets the rest of generation 1, then the generation event", async () => {
    const id = await start(t.api, 'stream-pos-replay');
    const before = client();
    await before.subscribe({ instanceId: id });
    const task = await fetchOne(t.api, 'w', 'stream-pos-replay');
    await before.waitForKind(id, 'task:locked');
    before.close();
    const had = before.lastSeq(id);
    const failed = await t.api.post(`/api/external-tasks/${task.id}/failure`, {
      workerId: 'w',
      lockToken: task.lockToken,
      errorMessage: 'no',
    });
    expect(failed.status).toBe(204);
    await waitForStatus(t.api, id, 'incident');
    expect((await t.api.post(`/api/instances/${id}/replay`)).body).toMatchObject({ generation: 2 });
    const gen1 = (await storedSeqs(id, 1)).map((f) => f.seq);
    const gen2Last = (await storedSeqs(id, 2)).length;
    const gen1Last = gen1.at(-1) ?? 0;
    expect(gen1Last).toBeGreaterThan(gen2Last); // the seq the client holds is also past generation 2's end

    const back = client();
    expect(await back.subscribe({ instanceId: id, afterSeq: gen1Last })).toMatchObject({
      ok: false,
      error: { type: 'ValidationError', message: expect.stringContaining('needs the generation it belongs to') },
    });
    expect(await back.subscribe({ instanceId: id, generation: 2, afterSeq: gen1Last })).toMatchObject({
      ok: false,
      error: { type: 'Conflict', message: expect.stringContaining(`ends at seq ${gen2Last} (lastSeq)`) },
    });
    expect(back.frames).toEqual([]);

    expect(await back.subscribe({ instanceId: id, generation: 1, afterSeq: had })).toEqual({
      ok: true,
      generation: 1,
      lastSeq: gen1Last,
    });
    await expect.poll(() => back.generations.length, { timeout: 10_000 }).toBe(1);
    const tail = back.log.slice(back.log.map((e) => e.event).lastIndexOf('ack'));
    expect(tail.map((e) => (e.event === 'frame' ? e.data.seq : e.event))).toEqual([
      'ack',
      ...gen1.filter((seq) => seq > had),
      'generation',
    ]);
    expect(back.frames.at(-1)?.kind).toBe('instance:ended');
    expect(back.generations).toEqual([{ instanceId: id, generation: 2 }]);
  });
});

describe('retention', () => {
  it('given frames deleted by retention, then a subscriber is told the gone range and still gets the final frame', async () => {
    const r = await startTestServer({ sweepIntervalMs: 100, frameRetentionMs: 0 });
    try {
      await deploy(r.api, singleTaskBpmn('stream-kept', 'stream-kept'));
      const id = await start(r.api, 'stream-kept');
      const task = await fetchOne(r.api, 'w', 'stream-kept');
      expect((await complete(r.api, task, 'w')).status).toBe(204);
      const { rows } = await r.db.pool.query<{ last_seq: number }>('select last_seq from frame_heads where instance_id = $1', [
        id,
      ]);
      const last = rows[0]?.last_seq ?? 0;
      expect(last).toBeGreaterThan(3);
      await waitFor(
        async () => {
          const { rows: left } = await r.db.pool.query<{ n: number }>(
            'select count(*)::int as n from frames where instance_id = $1',
            [id],
          );
          return left[0]?.n === 1 ? true : undefined;
        },
        10_000,
        'retention to delete all but the last frame',
      );
      const c = new ProgressClient(r.url);
      clients.push(c);
      expect(await c.subscribe({ instanceId: id, generation: 1, afterSeq: 1 })).toEqual({
        ok: true,
        generation: 1,
        lastSeq: last,
      });
      const ended = await c.waitForKind(id);
      expect(ended.seq).toBe(last);
      expect(c.gaps).toEqual([{ instanceId: id, generation: 1, fromSeq: 2, toSeq: last - 1 }]);
      expect(c.seqs(id)).toEqual([last]);
    } finally {
      await r.close();
    }
  });
});

describe('auth', () => {
  it('given tokens, then a socket without one or with a worker token is refused and a viewer may subscribe', async () => {
    const viewer = 'viewer-secret-0123456789';
    const worker = 'worker-secret-0123456789';
    const s = await startTestServer({
      auth: {
        tokens: [
          { name: 'v', role: 'viewer', hash: (await import('../../runtime/security/tokens.ts')).hashToken(viewer) },
          { name: 'w', role: 'worker', hash: (await import('../../runtime/security/tokens.ts')).hashToken(worker) },
        ],
      },
    });
    try {
      const anonymous = new ProgressClient(s.url);
      clients.push(anonymous);
      await expect(anonymous.connected()).rejects.toMatchObject({ data: { type: 'Unauthorized' } });
      const wrong = new ProgressClient(s.url, { token: 'not-a-token-at-all' });
      clients.push(wrong);
      await expect(wrong.connected()).rejects.toMatchObject({ data: { type: 'Unauthorized' } });
      const w = new ProgressClient(s.url, { token: worker });
      clients.push(w);
      await expect(w.connected()).rejects.toMatchObject({ data: { type: 'Forbidden' } });
      const v = new ProgressClient(s.url, { token: viewer });
      clients.push(v);
      expect(await v.subscribe({ instanceId: '00000000-0000-4000-8000-000000000000' })).toMatchObject({
        ok: false,
        error: { type: 'NotFound' },
      });
    } finally {
      await s.close();
    }
  });
});

describe('back-pressure', () => {
  it('given a client that stops reading, then the server stops writing to it at the backlog cap and tells it to resubscribe from its last seq', async () => {
    const s = await startTestServer({ progressStream: { maxBacklog: 20, batchSize: 10 } });
    try {
      await deploy(s.api, singleTaskBpmn('stream-slow', 'stream-slow'));
      const id = await start(s.api, 'stream-slow');
      // A raw Engine.IO long-polling client: it subscribes, then never polls, so
      // every packet the server sends waits in the server's write buffer.
      const base = `${s.url}/socket.io/?EIO=4&transport=polling`;
      const open = JSON.parse((await (await fetch(base)).text()).slice(1)) as { sid: string };
      const url = `${base}&sid=${open.sid}`;
      const post = (body: string) =>
        fetch(url, { method: 'POST', body, headers: { 'content-type': 'text/plain;charset=UTF-8' } });
      expect((await post('40/progress,')).ok).toBe(true);
      expect(await (await fetch(url)).text()).toMatch(/^40\/progress,/);
      expect((await post(`42/progress,0["subscribe",{"instanceId":"${id}"}]`)).ok).toBe(true);
      for (let i = 0; i < 100; i++) await s.db.pool.query(`select append_frame($1, 1, 'test:tick', '{}'::jsonb, now())`, [id]);
      await new Promise((r) => setTimeout(r, 300));
      // One poll now takes the whole backlog: frames up to the cap, then the resubscribe notice.
      const packets = (await (await fetch(url)).text()).split('\x1e');
      const events = packets
        .filter((p) => p.startsWith('42/progress,'))
        .map((p) => JSON.parse(p.slice('42/progress,'.length)) as [string, any]);
      const frames = events.filter(([name]) => name === 'frame').map(([, f]) => f.seq as number);
      const notice = events.find(([name]) => name === 'resubscribe');
      expect(frames.length).toBeLessThan(60);
      expect(frames).toEqual(range(1, frames.length));
      expect(notice?.[1]).toEqual({ instanceId: id, generation: 1, afterSeq: frames.at(-1) });
      expect(s.server.io.of('/progress').sockets.size).toBe(1); // the connection stays; only the subscription was dropped
    } finally {
      await s.close();
    }
  });
});
