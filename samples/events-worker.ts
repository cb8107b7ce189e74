// Runs one instance of an event sample and works its tasks with the worker SDK.
//
//   npm run sample:events -- saga       order-saga.bpmn: shipping fails for good, the saga
//                                       refunds the card, then releases the stock (newest first)
//   npm run sample:events -- approval   approval.bpmn: a slow approver gets a reminder after 5 s
//                                       (non-interrupting timer); 30 s would escalate (interrupting)
//   npm run sample:events -- payment    payment.bpmn: the token waits for the payment-received
//                                       message, correlated by orderId
//   npm run sample:events -- review     review-loop.bpmn: the first draft is sent back for revision,
//                                       the second is approved: the loop runs two passes
//
// BATON_URL (default http://127.0.0.1:8080) says where the server is.
import { pino } from 'pino';
import { createWorker, type TaskHandler } from '../runtime/worker/index.ts';

const baseUrl = process.env.BATON_URL ?? `http://127.0.0.1:${process.env.PORT ?? 8080}`;
const sample = process.argv[2] ?? '';
const approveAfterMs = Number(process.env.SAMPLE_APPROVE_MS ?? 6_000);

const worker = createWorker({
  baseUrl,
  workerId: `events-worker-${process.pid}`,
  concurrency: 4,
  lockDurationMs: 30_000,
  pollWaitMs: 1_000,
  log: pino({ level: process.env.LOG_LEVEL ?? 'warn' }),
});

function say(topic: string, handler: TaskHandler = async () => ({})): TaskHandler {
  return async (task, ctx) => {
    const variables = await handler(task, ctx);
    console.log(`${topic}: done ${JSON.stringify(variables ?? {})}`);
    return variables;
  };
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

async function waitForEnd(id: string): Promise<string> {
  for (;;) {
    const { status } = await call<{ status: string }>('GET', `/api/instances/${id}`);
    if (!['running', 'compensating'].includes(status)) return status;
    await new Promise((r) => setTimeout(r, 200));
  }
}

const samples: Record<
  string,
  {
    key: string;
    variables: Record<string, unknown>;
    subscribe(): void;
    afterStart?(id: string, vars: Record<string, unknown>): Promise<void>;
  }
> = {
  saga: {
    key: 'order-saga',
    variables: { total: 120 },
    subscribe() {
      worker.subscribe(
        'saga-reserve-stock',
        say('reserve stock', async () => ({ reserved: true })),
      );
      worker.subscribe(
        'saga-charge-card',
        say('charge card', async () => ({ charged: 120 })),
      );
      worker.subscribe('saga-ship-order', async () => {
        console.log('ship order: carrier unreachable');
        throw new Error('carrier unreachable');
      });
      worker.subscribe(
        'saga-refund-card',
        say('compensate: refund card', async () => ({ refunded: 120 })),
      );
      worker.subscribe(
        'saga-release-stock',
        say('compensate: release stock', async () => ({ released: true })),
      );
    },
  },
  approval: {
    key: 'approval',
    variables: { request: 'new laptop' },
    subscribe() {
      worker.subscribe(
        'approve-request',
        say('approve request', async (_task, ctx) => {
          await new Promise((r) => setTimeout(r, approveAfterMs));
          ctx.signal.throwIfAborted();
          return { approved: true };
        }),
      );
      worker.subscribe(
        'send-reminder',
        say('send reminder (timer fired)', async () => ({ reminded: true })),
      );
      worker.subscribe(
        'escalate-request',
        say('escalate (timeout fired)', async () => ({ escalated: true })),
      );
    },
  },
  review: {
    key: 'review-loop',
    variables: { document: 'release notes', revisions: 0 },
    subscribe() {
      worker.subscribe(
        'review-document',
        say('review document', async (task) => ({ approved: Number(task.variables.revisions) > 0 })),
      );
      worker.subscribe(
        'revise-document',
        say('revise document', async (task) => ({ revisions: Number(task.variables.revisions) + 1 })),
      );
    },
  },
  payment: {
    key: 'payment',
    variables: { orderId: `order-${Date.now()}` },
    subscribe() {
      worker.subscribe(
        'send-invoice',
        say('send invoice', async () => ({ invoiced: true })),
      );
      worker.subscribe(
        'fulfil-order',
        say('fulfil order (message matched)', async (task) => ({ fulfilled: task.variables.paidAmount })),
      );
    },
    async afterStart(_id, vars) {
      await new Promise((r) => setTimeout(r, 500));
      const answer = await call<{ status: string }>('POST', '/api/messages', {
        name: 'payment-received',
        correlationKey: vars.orderId,
        variables: { paidAmount: 120 },
      });
      console.log(`message payment-received: ${answer.status}`);
    },
  },
};

async function main(): Promise<void> {
  const chosen = samples[sample];
  if (!chosen) {
    console.error(`usage: npm run sample:events -- ${Object.keys(samples).join('|')}`);
    process.exitCode = 2;
    return;
  }
  chosen.subscribe();
  worker.start();
  const { id } = await call<{ id: string }>('POST', '/api/instances', { definitionKey: chosen.key, variables: chosen.variables });
  console.log(`started ${chosen.key} ${id}`);
  await chosen.afterStart?.(id, chosen.variables);
  const status = await waitForEnd(id);
  console.log(`${chosen.key} ${id} is ${status}`);
  await worker.stop();
  process.exitCode = status === 'completed' || (sample === 'saga' && status === 'compensated') ? 0 : 1;
}

main().catch((err: Error) => {
  console.error(err.message);
  process.exit(1);
});
