// An HTTP proxy in front of a test server that records calls and loses chosen ones,
// to test what a client does when the network fails around a call.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedCall {
  method: string;
  path: string;
  body: any;
  authorization?: string;
  /** what the proxy did with it */
  fate: 'forwarded' | 'dropped_before' | 'dropped_after' | 'held_after' | 'slow_body';
  status?: number;
}

/**
 * before: the call never reaches the server; after: the server applies it, the connection drops;
 * hold: the server applies it, the answer never comes (the connection stays open);
 * slow_body: the answer's headers pass at once, its body only after delayMs.
 */
export type FaultRule = { path: RegExp; when: 'before' | 'after' | 'hold' | 'slow_body'; times: number; delayMs?: number };

export interface FaultProxy {
  url: string;
  calls: RecordedCall[];
  addFault(rule: FaultRule): void;
  close(): Promise<void>;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export async function startFaultProxy(targetUrl: string): Promise<FaultProxy> {
  const calls: RecordedCall[] = [];
  const rules: FaultRule[] = [];
  const server: Server = createServer(async (req, res) => {
    const text = await readBody(req);
    const call: RecordedCall = {
      method: req.method ?? 'GET',
      path: req.url ?? '/',
      body: text ? JSON.parse(text) : undefined,
      fate: 'forwarded',
      ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}),
    };
    calls.push(call);
    const rule = rules.find((r) => r.times > 0 && r.path.test(call.path));
    if (rule) rule.times--;
    if (rule?.when === 'before') {
      call.fate = 'dropped_before';
      req.socket.destroy();
      return;
    }
    // The caller hanging up must reach the server (a parked long poll then locks nothing).
    const upstream = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) upstream.abort();
    });
    try {
      const answer = await fetch(`${targetUrl}${call.path}`, {
        method: call.method,
        headers: { 'content-type': req.headers['content-type'] ?? 'application/json' },
        ...(text ? { body: text } : {}),
        signal: upstream.signal,
      });
      const body = await answer.text();
      call.status = answer.status;
      if (rule?.when === 'after') {
        call.fate = 'dropped_after';
        req.socket.destroy();
        return;
      }
      if (rule?.when === 'hold') {
        call.fate = 'held_after';
        return;
      }
      res.writeHead(
        answer.status,
        answer.headers.get('content-type') ? { 'content-type': answer.headers.get('content-type')! } : {},
      );
      if (rule?.when === 'slow_body') {
        call.fate = 'slow_body';
        res.flushHeaders();
        await new Promise((r) => setTimeout(r, rule.delayMs ?? 1_000));
      }
      res.end(body);
    } catch {
      req.socket.destroy();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    calls,
    addFault: (rule) => rules.push(rule),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
