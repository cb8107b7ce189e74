// Follows the frames notification for this node's subscribers: in-process for this
// process's commits, LISTEN baton_frames for the other nodes' (store/notifications.ts).
// A notification only says "instance X, generation G has seq N now": followers read
// the frames themselves from Postgres, so a coalesced notification costs nothing,
// and any node can serve any client. A notification can be lost (a node that died
// between its commit and its relay): every second the hub reads the heads of the
// instances it follows and rings them, and a follower reads only past its cursor.
import pg from 'pg';
import type { Logger } from 'pino';
import { announceListener, FRAMES_CHANNEL, onNotifications, readNotifications } from '../store/notifications.ts';
import { readFrameNotices } from '../store/frames.ts';

export interface NewFrames {
  instanceId: string;
  generation: number;
  seq: number;
}

/** Something that follows one instance: told about new frames (or, after a reconnect, that it should look). */
export interface InstanceListener {
  ring(bell: NewFrames | undefined): void;
}

/** How long the hub keeps listening after its last follower left (subscriptions come and go). */
const UNLISTEN_AFTER_MS = 10_000;
/** How often the heads of followed instances are read, for notifications that never came. */
const RECHECK_HEADS_MS = 1000;

export class FrameHub {
  private client: pg.Client | undefined;
  private readonly listeners = new Map<string, Set<InstanceListener>>();
  private stopped = false;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private unlistenTimer: NodeJS.Timeout | undefined;
  /** LISTEN is on for the current connection */
  private listening = false;
  /** LISTEN / UNLISTEN run one after another on the hub's connection */
  private chain: Promise<void> = Promise.resolve();
  private unsubscribeLocal: (() => void) | undefined;
  private recheckTimer: NodeJS.Timeout | undefined;
  private rechecking = false;

  constructor(
    private readonly connectionString: string,
    private readonly log: Logger,
    private readonly unlistenAfterMs = UNLISTEN_AFTER_MS,
    private readonly recheckMs = RECHECK_HEADS_MS,
  ) {}

  /** Whether notifications reach this node now (while anyone follows, and a while after). */
  get isListening(): boolean {
    return this.listening;
  }

  /**
   * Connects. The hub LISTENs only while it has followers: with nobody watching, the
   * notification of every committed transaction would wake this node for nothing.
   */
  async start(): Promise<void> {
    this.unsubscribeLocal ??= onNotifications({ frames: (bells) => bells.forEach((b) => this.dispatch(b)) });
    this.recheckTimer ??= setInterval(() => void this.recheckHeads(), this.recheckMs).unref();
    const client = new pg.Client({ connectionString: this.connectionString });
    client.on('notification', (msg) => {
      const { fromHere, bells } = readNotifications(msg.payload);
      if (!fromHere) bells.forEach((b) => this.dispatch(parseNewFrames(b)));
    });
    client.on('error', (err) => this.reconnect(err));
    client.on('end', () => this.reconnect());
    await client.connect();
    await announceListener(client);
    this.client = client;
    this.listening = false;
    await this.reconcile();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribeLocal?.();
    clearInterval(this.recheckTimer);
    clearTimeout(this.reconnectTimer);
    clearTimeout(this.unlistenTimer);
    await this.client?.end().catch(() => undefined);
  }

  /** Resolves once notifications reach the listener: read the frames after that, and nothing is missed. */
  async follow(instanceId: string, listener: InstanceListener): Promise<void> {
    let set = this.listeners.get(instanceId);
    if (!set) this.listeners.set(instanceId, (set = new Set()));
    set.add(listener);
    clearTimeout(this.unlistenTimer);
    this.unlistenTimer = undefined;
    // A failed LISTEN means a lost connection: the reconnect listens again and rings everyone.
    await this.reconcile().catch(() => undefined);
  }

  unfollow(instanceId: string, listener: InstanceListener): void {
    const set = this.listeners.get(instanceId);
    set?.delete(listener);
    if (set?.size === 0) this.listeners.delete(instanceId);
    if (this.listeners.size === 0 && !this.unlistenTimer) {
      this.unlistenTimer = setTimeout(() => {
        this.unlistenTimer = undefined;
        void this.reconcile().catch(() => undefined);
      }, this.unlistenAfterMs);
      this.unlistenTimer.unref();
    }
  }

  /** Brings LISTEN in line with whether anyone follows (serialized; a lost connection reconnects and calls it again). */
  private reconcile(): Promise<void> {
    const next = this.chain.then(async () => {
      const client = this.client;
      if (!client || this.stopped) return;
      const wanted = this.listeners.size > 0 || this.unlistenTimer !== undefined;
      if (wanted && !this.listening) {
        await client.query(`listen ${FRAMES_CHANNEL}`);
        this.listening = true;
      } else if (!wanted && this.listening) {
        await client.query(`unlisten ${FRAMES_CHANNEL}`);
        this.listening = false;
      }
    });
    this.chain = next.catch(() => undefined);
    return next;
  }

  /** Rings the followed instances with their heads as they are (one read; skipped while the last is out, or disconnected). */
  private async recheckHeads(): Promise<void> {
    const client = this.client;
    if (!client || this.stopped || this.rechecking || this.listeners.size === 0) return;
    this.rechecking = true;
    try {
      for (const bell of await readFrameNotices(client, [...this.listeners.keys()])) this.dispatch(bell);
    } catch {
      // a lost connection reconnects and rings everyone
    } finally {
      this.rechecking = false;
    }
  }

  private dispatch(bell: NewFrames | undefined): void {
    if (!bell) return;
    for (const l of this.listeners.get(bell.instanceId) ?? []) l.ring(bell);
  }

  private reconnect(err?: Error): void {
    if (this.stopped || this.reconnectTimer) return;
    this.log.warn({ err: err?.message }, 'frames:listener_disconnected');
    const old = this.client;
    this.client = undefined;
    this.listening = false;
    old?.removeAllListeners();
    old?.on('error', () => undefined);
    old?.end().catch(() => undefined);
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      this.start()
        // Notifications rung while disconnected are lost: everyone looks again.
        .then(() => this.listeners.forEach((set) => set.forEach((l) => l.ring(undefined))))
        .catch((e: Error) => this.reconnect(e));
    }, 1000);
  }
}

function parseNewFrames(payload: string | undefined): NewFrames | undefined {
  const [instanceId, generation, seq] = (payload ?? '').split(' ');
  if (!instanceId || !generation || !seq) return undefined;
  return { instanceId, generation: Number(generation), seq: Number(seq) };
}
