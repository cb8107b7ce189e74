// Ports for the servers and databases tests start in child processes. They come from below the
// kernel's ephemeral range (32768-60999 on Linux): a port found with listen(0) and released is
// in that range, and the next listen(0) anywhere on the machine (another test's server, a bench)
// may be handed the same port before the child binds it, whose health check would then reach
// that other server. Below the range only other callers of this function pick ports, at random.
import { createServer } from 'node:net';

const LOWEST = 20_000;
const ABOVE_HIGHEST = 32_000;

export async function freePort(): Promise<number> {
  for (let tries = 0; tries < 200; tries++) {
    const port = LOWEST + Math.floor(Math.random() * (ABOVE_HIGHEST - LOWEST));
    if (await canListen(port)) return port;
  }
  throw new Error(`No free port between ${LOWEST} and ${ABOVE_HIGHEST - 1}`);
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}
