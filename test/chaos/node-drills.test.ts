// Drills where runtime nodes die (the drill numbers of docs/RELIABILITY.md): `baton serve` child
// processes SIGKILLed at fault points or at random under load, restarted on the
// same port, with SDK worker processes carrying on; then ledger and checker.
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { announceListener, readNotifications } from '../../runtime/store/notifications.ts';
import { buildBpmn, callBpmn, parallelBpmn, reworkBpmn, type FlowSpec, type NodeSpec } from '../support/bpmn.ts';
import type { TestDatabase } from '../support/db.ts';
import { complete, deploy, fetchOne, fetchTasks, start, waitForStatus } from '../support/flows.ts';
import { ProgressClient } from '../support/progress-client.ts';
import { apiClient, waitFor } from '../support/server.ts';
import { killAll, startNode, startWorker } from './harness.ts';
import { summarizeLedger } from './ledger.ts';
import { chaosDatabase, expectInvariants, history, kinds, ledgerOf, startMany, statusCounts } from './support.ts';

let db: TestDatabase;

beforeAll(async () => {
  db = await chaosDatabase();
});
afterEach(async () => {
  await killAll();
});
afterAll(async () => {
  await killAll();
  await db.drop();
});

const faultLines = (output: string, point: string) =>
  output.split('\n').filter((l) => l.startsWith(`baton-fault ${point}`)).length;

describe('chaos drills: runtime nodes', () => {
  it("drill 2: given a node that dies after committing a complete and before answering, then the worker's retried complete is a no-op", async () => {
    const doomed = await startNode(db.url, { faults: 'api:after-complete-commit:crash:once' });
    const api = apiClient(doomed.url);
    await deploy(api, singleTask('d2'));
    const id = await start(api, 'd2');
    const worker = startWorker({ baseUrl: doomed.url, databaseUrl: db.url, workerId: 'd2-w', topics: ['d2'] });
    await doomed.exited;
    expect(doomed.output()).toContain('baton-fault api:after-complete-commit crash');
    // The complete is committed though nobody heard the answer.
    expect(kinds(await history(db, id), 'task:completed')).toHaveLength(1);
    const again = await startNode(db.url, { port: doomed.port });
    await worker.waitForLine(/^log task:completed /, 30_000);
    expect(worker.lines().filter((l) => l.startsWith('log task:report_retry')).length).toBeGreaterThan(0);
    await waitForStatus(apiClient(again.url), id, 'completed');
    const events = await history(db, id);
    expect(kinds(events, 'task:completed')).toHaveLength(1);
    expect(kinds(events, 'task:late_result')).toHaveLength(0);
    expect((await ledgerOf(db, id)).map((a) => a.outcome)).toEqual(['applied']);
    await expectInvariants(db);
  }, 90_000);

  it('drill 4: given a node SIGKILLed and restarted mid-load, then all instances finish, nothing lost, nothing applied twice', async () => {
    const first = await startNode(db.url);
    const api = apiClient(first.url);
    await deploy(api, parallelBpmn('d4', 'd4-a', 'd4-b'));
    const ids = await startMany(api, 'd4', 20, 'd4');
    for (const w of ['d4-w1', 'd4-w2'])
      startWorker({
        baseUrl: first.url,
        databaseUrl: db.url,
        workerId: w,
        topics: ['d4-a', 'd4-b'],
        holdMs: 30,
        lockDurationMs: 1_500,
      });
    await waitFor(
      async () => (((await statusCounts(db, 'd4')).completed ?? 0) >= 5 ? true : undefined),
      60_000,
      'a quarter of the instances to complete',
    );
    await first.kill();
    const killedAt = await statusCounts(db, 'd4');
    const second = await startNode(db.url, { port: first.port });
    await waitFor(
      async () => (((await statusCounts(db, 'd4')).completed ?? 0) === ids.length ? true : undefined),
      90_000,
      `all ${ids.length} to complete`,
    );
    expect(killedAt.completed ?? 0).toBeLessThan(ids.length);
    const ledger = await summarizeLedger(db.pool);
    expect(ledger.appliedTwice).toBe(0);
    const { rows } = await db.pool.query(
      `select count(*)::int as n from events e join instances i on i.id = e.instance_id where i.definition_key = 'd4' and e.kind = 'task:completed'`,
    );
    expect(rows[0].n).toBe(ids.length * 2);
    expect(second.alive()).toBe(true);
    await expectInvariants(db);
  }, 180_000);

  it('drill 10: given timers due at once on three nodes whose schedulers all select them, then each fires exactly once', async () => {
    const nodes = await Promise.all([1, 2, 3].map(() => startNode(db.url, { faults: 'timer:before-fire:delay:100' })));
    const api = apiClient(nodes[0]!.url);
    await deploy(
      api,
      buildBpmn(
        'd10',
        [
          { id: 'start', type: 'startEvent' },
          { id: 'wait', type: 'catchEvent', timer: { duration: 'PT2S' } },
          { id: 'end', type: 'endEvent' },
        ],
        [
          { from: 'start', to: 'wait' },
          { from: 'wait', to: 'end' },
        ],
      ),
    );
    const ids = await startMany(api, 'd10', 20, 'd10');
    await waitFor(
      async () => (((await statusCounts(db, 'd10')).completed ?? 0) === ids.length ? true : undefined),
      60_000,
      'every timer to fire',
    );
    const selections = nodes.map((n) => faultLines(n.output(), 'timer:before-fire'));
    // More selections than timers: several schedulers picked the same due timer.
    expect(selections.reduce((a, b) => a + b, 0)).toBeGreaterThan(ids.length);
    const { rows } = await db.pool
      .query(`select count(*)::int as fired, count(distinct data->>'timerId')::int as timers from events e join instances i on i.id = e.instance_id
                                           where i.definition_key = 'd10' and e.kind = 'step:completed' and e.data ? 'timerId'`);
    expect(rows[0]).toEqual({ fired: ids.length, timers: ids.length });
    await expectInvariants(db);
  }, 120_000);

  it('drill 8: given a step out of retries with onExhausted compensate and a node that dies in the middle of the saga, then the handlers of completed steps run once each, newest first', async () => {
    const doomed = await startNode(db.url, { faults: 'compensation:mid-saga:crash:once' });
    const api = apiClient(doomed.url);
    await deploy(api, sagaBpmn('d8'));
    const id = await start(api, 'd8');
    const worker = startWorker({
      baseUrl: doomed.url,
      databaseUrl: db.url,
      workerId: 'd8-w',
      topics: ['d8-book-a', 'd8-book-b', 'd8-book-c', 'd8-pay', 'd8-undo'],
      failTopics: { 'd8-pay': 99 },
    });
    await doomed.exited;
    expect(doomed.output()).toContain('baton-fault compensation:mid-saga crash');
    const again = await startNode(db.url, { port: doomed.port });
    const done = await waitForStatus(apiClient(again.url), id, 'compensated', 30_000);
    expect(done.status).toBe('compensated');
    const events = await history(db, id);
    expect(kinds(events, 'compensation:completed').map((e) => e.stepId)).toEqual(['book_c', 'book_b', 'book_a']);
    // Three bookings, the one pay attempt, three undos: each applied once. The undo whose complete
    // died with the node may be attempted again (its lease can expire while the node restarts).
    expect((await ledgerOf(db, id)).filter((a) => a.outcome === 'applied')).toHaveLength(3 + 1 + 3);
    expect((await summarizeLedger(db.pool)).appliedTwice).toBe(0);
    expect(worker.alive()).toBe(true);
    await expectInvariants(db);
  }, 90_000);

  it("drill 14: given a node that dies after a commit and before relaying its notifications, then another node's progress follower and parked long poll still get the work, by their own re-checks", async () => {
    const steady = await startNode(db.url);
    const api = apiClient(steady.url);
    await deploy(
      api,
      buildBpmn(
        'd14',
        [
          { id: 'start', type: 'startEvent' },
          { id: 'a', type: 'serviceTask', topic: 'd14-a' },
          { id: 'b', type: 'serviceTask', topic: 'd14-b' },
          { id: 'end', type: 'endEvent' },
        ],
        [
          { from: 'start', to: 'a' },
          { from: 'a', to: 'b' },
          { from: 'b', to: 'end' },
        ],
      ),
    );
    // Every notification any node sends, as another node's LISTEN hears it.
    const heard: { channel: string; bell: string }[] = [];
    const listener = new pg.Client({ connectionString: db.url });
    await listener.connect();
    listener.on('notification', (m) =>
      heard.push(...readNotifications(m.payload).bells.map((bell) => ({ channel: m.channel, bell }))),
    );
    await announceListener(listener, 'test-observer'); // heard as another node: this process's relays send to it
    await listener.query('listen baton_tasks; listen baton_frames');
    const progress = new ProgressClient(steady.url);
    try {
      // 1. Frames: a client follows the instance on the steady node; the doomed node completes its task.
      const first = await start(api, 'd14');
      const taskA = await fetchOne(api, 'd14-w', 'd14-a');
      expect((await progress.subscribe({ instanceId: first })).ok).toBe(true);
      await progress.waitForKind(first, 'task:locked');
      const doomed = await startNode(db.url, { faults: 'notifications:before-relay:crash:once' });
      await complete(apiClient(doomed.url), taskA, 'd14-w').catch(() => undefined); // answered or cut off by the crash
      await doomed.exited;
      expect(doomed.output()).toContain('baton-fault notifications:before-relay crash');
      expect(kinds(await history(db, first), 'task:completed')).toHaveLength(1);
      const seen = await progress.waitForKind(first, 'task:completed', 1, 10_000);
      // No NOTIFY ever said so: the complete's statement sends none, and its relay died with the node.
      expect(
        heard.filter((h) => h.channel === 'baton_frames' && h.bell.startsWith(first) && Number(h.bell.split(' ')[2]) >= seen.seq),
      ).toEqual([]);
      expect(progress.frames.filter((f) => f.instanceId === first).map((f) => f.seq)).toEqual(
        progress.seqs(first).map((_, i) => i + 1),
      );

      // 2. Tasks: a poll parked on the steady node for step b; a second doomed node completes step a.
      const taskB = await fetchOne(api, 'd14-w', 'd14-b');
      expect((await complete(api, taskB, 'd14-w')).status).toBe(204);
      const second = await start(api, 'd14');
      const taskA2 = await fetchOne(api, 'd14-w', 'd14-a');
      const parkedAt = Date.now();
      const parked = fetchTasks(api, 'd14-poller', ['d14-b'], { maxTasks: 1, waitMs: 20_000 });
      await waitFor(
        async () => (/^baton_parked_long_polls 1$/m.test(await (await fetch(`${steady.url}/metrics`)).text()) ? true : undefined),
        5_000,
        'the poll to park',
      );
      const doomedToo = await startNode(db.url, { faults: 'notifications:before-relay:crash:once' });
      await complete(apiClient(doomedToo.url), taskA2, 'd14-w').catch(() => undefined);
      await doomedToo.exited;
      const [got] = await parked;
      expect(got?.instanceId).toBe(second);
      expect(Date.now() - parkedAt).toBeLessThan(15_000); // the poll's re-check found it, not the end of its wait
      expect(heard.filter((h) => h.channel === 'baton_tasks' && h.bell === 'd14-b')).toEqual([]);
      expect((await complete(api, got!, 'd14-poller')).status).toBe(204);
      await waitForStatus(api, second, 'completed');
      await expectInvariants(db);
    } finally {
      progress.close();
      await listener.end();
    }
  }, 120_000);

  it('drill 15: given a node that dies after committing the complete that ends a loop pass, then the next pass starts once, the retried complete is a no-op, and the loop ends after its passes', async () => {
    const doomed = await startNode(db.url, { faults: 'api:after-complete-commit:crash:once' });
    const api = apiClient(doomed.url);
    await deploy(api, reworkBpmn('d15'));
    const id = await start(api, 'd15');
    const review = await fetchOne(api, 'd15-w', 'd15-review');
    // The review rejects: its commit ends pass 1 and starts pass 2 at review; the node dies before answering.
    await complete(api, review, 'd15-w', { approved: false }).catch(() => undefined);
    await doomed.exited;
    expect(doomed.output()).toContain('baton-fault api:after-complete-commit crash');
    const again = await startNode(db.url, { port: doomed.port });
    const retried = await complete(api, review, 'd15-w', { approved: false });
    expect(retried.status).toBeLessThan(500);
    const rework = await fetchOne(api, 'd15-w', 'd15-rework');
    expect(await fetchTasks(api, 'd15-w', ['d15-rework'])).toEqual([]);
    expect((await complete(api, rework, 'd15-w')).status).toBe(204);
    const second = await fetchOne(api, 'd15-w', 'd15-review');
    expect(second.idempotencyKey).not.toBe(review.idempotencyKey);
    expect((await complete(api, second, 'd15-w', { approved: true })).status).toBe(204);
    await waitForStatus(apiClient(again.url), id, 'completed');
    const events = await history(db, id);
    expect(kinds(events, 'loop:pass_started').map((e) => e.data.pass)).toEqual([1, 2]);
    expect(kinds(events, 'task:completed')).toHaveLength(3);
    expect(kinds(events, 'step:completed').filter((e) => e.stepId === 'review')).toHaveLength(2);
    await expectInvariants(db);
  }, 90_000);

  it("drill 16: given a node that dies after taking a called instance's return and before its parent moves on, then the restarted node delivers it once and the parent completes", async () => {
    const doomed = await startNode(db.url, { faults: 'call:before-return:crash:once' });
    const api = apiClient(doomed.url);
    await deploy(api, singleTask('d16_child'));
    await deploy(api, callBpmn('d16', 'd16_child'));
    const id = await start(api, 'd16', { variables: { n: 1 } });
    const task = await fetchOne(api, 'd16-w', 'd16_child');
    await complete(api, task, 'd16-w', { done: true }).catch(() => undefined);
    await doomed.exited;
    expect(doomed.output()).toContain('baton-fault call:before-return crash');
    // The child is over; its return waits in call_returns for a node to deliver it.
    expect((await db.pool.query('select count(*)::int as n from call_returns')).rows[0].n).toBe(1);
    const again = await startNode(db.url, { port: doomed.port });
    const done = await waitForStatus(apiClient(again.url), id, 'completed', 30_000);
    expect(done.variables).toEqual({ n: 1, done: true });
    expect(done.calledInstances).toMatchObject([{ instanceId: task.instanceId, status: 'completed' }]);
    expect(kinds(await history(db, id), 'step:completed').filter((e) => e.stepId === 'call')).toHaveLength(1);
    expect((await db.pool.query('select count(*)::int as n from call_returns')).rows[0].n).toBe(0);
    await expectInvariants(db);
  }, 90_000);

  it("drill 18: given a node that dies after taking a called instance's escalation and before its parent's boundary fires, then the restarted node fires it once", async () => {
    const doomed = await startNode(db.url, { faults: 'call:before-escalation:crash:once' });
    const api = apiClient(doomed.url);
    await deploy(api, escalatingChild('d18_child'));
    await deploy(api, escalationParent('d18', 'd18_child'));
    await start(api, 'd18', { businessKey: 'd18-1' }).catch(() => undefined);
    await doomed.exited;
    expect(doomed.output()).toContain('baton-fault call:before-escalation crash');
    // The child's escalation waits in call_escalations for a node to deliver it.
    expect((await db.pool.query('select count(*)::int as n from call_escalations')).rows[0].n).toBe(1);
    const again = await startNode(db.url, { port: doomed.port });
    const after = apiClient(again.url);
    const notify = await fetchOne(after, 'd18-w', 'd18-notify');
    expect(notify.variables).toMatchObject({ why: 'LATE' });
    expect(await fetchTasks(after, 'd18-w', ['d18-notify'])).toEqual([]);
    expect((await complete(after, notify, 'd18-w')).status).toBe(204);
    expect((await complete(after, await fetchOne(after, 'd18-w', 'd18_child-work'), 'd18-w')).status).toBe(204);
    const id = notify.instanceId;
    await waitForStatus(after, id, 'completed', 30_000);
    expect(kinds(await history(db, id), 'step:completed').filter((e) => e.stepId === 'caught')).toHaveLength(1);
    expect((await db.pool.query('select count(*)::int as n from call_escalations')).rows[0].n).toBe(0);
    await expectInvariants(db);
  }, 90_000);

  it('drill 17: given a node that dies after taking a thrown signal for delivery and before its receivers move on, then the restarted node delivers it to each waiting instance once', async () => {
    const doomed = await startNode(db.url, { faults: 'signal:before-delivery:crash:once' });
    const api = apiClient(doomed.url);
    await deploy(api, signalBpmn('d17_wait', 'catch'));
    await deploy(api, signalBpmn('d17_throw', 'throw'));
    const waiters = [await start(api, 'd17_wait'), await start(api, 'd17_wait')];
    for (const id of waiters)
      await waitFor(async () => ((await api.get(`/api/instances/${id}`)).body.steps?.length > 1 ? true : undefined));
    const thrower = await start(api, 'd17_throw').catch(() => undefined);
    await doomed.exited;
    expect(doomed.output()).toContain('baton-fault signal:before-delivery crash');
    // The thrower's transition committed; its signal waits in signal_broadcasts for a node to deliver it.
    expect((await db.pool.query('select count(*)::int as n from signal_broadcasts')).rows[0].n).toBe(1);
    const again = await startNode(db.url, { port: doomed.port });
    const after = apiClient(again.url);
    const tasks = [await fetchOne(after, 'd17-w', 'd17_wait-after'), await fetchOne(after, 'd17-w', 'd17_wait-after')];
    expect(tasks.map((t) => t.instanceId).sort()).toEqual([...waiters].sort());
    expect(await fetchTasks(after, 'd17-w', ['d17_wait-after'])).toEqual([]);
    for (const task of tasks) expect((await complete(after, task, 'd17-w')).status).toBe(204);
    for (const id of waiters) await waitForStatus(after, id, 'completed');
    if (thrower) expect((await waitForStatus(after, thrower, 'completed')).status).toBe('completed');
    expect((await db.pool.query('select count(*)::int as n from signal_broadcasts')).rows[0].n).toBe(0);
    await expectInvariants(db);
  }, 90_000);
});

/** `catch`: start -> signal catch -> task `<id>-after` -> end; `throw`: start -> signal end event. */
function signalBpmn(id: string, role: 'catch' | 'throw'): string {
  const body =
    role === 'catch'
      ? `<bpmn:startEvent id="start" />
    <bpmn:intermediateCatchEvent id="wait"><bpmn:signalEventDefinition signalRef="sig" /></bpmn:intermediateCatchEvent>
    <bpmn:serviceTask id="after" camunda:type="external" camunda:topic="${id}-after" />
    <bpmn:endEvent id="end" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="wait" />
    <bpmn:sequenceFlow id="f2" sourceRef="wait" targetRef="after" />
    <bpmn:sequenceFlow id="f3" sourceRef="after" targetRef="end" />`
      : `<bpmn:startEvent id="start" />
    <bpmn:endEvent id="shout"><bpmn:signalEventDefinition signalRef="sig" /></bpmn:endEvent>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="shout" />`;
  return `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="D_${id}" targetNamespace="https://baton.dev/test">
  <bpmn:signal id="sig" name="d17-go" />
  <bpmn:process id="${id}" isExecutable="true">
    ${body}
  </bpmn:process>
</bpmn:definitions>`;
}

const C7 = 'xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:camunda="http://camunda.org/schema/1.0/bpmn"';

/** start -> escalation LATE -> task `<id>-work` -> end */
function escalatingChild(id: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions ${C7} id="D_${id}" targetNamespace="https://baton.dev/test">
  <bpmn:escalation id="late" escalationCode="LATE" />
  <bpmn:process id="${id}" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:intermediateThrowEvent id="raise"><bpmn:escalationEventDefinition escalationRef="late" /></bpmn:intermediateThrowEvent>
    <bpmn:serviceTask id="work" camunda:type="external" camunda:topic="${id}-work" />
    <bpmn:endEvent id="end" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="raise" />
    <bpmn:sequenceFlow id="f2" sourceRef="raise" targetRef="work" />
    <bpmn:sequenceFlow id="f3" sourceRef="work" targetRef="end" />
  </bpmn:process>
</bpmn:definitions>`;
}

/** start -> call `child` -> end, with a non-interrupting escalation boundary on the call -> task `<id>-notify` -> end */
function escalationParent(id: string, child: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions ${C7} id="D_${id}" targetNamespace="https://baton.dev/test">
  <bpmn:process id="${id}" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:callActivity id="call" calledElement="${child}" />
    <bpmn:endEvent id="end" />
    <bpmn:boundaryEvent id="caught" attachedToRef="call" cancelActivity="false"><bpmn:escalationEventDefinition camunda:escalationCodeVariable="why" /></bpmn:boundaryEvent>
    <bpmn:serviceTask id="notify" camunda:type="external" camunda:topic="${id}-notify" />
    <bpmn:endEvent id="notified" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="call" />
    <bpmn:sequenceFlow id="f2" sourceRef="call" targetRef="end" />
    <bpmn:sequenceFlow id="b1" sourceRef="caught" targetRef="notify" />
    <bpmn:sequenceFlow id="b2" sourceRef="notify" targetRef="notified" />
  </bpmn:process>
</bpmn:definitions>`;
}

function singleTask(id: string): string {
  return buildBpmn(
    id,
    [
      { id: 'start', type: 'startEvent' },
      { id: 'work', type: 'serviceTask', topic: id },
      { id: 'end', type: 'endEvent' },
    ],
    [
      { from: 'start', to: 'work' },
      { from: 'work', to: 'end' },
    ],
  );
}

// start -> book_a -> book_b -> book_c -> pay (fails for good: compensate) -> end; each booking has an undo handler.
function sagaBpmn(id: string): string {
  const nodes: NodeSpec[] = [{ id: 's', type: 'startEvent' }];
  const flows: FlowSpec[] = [];
  let previous = 's';
  for (const x of ['a', 'b', 'c']) {
    nodes.push(
      { id: `book_${x}`, type: 'serviceTask', topic: `${id}-book-${x}` },
      { id: `comp_${x}`, type: 'compensationBoundary', attachedTo: `book_${x}`, handler: `undo_${x}` },
      { id: `undo_${x}`, type: 'serviceTask', topic: `${id}-undo`, forCompensation: true },
    );
    flows.push({ from: previous, to: `book_${x}` });
    previous = `book_${x}`;
  }
  nodes.push(
    { id: 'pay', type: 'serviceTask', topic: `${id}-pay`, retries: 0, onExhausted: 'compensate' },
    { id: 'e', type: 'endEvent' },
  );
  flows.push({ from: previous, to: 'pay' }, { from: 'pay', to: 'e' });
  return buildBpmn(id, nodes, flows);
}
