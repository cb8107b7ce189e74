// Workload 7: the progress stream.
// - replay: a client subscribes to a generation of 10,000 stored frames and takes them all;
// - latency: 200 clients follow one instance while frames are committed one at a time;
//   commit → client, measured from just before the committing statement is sent;
// - stalled client: a client that stops reading while 20,000 frames are written; the
//   server's heap grows only to the per-client backlog cap (maxBacklog), then the
//   subscription is dropped with a `resubscribe` notice.
// Run inside `npm run bench` (run.ts), or alone: `node --import tsx test/bench/progress.ts [--quick]`.
import pg from 'pg';
import { pino } from 'pino';
import { io, type Socket } from 'socket.io-client';

export interface ProgressBenchOptions {
  baseUrl: string;
  /** the server's database: frames are written straight into it, not through workers */
  databaseUrl: string;
  quick: boolean;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const pct = (xs: number[], p: number): number =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))] as number;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function runProgressBench(opts: ProgressBenchOptions): Promise<Record<string, number | string>> {
  const db = new pg.Client({ connectionString: opts.databaseUrl });
  await db.connect();
  try {
    const replayFrames = opts.quick ? 2_000 : 10_000;
    const subscribers = opts.quick ? 20 : 200;
    const liveFrames = opts.quick ? 50 : 200;
    const stalledFrames = opts.quick ? 5_000 : 20_000;

    const replayMs: number[] = [];
    for (let round = 0; round < 3; round++) {
      const id = await newInstance(db, opts.baseUrl, `bench-replay-${round}`);
      await db.query(
        `select count(append_frame($1, 1, 'bench:tick', jsonb_build_object('n', n, 'text', repeat('x', 64)), now()))
                        from generate_series(1, $2) n`,
        [id, replayFrames],
      );
      const last = await lastSeq(db, id);
      const client = connect(opts.baseUrl);
      let got = 0;
      const done = new Promise<void>((resolve) =>
        client.on('frame', (f: { seq: number }) => {
          got++;
          if (f.seq === last) resolve();
        }),
      );
      const t0 = performance.now();
      await client.emitWithAck('subscribe', { instanceId: id });
      await done;
      replayMs.push(performance.now() - t0);
      client.close();
      if (got !== last) throw new Error(`replay delivered ${got} of ${last} frames`);
    }

    const id = await newInstance(db, opts.baseUrl, 'bench-live');
    const clients = Array.from({ length: subscribers }, () => connect(opts.baseUrl));
    const sentAt = new Map<number, number>();
    const latencies: number[] = [];
    let received = 0;
    for (const c of clients) {
      c.on('frame', (f: { seq: number; kind: string }) => {
        if (f.kind !== 'bench:live') return;
        const t = sentAt.get(f.seq);
        if (t !== undefined) latencies.push(performance.now() - t);
        received++;
      });
    }
    await Promise.all(clients.map((c) => c.emitWithAck('subscribe', { instanceId: id })));
    await sleep(200);
    const base = await lastSeq(db, id);
    for (let i = 1; i <= liveFrames; i++) {
      sentAt.set(base + i, performance.now());
      await db.query(`select append_frame($1, 1, 'bench:live', '{}'::jsonb, now())`, [id]);
      await sleep(10);
    }
    const deadline = Date.now() + 30_000;
    while (received < liveFrames * subscribers && Date.now() < deadline) await sleep(20);
    clients.forEach((c) => c.close());

    const stalled = await stalledClientHeap(db, opts.baseUrl, stalledFrames);
    return {
      [`replay ${replayFrames.toLocaleString('en-US')} frames (ms, median of 3)`]: Math.round(median(replayMs)),
      [`commit→client p50 ms (${subscribers} subscribers)`]: Number(pct(latencies, 50).toFixed(1)),
      [`commit→client p99 ms (${subscribers} subscribers)`]: Number(pct(latencies, 99).toFixed(1)),
      'frames delivered / expected': `${received} / ${liveFrames * subscribers}`,
      [`server heap growth with one stalled client over ${stalledFrames.toLocaleString('en-US')} frames (MiB)`]: Number(
        stalled.growthMiB.toFixed(1),
      ),
      'stalled client told to resubscribe': stalled.notified ? 'yes' : 'no',
    };
  } finally {
    await db.end();
  }
}

function connect(baseUrl: string): Socket {
  return io(`${baseUrl}/progress`, { transports: ['websocket'], reconnection: false, forceNew: true });
}

async function newInstance(db: pg.Client, baseUrl: string, key: string): Promise<string> {
  const xml = `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="d_${key}" targetNamespace="http://baton.dev/bench">
  <bpmn:process id="${key}" isExecutable="true">
    <bpmn:startEvent id="start"/>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="work"/>
    <bpmn:serviceTask id="work" camunda:type="external" camunda:topic="${key}"/>
    <bpmn:sequenceFlow id="f2" sourceRef="work" targetRef="end"/>
    <bpmn:endEvent id="end"/>
  </bpmn:process>
</bpmn:definitions>`;
  await post(`${baseUrl}/api/definitions`, { xml });
  const started = await post<{ id: string }>(`${baseUrl}/api/instances`, { definitionKey: key });
  void db;
  return started.id;
}

async function post<T = unknown>(url: string, body: unknown): Promise<T> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  if (res.status >= 300) throw new Error(`${url}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

async function lastSeq(db: pg.Client, instanceId: string): Promise<number> {
  const { rows } = await db.query<{ last_seq: number }>(
    'select last_seq from frame_heads where instance_id = $1 and generation = 1',
    [instanceId],
  );
  return rows[0]?.last_seq ?? 0;
}

/**
 * A raw Engine.IO long-polling client subscribes and then never polls again, so
 * every packet for it waits in the server. Heap is sampled after a GC when the
 * process exposes one (node --expose-gc), else as is.
 */
async function stalledClientHeap(
  db: pg.Client,
  baseUrl: string,
  frames: number,
): Promise<{ growthMiB: number; notified: boolean }> {
  const id = await newInstance(db, baseUrl, 'bench-stalled');
  const gc = (globalThis as { gc?: () => void }).gc;
  const heap = () => {
    gc?.();
    return process.memoryUsage().heapUsed;
  };
  const base = `${baseUrl}/socket.io/?EIO=4&transport=polling`;
  const open = JSON.parse((await (await fetch(base)).text()).slice(1)) as { sid: string };
  const url = `${base}&sid=${open.sid}`;
  const send = (body: string) => fetch(url, { method: 'POST', body, headers: { 'content-type': 'text/plain;charset=UTF-8' } });
  await send('40/progress,');
  await (await fetch(url)).text();
  await send(`42/progress,0["subscribe",{"instanceId":"${id}"}]`);
  const before = heap();
  for (let done = 0; done < frames; done += 1000) {
    await db.query(
      `select count(append_frame($1, 1, 'bench:tick', jsonb_build_object('text', repeat('x', 256)), now()))
                      from generate_series(1, $2)`,
      [id, Math.min(1000, frames - done)],
    );
    await sleep(50);
  }
  await sleep(500);
  const growth = heap() - before;
  const backlog = await (await fetch(url)).text();
  return { growthMiB: growth / 2 ** 20, notified: backlog.includes('"resubscribe"') };
}

// Standalone: an embedded PostgreSQL (or DATABASE_URL) and an in-process server.
if (import.meta.url === `file://${process.argv[1]}`) {
  const { startEmbeddedPostgres } = await import('../../runtime/store/embedded.ts');
  const { startBatonServer } = await import('../../runtime/server.ts');
  const path = await import('node:path');
  const quick = process.argv.includes('--quick');
  const { createServer } = await import('node:net');
  const port = await new Promise<number>((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const { port: free } = srv.address() as { port: number };
      srv.close(() => resolve(free));
    });
  });
  const embedded = process.env.DATABASE_URL
    ? undefined
    : await startEmbeddedPostgres({ dataDir: path.resolve('.baton-bench-progress'), port, database: 'postgres' });
  const databaseUrl = process.env.DATABASE_URL ?? (embedded as { url: string }).url;
  const server = await startBatonServer({ databaseUrl, port: 0, host: '127.0.0.1', log: pino({ level: 'silent' }) });
  try {
    const result = await runProgressBench({ baseUrl: server.url, databaseUrl, quick });
    for (const [k, v] of Object.entries(result)) console.log(`${k}: ${v}`);
  } finally {
    await server.close();
    await embedded?.stop();
  }
}
