// How the designer follows changing server state. One instance: the Socket.IO `/progress`
// namespace (docs/progress.md). The instance view gets every frame of the instance once, in seq
// order, across reconnects: after any reconnect it subscribes again with the last seq it
// saw, and the server sends exactly the frames after it. Each frame also triggers a
// re-read of the instance detail and history over REST (markers, tasks, variables).
// User tasks: the `/tasks` namespace says which task was created, changed hands or ended; the
// tasklist re-reads what it shows (watchUserTasks).
import { io, type Socket } from 'socket.io-client';
import { api, ApiError } from './api-client.ts';
import { askForToken, currentToken, onTokenChange } from './auth.ts';
import type { HistoryEvent, InstanceDetail, UserTaskEvent } from './types.ts';

export interface InstanceSnapshot {
  detail: InstanceDetail;
  /** every history event so far, in seq order */
  history: HistoryEvent[];
}

/** A frame as the server sends it. */
export interface LiveFrame {
  instanceId: string;
  generation: number;
  seq: number;
  kind: string;
  data: Record<string, unknown>;
  at: string;
}

/** A line of the progress log: a frame, or a note about frames the stream could not deliver. */
export type LogEntry =
  | { type: 'frame'; frame: LiveFrame }
  | { type: 'gap'; generation: number; fromSeq: number; toSeq: number }
  | { type: 'generation'; generation: number };

export type LiveState = 'connecting' | 'live' | 'offline' | 'reconnecting' | 'refused';

export interface InstanceWatchHandlers {
  onSnapshot(s: InstanceSnapshot): void;
  onLog(entries: readonly LogEntry[]): void;
  onState(state: LiveState, message?: string): void;
  onError(e: ApiError): void;
}

export const POLL_INTERVAL_MS = 1000;

/**
 * Calls read() now and then every interval until the returned stop is called; errors go to
 * onError. For the lists and the heatmap, which summarize many instances: no stream covers them.
 */
export function pollEvery<T>(
  read: () => Promise<T>,
  onValue: (v: T) => void,
  onError: (e: ApiError) => void,
  intervalMs = POLL_INTERVAL_MS,
): () => void {
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const tick = async () => {
    try {
      const value = await read();
      if (!stopped) onValue(value);
    } catch (err) {
      if (!stopped) onError(err instanceof ApiError ? err : new ApiError(0, 'Error', String(err)));
    }
    if (!stopped) timer = setTimeout(() => void tick(), intervalMs);
  };
  void tick();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}

/** Re-reads of the detail after a burst of frames are merged into one. */
const REFRESH_DEBOUNCE_MS = 100;

type SubscribeAck = { ok: true; generation: number; lastSeq: number } | { ok: false; error: { type: string; message: string } };

/** The text a task:progress frame carries: each report's text, message, or JSON. */
export function progressText(frame: LiveFrame): string {
  const reports = Array.isArray(frame.data.reports) ? (frame.data.reports as unknown[]) : [];
  return reports
    .map((r) => {
      if (typeof r === 'string') return r;
      const o = (r ?? {}) as { text?: unknown; message?: unknown };
      if (typeof o.text === 'string') return o.text;
      if (typeof o.message === 'string') return o.message;
      return JSON.stringify(r);
    })
    .join('');
}

export function watchInstance(id: string, handlers: InstanceWatchHandlers): () => void {
  let stopped = false;
  let generation: number | undefined;
  let lastSeq = 0;
  const log: LogEntry[] = [];
  /** frames that came before the first subscribe's answer named the generation */
  const early: LiveFrame[] = [];
  let refreshTimer: ReturnType<typeof setTimeout> | undefined;

  const refresh = () => {
    clearTimeout(refreshTimer);
    refreshTimer = setTimeout(() => {
      Promise.all([api.getInstance(id), api.getWholeHistory(id)]).then(
        ([detail, history]) => stopped || handlers.onSnapshot({ detail, history }),
        (err: unknown) => stopped || handlers.onError(err instanceof ApiError ? err : new ApiError(0, 'Error', String(err))),
      );
    }, REFRESH_DEBOUNCE_MS);
  };

  let triedWith = ''; // the token of the latest handshake
  const socket: Socket = io('/progress', {
    // A function, so a reconnect sends the token as it is then.
    auth: (cb) => {
      triedWith = currentToken();
      cb(triedWith ? { token: triedWith } : {});
    },
  });

  const subscribe = async (afterSeq: number) => {
    const ack = (await socket.emitWithAck('subscribe', {
      instanceId: id,
      ...(generation !== undefined ? { generation } : {}),
      afterSeq,
    })) as SubscribeAck;
    if (stopped) return;
    if (!ack.ok) {
      handlers.onState('refused', ack.error.message);
      if (ack.error.type === 'NotFound') handlers.onError(new ApiError(404, 'NotFound', ack.error.message));
      return;
    }
    generation ??= ack.generation;
    for (const f of early.splice(0)) accept(f);
    handlers.onState('live');
    refresh(); // whatever changed while we were away
  };

  socket.on('connect', () => {
    void subscribe(lastSeq).catch(() => undefined); // a drop mid-subscribe: the next connect subscribes again
  });
  const accept = (f: LiveFrame) => {
    if (f.instanceId !== id || f.generation !== generation) return;
    if (f.seq <= lastSeq) return; // never shown twice, even if a frame came again
    lastSeq = f.seq;
    log.push({ type: 'frame', frame: f });
    handlers.onLog(log);
    refresh();
  };
  socket.on('frame', (f: LiveFrame) => {
    if (generation === undefined) early.push(f);
    else accept(f);
  });
  socket.on('gap', (g: { instanceId: string; generation: number; fromSeq: number; toSeq: number }) => {
    if (g.instanceId !== id || g.generation !== generation) return;
    log.push({ type: 'gap', generation: g.generation, fromSeq: g.fromSeq, toSeq: g.toSeq });
    lastSeq = Math.max(lastSeq, g.toSeq);
    handlers.onLog(log);
  });
  socket.on('generation', (g: { instanceId: string; generation: number }) => {
    if (g.instanceId !== id || (generation !== undefined && g.generation <= generation)) return;
    generation = g.generation;
    lastSeq = 0;
    log.push({ type: 'generation', generation: g.generation });
    handlers.onLog(log);
    void subscribe(0).catch(() => undefined);
  });
  socket.on('resubscribe', (r: { instanceId: string; generation: number; afterSeq: number }) => {
    if (r.instanceId !== id || r.generation !== generation) return;
    void subscribe(Math.max(lastSeq, r.afterSeq)).catch(() => undefined);
  });
  socket.on('disconnect', (reason) => {
    if (stopped) return;
    handlers.onState(navigator.onLine ? 'reconnecting' : 'offline');
    // Closed by the server on purpose: socket.io does not reconnect by itself then.
    if (reason === 'io server disconnect') socket.connect();
  });
  socket.on('connect_error', (err: Error & { data?: { type?: string; message?: string } }) => {
    if (stopped) return;
    if (err.data?.type === 'Unauthorized') {
      // The token changed since this attempt's handshake (a prompt answered meanwhile): try it first.
      if (currentToken() !== triedWith) {
        socket.connect();
        return;
      }
      handlers.onState('refused', err.data.message);
      void askForToken(err.data.message ?? 'Progress needs a token').then(
        (token) => token !== undefined && !stopped && socket.connect(),
      );
    } else if (err.data?.type === 'Forbidden') {
      handlers.onState('refused', err.data.message);
    } else {
      handlers.onState(navigator.onLine ? 'reconnecting' : 'offline');
    }
  });
  // The browser knows first: drop the connection when it goes offline (socket.io would
  // only notice at its next ping) and connect at once when it is back.
  const onOffline = () => {
    handlers.onState('offline');
    socket.disconnect();
  };
  const onOnline = () => {
    handlers.onState('reconnecting');
    socket.connect();
  };
  window.addEventListener('offline', onOffline);
  window.addEventListener('online', onOnline);

  handlers.onState('connecting');
  refresh();
  return () => {
    stopped = true;
    clearTimeout(refreshTimer);
    window.removeEventListener('offline', onOffline);
    window.removeEventListener('online', onOnline);
    socket.disconnect();
  };
}

export interface UserTaskWatchHandlers {
  /** once per burst of events (debounced), and after every (re)connect: whatever changed while away */
  onChange(events: readonly UserTaskEvent[]): void;
  onState(state: LiveState, message?: string): void;
}

/** While the stream is down, lists are re-read this often, so they do not go stale. */
export const TASKS_FALLBACK_POLL_MS = 5000;

/** Follows every user task the token may see: `userTask` events of the `/tasks` namespace. */
export function watchUserTasks(handlers: UserTaskWatchHandlers): () => void {
  let stopped = false;
  let pending: UserTaskEvent[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  let fallback: ReturnType<typeof setInterval> | undefined;
  const changed = (e?: UserTaskEvent) => {
    if (e) pending.push(e);
    clearTimeout(timer);
    timer = setTimeout(() => {
      const events = pending;
      pending = [];
      if (!stopped) handlers.onChange(events);
    }, REFRESH_DEBOUNCE_MS);
  };
  const setState = (state: LiveState, message?: string) => {
    handlers.onState(state, message);
    clearInterval(fallback);
    fallback = state === 'live' ? undefined : setInterval(() => changed(), TASKS_FALLBACK_POLL_MS);
  };

  let triedWith = '';
  const socket: Socket = io('/tasks', {
    auth: (cb) => {
      triedWith = currentToken();
      cb(triedWith ? { token: triedWith } : {});
    },
  });
  socket.on('connect', () => {
    setState('live');
    changed();
  });
  socket.on('userTask', (e: UserTaskEvent) => changed(e));
  socket.on('resync', () => changed()); // the server may have missed changes: read everything again
  socket.on('disconnect', (reason) => {
    if (stopped) return;
    setState(navigator.onLine ? 'reconnecting' : 'offline');
    if (reason === 'io server disconnect') socket.connect();
  });
  socket.on('connect_error', (err: Error & { data?: { type?: string; message?: string } }) => {
    if (stopped) return;
    if (err.data?.type === 'Unauthorized' && currentToken() !== triedWith) {
      socket.connect(); // a token given meanwhile: try it before saying anything
      return;
    }
    // Refused (no token, wrong role): the REST calls ask for a token; the list is read on a timer.
    if (err.data?.type === 'Unauthorized' || err.data?.type === 'Forbidden') setState('refused', err.data.message);
    else setState(navigator.onLine ? 'reconnecting' : 'offline', err.message);
  });
  const onOffline = () => {
    setState('offline');
    socket.disconnect();
  };
  const onOnline = () => {
    setState('reconnecting');
    socket.connect();
  };
  window.addEventListener('offline', onOffline);
  window.addEventListener('online', onOnline);
  // A refused handshake is not tried again by socket.io, and a connection keeps the token of its
  // handshake: a new token (signed in, signed out) connects again with it.
  const stopTokens = onTokenChange(() => {
    socket.disconnect();
    socket.connect();
  });
  setState('connecting');
  return () => {
    stopped = true;
    stopTokens();
    clearTimeout(timer);
    clearInterval(fallback);
    window.removeEventListener('offline', onOffline);
    window.removeEventListener('online', onOnline);
    socket.disconnect();
  };
}
