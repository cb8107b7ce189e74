// The SDK's only door to the server: JSON over fetch, with auth, and outcomes as values.
import type { WorkerAuth } from './types.ts';

/** What one call came to; network trouble is an outcome, not an exception. */
export type CallOutcome<T> =
  | { kind: 'ok'; status: number; body: T }
  | { kind: 'refused'; status: number; type: string; message: string }
  | { kind: 'unreachable'; error: Error };

export interface HttpClient {
  /** onHeaders runs once the server has answered (from then on the answer must be read, not dropped) */
  post<T>(path: string, body: unknown, signal?: AbortSignal, onHeaders?: () => void): Promise<CallOutcome<T>>;
}

export function createHttpClient(baseUrl: string, auth?: WorkerAuth): HttpClient {
  const root = baseUrl.replace(/\/+$/, '');
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
  if (auth) headers.authorization = authorizationOf(auth);
  return {
    async post<T>(path: string, body: unknown, signal?: AbortSignal, onHeaders?: () => void): Promise<CallOutcome<T>> {
      const payload = JSON.stringify(body);
      let res: Response;
      let text: string;
      try {
        res = await fetch(`${root}${path}`, { method: 'POST', headers, body: payload, ...(signal ? { signal } : {}) });
        onHeaders?.();
        text = await res.text();
      } catch (err) {
        return { kind: 'unreachable', error: err as Error };
      }
      if (res.ok) return { kind: 'ok', status: res.status, body: (text ? JSON.parse(text) : undefined) as T };
      return { kind: 'refused', status: res.status, ...errorOf(text, res.status) };
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
