// Two server processes on one PostgreSQL: a progress client follows a run on node
// A, loses its connection mid-run, reconnects to node B with its last seq, and ends
// with every frame of the generation exactly once and in order.
import { afterAll, describe, expect, it } from 'vitest';
import { singleTaskBpmn } from '../support/bpmn.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { complete, deploy, fetchOne, start } from '../support/flows.ts';
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
  it('given a client moving from node A to node B mid-run with its last seq, then it has every frame once, in order', { timeout: 120_000 }, async () => {
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
        const res = await b.api.post(`/api/external-tasks/${task.id}/progress`, { workerId: 'worker', lockToken: task.lockToken, data: { i: sent, text: `token ${sent} ` } });
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
    const ack = await onB.subscribe({ instanceId: id, afterSeq: seenOnA.at(-1) });
    expect(ack.ok).toBe(true);
    await report(100);
    expect((await complete(b.api, task, 'worker')).status).toBe(204);
    await onB.waitForKind(id);

    const { rows } = await db.pool.query<{ seq: number; kind: string; data: any }>('select seq, kind, data from frames where instance_id = $1 and generation = 1 order by seq', [id]);
    const received = [...onA.frames, ...onB.frames].filter((f) => f.instanceId === id);
    expect(received.map((f) => f.seq)).toEqual(rows.map((r) => r.seq));
    expect(received.map((f) => f.kind)).toEqual(rows.map((r) => r.kind));
    const reports = received.filter((f) => f.kind === 'task:progress').flatMap((f) => f.data.reports as { i: number }[]);
    expect(reports.map((r) => r.i)).toEqual([...Array(300).keys()]);
    await waitFor(async () => (received.at(-1)?.kind === 'instance:ended' ? true : undefined), 1000, 'the end frame');
  });
});
