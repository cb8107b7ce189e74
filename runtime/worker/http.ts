// The SDK's only door to the server: JSON over node:http with kept-alive connections, with
// auth, and outcomes as values. Not fetch: undici's streams cost about as much CPU per call
// as the server's whole handling of it (docs/PERFORMANCE.md, "HTTP: the SDK's client and express").
import http from 'node:http';
import https from 'node:https';
import type { WorkerAuth } from './types.ts';

/** What one call came to; network trouble is an outcome, not an exception. */
export type CallOutcome<T> =
  | { kind: 'ok'; status: number; body: T }
  | { kind: 'refused'; status: number; type: string; message: string; details?: unknown }
  | { kind: 'unreachable'; error: Error };

export interface CallOptions {
  /** the caller gives up; an answer whose headers arrived is still read */
  signal?: AbortSignal;
  /** longest wait for the answer's headers (default 30 s); the body is then always read */
  timeoutMs?: number;
  /** runs once the server has answered: from then on the answer is read, never dropped (it may hold locked tasks) */
  onHeaders?: () => void;
}

export interface HttpClient {
  post<T>(path: string, body: unknown, opts?: CallOptions): Promise<CallOutcome<T>>;
  put<T>(path: string, body: unknown, opts?: CallOptions): Promise<CallOutcome<T>>;
  /** closes the idle kept-alive connections; calls in flight finish on theirs */
  close(): void;
}

/**
 * An idle kept-alive connection is dropped after this long, or a second before the server's
 * announced `Keep-Alive: timeout`, whichever is first: reusing one the server is closing
 * would fail a call that never arrived.
 */
const IDLE_CONNECTION_MS = 4_000;

export function createHttpClient(baseUrl: string, auth?: WorkerAuth, opts: { idleConnectionMs?: number } = {}): HttpClient {
  const root = new URL(baseUrl.replace(/\/+$/, ''));
  const transport = root.protocol === 'https:' ? https : http;
  // The agent's timeout applies to idle connections only: a call in flight has no 'timeout' listener.
  const agent = new transport.Agent({ keepAlive: true, timeout: opts.idleConnectionMs ?? IDLE_CONNECTION_MS });
  const basePath = root.pathname.replace(/\/+$/, '');
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
  if (auth) headers.authorization = authorizationOf(auth);
  function send<T>(method: 'POST' | 'PUT', path: string, body: unknown, opts: CallOptions): Promise<CallOutcome<T>> {
    const payload = Buffer.from(JSON.stringify(body));
    return new Promise((resolve) => {
      const timeoutMs = opts.timeoutMs ?? 30_000;
      let answered = false;
      const req = transport.request({
        protocol: root.protocol,
        hostname: root.hostname,
        port: root.port,
        path: `${basePath}${path}`,
        method,
        agent,
        headers: { ...headers, 'content-length': String(payload.length) },
      });
      // Aborting is allowed only until the headers arrive: dropping a read answer could drop locked tasks.
      const giveUp = (error: Error) => {
        if (!answered) req.destroy(error);
      };
      const onAbort = () => giveUp(reasonOf(opts.signal?.reason));
      const timer = setTimeout(() => giveUp(new Error(`No answer from ${path} within ${timeoutMs} ms`)), timeoutMs);
      const settle = (outcome: CallOutcome<T>) => {
        clearTimeout(timer);
        opts.signal?.removeEventListener('abort', onAbort);
        resolve(outcome);
      };
      opts.signal?.addEventListener('abort', onAbort, { once: true });
      if (opts.signal?.aborted) onAbort();
      req.on('error', (error) => settle({ kind: 'unreachable', error }));
      req.on('response', (res) => {
        answered = true;
        clearTimeout(timer);
        opts.signal?.removeEventListener('abort', onAbort);
        opts.onHeaders?.();
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', (error) => settle({ kind: 'unreachable', error }));
        res.on('end', () => settle(outcomeOf<T>(path, res.statusCode ?? 0, Buffer.concat(chunks).toString('utf8'))));
      });
      req.end(payload);
    });
  }
  return {
    post: (path, body, opts = {}) => send('POST', path, body, opts),
    put: (path, body, opts = {}) => send('PUT', path, body, opts),
    close() {
      for (const sockets of Object.values(agent.freeSockets)) for (const socket of sockets ?? []) socket.destroy();
    },
  };
}

function outcomeOf<T>(path: string, status: number, text: string): CallOutcome<T> {
  if (status < 200 || status >= 300) return { kind: 'refused', status, ...errorOf(text, status) };
  try {
    return { kind: 'ok', status, body: (text ? JSON.parse(text) : undefined) as T };
  } catch {
    return { kind: 'unreachable', error: new Error(`${path} answered ${status} with a body that is not JSON`) };
  }
}

function reasonOf(reason: unknown): Error {
  return reason instanceof Error ? reason : new Error(reason === undefined ? 'The call was aborted' : String(reason));
}

function authorizationOf(auth: WorkerAuth): string {
  if ('bearer' in auth) return `Bearer ${auth.bearer}`;
  return `Basic ${Buffer.from(`${auth.username}:${auth.password}`).toString('base64')}`;
}

function errorOf(text: string, status: number): { type: string; message: string; details?: unknown } {
  try {
    const parsed = JSON.parse(text) as { type?: unknown; message?: unknown; details?: unknown };
    if (typeof parsed.type === 'string')
      return {
        type: parsed.type,
        message: String(parsed.message ?? ''),
        ...(parsed.details !== undefined ? { details: parsed.details } : {}),
      };
  } catch {
    // not JSON: a proxy or a crashed server answered
  }
  return { type: `HTTP ${status}`, message: text.slice(0, 500) };
}

/** Worth trying again: the call may not have arrived, or the server could not answer. */
export function isTransient(outcome: CallOutcome<unknown>): boolean {
  return outcome.kind === 'unreachable' || (outcome.kind === 'refused' && (outcome.status >= 500 || outcome.status === 429));
}
