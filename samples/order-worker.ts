// A small worker for samples/order.bpmn that talks to the native REST API.
//
//   npm run sample:worker               start one demo order, then keep working
//   npm run sample:worker -- --once     start one demo order, exit when it completes
//   npm run sample:worker -- --no-start only work on tasks
//
// BATON_URL (default http://127.0.0.1:8080) says where the server is.

const baseUrl = process.env.BATON_URL ?? `http://127.0.0.1:${process.env.PORT ?? 8080}`;
const workerId = `order-worker-${process.pid}`;
const once = process.argv.includes('--once');
const startOrder = !process.argv.includes('--no-start');

interface Task {
  id: string;
  topic: string;
  instanceId: string;
  lockToken: string;
  variables: Record<string, unknown>;
}

// What each topic does: the returned variables complete the task.
const handlers: Record<string, (vars: Record<string, unknown>) => Record<string, unknown>> = {
  'reserve-stock': () => ({ stockReserved: true }),
  'charge-card': (v) => ({ charged: Number(v.total ?? 0) }),
  'review-order': () => ({ reviewed: true }),
};

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

async function work(task: Task): Promise<void> {
  const handler = handlers[task.topic];
  if (!handler) return;
  const variables = handler(task.variables);
  await call('POST', `/api/external-tasks/${task.id}/complete`, { workerId, lockToken: task.lockToken, variables });
  console.log(`completed ${task.topic} of ${task.instanceId} with ${JSON.stringify(variables)}`);
}

async function main(): Promise<void> {
  let watched: string | undefined;
  if (startOrder) {
    const total = Math.round(20 + Math.random() * 200);
    const started = await call<{ id: string }>('POST', '/api/instances', {
      definitionKey: 'order',
      businessKey: `demo-${Date.now()}`,
      variables: { total },
    });
    watched = started.id;
    console.log(`started order ${watched} with total ${total}`);
  }
  for (;;) {
    const tasks = await call<Task[]>('POST', '/api/external-tasks/fetch-and-lock', {
      workerId,
      maxTasks: 10,
      waitMs: once ? 1000 : 20_000,
      topics: Object.keys(handlers).map((name) => ({ name, lockDurationMs: 30_000 })),
    });
    for (const task of tasks) await work(task);
    if (once && watched) {
      const instance = await call<{ status: string; variables: unknown }>('GET', `/api/instances/${watched}`);
      if (instance.status !== 'running') {
        console.log(`order ${watched} is ${instance.status}: ${JSON.stringify(instance.variables)}`);
        process.exitCode = instance.status === 'completed' ? 0 : 1;
        return;
      }
    }
  }
}

main().catch((err: Error) => {
  console.error(err.message);
  process.exit(1);
});
