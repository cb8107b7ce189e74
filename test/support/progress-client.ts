// A Socket.IO client of the /progress namespace that records everything it gets.
import { io, type Socket } from 'socket.io-client';
import { waitFor } from './server.ts';

export interface WireFrame {
  instanceId: string;
  generation: number;
  seq: number;
  kind: string;
  data: any;
  at: string;
}

export type SubscribeAck =
  { ok: true; generation: number; lastSeq: number } | { ok: false; error: { type: string; message: string } };

/** Everything the client got, in arrival order; `ack` is a subscribe's answer. */
export type ClientEvent =
  | { event: 'frame'; data: WireFrame }
  | { event: 'gap' | 'generation' | 'resubscribe'; data: any }
  | { event: 'ack'; data: SubscribeAck };

export class ProgressClient {
  readonly socket: Socket;
  readonly frames: WireFrame[] = [];
  readonly gaps: { instanceId: string; generation: number; fromSeq: number; toSeq: number }[] = [];
  readonly generations: { instanceId: string; generation: number }[] = [];
  readonly resubscribes: { instanceId: string; generation: number; afterSeq: number }[] = [];
  readonly log: ClientEvent[] = [];

  constructor(baseUrl: string, opts: { token?: string } = {}) {
    this.socket = io(`${baseUrl}/progress`, {
      transports: ['websocket'],
      reconnection: false,
      forceNew: true,
      ...(opts.token ? { auth: { token: opts.token } } : {}),
    });
    this.socket.on('frame', (f: WireFrame) => {
      this.frames.push(f);
      this.log.push({ event: 'frame', data: f });
    });
    this.socket.on('gap', (g) => {
      this.gaps.push(g);
      this.log.push({ event: 'gap', data: g });
    });
    this.socket.on('generation', (g) => {
      this.generations.push(g);
      this.log.push({ event: 'generation', data: g });
    });
    this.socket.on('resubscribe', (r) => {
      this.resubscribes.push(r);
      this.log.push({ event: 'resubscribe', data: r });
    });
  }

  /** resolves once connected; rejects with the server's refusal ({type, message} in `data`) */
  connected(): Promise<void> {
    if (this.socket.connected) return Promise.resolve();
    return new Promise((resolve, reject) => {
      this.socket.once('connect', () => resolve());
      this.socket.once('connect_error', (err) => reject(err));
    });
  }

  async subscribe(req: { instanceId: string; generation?: number; afterSeq?: number } | unknown): Promise<SubscribeAck> {
    await this.connected();
    // The answer is logged when it arrives, so the log shows what came before and after it.
    return new Promise((resolve, reject) => {
      this.socket.timeout(10_000).emit('subscribe', req, (err: Error | null, ack: SubscribeAck) => {
        if (err) return reject(err);
        this.log.push({ event: 'ack', data: ack });
        resolve(ack);
      });
    });
  }

  seqs(instanceId: string, generation = 1): number[] {
    return this.frames.filter((f) => f.instanceId === instanceId && f.generation === generation).map((f) => f.seq);
  }

  lastSeq(instanceId: string, generation = 1): number {
    return this.seqs(instanceId, generation).at(-1) ?? 0;
  }

  /** waits until a frame of this kind (default instance:ended) arrived */
  async waitForKind(instanceId: string, kind = 'instance:ended', generation = 1, timeoutMs = 10_000): Promise<WireFrame> {
    return waitFor(
      async () => this.frames.find((f) => f.instanceId === instanceId && f.generation === generation && f.kind === kind),
      timeoutMs,
      () => `frame ${kind} of ${instanceId}/${generation}; got ${this.frames.map((f) => f.kind).join(', ')}`,
    );
  }

  async waitForSeq(instanceId: string, seq: number, generation = 1, timeoutMs = 10_000): Promise<void> {
    await waitFor(
      async () => (this.lastSeq(instanceId, generation) >= seq ? true : undefined),
      timeoutMs,
      () => `seq ${seq} of ${instanceId}/${generation}; last is ${this.lastSeq(instanceId, generation)}`,
    );
  }

  close(): void {
    this.socket.disconnect();
  }
}
