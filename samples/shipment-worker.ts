// Runs the shipment sample: a message starts the instance (message start event),
// the "Pack order" subprocess picks every item in parallel (multi-instance, one
// task per item), packs the box with the collected shelves, then the parcel ships.
//
//   npx tsx samples/shipment-worker.ts        (server running, samples deployed)
//
// BATON_URL (default http://127.0.0.1:8080) says where the server is.
import { pino } from 'pino';
import { createWorker } from '../runtime/worker/index.ts';

const baseUrl = process.env.BATON_URL ?? `http://127.0.0.1:${process.env.PORT ?? 8080}`;
const items = ['mug', 'book', 'lamp'];
const shelves: Record<string, string> = { mug: 'A1', book: 'B7', lamp: 'C3' };

const worker = createWorker({
  baseUrl,
  workerId: `shipment-worker-${process.pid}`,
  concurrency: 4,
  lockDurationMs: 30_000,
  pollWaitMs: 1_000,
  log: pino({ level: process.env.LOG_LEVEL ?? 'warn' }),
});

async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${baseUrl}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path} -> ${res.status} ${text}`);
  return (text ? JSON.parse(text) : undefined) as T;
}

worker.subscribe('pick-item', async (task) => {
  const item = String(task.variables.item);
  console.log(`pick item ${task.variables.loopCounter}: ${item}`);
  return { shelf: shelves[item] ?? '?' };
});
worker.subscribe('pack-box', async (task) => {
  console.log(`pack box with items from shelves ${JSON.stringify(task.variables.shelves)}`);
  return { packed: true };
});
worker.subscribe('ship-parcel', async () => {
  console.log('ship parcel');
  return { shipped: true };
});
worker.subscribe('call-warehouse', async () => {
  console.log('packing took too long: call the warehouse');
  return {};
});

async function main(): Promise<void> {
  worker.start();
  const businessKey = `shipment-${Date.now()}`;
  const answer = await call<{ status: string; instanceId: string }>('POST', '/api/messages', {
    name: 'shipment-requested',
    businessKey,
    variables: { items },
  });
  console.log(`message shipment-requested: ${answer.status} ${answer.instanceId}`);
  let status = 'running';
  while (status === 'running') {
    await new Promise((r) => setTimeout(r, 200));
    ({ status } = await call<{ status: string }>('GET', `/api/instances/${answer.instanceId}`));
  }
  console.log(`shipment ${businessKey} is ${status}`);
  await worker.stop();
  process.exitCode = status === 'completed' ? 0 : 1;
}

main().catch((err: Error) => {
  console.error(err.message);
  process.exit(1);
});
