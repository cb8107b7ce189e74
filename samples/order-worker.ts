// The worker for samples/order.bpmn, written with Baton's TypeScript worker SDK.
//
//   npm run sample:worker               start one demo order, then keep working (Ctrl-C stops cleanly)
//   npm run sample:worker -- --once     start one demo order, exit when it ends
//   npm run sample:worker -- --no-start only work on tasks
//
// BATON_URL (default http://127.0.0.1:8080) says where the server is.
import { pino } from 'pino';
import { BpmnError, createWorker, type TaskHandler } from '../runtime/worker/index.ts';

const baseUrl = process.env.BATON_URL ?? `http://127.0.0.1:${process.env.PORT ?? 8080}`;
const once = process.argv.includes('--once');
const startOrder = !process.argv.includes('--no-start');

const worker = createWorker({
  baseUrl,
  workerId: `order-worker-${process.pid}`,
  concurrency: 8,
  lockDurationMs: 30_000,
  pollWaitMs: once ? 1_000 : 20_000,
  log: pino({ level: process.env.LOG_LEVEL ?? 'warn' }),
});

/** Prints what each handler returns; the SDK then completes the task with it. */
function printed(handler: TaskHandler): TaskHandler {
  return async (task, ctx) => {
    const variables = await handler(task, ctx);
    console.log(`completed ${task.topic} of ${task.instanceId} with ${JSON.stringify(variables ?? {})}`);
    return variables;
  };
}

worker.subscribe(
  'reserve-stock',
  printed(async () => ({ stockReserved: true })),
);

worker.subscribe(
  'charge-card',
  printed(async (task, ctx) => {
    const total = Number(task.variables.total ?? 0);
    // A business outcome, not a technical error: the process decides (error boundary or incident).
    if (total > 10_000) throw new BpmnError('CARD_DECLINED', `A charge of ${total} needs a manual check`);
    // A real payment API would get the idempotency key, so a repeated attempt charges once,
    // and the signal, so the call stops when the lock is lost.
    await pretendToCharge(total, task.idempotencyKey, ctx.signal);
    await ctx.progress({ message: `charged ${total}` });
    return { charged: total };
  }),
);

worker.subscribe(
  'review-order',
  printed(async () => ({ reviewed: true })),
);

async function pretendToCharge(_total: number, _idempotencyKey: string, signal: AbortSignal): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, 50));
  signal.throwIfAborted();
}

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

async function startDemoOrder(): Promise<string> {
  const total = Math.round(20 + Math.random() * 200);
  const started = await call<{ id: string }>('POST', '/api/instances', {
    definitionKey: 'order',
    businessKey: `demo-${Date.now()}`,
    variables: { total },
  });
  console.log(`started order ${started.id} with total ${total}`);
  return started.id;
}

async function waitUntilEnded(id: string): Promise<{ status: string; variables: unknown }> {
  for (;;) {
    const instance = await call<{ status: string; variables: unknown }>('GET', `/api/instances/${id}`);
    if (instance.status !== 'running') return instance;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

async function main(): Promise<void> {
  const watched = startOrder ? await startDemoOrder() : undefined;
  worker.start();
  if (once && watched) {
    const instance = await waitUntilEnded(watched);
    console.log(`order ${watched} is ${instance.status}: ${JSON.stringify(instance.variables)}`);
    await worker.stop();
    process.exitCode = instance.status === 'completed' ? 0 : 1;
    return;
  }
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      console.log('stopping: finishing or unlocking held tasks');
      void worker.stop().then(() => process.exit(0));
    });
  }
}

main().catch((err: Error) => {
  console.error(err.message);
  process.exit(1);
});
