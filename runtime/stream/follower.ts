// One subscription: a client following the frames of one instance generation.
// It replays from Postgres what the client has not seen and then follows the
// notification, always reading "seq > cursor" from the table. Seqs of a generation
// commit in order (migration 0008), so there is no hand-over between replay and
// live: both are the same read, and nothing can be skipped or sent twice.
import type { FrameRow } from '../store/frames.ts';
import type { NewFrames, InstanceListener } from './frame-hub.ts';
import type { FrameReader } from './frame-reader.ts';

export interface FrameWire {
  instanceId: string;
  generation: number;
  seq: number;
  kind: string;
  data: Record<string, unknown>;
  at: string;
}

/** What a follower sends to its client (a Socket.IO socket in production). */
export interface FollowerOutput {
  frame(f: FrameWire): void;
  gap(g: { instanceId: string; generation: number; fromSeq: number; toSeq: number }): void;
  generation(g: { instanceId: string; generation: number }): void;
  resubscribe(r: { instanceId: string; generation: number; afterSeq: number }): void;
  /** packets written but not yet taken by the client */
  backlog(): number;
}

export interface FollowerOptions {
  /** frames read per query */
  batchSize: number;
  /** a client with more unsent packets than this is dropped and told to resubscribe */
  maxBacklog: number;
}

const RETRY_READ_MS = 1000;

export class Follower implements InstanceListener {
  private cursor: number;
  private pumping: Promise<void> | undefined;
  private dirty = false;
  private closed = false;
  /**
   * Set by the first pump. Rings before it send nothing, so the subscribe's answer goes out
   * before the first frame; they lose nothing, as the first pump reads everything after the cursor.
   */
  private started = false;
  private announced: number;
  private pendingGeneration: number | undefined;

  constructor(
    private readonly read: FrameReader,
    readonly instanceId: string,
    readonly generation: number,
    afterSeq: number,
    private readonly out: FollowerOutput,
    private readonly opts: FollowerOptions,
    /** called when the follower gives up on a slow client */
    private readonly onDropped: (f: Follower) => void,
    /** the instance's current generation when subscribing */
    currentGeneration: number,
  ) {
    this.cursor = afterSeq;
    this.announced = generation;
    // A subscribe that arrives after a replay learns of it like a live one: after the tail.
    if (currentGeneration > generation) this.pendingGeneration = generation + 1;
  }

  ring(bell: NewFrames | undefined): void {
    if (this.closed) return;
    if (bell && bell.generation > this.generation) {
      // Announced once the old generation's remaining frames are out (its last is instance:ended).
      // It names the next generation, not the newest: each one stays readable, and a client that
      // follows the announcements one by one gets the frames of every generation.
      this.pendingGeneration = this.generation + 1;
    } else if (bell && (bell.generation !== this.generation || bell.seq <= this.cursor)) return;
    if (this.started) void this.pump();
  }

  /**
   * Sends everything after the cursor; concurrent calls fold into one more round. The first
   * call starts the follower: from then on a ring pumps too.
   * Never rejects: a failed read (the database is away) is tried again in a second,
   * from the same cursor, so nothing is skipped.
   */
  pump(): Promise<void> {
    this.started = true;
    if (this.pumping) {
      this.dirty = true;
      return this.pumping;
    }
    this.pumping = this.drain()
      .catch(() => {
        if (!this.closed) setTimeout(() => this.ring(undefined), RETRY_READ_MS).unref();
      })
      .finally(() => {
        this.pumping = undefined;
      });
    return this.pumping;
  }

  close(): void {
    this.closed = true;
  }

  private async drain(): Promise<void> {
    do {
      this.dirty = false;
      for (;;) {
        if (this.closed) return;
        const frames = await this.read({
          instanceId: this.instanceId,
          generation: this.generation,
          afterSeq: this.cursor,
          limit: this.opts.batchSize,
        });
        if (this.closed) return;
        if (frames.length === 0) break;
        if (!this.send(frames)) return;
        if (frames.length < this.opts.batchSize) break;
      }
    } while (this.dirty);
    if (this.pendingGeneration !== undefined) this.announce(this.pendingGeneration);
  }

  private send(frames: FrameRow[]): boolean {
    const first = frames[0] as FrameRow;
    if (first.seq > this.cursor + 1) {
      // Retention deleted these; it keeps each generation's last frame, so a gap is always followed by one.
      this.out.gap({ instanceId: this.instanceId, generation: this.generation, fromSeq: this.cursor + 1, toSeq: first.seq - 1 });
    }
    for (const f of frames) {
      if (this.out.backlog() > this.opts.maxBacklog) {
        this.closed = true;
        this.out.resubscribe({ instanceId: this.instanceId, generation: this.generation, afterSeq: this.cursor });
        this.onDropped(this);
        return false;
      }
      this.out.frame({
        instanceId: f.instance_id,
        generation: f.generation,
        seq: f.seq,
        kind: f.kind,
        data: f.data,
        at: new Date(f.at).toISOString(),
      });
      this.cursor = f.seq;
    }
    return true;
  }

  private announce(generation: number): void {
    if (generation <= this.announced) return;
    this.announced = generation;
    this.pendingGeneration = undefined;
    this.out.generation({ instanceId: this.instanceId, generation });
  }
}
