// Hears one notification channel over a LISTEN connection of its own, reconnecting when it
// drops. While the connection is down a notification would go unheard: `listening` is false
// then, and every handler is called without a payload when listening stops and starts again,
// so whoever keeps state from the channel knows to read the table instead.
import pg from 'pg';
import type { Logger } from 'pino';

const RECONNECT_AFTER_MS = 1000;

export interface ChannelListener {
  /** true while a notification on the channel would be heard */
  readonly listening: boolean;
  /** called with each notification's payload, and without one whenever listening starts or stops */
  onChange(fn: (payload?: string) => void): void;
  stop(): Promise<void>;
}

export interface ChannelOptions {
  channel: string;
  /** how the connection shows in pg_stat_activity */
  application: string;
  reconnectAfterMs?: number;
}

class PgChannelListener implements ChannelListener {
  private client: pg.Client | undefined;
  private listeningNow = false;
  private stopped = false;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private readonly handlers: ((payload?: string) => void)[] = [];

  constructor(
    private readonly connectionString: string,
    private readonly opts: Required<ChannelOptions>,
    private readonly log: Logger,
  ) {}

  get listening(): boolean {
    return this.listeningNow;
  }

  onChange(fn: (payload?: string) => void): void {
    this.handlers.push(fn);
  }

  async connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.connectionString, application_name: this.opts.application });
    client.on('notification', (n) => this.changed(n.payload ?? ''));
    client.on('error', (err) => this.reconnect(err));
    client.on('end', () => this.reconnect());
    this.client = client;
    await client.connect();
    await client.query(`listen ${pg.escapeIdentifier(this.opts.channel)}`);
    if (this.client !== client) return; // dropped while connecting: the reconnect owns what follows
    this.listeningNow = true;
    this.changed(); // what was read while nobody listened may be stale
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.listeningNow = false;
    clearTimeout(this.reconnectTimer);
    await this.client?.end().catch(() => undefined);
  }

  private changed(payload?: string): void {
    for (const fn of this.handlers) fn(payload);
  }

  private reconnect(err?: Error): void {
    if (this.stopped || this.reconnectTimer) return;
    this.log.warn({ err: err?.message, channel: this.opts.channel }, 'listen:disconnected');
    const old = this.client;
    this.client = undefined;
    this.listeningNow = false;
    this.changed();
    old?.removeAllListeners();
    old?.on('error', () => undefined);
    old?.end().catch(() => undefined);
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      this.connect().catch((e: Error) => this.reconnect(e));
    }, this.opts.reconnectAfterMs);
  }
}

/** Starts listening; rejects when the database cannot be reached at all. */
export async function listenToChannel(connectionString: string, opts: ChannelOptions, log: Logger): Promise<ChannelListener> {
  const listener = new PgChannelListener(connectionString, { reconnectAfterMs: RECONNECT_AFTER_MS, ...opts }, log);
  try {
    await listener.connect();
  } catch (err) {
    await listener.stop();
    throw err;
  }
  return listener;
}
