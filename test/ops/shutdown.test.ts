// SIGTERM on a node under load (workers fetching and completing, a client starting
// instances, parked long polls): it exits with code 0 within BATON_SHUTDOWN_GRACE_MS,
// every parked poll gets [], no instance is half-written, and another node finishes
// the work. A node whose drain is stuck (a transaction waiting on a row lock) exits
// with code 1 at the grace, and PostgreSQL rolls that transaction back whole; a
// one-statement (optimistic) complete caught there applies whole once the lock is free.
import { spawn, type ChildProcess } from 'node:child_process';
import { freePort } from '../support/ports.ts';
import { afterAll, describe, expect, it } from 'vitest';
import { buildBpmn, singleTaskBpmn } from '../support/bpmn.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { pino } from 'pino';
import { startBatonServer, type BatonServer } from '../../runtime/server.ts';
import { apiClient, waitFor, type ApiClient } from '../support/server.ts';

const TOKEN = 'admin-secret-0123456789';
const children: ChildProcess[] = [];
const dbs: TestDatabase[] = [];
let other: BatonServer | undefined;
afterAll(async () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  await other?.close();
  for (const db of dbs) await db.drop();
});

interface Node {
  url: string;
  api: ApiClient;
  exited: Promise<number | null>;
  output: () => string;
  kill(signal: NodeJS.Signals): void;
}

async function spawnNode(db: TestDatabase, graceMs: number): Promise<Node> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  let output = '';
  const child = spawn(process.execPath, ['--import', 'tsx', 'runtime/cli.ts', 'serve'], {
    env: {
      ...process.env,
      DATABASE_URL: db.url,
      PORT: String(port),
      BATON_SAMPLES_DIR: '',
      LOG_LEVEL: 'info',
      BATON_TOKENS: `admin:ops:${TOKEN}`,
      BATON_SHUTDOWN_GRACE_MS: String(graceMs),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  child.stdout?.on('data', (d) => (output += String(d)));
  child.stderr?.on('data', (d) => (output += String(d)));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  await waitFor(
    async () => ((await fetch(`${url}/readyz`).catch(() => undefined))?.ok ? true : undefined),
    60_000,
    () => `the node to be ready: ${output}`,
  );
  return { url, api: apiClient(url, TOKEN), exited, output: () => output, kill: (signal) => child.kill(signal) };
}

/** What a request sent during shutdown may get: an answer, a 503 ShuttingDown, or a refused connection. */
type Outcome = 'ok' | 'shutting-down' | 'refused' | 'other';

function outcomeOf(status: number, body: { type?: string } | undefined): Outcome {
  if (status < 300) return 'ok';
  return status === 503 && body?.type === 'ShuttingDown' ? 'shutting-down' : 'other';
}

describe('SIGTERM', () => {
  it('under load: answers parked polls, exits 0 within the grace, leaves every instance whole, and another node finishes them', async () => {
    const GRACE_MS = 5000;
    const db = await createTestDatabase();
    dbs.push(db);
    const node = await spawnNode(db, GRACE_MS);
    const { api } = node;
    expect((await api.post('/api/definitions', { xml: singleTaskBpmn('drained', 'drained-task') })).status).toBe(201);
    for (let i = 0; i < 20; i++)
      expect((await api.post('/api/instances', { definitionKey: 'drained', businessKey: `seed-${i}` })).status).toBe(201);

    const outcomes: Outcome[] = [];
    let stopLoad = false;
    const record = async (request: () => Promise<{ status: number; body: any }>): Promise<any> => {
      try {
        const res = await request();
        outcomes.push(outcomeOf(res.status, res.body));
        return res.status < 300 ? res.body : undefined;
      } catch {
        outcomes.push('refused');
        return undefined;
      }
    };
    const starter = (async () => {
      for (let i = 0; !stopLoad; i++) {
        if (!(await record(() => api.post('/api/instances', { definitionKey: 'drained', businessKey: `load-${i}` })))) break;
      }
    })();
    const worker = (id: string) =>
      (async () => {
        while (!stopLoad) {
          const tasks = await record(() =>
            api.post('/api/external-tasks/fetch-and-lock', {
              workerId: id,
              maxTasks: 3,
              waitMs: 500,
              topics: [{ name: 'drained-task', lockDurationMs: 1500 }],
            }),
          );
          if (!tasks) break;
          for (const task of tasks as { id: string; lockToken: string }[]) {
            if (
              !(await record(() =>
                api.post(`/api/external-tasks/${task.id}/complete`, { workerId: id, lockToken: task.lockToken }),
              ))
            )
              return;
          }
        }
      })();
    const workers = ['w1', 'w2', 'w3'].map(worker);
    const polls = Array.from({ length: 4 }, () =>
      api.post('/api/external-tasks/fetch-and-lock', {
        workerId: 'idle',
        maxTasks: 1,
        waitMs: 120_000,
        topics: [{ name: 'nothing-here', lockDurationMs: 1000 }],
      }),
    );
    await waitFor(
      async () => ((await metric(node.url, 'baton_parked_long_polls')) >= 4 ? true : undefined),
      10_000,
      'four parked polls',
    );
    await waitFor(async () => (outcomes.filter((o) => o === 'ok').length >= 150 ? true : undefined), 30_000, 'load to run');

    const sentAt = Date.now();
    node.kill('SIGTERM');
    const answers = await Promise.all(polls);
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200]);
    expect(answers.map((a) => a.body)).toEqual([[], [], [], []]);
    expect(await node.exited, node.output()).toBe(0);
    const tookMs = Date.now() - sentAt;
    expect(tookMs).toBeLessThan(GRACE_MS);
    stopLoad = true;
    await Promise.all([starter, ...workers]);
    // Requests sent while it stopped got an answer, a 503 ShuttingDown, or no connection: never a 500.
    expect(outcomes.filter((o) => o === 'other')).toEqual([]);
    console.log(
      `shutdown under load: exit 0 after ${tookMs} ms (grace ${GRACE_MS} ms); ${outcomes.length} requests: ${JSON.stringify(countBy(outcomes))}`,
    );

    // Whole: a completed instance has its task done; a running one has exactly one open task.
    const { rows } = await db.pool.query<{ status: string; open: number; done: number }>(
      `select i.status, count(t.*) filter (where t.state in ('ready', 'locked'))::int as open, count(t.*) filter (where t.state = 'done')::int as done
         from instances i left join external_tasks t on t.instance_id = i.id group by i.id, i.status`,
    );
    const shapes = countBy(rows.map((r) => `${r.status} open=${r.open} done=${r.done}`));
    expect(Object.keys(shapes).sort()).toEqual(expect.arrayContaining(['completed open=0 done=1']));
    for (const shape of Object.keys(shapes)) expect(['completed open=0 done=1', 'running open=1 done=0']).toContain(shape);
    const running = rows.filter((r) => r.status === 'running').length;
    expect(running).toBeGreaterThan(0);

    // Another node on the same database finishes them (leases the stopped node held expire first).
    other = await startBatonServer({
      databaseUrl: db.url,
      port: 0,
      host: '127.0.0.1',
      log: pino({ level: 'silent' }),
      auth: { tokens: [] },
      sweepIntervalMs: 200,
    });
    const node2 = apiClient(other.url, TOKEN);
    let finished = 0;
    await waitFor(
      async () => {
        const fetched = await node2.post('/api/external-tasks/fetch-and-lock', {
          workerId: 'n2',
          maxTasks: 50,
          waitMs: 500,
          topics: [{ name: 'drained-task', lockDurationMs: 30_000 }],
        });
        for (const task of fetched.body) {
          expect(
            (await node2.post(`/api/external-tasks/${task.id}/complete`, { workerId: 'n2', lockToken: task.lockToken })).status,
          ).toBe(204);
          finished++;
        }
        const left = await db.pool.query(`select count(*)::int as n from instances where status <> 'completed'`);
        return left.rows[0].n === 0 ? true : undefined;
      },
      20_000,
      'the second node to complete every instance',
    );
    expect(finished).toBe(running);
  }, 120_000);

  // The complete waits on the instance row inside a transaction (a message catch follows the
  // task, so the optimistic one-statement path hands over to the locked one).
  it('a drain stuck on a row lock: exits 1 at the grace, and the stuck transaction is rolled back whole', async () => {
    const { db, instanceId, complete } = await stuckComplete(
      buildBpmn(
        'stuck',
        [
          { id: 'start', type: 'startEvent' },
          { id: 'work', type: 'serviceTask', topic: 'stuck-task' },
          { id: 'paid', type: 'catchEvent', message: 'stuck-paid', correlationKey: 'orderId' },
          { id: 'end', type: 'endEvent' },
        ],
        [
          { from: 'start', to: 'work' },
          { from: 'work', to: 'paid' },
          { from: 'paid', to: 'end' },
        ],
      ),
    );
    await complete;
    const state = await db.pool.query(
      `select i.status, t.state from instances i join external_tasks t on t.instance_id = i.id where i.id = $1`,
      [instanceId],
    );
    expect(state.rows).toEqual([{ status: 'running', state: 'locked' }]);
    const events = await db.pool.query(`select kind from events where instance_id = $1 and kind like 'task:%' order by seq`, [
      instanceId,
    ]);
    expect(events.rows.map((r) => r.kind)).not.toContain('task:completed');
  }, 60_000);

  // The optimistic complete is one statement and its own transaction: once the lock is free it
  // applies whole (never half), like a complete committed just before the node died, and the
  // worker's retry elsewhere is the holder's repeat: 204, one task:completed.
  it("a one-statement complete stuck on a row lock when the node exits: applied whole once the lock is free, and the worker's retry on another node is a no-op", async () => {
    const { db, instanceId, complete, task } = await stuckComplete(singleTaskBpmn('stuck1', 'stuck1-task'));
    await complete;
    await waitFor(
      async () => {
        const { rows } = await db.pool.query(
          `select i.status, t.state from instances i join external_tasks t on t.instance_id = i.id where i.id = $1`,
          [instanceId],
        );
        return rows[0]?.status === 'completed' ? rows : undefined;
      },
      10_000,
      'the freed statement to apply',
    );
    const heir = await startBatonServer({
      databaseUrl: db.url,
      port: 0,
      host: '127.0.0.1',
      log: pino({ level: 'silent' }),
      auth: { tokens: [] },
    });
    try {
      const retry = await apiClient(heir.url, TOKEN).post(`/api/external-tasks/${task.id}/complete`, {
        workerId: 'w',
        lockToken: task.lockToken,
      });
      expect(retry.status).toBe(204);
    } finally {
      await heir.close();
    }
    const { rows } = await db.pool.query(
      `select i.status, t.state, (select count(*)::int from events e where e.instance_id = i.id and e.kind = 'task:completed') as completes
                                            from instances i join external_tasks t on t.instance_id = i.id where i.id = $1`,
      [instanceId],
    );
    expect(rows).toEqual([{ status: 'completed', state: 'done', completes: 1 }]);
  }, 60_000);
});

/**
 * A node (grace 1.5 s) whose complete waits on the instance row held by a test transaction;
 * SIGTERM: it exits 1 at the grace. Then the row is let go.
 */
async function stuckComplete(
  xml: string,
): Promise<{ db: TestDatabase; instanceId: string; task: { id: string; lockToken: string }; complete: Promise<unknown> }> {
  const GRACE_MS = 1500;
  const db = await createTestDatabase();
  dbs.push(db);
  const node = await spawnNode(db, GRACE_MS);
  const { api } = node;
  expect((await api.post('/api/definitions', { xml })).status).toBe(201);
  const key = /process id="([^"]+)"/.exec(xml)?.[1];
  const instanceId: string = (
    await api.post('/api/instances', { definitionKey: key, businessKey: 'one', variables: { orderId: 'o-1' } })
  ).body.id;
  const [task] = (
    await api.post('/api/external-tasks/fetch-and-lock', {
      workerId: 'w',
      maxTasks: 1,
      topics: [{ name: `${key}-task`, lockDurationMs: 60_000 }],
    })
  ).body;

  const blocker = await db.pool.connect();
  let complete: Promise<unknown>;
  try {
    await blocker.query('begin');
    await blocker.query('select 1 from instances where id = $1 for update', [instanceId]);
    complete = api
      .post(`/api/external-tasks/${task.id}/complete`, { workerId: 'w', lockToken: task.lockToken })
      .catch(() => undefined);
    await waitFor(
      async () => {
        const waiting = await db.pool.query(
          `select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`,
        );
        return waiting.rows[0].n > 0 ? true : undefined;
      },
      10_000,
      'the complete to wait on the row lock',
    );

    const sentAt = Date.now();
    node.kill('SIGTERM');
    expect(await node.exited, node.output()).toBe(1);
    const tookMs = Date.now() - sentAt;
    expect(tookMs).toBeGreaterThanOrEqual(GRACE_MS - 50);
    expect(tookMs).toBeLessThan(GRACE_MS + 1500);
    expect(node.output()).toContain('server:grace_exceeded');
    console.log(`stuck drain: exit 1 after ${tookMs} ms (grace ${GRACE_MS} ms)`);
  } finally {
    await blocker.query('rollback');
    blocker.release();
  }
  // The child's backend, freed from the lock, finishes its statement and finds its client gone.
  await waitFor(
    async () => {
      const left = await db.pool.query(
        `select count(*)::int as n from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid() and backend_type = 'client backend' and state <> 'idle'`,
      );
      return left.rows[0].n === 0 ? true : undefined;
    },
    10_000,
    'the stuck backend to end',
  );
  return { db, instanceId, task, complete };
}

function countBy(values: string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const v of values) counts[v] = (counts[v] ?? 0) + 1;
  return counts;
}

async function metric(url: string, name: string): Promise<number> {
  const res = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
  const line = (await res.text()).split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.split(' ')[1]) : 0;
}
