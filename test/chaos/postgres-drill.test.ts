// Drill 12: PostgreSQL itself stops and starts under load. This file runs
// its own embedded PostgreSQL (the shared test server must not restart under other files).
import { chmod, mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parallelBpmn } from '../support/bpmn.ts';
import { deploy } from '../support/flows.ts';
import { apiClient, waitFor } from '../support/server.ts';
import { startEmbeddedPostgres, type EmbeddedPostgresHandle } from '../../runtime/store/embedded.ts';
import { checkInvariants, formatReport } from './check.ts';
import { freePort } from '../support/ports.ts';
import { killAll, sleep, startNode, startWorker } from './harness.ts';
import { createLedger, summarizeLedger } from './ledger.ts';

const dataDir = path.resolve('.baton-test', `chaos-pg-${process.pid}`);
let pgPort = 0;
let server: EmbeddedPostgresHandle | undefined;
let pool: pg.Pool;

async function startPostgres(): Promise<EmbeddedPostgresHandle> {
  return startEmbeddedPostgres({ dataDir, port: pgPort, database: 'baton' });
}

beforeAll(async () => {
  await mkdir(dataDir, { recursive: true });
  await chmod(dataDir, 0o755); // as root, the embedded PostgreSQL runs as user postgres and must enter it
  pgPort = await freePort();
  server = await startPostgres();
  pool = new pg.Pool({ connectionString: server.url, max: 2 });
  pool.on('error', () => undefined);
}, 120_000);
afterAll(async () => {
  await killAll();
  await pool?.end().catch(() => undefined);
  await server?.stop();
  await rm(dataDir, { recursive: true, force: true });
}, 60_000);

/** A count that answers undefined while PostgreSQL is down. */
async function completed(): Promise<number | undefined> {
  try {
    const { rows } = await pool.query(
      `select count(*)::int as n from instances where definition_key = 'd12' and status = 'completed'`,
    );
    return rows[0].n;
  } catch {
    return undefined;
  }
}

describe('chaos drills: PostgreSQL', () => {
  it('drill 12: given PostgreSQL stopped and started under load, then nodes and workers reconnect and every instance finishes, applied once', async () => {
    const url = server!.url;
    const nodes = [await startNode(url), await startNode(url)];
    await createLedger(pool);
    const api = apiClient(nodes[0]!.url);
    await deploy(api, parallelBpmn('d12', 'd12-a', 'd12-b'));
    const total = 20;
    for (let i = 0; i < total; i++)
      expect((await api.post('/api/instances', { definitionKey: 'd12', businessKey: `d12-${i}` })).status).toBe(201);
    // Each task takes 300 ms: the stop comes while tasks are held and complete calls are on their way.
    const workerProcs = nodes.map((n, i) =>
      startWorker({
        baseUrl: n.url,
        databaseUrl: url,
        workerId: `d12-w${i}`,
        topics: ['d12-a', 'd12-b'],
        holdMs: 300,
        lockDurationMs: 2_000,
      }),
    );
    await waitFor(async () => (((await completed()) ?? 0) >= 3 ? true : undefined), 60_000, 'some instances to complete');

    const stoppedAt = (await pool.query<{ now: Date }>('select now()')).rows[0]!.now;
    await server!.stop();
    server = undefined;
    await sleep(1_000);
    server = await startPostgres();

    await waitFor(
      async () => ((await completed()) === total ? true : undefined),
      90_000,
      `all ${total} instances to complete`,
    ).catch(async (err: Error) => {
      const { rows } =
        await pool.query(`select i.status, t.state, t.step_id, t.attempt, t.worker_id, t.lock_expires_at < now() as expired, t.retry_at > now() as later
                                           from instances i join external_tasks t on t.instance_id = i.id where i.status <> 'completed' and t.state not in ('done')`);
      throw new Error(
        `${err.message}\nopen tasks: ${JSON.stringify(rows)}\n${nodes.map((n) => n.output().slice(-3000)).join('\n---\n')}\n---\n${workerProcs.map((w) => w.output().slice(-3000)).join('\n---\n')}`,
      );
    });
    for (const n of nodes) expect(n.alive(), n.output()).toBe(true);
    expect((await summarizeLedger(pool)).appliedTwice).toBe(0);
    const { rows } = await pool.query(
      `select count(*)::int as n, count(*) filter (where at > $1)::int as after from events where kind = 'task:completed'`,
      [stoppedAt],
    );
    expect(rows[0].n).toBe(total * 2);
    // The load went on across the restart: work was still left when PostgreSQL stopped.
    expect(rows[0].after).toBeGreaterThan(0);
    const report = await checkInvariants(url);
    expect(report.violations, formatReport(report)).toBe(0);
  }, 240_000);
});
