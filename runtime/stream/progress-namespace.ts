// The Socket.IO namespace /progress (docs/progress.md has the wire contract):
// subscribe → ack {ok, generation, lastSeq}, then `frame` events from the replay
// and live; `gap`, `generation` and `resubscribe` tell the client what it must know.
import type { Logger } from 'pino';
import type { Namespace, Server, Socket } from 'socket.io';
import type { Pool } from '../store/db.ts';
import { findStreamTarget, readFrameHead } from '../store/frames.ts';
import { BatonError } from '../shared/errors.ts';
import { validateBody } from '../shared/validate.ts';
import type { FrameHub } from './frame-hub.ts';
import { Follower, type FollowerOptions, type FollowerOutput } from './follower.ts';
import { sharedFrameReader } from './frame-reader.ts';
import { socketAuthMiddleware, type SocketAuthResult } from './socket-auth.ts';

export interface ProgressStreamOptions extends FollowerOptions {
  /** instances one socket may follow at once */
  maxSubscriptionsPerSocket: number;
}

export const DEFAULT_STREAM_OPTIONS: ProgressStreamOptions = { batchSize: 500, maxBacklog: 2000, maxSubscriptionsPerSocket: 100 };

interface SubscribeRequest {
  instanceId: string;
  generation?: number;
  afterSeq?: number;
}

interface SubscribeAnswer {
  ok: true;
  generation: number;
  /** the generation's highest seq when the subscribe was checked: frames up to it are replayed, later ones follow live */
  lastSeq: number;
}

type Ack = (answer: SubscribeAnswer | { ok: false; error: { type: string; message: string } }) => void;

export interface ProgressStreamDeps {
  pool: Pool;
  hub: FrameHub;
  log: Logger;
  authorize: (secret: string | undefined, client: string) => Promise<SocketAuthResult>;
  options?: Partial<ProgressStreamOptions>;
}

export function attachProgressStream(io: Server, deps: ProgressStreamDeps): Namespace {
  const opts = { ...DEFAULT_STREAM_OPTIONS, ...deps.options };
  const nsp = io.of('/progress');
  const read = sharedFrameReader(deps.pool);

  nsp.use(socketAuthMiddleware(deps.authorize));

  nsp.on('connection', (socket) => {
    const followers = new Map<string, Follower>();
    const stop = (instanceId: string) => {
      const f = followers.get(instanceId);
      if (!f) return;
      f.close();
      deps.hub.unfollow(instanceId, f);
      followers.delete(instanceId);
    };

    socket.on('subscribe', (raw: unknown, ack?: Ack) => {
      const reply: Ack = typeof ack === 'function' ? ack : () => undefined;
      subscribe(raw).then(
        ({ answer, follower }) => {
          // The answer first: a client that subscribed without a generation learns it before any frame.
          reply(answer);
          void follower.pump();
        },
        (err: unknown) => {
          if (!(err instanceof BatonError)) deps.log.error({ err: (err as Error).message }, 'progress:subscribe_failed');
          reply({ ok: false, error: errorOf(err) });
        },
      );
    });

    socket.on('unsubscribe', (raw: unknown, ack?: (a: { ok: boolean }) => void) => {
      const id = (raw as { instanceId?: unknown } | null)?.instanceId;
      if (typeof id === 'string') stop(id);
      if (typeof ack === 'function') ack({ ok: true });
    });

    socket.on('disconnect', () => {
      for (const id of [...followers.keys()]) stop(id);
    });

    const subscribe = async (raw: unknown): Promise<{ answer: SubscribeAnswer; follower: Follower }> => {
      const req = validateBody<SubscribeRequest>('progress-subscribe', raw);
      if (req.generation === undefined && req.afterSeq !== undefined && req.afterSeq > 0) {
        // Every generation numbers its frames from 1: a seq alone could name a frame of any of them.
        throw new BatonError(
          'validation',
          `afterSeq ${req.afterSeq} needs the generation it belongs to: subscribe with {instanceId, generation, afterSeq}, ` +
            'or without afterSeq to follow the current generation from its start',
        );
      }
      const target = await findStreamTarget(deps.pool, req.instanceId);
      if (!target) throw new BatonError('not_found', `No instance with id "${req.instanceId}"`);
      const generation = req.generation ?? target.generation;
      if (generation > target.generation) {
        throw new BatonError(
          'not_found',
          `Instance ${req.instanceId} has no generation ${generation} (its current one is ${target.generation})`,
        );
      }
      const afterSeq = req.afterSeq ?? 0;
      // A seq is committed before any client can hold it, so the head read now is at or past it.
      const head = await readFrameHead(deps.pool, req.instanceId, generation);
      if (afterSeq > head.lastSeq) {
        throw new BatonError(
          'conflict',
          `Generation ${generation} of instance ${req.instanceId} ends at seq ${head.lastSeq} (lastSeq), so afterSeq ${afterSeq} ` +
            `is no position in it: subscribe with the generation that seq came from, or with afterSeq 0 to replay generation ${generation} from its start`,
        );
      }
      stop(req.instanceId);
      if (followers.size >= opts.maxSubscriptionsPerSocket) {
        throw new BatonError(
          'conflict',
          `One connection follows at most ${opts.maxSubscriptionsPerSocket} instances (limit: maxSubscriptionsPerSocket); unsubscribe from one first`,
        );
      }
      const follower = new Follower(
        read,
        req.instanceId,
        generation,
        afterSeq,
        outputOf(socket),
        opts,
        (f) => {
          if (followers.get(f.instanceId) === f) stop(f.instanceId);
        },
        target.generation,
      );
      // Follow (and wait until the hub listens) before reading: a frame committed from
      // here on rings the notification, and one committed before is found by the first read.
      followers.set(req.instanceId, follower);
      await deps.hub.follow(req.instanceId, follower);
      return { answer: { ok: true, generation, lastSeq: head.lastSeq }, follower };
    };
  });

  return nsp;
}

function outputOf(socket: Socket): FollowerOutput {
  return {
    frame: (f) => socket.emit('frame', f),
    gap: (g) => socket.emit('gap', g),
    generation: (g) => socket.emit('generation', g),
    resubscribe: (r) => socket.emit('resubscribe', r),
    // engine.io keeps packets here while the transport cannot take more
    backlog: () => (socket.conn as unknown as { writeBuffer: unknown[] }).writeBuffer.length,
  };
}

const ERROR_TYPES: Partial<Record<string, string>> = {
  validation: 'ValidationError',
  not_found: 'NotFound',
  conflict: 'Conflict',
};

function errorOf(err: unknown): { type: string; message: string } {
  if (err instanceof BatonError) return { type: ERROR_TYPES[err.code] ?? 'Error', message: err.message };
  return { type: 'InternalError', message: 'Internal error; the server log has the details' };
}
