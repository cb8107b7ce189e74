// The SDK's HTTP client: kept-alive connections are reused, dropped when idle before the
// server would drop them, and never cut under a call that runs longer than the idle limit.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createHttpClient, type HttpClient } from '../../runtime/worker/http.ts';
import { waitFor } from '../support/server.ts';

interface Echo {
  url: string;
  connections: Socket[];
  close(): Promise<void>;
}

let servers: Echo[] = [];
const clients: HttpClient[] = [];
afterEach(async () => {
  clients.splice(0).forEach((c) => c.close());
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

/** Answers `{ path, body }` after `?delay=ms`; 418 for /refuse. */
async function echoServer(keepAliveTimeoutMs = 5_000): Promise<Echo> {
  const connections: Socket[] = [];
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = '';
    req.on('data', (c: Buffer) => {
      body += c.toString();
    });
    req.on('end', () => {
      const delay = Number(new URL(req.url!, 'http://x').searchParams.get('delay') ?? 0);
      setTimeout(() => {
        const refused = req.url!.startsWith('/refuse');
        res.writeHead(refused ? 418 : 200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(refused ? { type: 'Teapot', message: 'no' } : { path: req.url, body: JSON.parse(body) }));
      }, delay);
    });
  });
  server.keepAliveTimeout = keepAliveTimeoutMs;
  server.on('connection', (s: Socket) => connections.push(s));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const echo: Echo = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    connections,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  servers.push(echo);
  return echo;
}

function client(url: string, idleConnectionMs?: number): HttpClient {
  const c = createHttpClient(url, undefined, idleConnectionMs === undefined ? {} : { idleConnectionMs });
  clients.push(c);
  return c;
}

describe('SDK HTTP client', () => {
  it('given sequential calls, then they share one kept-alive connection and each answer is parsed', async () => {
    const s = await echoServer();
    const c = client(s.url);
    for (let i = 0; i < 5; i++) {
      expect(await c.post('/echo', { i })).toEqual({ kind: 'ok', status: 200, body: { path: '/echo', body: { i } } });
    }
    expect(s.connections).toHaveLength(1);
  });

  it('given a call that runs longer than the idle limit, then its connection is not cut', async () => {
    const s = await echoServer();
    const c = client(s.url, 100);
    expect(await c.post('/slow?delay=400', { long: true })).toMatchObject({ kind: 'ok', body: { body: { long: true } } });
  });

  it('given a connection idle past the limit, then the client closes it and the next call opens a new one', async () => {
    const s = await echoServer();
    const c = client(s.url, 100);
    await c.post('/a', {});
    await waitFor(async () => s.connections[0]!.readableEnded || undefined, 2_000, 'the client to close the idle connection');
    expect(await c.post('/b', {})).toMatchObject({ kind: 'ok' });
    expect(s.connections).toHaveLength(2);
  });

  it('given a server announcing a short Keep-Alive timeout, then the client lets go a second before it', async () => {
    const s = await echoServer(2_500); // announces timeout=2; the client keeps idle connections 1 s at most
    const c = client(s.url, 60_000);
    await c.post('/a', {});
    const idleSince = Date.now();
    await waitFor(async () => s.connections[0]!.readableEnded || undefined, 3_000, 'the client to close the idle connection');
    expect(Date.now() - idleSince).toBeLessThan(2_000); // the client closed it, not the server at 2.5 s
  });

  it('given an abort before the answer, then the call is unreachable; a refusal keeps its type', async () => {
    const s = await echoServer();
    const c = client(s.url);
    const abort = new AbortController();
    const pending = c.post('/slow?delay=2000', {}, { signal: abort.signal });
    setTimeout(() => abort.abort(new Error('caller gave up')), 50);
    expect(await pending).toMatchObject({ kind: 'unreachable', error: { message: 'caller gave up' } });
    expect(await c.post('/x', {}, { timeoutMs: 50 }).then(() => c.post('/slow?delay=500', {}, { timeoutMs: 50 }))).toMatchObject({
      kind: 'unreachable',
      error: { message: 'No answer from /slow?delay=500 within 50 ms' },
    });
    expect(await c.post('/refuse', {})).toEqual({ kind: 'refused', status: 418, type: 'Teapot', message: 'no' });
  });

  it('given the server is down, then the call is unreachable', async () => {
    const s = await echoServer();
    await s.close();
    servers = servers.filter((x) => x !== s);
    expect(await client(s.url).post('/x', {})).toMatchObject({ kind: 'unreachable' });
  });
});
