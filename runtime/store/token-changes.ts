// Hears every change to the tokens table (the statement trigger of migration 0020, fired by
// the CLI, another node or psql alike) over a LISTEN connection of its own, so that the
// authorizer can keep the tokens it looked up until one changes. While the connection is
// down a change would go unheard: `listening` is false then, and whoever relies on it reads
// the table instead.
import pg from 'pg';
import type { Logger } from 'pino';

export const TOKENS_CHANNEL = 'baton_tokens';
/** How the connection shows in pg_stat_activity. */
export const TOKEN_CHANGES_APPLICATION = 'baton-token-changes';
const RECONNECT_AFTER_MS = 1000;

export interface TokenChanges {
  /** true while a change to the tokens table would be heard */
  readonly listening: boolean;
  /** called on every change, and whenever listening starts or stops (a change may have gone unheard) */
  onChange(fn: () => void): void;
  stop(): Promise<void>;
}

class TokenChangeListener implements TokenChanges {
  private client: pg.Client | undefined;
  private listeningNow = false;
  private stopped = false;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private readonly handlers: (() => void)[] = [];

  constructor(
    private readonly connectionString: string,
    private readonly log: Logger,
    private readonly reconnectAfterMs: number,
  ) {}

  get listening(): boolean {
    return this.listeningNow;
  }

  onChange(fn: () => void): void {
    this.handlers.push(fn);
  }

  async connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.connectionString, application_name: TOKEN_CHANGES_APPLICATION });
    client.on('notification', () => this.changed());
    client.on('error', (err) => this.reconnect(err));
    client.on('end', () => this.reconnect());
    this.client = client;
    await client.connect();
    await client.query(`listen ${TOKENS_CHANNEL}`);
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

  private changed(): void {
    for (const fn of this.handlers) fn();
  }

  private reconnect(err?: Error): void {
    if (this.stopped || this.reconnectTimer) return;
    this.log.warn({ err: err?.message }, 'tokens:listener_disconnected');
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
    }, this.reconnectAfterMs);
  }
}

/** Starts listening; rejects when the database cannot be reached at all. */
export async function watchTokenChanges(
  connectionString: string,
  log: Logger,
  reconnectAfterMs = RECONNECT_AFTER_MS,
): Promise<TokenChanges> {
  const listener = new TokenChangeListener(connectionString, log, reconnectAfterMs);
  try {
    await listener.connect();
  } catch (err) {
    await listener.stop();
    throw err;
  }
  return listener;
}
