// Hears every change to the tokens table (the statement trigger of migration 0020, fired by
// the CLI, another node or psql alike), so that the authorizer can keep the tokens it looked
// up until one changes.
import type { Logger } from 'pino';
import { listenToChannel, type ChannelListener } from './channel-listener.ts';

export const TOKENS_CHANNEL = 'baton_tokens';
/** How the connection shows in pg_stat_activity. */
export const TOKEN_CHANGES_APPLICATION = 'baton-token-changes';

export type TokenChanges = ChannelListener;

/** Starts listening; rejects when the database cannot be reached at all. */
export function watchTokenChanges(connectionString: string, log: Logger, reconnectAfterMs?: number): Promise<TokenChanges> {
  return listenToChannel(
    connectionString,
    { channel: TOKENS_CHANNEL, application: TOKEN_CHANGES_APPLICATION, ...(reconnectAfterMs ? { reconnectAfterMs } : {}) },
    log,
  );
}
