// A real Baton HTTP server on a fresh database, and a small JSON client for it.
import { pino } from 'pino';
import { startBatonServer, type BatonServer } from '../../runtime/server.ts';
import type { EngineOptions } from '../../runtime/engine/context.ts';
import type { BatonServerOptions } from '../../runtime/server.ts';
import { createTestDatabase, type TestDatabase } from './db.ts';
import { checkResponse } from './response-check.ts';

export interface TestServer {
  url: string;
  server: BatonServer;
  db: TestDatabase;
  api: ApiClient;
  close(): Promise<void>;
}

export interface TestServerOptions {
  sweepIntervalMs?: number;
  engine?: Partial<EngineOptions>;
  /** tokens, limits, retention (test/security, test/ops) */
  auth?: BatonServerOptions['auth'];
  limits?: BatonServerOptions['limits'];
  retention?: BatonServerOptions['retention'];
  /** progress stream (test/stream) */
  progressStream?: BatonServerOptions['progressStream'];
  frameRetentionMs?: number;
  /** batch runner: chunk size, lease, polling */
  batches?: BatonServerOptions['batches'];
  /** sends this token as Bearer on every `api` call */
  token?: string;
}

export async function startTestServer(opts: TestServerOptions = {}): Promise<TestServer> {
  const db = await createTestDatabase();
  const server = await startBatonServer({
    databaseUrl: db.url,
    port: 0,
    host: '127.0.0.1',
    log: pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }),
    sweepIntervalMs: opts.sweepIntervalMs ?? 60_000,
    engine: { retryBackoffMs: 50, ...opts.engine },
    ...(opts.auth ? { auth: opts.auth } : {}),
    ...(opts.limits ? { limits: opts.limits } : {}),
    ...(opts.retention ? { retention: opts.retention } : {}),
    ...(opts.progressStream ? { progressStream: opts.progressStream } : {}),
    ...(opts.frameRetentionMs !== undefined ? { frameRetentionMs: opts.frameRetentionMs } : {}),
    ...(opts.batches ? { batches: opts.batches } : {}),
  });
  return {
    url: server.url,
    server,
    db,
    api: apiClient(server.url, opts.token),
    async close() {
      await server.close();
      await db.drop();
    },
  };
}

export interface ApiResponse<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

export type ApiClient = ReturnType<typeof apiClient>;

export function apiClient(baseUrl: string, token?: string) {
  async function call<T = any>(
    method: string,
    path: string,
    body?: unknown,
    init: { contentType?: string; signal?: AbortSignal } = {},
  ): Promise<ApiResponse<T>> {
    const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
    let payload: string | undefined;
    if (body !== undefined) {
      headers['content-type'] = init.contentType ?? 'application/json';
      payload = typeof body === 'string' ? body : JSON.stringify(body);
    }
    const res = await fetch(`${baseUrl}${path}`, {
      method,
      headers,
      body: payload,
      ...(init.signal ? { signal: init.signal } : {}),
    });
    const text = await res.text();
    const parsed = text ? JSON.parse(text) : undefined;
    // Every answer a test gets is checked against the OpenAPI documents (response-check.ts).
    checkResponse({ method, path, status: res.status, contentType: res.headers.get('content-type'), body: parsed });
    return { status: res.status, body: parsed, headers: res.headers };
  }
  return {
    call,
    get: <T = any>(path: string) => call<T>('GET', path),
    post: <T = any>(path: string, body?: unknown, init?: { contentType?: string; signal?: AbortSignal }) =>
      call<T>('POST', path, body, init),
    patch: <T = any>(path: string, body?: unknown) => call<T>('PATCH', path, body),
  };
}

/** Polls until check answers a value other than undefined, or fails after timeoutMs. */
export async function waitFor<T>(
  check: () => Promise<T | undefined>,
  timeoutMs = 10_000,
  what: string | (() => string) = 'condition',
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline)
      throw new Error(`Timed out after ${timeoutMs} ms waiting for ${typeof what === 'function' ? what() : what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
