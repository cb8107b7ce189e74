// SIGTERM on a node with parked long polls and work in flight: it exits within 10 s with code 0,
// every parked poll gets an answer, nothing is half-written, and another node finishes the work.
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { singleTaskBpmn } from '../support/bpmn.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { pino } from 'pino';
import { startBatonServer, type BatonServer } from '../../runtime/server.ts';
import { apiClient, waitFor } from '../support/server.ts';

const TOKEN = 'admin-secret-0123456789';
let child: ChildProcess | undefined;
let db: TestDatabase | undefined;
let other: BatonServer | undefined;
afterAll(async () => {
  if (child && child.exitCode === null) child.kill('SIGKILL');
  await other?.close();
  await db?.drop();
});

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

describe('SIGTERM', () => {
  it('answers parked polls, exits within 10 s with code 0, and another node finishes the instances', async () => {
    db = await createTestDatabase();
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    let output = '';
    child = spawn(process.execPath, ['--import', 'tsx', 'runtime/cli.ts', 'serve'], {
      env: { ...process.env, DATABASE_URL: db.url, PORT: String(port), BATON_SAMPLES_DIR: '', LOG_LEVEL: 'info', BATON_TOKENS: `admin:ops:${TOKEN}` },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout?.on('data', (d) => (output += String(d)));
    child.stderr?.on('data', (d) => (output += String(d)));
    const exited = new Promise<number | null>((resolve) => child!.on('exit', (code) => resolve(code)));
    const api = apiClient(url, TOKEN);
    await waitFor(async () => ((await fetch(`${url}/readyz`).catch(() => undefined))?.ok ? true : undefined), 60_000, () => `the node to be ready: ${output}`);

    expect((await api.post('/api/definitions', { xml: singleTaskBpmn('drained', 'drained-task') })).status).toBe(201);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await api.post('/api/instances', { definitionKey: 'drained', businessKey: `d-${i}` })).body.id);
    const polls = Array.from({ length: 4 }, () => api.post('/api/external-tasks/fetch-and-lock', { workerId: 'idle', maxTasks: 1, waitMs: 120_000, topics: [{ name: 'nothing-here', lockDurationMs: 1000 }] }));
    await waitFor(async () => ((await metric(url, 'baton_parked_long_polls')) >= 4 ? true : undefined), 10_000, 'four parked polls');

    const sentAt = Date.now();
    child.kill('SIGTERM');
    const answers = await Promise.all(polls);
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200]);
    expect(answers.map((a) => a.body)).toEqual([[], [], [], []]);
    expect(await exited, output).toBe(0);
    expect(Date.now() - sentAt).toBeLessThan(10_000);

    // Every instance is whole: running with one ready task each; another node finishes them.
    const { rows } = await db.pool.query(`select i.status, count(t.*)::int as tasks from instances i left join external_tasks t on t.instance_id = i.id and t.state = 'ready' group by i.id, i.status`);
    expect(rows).toEqual(Array.from({ length: 5 }, () => ({ status: 'running', tasks: 1 })));
    other = await startBatonServer({ databaseUrl: db.url, port: 0, host: '127.0.0.1', log: pino({ level: 'silent' }), auth: { tokens: [] } });
    const node2 = apiClient(other.url, TOKEN);
    const fetched = await node2.post('/api/external-tasks/fetch-and-lock', { workerId: 'w2', maxTasks: 10, topics: [{ name: 'drained-task', lockDurationMs: 30_000 }] });
    expect(fetched.body).toHaveLength(5);
    for (const task of fetched.body) expect((await node2.post(`/api/external-tasks/${task.id}/complete`, { workerId: 'w2', lockToken: task.lockToken })).status).toBe(204);
    for (const id of ids) expect((await node2.get(`/api/instances/${id}`)).body.status).toBe('completed');
  }, 120_000);
});

async function metric(url: string, name: string): Promise<number> {
  const res = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
  const line = (await res.text()).split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.split(' ')[1]) : 0;
}
