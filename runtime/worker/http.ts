// The SDK's only door to the server: JSON over fetch, with auth, and outcomes as values.
import type { WorkerAuth } from './types.ts';

/** What one call came to; network trouble is an outcome, not an exception. */
export type CallOutcome<T> =
  | { kind: 'ok'; status: number; body: T }
  | { kind: 'refused'; status: number; type: string; message: string }
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
}

export function createHttpClient(baseUrl: string, auth?: WorkerAuth): HttpClient {
  const root = baseUrl.replace(/\/+$/, '');
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
  if (auth) headers.authorization = authorizationOf(auth);
  return {
    async post<T>(path: string, body: unknown, opts: CallOptions = {}): Promise<CallOutcome<T>> {
      const payload = JSON.stringify(body);
      // Aborting is allowed only until the headers arrive: dropping a read answer could drop locked tasks.
      const abort = new AbortController();
      const onAbort = () => abort.abort(opts.signal?.reason);
      opts.signal?.addEventListener('abort', onAbort, { once: true });
      if (opts.signal?.aborted) abort.abort(opts.signal.reason);
      const timer = setTimeout(() => abort.abort(new Error(`No answer from ${path} within ${opts.timeoutMs ?? 30_000} ms`)), opts.timeoutMs ?? 30_000);
      let res: Response;
      let text: string;
      try {
        res = await fetch(`${root}${path}`, { method: 'POST', headers, body: payload, signal: abort.signal });
        clearTimeout(timer);
        opts.signal?.removeEventListener('abort', onAbort);
        opts.onHeaders?.();
        text = await res.text();
      } catch (err) {
        return { kind: 'unreachable', error: err as Error };
      } finally {
        clearTimeout(timer);
        opts.signal?.removeEventListener('abort', onAbort);
      }
      if (!res.ok) return { kind: 'refused', status: res.status, ...errorOf(text, res.status) };
      try {
        return { kind: 'ok', status: res.status, body: (text ? JSON.parse(text) : undefined) as T };
      } catch {
        return { kind: 'unreachable', error: new Error(`${path} answered ${res.status} with a body that is not JSON`) };
      }
    },
  };
}

function authorizationOf(auth: WorkerAuth): string {
  if ('bearer' in auth) return `Bearer ${auth.bearer}`;
  return `Basic ${Buffer.from(`${auth.username}:${auth.password}`).toString('base64')}`;
}

function errorOf(text: string, status: number): { type: string; message: string } {
  try {
    const parsed = JSON.parse(text) as { type?: unknown; message?: unknown };
    if (typeof parsed.type === 'string') return { type: parsed.type, message: String(parsed.message ?? '') };
  } catch {
    // not JSON: a proxy or a crashed server answered
  }
  return { type: `HTTP ${status}`, message: text.slice(0, 500) };
}

/** Worth trying again: the call may not have arrived, or the server could not answer. */
export function isTransient(outcome: CallOutcome<unknown>): boolean {
  return outcome.kind === 'unreachable' || (outcome.kind === 'refused' && (outcome.status >= 500 || outcome.status === 429));
}
