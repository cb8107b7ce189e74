// Which workers fetch which topics, and when: the designer marks topics nobody serves and
// lint warns about them (docs/workers.md, "Element templates").
//
// Trade-off: fetch-and-lock is the hot path, one statement per try, so a fetch is recorded
// here in memory (a map write per topic) and the node writes what it saw at most every
// flushMs with one statement (store/topic-fetches.ts). Other nodes see a fetch up to flushMs
// late; a node that dies loses at most its last flushMs of activity, which the worker's next
// fetch records again. A read merges the table (every node's flushed fetches) with this
// node's fetches not yet written.
//
// States: idle (nothing held, no timer) → holding (fetches in memory, a flush timer armed) →
// writing (a flush in flight; its fetches are still read from memory until it is done) →
// idle, or holding again when fetches arrived meanwhile. A failed write puts its fetches back
// and the next fetch arms the timer again.
import type { Logger } from 'pino';
import type { Pool } from '../store/db.ts';
import { readRecentTopicFetches, recordTopicFetches, type TopicFetch } from '../store/topic-fetches.ts';

/** How far back activity is answered and kept. */
export const FETCH_ACTIVITY_WINDOW_MS = 24 * 3_600_000;

/** (topic, worker) pairs held between two flushes at most: a flood of made-up worker ids cannot grow memory. */
const MAX_HELD_PAIRS = 10_000;

/** topic → worker id → performance.now() of its latest fetch */
type Held = Map<string, Map<string, number>>;

export interface WorkerActivity {
  workerId: string;
  lastFetchedAt: Date;
}

export interface TopicActivity {
  topic: string;
  /** the latest fetch of the topic by any worker */
  lastFetchedAt: Date;
  /** latest first */
  workers: WorkerActivity[];
}

export class FetchActivity {
  private held: Held = new Map();
  private heldPairs = 0;
  /** the fetches a flush in flight writes */
  private writing: Held = new Map();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  private closed = false;

  constructor(
    private readonly pool: Pool,
    private readonly log: Logger,
    private readonly flushMs: number,
    readonly windowMs = FETCH_ACTIVITY_WINDOW_MS,
  ) {}

  /** A fetch by workerId for these topics, now. No I/O. */
  record(topics: readonly string[], workerId: string): void {
    const at = performance.now();
    for (const topic of topics) this.holdPair(topic, workerId, at);
    if (!this.timer && !this.closed && this.heldPairs > 0) {
      this.timer = setTimeout(() => void this.flush(), this.flushMs);
      this.timer.unref();
    }
  }

  private holdPair(topic: string, workerId: string, at: number): void {
    let workers = this.held.get(topic);
    const known = workers?.get(workerId);
    if (known === undefined && this.heldPairs >= MAX_HELD_PAIRS) return;
    if (!workers) this.held.set(topic, (workers = new Map()));
    if (known === undefined) this.heldPairs++;
    if (known === undefined || known < at) workers.set(workerId, at);
  }

  /** Writes what this node holds; one statement. Waits for a flush in flight first. */
  async flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    while (this.flushing) await this.flushing;
    if (this.heldPairs === 0) return;
    const batch = this.held;
    this.held = new Map();
    this.heldPairs = 0;
    this.writing = batch;
    this.flushing = this.write(batch);
    try {
      await this.flushing;
    } finally {
      this.flushing = undefined;
      this.writing = new Map();
    }
  }

  private async write(batch: Held): Promise<void> {
    const now = performance.now();
    const fetches: TopicFetch[] = [];
    for (const [topic, workers] of batch)
      for (const [workerId, at] of workers) fetches.push({ topic, workerId, agoMs: Math.max(0, now - at) });
    try {
      await recordTopicFetches(this.pool, fetches, this.windowMs);
    } catch (err) {
      this.log.warn({ err: (err as Error).message, pairs: fetches.length }, 'fetch_activity:flush_failed');
      for (const [topic, workers] of batch) for (const [workerId, at] of workers) this.holdPair(topic, workerId, at);
    }
  }

  /** Activity per topic within the window: the table merged with what this node has not written yet. */
  async read(topic?: string): Promise<TopicActivity[]> {
    const recent = await readRecentTopicFetches(this.pool, this.windowMs);
    const now = performance.now();
    const latest = new Map<string, Map<string, number>>();
    const note = (t: string, workerId: string, atMs: number) => {
      if (topic !== undefined && t !== topic) return;
      let workers = latest.get(t);
      if (!workers) latest.set(t, (workers = new Map()));
      if ((workers.get(workerId) ?? -Infinity) < atMs) workers.set(workerId, atMs);
    };
    for (const row of recent.rows) note(row.topic, row.worker_id, row.last_fetched_at.getTime());
    // This node's fetches, placed on the database's clock by their age.
    const readAtMs = recent.readAt.getTime();
    for (const held of [this.writing, this.held])
      for (const [t, workers] of held) for (const [workerId, at] of workers) note(t, workerId, readAtMs - (now - at));
    return [...latest]
      .map(([t, workers]) => {
        const list = [...workers]
          .map(([workerId, at]) => ({ workerId, lastFetchedAt: new Date(at) }))
          .sort((a, b) => b.lastFetchedAt.getTime() - a.lastFetchedAt.getTime() || a.workerId.localeCompare(b.workerId));
        return { topic: t, lastFetchedAt: list[0]!.lastFetchedAt, workers: list };
      })
      .sort((a, b) => a.topic.localeCompare(b.topic));
  }

  /** Stops the timer and writes what is held, so other nodes see this node's last fetches. */
  async close(): Promise<void> {
    this.closed = true;
    await this.flush();
  }
}
