// Ends every connection a test server still has, so closing it does not wait on sockets
// a client left behind: a poll it hung up on (half-open until the keep-alive timeout) or a
// socket its HTTP pool opened and never used (kept until the server's headers timeout, 60 s).
import type { Server } from 'node:http';
import type { Socket } from 'node:net';

export function trackConnections(server: Server): { destroyAll(): void } {
  const open = new Set<Socket>();
  let closing = false;
  server.on('connection', (socket: Socket) => {
    // A late client (a worker's retry) must not hold the closing server open either.
    if (closing) return socket.destroy();
    open.add(socket);
    socket.once('close', () => open.delete(socket));
  });
  return {
    destroyAll() {
      closing = true;
      for (const socket of open) socket.destroy();
    },
  };
}
