// Follows the frames doorbell (LISTEN baton_frames) for this node's subscribers.
// The payload only says "instance X, generation G has seq N now": followers read
// the frames themselves from Postgres, so a lost or coalesced notification costs
// nothing but a read, and any node can serve any client.
import pg from 'pg';
import type { Logger } from 'pino';
import { FRAMES_CHANNEL } from '../store/frames.ts';

export interface Doorbell {
  instanceId: string;
  generation: number;
  seq: number;
}

/** Something that follows one instance: told about new frames (or, after a reconnect, that it should look). */
export interface InstanceListener {
  ring(bell: Doorbell | undefined): void;
}

export class FrameHub {
  private client: pg.Client | undefined;
  private readonly listeners = new Map<string, Set<InstanceListener>>();
  private stopped = false;
  private reconnectTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly connectionString: string,
    private readonly log: Logger,
  ) {}

  async start(): Promise<void> {
    const client = new pg.Client({ connectionString: this.connectionString });
    client.on('notification', (msg) => this.dispatch(parseDoorbell(msg.payload)));
    client.on('error', (err) => this.reconnect(err));
    client.on('end', () => this.reconnect());
    await client.connect();
    await client.query(`listen ${FRAMES_CHANNEL}`);
    this.client = client;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.reconnectTimer);
    await this.client?.end().catch(() => undefined);
  }

  follow(instanceId: string, listener: InstanceListener): void {
    let set = this.listeners.get(instanceId);
    if (!set) this.listeners.set(instanceId, (set = new Set()));
    set.add(listener);
  }

  unfollow(instanceId: string, listener: InstanceListener): void {
    const set = this.listeners.get(instanceId);
    set?.delete(listener);
    if (set?.size === 0) this.listeners.delete(instanceId);
  }

  private dispatch(bell: Doorbell | undefined): void {
    if (!bell) return;
    for (const l of this.listeners.get(bell.instanceId) ?? []) l.ring(bell);
  }

  private reconnect(err?: Error): void {
    if (this.stopped || this.reconnectTimer) return;
    this.log.warn({ err: err?.message }, 'frames:listener_disconnected');
    const old = this.client;
    this.client = undefined;
    old?.removeAllListeners();
    old?.on('error', () => undefined);
    old?.end().catch(() => undefined);
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      this.start()
        // Doorbells rung while disconnected are lost: everyone looks again.
        .then(() => this.listeners.forEach((set) => set.forEach((l) => l.ring(undefined))))
        .catch((e: Error) => this.reconnect(e));
    }, 1000);
  }
}

function parseDoorbell(payload: string | undefined): Doorbell | undefined {
  const [instanceId, generation, seq] = (payload ?? '').split(' ');
  if (!instanceId || !generation || !seq) return undefined;
  return { instanceId, generation: Number(generation), seq: Number(seq) };
}
