// Graceful shutdown: the pieces server.ts and cli.ts use to stop within a grace period.
// Order: refuse new requests (503 + Connection: close), answer parked polls, let
// in-flight requests and transactions finish, cut the sockets still open half-way
// through the grace, then stop the background loops and end the pool.
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { RequestHandler } from 'express';
import { sendAnswer, type JsonAnswer } from '../api/answer.ts';

export const DEFAULT_SHUTDOWN_GRACE_MS = 10_000;

export interface Drain {
  /** first middleware: while draining, answers 503 and closes the connection */
  guard: RequestHandler;
  begin(): void;
}

const SHUTTING_DOWN: JsonAnswer = {
  status: 503,
  headers: { connection: 'close', 'retry-after': '1' },
  body: { type: 'ShuttingDown', message: 'This node is shutting down; send the request to another node or retry shortly' },
};

export function createDrain(): Drain {
  let draining = false;
  return {
    guard(_req, res, next) {
      if (!draining) return next();
      sendAnswer(res, SHUTTING_DOWN);
    },
    begin() {
      draining = true;
    },
  };
}

/** Every socket of the server, so the ones still open at the deadline can be cut. */
export function trackSockets(http: Server): Set<Socket> {
  const sockets = new Set<Socket>();
  http.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  return sockets;
}

/**
 * Stops accepting connections and resolves once every request in flight has been
 * answered, or at cutAfterMs, when the remaining sockets are destroyed (a request
 * still running then loses its client; its transaction still commits or rolls back whole).
 */
export function closeHttp(http: Server, sockets: Set<Socket>, cutAfterMs: number): Promise<void> {
  return new Promise<void>((resolve) => {
    const cut = setTimeout(() => {
      for (const socket of sockets) socket.destroy();
    }, cutAfterMs);
    cut.unref();
    // A keep-alive socket whose request ends after close() goes idle and would hold the server open.
    const idle = setInterval(() => http.closeIdleConnections(), 100);
    idle.unref();
    http.close(() => {
      clearTimeout(cut);
      clearInterval(idle);
      resolve();
    });
    http.closeIdleConnections();
  });
}

/** Resolves with 'done' when work ends, or 'late' once ms have passed (the work keeps running). */
export async function within(work: Promise<unknown>, ms: number): Promise<'done' | 'late'> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => {
    timer = setTimeout(() => resolve('late'), ms);
    timer.unref();
  });
  try {
    return await Promise.race([work.then(() => 'done' as const), late]);
  } finally {
    clearTimeout(timer);
  }
}
