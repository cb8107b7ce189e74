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

export class ProgressClient {
  readonly socket: Socket;
  readonly frames: WireFrame[] = [];
  readonly gaps: { instanceId: string; generation: number; fromSeq: number; toSeq: number }[] = [];
  readonly generations: { instanceId: string; generation: number }[] = [];
  readonly resubscribes: { instanceId: string; generation: number; afterSeq: number }[] = [];

  constructor(baseUrl: string, opts: { token?: string } = {}) {
    this.socket = io(`${baseUrl}/progress`, {
      transports: ['websocket'],
      reconnection: false,
      forceNew: true,
      ...(opts.token ? { auth: { token: opts.token } } : {}),
    });
    this.socket.on('frame', (f: WireFrame) => this.frames.push(f));
    this.socket.on('gap', (g) => this.gaps.push(g));
    this.socket.on('generation', (g) => this.generations.push(g));
    this.socket.on('resubscribe', (r) => this.resubscribes.push(r));
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
    return this.socket.timeout(10_000).emitWithAck('subscribe', req) as Promise<SubscribeAck>;
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
