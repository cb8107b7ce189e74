// The Socket.IO namespace /tasks: a tasklist hears that a user task was created, changed hands
// or ended, on whichever node, and reads its list again (docs/progress.md, "Tasklist feed").
// Each notification carries only ids: what a caller may see is the REST API's answer.
import type { Logger } from 'pino';
import type { Namespace, Server } from 'socket.io';
import type { ChannelListener } from '../store/channel-listener.ts';
import { socketAuthMiddleware, type SocketAuthResult } from './socket-auth.ts';

export interface UserTaskChange {
  id: string;
  instanceId: string;
  change: 'created' | 'updated' | 'ended';
}

export interface UserTaskFeedDeps {
  changes: ChannelListener;
  log: Logger;
  authorize: (secret: string | undefined, client: string) => Promise<SocketAuthResult>;
}

export function attachUserTaskFeed(io: Server, deps: UserTaskFeedDeps): Namespace {
  const nsp = io.of('/tasks');
  nsp.use(socketAuthMiddleware(deps.authorize));
  deps.changes.onChange((payload) => {
    // Without a payload the listener stopped or started again: changes may have gone unheard.
    if (payload === undefined) {
      nsp.emit('resync');
      return;
    }
    try {
      nsp.emit('userTask', JSON.parse(payload) as UserTaskChange);
    } catch (err) {
      deps.log.warn({ err: (err as Error).message }, 'tasks:bad_notification');
    }
  });
  return nsp;
}
