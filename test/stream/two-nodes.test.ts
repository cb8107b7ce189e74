// Two server processes on one PostgreSQL: a progress client follows a run on node
// A, loses its connection mid-run, reconnects to node B with its last seq, and ends
// with every frame of the generation exactly once and in order. And the notifications of
// one node's commits reach the other's long polls and followers through the relay
// (store/notifications.ts), well before their own re-checks would.
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { announceListener, readNotifications } from '../../runtime/store/notifications.ts';
import { singleTaskBpmn } from '../support/bpmn.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { complete, deploy, fetchOne, fetchTasks, start } from '../support/flows.ts';
import { spawnNode, type NodeProcess } from '../support/node-process.ts';
import { ProgressClient } from '../support/progress-client.ts';
import { waitFor } from '../support/server.ts';

const nodes: NodeProcess[] = [];
const clients: ProgressClient[] = [];
let db: TestDatabase | undefined;
afterAll(async () => {
  for (const c of clients) c.close();
  await Promise.all(nodes.map((n) => n.stop()));
  await db?.drop();
});

describe('two nodes', () => {
  it(
    'given a client moving from node A to node B mid-run with its last seq, then it has every frame once, in order',
    { timeout: 120_000 },
    async () => {
      db = await createTestDatabase();
      const [a, b] = await Promise.all([spawnNode(db), spawnNode(db)]);
      nodes.push(a, b);
      await deploy(a.api, singleTaskBpmn('two-nodes', 'two-nodes'));
      const id = await start(a.api, 'two-nodes');

      const onA = new ProgressClient(a.url);
      clients.push(onA);
      expect((await onA.subscribe({ instanceId: id })).ok).toBe(true);

      // The worker talks to node B; its reports are committed whichever node the client is on.
      const task = await fetchOne(b.api, 'worker', 'two-nodes');
      let sent = 0;
      const report = async (n: number) => {
        for (let i = 0; i < n; i++, sent++) {
          const res = await b.api.post(`/api/external-tasks/${task.id}/progress`, {
            workerId: 'worker',
            lockToken: task.lockToken,
            data: { i: sent, text: `token ${sent} ` },
          });
          expect(res.status).toBe(202);
          if (i % 10 === 0) await new Promise((r) => setTimeout(r, 5));
        }
      };
      await report(100);
      await onA.waitForKind(id, 'task:progress');
      onA.close();
      const seenOnA = onA.seqs(id);
      await report(100);

      const onB = new ProgressClient(b.url);
      clients.push(onB);
      const ack = await onB.subscribe({ instanceId: id, generation: 1, afterSeq: seenOnA.at(-1) });
      expect(ack.ok).toBe(true);
      await report(100);
      expect((await complete(b.api, task, 'worker')).status).toBe(204);
      await onB.waitForKind(id);

      const { rows } = await db.pool.query<{ seq: number; kind: string; data: any }>(
        'select seq, kind, data from frames where instance_id = $1 and generation = 1 order by seq',
        [id],
      );
      const received = [...onA.frames, ...onB.frames].filter((f) => f.instanceId === id);
      expect(received.map((f) => f.seq)).toEqual(rows.map((r) => r.seq));
      expect(received.map((f) => f.kind)).toEqual(rows.map((r) => r.kind));
      const reports = received.filter((f) => f.kind === 'task:progress').flatMap((f) => f.data.reports as { i: number }[]);
      expect(reports.map((r) => r.i)).toEqual([...Array(300).keys()]);
      await waitFor(async () => (received.at(-1)?.kind === 'instance:ended' ? true : undefined), 1000, 'the end frame');
    },
  );

  it(
    "given a poll parked and a follower on node B, when node A starts an instance and completes its task, then A's relayed notifications wake both at once, not their re-checks",
    { timeout: 120_000 },
    async () => {
      db ??= await createTestDatabase();
      while (nodes.length < 2) nodes.push(await spawnNode(db));
      const [a, b] = nodes as [NodeProcess, NodeProcess];
      await deploy(a.api, singleTaskBpmn('relayed', 'relayed'));
      // What crosses between the nodes, as a third listener hears it.
      const heard: string[] = [];
      const observer = new pg.Client({ connectionString: db.url });
      await observer.connect();
      observer.on('notification', (m) => heard.push(...readNotifications(m.payload).bells.map((bell) => `${m.channel} ${bell}`)));
      await announceListener(observer, 'test-observer');
      await observer.query('listen baton_tasks; listen baton_frames');
      try {
        for (let round = 0; round < 3; round++) {
          heard.length = 0;
          const parked = fetchTasks(b.api, 'on-b', ['relayed'], { maxTasks: 1, waitMs: 20_000, lockDurationMs: 30_000 });
          await waitFor(
            async () => (/^baton_parked_long_polls 1$/m.test(await (await fetch(`${b.url}/metrics`)).text()) ? true : undefined),
            5_000,
            'the poll to park',
          );
          const began = performance.now();
          const id = await start(a.api, 'relayed');
          const [task] = await parked;
          const pickup = performance.now() - began;
          expect(task?.instanceId).toBe(id);
          expect(pickup, `round ${round}`).toBeLessThan(900); // the poll's re-check runs every 2 s
          await waitFor(
            async () => (heard.includes('baton_tasks relayed') ? true : undefined),
            5_000,
            'the relayed tasks notification',
          );

          const onB = new ProgressClient(b.url);
          clients.push(onB);
          expect((await onB.subscribe({ instanceId: id })).ok).toBe(true);
          await onB.waitForKind(id, 'task:locked');
          const completedAt = performance.now();
          expect((await complete(a.api, task!, 'on-b')).status).toBe(204);
          await onB.waitForKind(id);
          expect(performance.now() - completedAt, `round ${round}`).toBeLessThan(700); // the follower's head re-check runs every second
          const {
            rows: [head],
          } = await db.pool.query('select last_seq from frame_heads where instance_id = $1 and generation = 1', [id]);
          await waitFor(
            async () => (heard.includes(`baton_frames ${id} 1 ${head.last_seq}`) ? true : undefined),
            5_000,
            'the relayed frames notification',
          );
          onB.close();
        }
      } finally {
        await observer.end();
      }
    },
  );
});
