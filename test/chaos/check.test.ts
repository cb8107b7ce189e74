// The checker passes a healthy database and names the row of each corruption made on purpose.
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBpmn, parallelBpmn } from '../support/bpmn.ts';
import { complete, deploy, fetchOne, start, waitForStatus } from '../support/flows.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { checkInvariants, formatReport, type Report } from './check.ts';
import { applyEffect, createLedger, LEDGER_ATTEMPTS } from './ledger.ts';

let t: TestServer;
let joinInstance = '';
let timerInstance = '';

function violationsOf(report: Report, invariant: number): string[] {
  return report.results
    .filter((r) => r.invariant === invariant)
    .flatMap((r) => r.violations.map((v) => `${v.row}: ${v.message}`));
}

beforeAll(async () => {
  t = await startTestServer({ sweepIntervalMs: 100 });
  await createLedger(t.db.pool);
  await deploy(t.api, parallelBpmn('chk-join', 'chk-a', 'chk-b'));
  joinInstance = await start(t.api, 'chk-join', { businessKey: 'chk-1' });
  for (const topic of ['chk-a', 'chk-b']) {
    const task = await fetchOne(t.api, 'chk-worker', topic);
    await applyEffect(t.db.pool, task, 'chk-worker');
    expect((await complete(t.api, task, 'chk-worker')).status).toBe(204);
  }
  await waitForStatus(t.api, joinInstance, 'completed');
  await deploy(
    t.api,
    buildBpmn(
      'chk-timer',
      [
        { id: 'start', type: 'startEvent' },
        { id: 'wait', type: 'catchEvent', timer: { duration: 'PT0.2S' } },
        { id: 'end', type: 'endEvent' },
      ],
      [
        { from: 'start', to: 'wait' },
        { from: 'wait', to: 'end' },
      ],
    ),
  );
  timerInstance = await start(t.api, 'chk-timer');
  await waitForStatus(t.api, timerInstance, 'completed');
});
afterAll(async () => {
  await t.close();
});

describe('invariant checker', () => {
  it('given a healthy database, then every invariant holds and the CLI exits 0 with a table', async () => {
    const report = await checkInvariants(t.db.url);
    expect(report.violations, formatReport(report)).toBe(0);
    expect(report.counts).toMatchObject({ completed: 2, ledger_applied: 2 });
    const cli = spawn(process.execPath, ['--import', 'tsx', 'test/chaos/check.ts', t.db.url], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    cli.stdout.on('data', (d) => (out += String(d)));
    cli.stderr.on('data', (d) => (out += String(d)));
    const code = await new Promise((r) => cli.on('exit', r));
    expect(code, out).toBe(0);
    expect(out).toMatch(/\| 3 \| each join fires once, after all its inputs \| ok \|/);
  });

  it('given a side effect applied twice, then invariant 2 fails naming the idempotency key', async () => {
    const { rows } = await t.db.pool.query(`select * from ${LEDGER_ATTEMPTS} where outcome = 'applied' limit 1`);
    const a = rows[0];
    await t.db.pool.query(
      `insert into ${LEDGER_ATTEMPTS} (idempotency_key, task_id, topic, worker_id, attempt, outcome, worker_clock) values ($1, $2, $3, 'rogue', 2, 'applied', now())`,
      [a.idempotency_key, a.task_id, a.topic],
    );
    try {
      expect(violationsOf(await checkInvariants(t.db.url), 2)).toEqual([
        `${LEDGER_ATTEMPTS} ${a.idempotency_key}: 2 attempts applied the side effect (attempts 1,2)`,
      ]);
    } finally {
      await t.db.pool.query(`delete from ${LEDGER_ATTEMPTS} where worker_id = 'rogue'`);
    }
  });

  it('given a join fired twice, then invariant 3 fails naming the join', async () => {
    await t.db.pool.query(
      `insert into events (seq, instance_id, generation, kind, step_id) values (baton_event_seq($1), $1, 1, 'step:completed', 'join')`,
      [joinInstance],
    );
    try {
      const found = violationsOf(await checkInvariants(t.db.url), 3);
      expect(found).toContain(`steps ${joinInstance}/join generation 1: 2 step:completed events`);
      expect(found).toContain(`steps ${joinInstance}/join generation 1: join fired 2 times`);
    } finally {
      await t.db.pool.query(
        `delete from events where instance_id = $1 and seq = (select max(seq) from events where instance_id = $1 and kind = 'step:completed' and step_id = 'join')`,
        [joinInstance],
      );
    }
  });

  it('given a timer fired before its due time, then invariant 5 fails naming the timer', async () => {
    const { rows } = await t.db.pool.query(
      `update timers set fired_at = due_at - interval '1 second' where instance_id = $1 returning id`,
      [timerInstance],
    );
    try {
      const found = violationsOf(await checkInvariants(t.db.url), 5);
      expect(found).toHaveLength(1);
      expect(found[0]).toMatch(new RegExp(`^timers ${rows[0].id}: fired at .* before its due time`));
    } finally {
      await t.db.pool.query(`update timers set fired_at = due_at + interval '1 millisecond' where instance_id = $1`, [
        timerInstance,
      ]);
    }
  });

  it('given a gap in the frames of a generation, then invariant 8 fails naming the generation', async () => {
    // The frames tables come with migration 0008 (its trigger writes a frame per event); on a
    // schema before it, the contract's two tables are made here and filled by hand.
    const exists = async (name: string): Promise<boolean> =>
      (
        await t.db.pool.query(
          `select 1 from information_schema.tables where table_schema = current_schema() and table_name = $1`,
          [name],
        )
      ).rows.length > 0;
    let gap = 'seq 1 is followed by 3';
    if (await exists('frame_runs')) {
      // Frames are stored as runs, one per transaction (migration 0045): the second run goes.
      const { rows: runs } = await t.db.pool.query<{ last_seq: number }>(
        'select last_seq from frame_runs where instance_id = $1 and generation = 1 order by last_seq limit 3',
        [joinInstance],
      );
      expect(runs, 'the join instance has three runs of frames').toHaveLength(3);
      await t.db.pool.query('delete from frame_runs where instance_id = $1 and generation = 1 and last_seq = $2', [
        joinInstance,
        runs[1]!.last_seq,
      ]);
      gap = `seq ${runs[0]!.last_seq} is followed by ${runs[1]!.last_seq + 1}`;
    } else {
      if (!(await exists('frames'))) {
        await t.db.pool
          .query(`create table frame_heads (instance_id uuid, generation integer, last_seq integer, ended_at timestamptz, primary key (instance_id, generation));
        create table frames (instance_id uuid, generation integer, seq integer, kind text, data jsonb default '{}', at timestamptz default now(), primary key (instance_id, generation, seq))`);
        await t.db.pool.query(
          `insert into frame_heads values ($1, 1, 3, now()); insert into frames (instance_id, generation, seq, kind) values ($1, 1, 1, 'instance:started'), ($1, 1, 2, 'step:completed'), ($1, 1, 3, 'instance:ended')`.replaceAll(
            '$1',
            `'${joinInstance}'`,
          ),
        );
      }
      const { rows } = await t.db.pool.query(
        `select instance_id, generation, seq from frames where instance_id = $1 and seq = 2`,
        [joinInstance],
      );
      expect(rows, 'the join instance has frames').toHaveLength(1);
      await t.db.pool.query(`delete from frames where instance_id = $1 and seq = 2`, [joinInstance]);
    }
    const found = violationsOf(await checkInvariants(t.db.url), 8);
    expect(found).toEqual([`frames ${joinInstance} generation 1: ${gap} (gap)`]);
  });

  it('given a task completed by a worker that did not hold it, then invariant 2 fails naming the event', async () => {
    const { rows } = await t.db.pool.query(
      `insert into events (seq, instance_id, generation, kind, step_id, task_id, data)
       select baton_event_seq(instance_id), instance_id, generation, 'task:completed', step_id, id, jsonb_build_object('workerId', 'intruder', 'attempt', 1) from external_tasks where instance_id = $1 limit 1
       returning seq, task_id`,
      [joinInstance],
    );
    const found = violationsOf(await checkInvariants(t.db.url), 2);
    expect(found).toContain(
      `events ${joinInstance}/${rows[0].seq}: task ${rows[0].task_id} completed by intruder, who did not hold attempt 1`,
    );
    expect(found).toContain(`external_tasks ${rows[0].task_id}: 2 task:completed events`);
  });
});
