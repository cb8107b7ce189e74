import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBpmn, reworkBpmn } from '../../support/bpmn.ts';
import {
  complete,
  deploy,
  fetchOne,
  fetchTasks,
  instanceOf,
  start,
  waitForStatus,
  type LockedTask,
} from '../../support/flows.ts';
import { startTestServer, type TestServer } from '../../support/server.ts';

let t: TestServer;

beforeAll(async () => {
  t = await startTestServer();
  await deploy(t.api, reworkBpmn('revise'));
  // A task retried from the start when its timer runs out: the boundary path leads back. Each
  // pass reads its timer's duration from `patience` when it arms it.
  await deploy(
    t.api,
    buildBpmn(
      'patience',
      [
        { id: 's', type: 'startEvent' },
        { id: 'merge', type: 'exclusiveGateway' },
        { id: 'work', type: 'serviceTask', topic: 'patience-work' },
        { id: 'timeout', type: 'boundaryEvent', attachedTo: 'work', timer: { duration: '${patience}' } },
        { id: 'e', type: 'endEvent' },
      ],
      [
        { from: 's', to: 'merge' },
        { from: 'merge', to: 'work' },
        { from: 'work', to: 'e' },
        { id: 'retry', from: 'timeout', to: 'merge' },
      ],
    ),
  );
  // Each rejected review waits for the author's revision, correlated by the order id.
  await deploy(
    t.api,
    buildBpmn(
      'revisions',
      [
        { id: 's', type: 'startEvent' },
        { id: 'review', type: 'serviceTask', topic: 'revisions-review' },
        { id: 'decide', type: 'exclusiveGateway', default: 'approved' },
        { id: 'revised', type: 'catchEvent', message: 'revised', correlationKey: 'orderId' },
        { id: 'e', type: 'endEvent' },
      ],
      [
        { from: 's', to: 'review' },
        { from: 'review', to: 'decide' },
        { id: 'rejected', from: 'decide', to: 'revised', condition: '=approved = false' },
        { id: 'approved', from: 'decide', to: 'e' },
        { id: 'again', from: 'revised', to: 'review' },
      ],
    ),
  );
  // Each pass asks every reviewer of the list (multi-instance), then waits for a decision or a
  // 0.3 s timeout in a race (event-based gateway); the timeout sends the list round again.
  await deploy(
    t.api,
    buildBpmn(
      'rounds',
      [
        { id: 's', type: 'startEvent' },
        {
          id: 'ask',
          type: 'serviceTask',
          topic: 'rounds-ask',
          multiInstance: { collection: 'reviewers', elementVariable: 'reviewer' },
        },
        { id: 'race', type: 'eventBasedGateway' },
        { id: 'decided', type: 'catchEvent', message: 'rounds-decided', correlationKey: 'roundId' },
        { id: 'quiet', type: 'catchEvent', timer: { duration: 'PT0.3S' } },
        { id: 'e', type: 'endEvent' },
      ],
      [
        { from: 's', to: 'ask' },
        { from: 'ask', to: 'race' },
        { from: 'race', to: 'decided' },
        { from: 'race', to: 'quiet' },
        { from: 'decided', to: 'e' },
        { id: 'again', from: 'quiet', to: 'ask' },
      ],
    ),
  );
  // No default: a review that sets no verdict stops the pass in an incident at the gateway.
  await deploy(
    t.api,
    buildBpmn(
      'vetted',
      [
        { id: 's', type: 'startEvent' },
        { id: 'review', type: 'serviceTask', topic: 'vetted-review' },
        { id: 'decide', type: 'exclusiveGateway' },
        { id: 'e', type: 'endEvent' },
      ],
      [
        { from: 's', to: 'review' },
        { from: 'review', to: 'decide' },
        { id: 'again', from: 'decide', to: 'review', condition: '=verdict = "again"' },
        { id: 'done', from: 'decide', to: 'e', condition: '=verdict = "done"' },
      ],
    ),
  );
  // Each pass forks two checks and joins them before deciding.
  await deploy(
    t.api,
    buildBpmn(
      'checks',
      [
        { id: 's', type: 'startEvent' },
        { id: 'merge', type: 'exclusiveGateway' },
        { id: 'fork', type: 'parallelGateway' },
        { id: 'legal', type: 'serviceTask', topic: 'checks-legal' },
        { id: 'price', type: 'serviceTask', topic: 'checks-price' },
        { id: 'join', type: 'parallelGateway' },
        { id: 'decide', type: 'exclusiveGateway', default: 'out' },
        { id: 'e', type: 'endEvent' },
      ],
      [
        { from: 's', to: 'merge' },
        { from: 'merge', to: 'fork' },
        { from: 'fork', to: 'legal' },
        { from: 'fork', to: 'price' },
        { from: 'legal', to: 'join' },
        { from: 'price', to: 'join' },
        { from: 'join', to: 'decide' },
        { id: 'back', from: 'decide', to: 'merge', condition: '=again' },
        { id: 'out', from: 'decide', to: 'e' },
      ],
    ),
  );
  // An inner loop (draft until done) nested in an outer one (review until approved), the inner one inside a subprocess.
  await deploy(
    t.api,
    buildBpmn(
      'nested',
      [
        { id: 's', type: 'startEvent' },
        { id: 'outer', type: 'exclusiveGateway' },
        {
          id: 'writing',
          type: 'subProcess',
          nodes: [
            { id: 'ws', type: 'startEvent' },
            { id: 'draft', type: 'serviceTask', topic: 'nested-draft' },
            { id: 'more', type: 'exclusiveGateway', default: 'drafted' },
            { id: 'we', type: 'endEvent' },
          ],
          flows: [
            { from: 'ws', to: 'draft' },
            { from: 'draft', to: 'more' },
            { id: 'redraft', from: 'more', to: 'draft', condition: '=redraft' },
            { id: 'drafted', from: 'more', to: 'we' },
          ],
        },
        { id: 'approve', type: 'serviceTask', topic: 'nested-approve' },
        { id: 'decide', type: 'exclusiveGateway', default: 'done' },
        { id: 'e', type: 'endEvent' },
      ],
      [
        { from: 's', to: 'outer' },
        { from: 'outer', to: 'writing' },
        { from: 'writing', to: 'approve' },
        { from: 'approve', to: 'decide' },
        { id: 'rewrite', from: 'decide', to: 'outer', condition: '=approved = false' },
        { id: 'done', from: 'decide', to: 'e' },
      ],
    ),
  );
});
afterAll(async () => {
  await t.close();
});

interface HistoryEvent {
  kind: string;
  stepId?: string;
  data?: Record<string, unknown>;
}

async function history(id: string): Promise<HistoryEvent[]> {
  const res = await t.api.get(`/api/instances/${id}/history?limit=1000`);
  expect(res.status).toBe(200);
  return res.body.items;
}

const count = (events: HistoryEvent[], kind: string, stepId: string) =>
  events.filter((e) => e.kind === kind && e.stepId === stepId).length;

/** Fetches the one open task of the topic for this instance and completes it. */
async function work(id: string, topic: string, variables?: Record<string, unknown>): Promise<LockedTask> {
  const task = await fetchOne(t.api, 'w', topic);
  expect(task.instanceId).toBe(id);
  expect((await complete(t.api, task, 'w', variables)).status).toBe(204);
  return task;
}

describe('loops', () => {
  it('given a rework loop taken twice then left, Review runs three times, Rework twice, and the instance completes', async () => {
    const id = await start(t.api, 'revise');
    const reviews: LockedTask[] = [];
    reviews.push(await work(id, 'revise-review', { approved: false }));
    await work(id, 'revise-rework');
    reviews.push(await work(id, 'revise-review', { approved: false }));
    await work(id, 'revise-rework');
    reviews.push(await work(id, 'revise-review', { approved: true }));
    await waitForStatus(t.api, id, 'completed');
    expect(await fetchTasks(t.api, 'w', ['revise-review', 'revise-rework'])).toEqual([]);

    // Each pass's task is its own: a worker deduplicating by idempotency key runs each once.
    expect(new Set(reviews.map((r) => r.idempotencyKey)).size).toBe(3);
    expect(reviews.map((r) => r.scopePath)).toEqual(['/loop:review#1', '/loop:review#2', '/loop:review#3']);
    const view = await instanceOf(t.api, id);
    expect(view.steps.filter((s: { stepId: string }) => s.stepId === 'review')).toHaveLength(1);
    expect(view.steps.find((s: { stepId: string }) => s.stepId === 'loop:review')).toMatchObject({
      status: 'completed',
      pass: 3,
    });
    expect(new Set(reviews.map((r) => r.id)).size).toBe(3);
    const events = await history(id);
    expect(events.filter((e) => e.kind === 'loop:pass_started').map((e) => e.data?.pass)).toEqual([1, 2, 3]);
    expect(events.find((e) => e.kind === 'loop:completed')).toMatchObject({ stepId: 'loop:review', data: { passes: 3 } });
    expect(count(events, 'step:completed', 'review')).toBe(3);
    expect(count(events, 'step:completed', 'rework')).toBe(2);
    expect(count(events, 'step:completed', 'e')).toBe(1);
  });

  it('given a pass that forks and joins, the join fires once per pass', async () => {
    const id = await start(t.api, 'checks', { variables: { again: true } });
    for (let pass = 1; pass <= 3; pass++) {
      await work(id, 'checks-legal');
      await work(id, 'checks-price', { again: pass < 3 });
    }
    await waitForStatus(t.api, id, 'completed');
    const events = await history(id);
    expect(count(events, 'step:completed', 'join')).toBe(3);
    expect(count(events, 'step:completed', 'legal')).toBe(3);
    expect(events.find((e) => e.kind === 'loop:completed')?.data).toEqual({ passes: 3 });
  });

  it('given a loop inside a subprocess inside a loop, each outer pass runs the inner loop afresh', async () => {
    const id = await start(t.api, 'nested');
    // outer pass 1: two drafts, rejected; outer pass 2: one draft, approved
    await work(id, 'nested-draft', { redraft: true });
    await work(id, 'nested-draft', { redraft: false });
    await work(id, 'nested-approve', { approved: false });
    const draft = await work(id, 'nested-draft', { redraft: false });
    await work(id, 'nested-approve', { approved: true });
    await waitForStatus(t.api, id, 'completed');
    const events = await history(id);
    const passes = events.filter((e) => e.kind === 'loop:pass_started').map((e) => `${e.stepId}#${String(e.data?.pass)}`);
    expect(passes).toEqual(['loop:outer#1', 'loop:draft#1', 'loop:draft#2', 'loop:outer#2', 'loop:draft#1']);
    expect(count(events, 'step:completed', 'writing')).toBe(2);
    expect(count(events, 'step:completed', 'draft')).toBe(3);
    expect(draft.idempotencyKey).toContain('/loop:outer#2/loop:draft#1');
  });

  it('given an incident in the second pass, a replay keeps the pass and what it completed, and a retry with the variable ends the loop', async () => {
    const id = await start(t.api, 'vetted');
    await work(id, 'vetted-review', { verdict: 'again' });
    const second = await work(id, 'vetted-review', { verdict: null });
    await waitForStatus(t.api, id, 'incident');
    const replay = await t.api.post(`/api/instances/${id}/replay`, {});
    expect(replay.status).toBe(200);
    // The pass goes on from its gateway: the review it completed does not run again.
    await waitForStatus(t.api, id, 'incident');
    expect(await fetchTasks(t.api, 'w', ['vetted-review'])).toEqual([]);
    const [incident] = (await t.api.get(`/api/incidents?instanceId=${id}&status=open`)).body.items;
    expect(incident).toMatchObject({ stepId: 'decide' });
    const retried = await t.api.post(`/api/incidents/${incident.id}/retry`, { variables: { verdict: 'done' } });
    expect(retried.body).toMatchObject({ instanceStatus: 'completed' });
    const events = await history(id);
    expect(events.filter((e) => e.kind === 'loop:pass_started').map((e) => e.data?.pass)).toEqual([1, 2]);
    expect(events.find((e) => e.kind === 'loop:completed')?.data).toEqual({ passes: 2 });
    expect(second.idempotencyKey).toBe(`${id}/review/1/loop:review#2`);
  });

  it('given a timer boundary whose path leads back, each pass has its own timer: the one that fired is not armed again, the next is canceled when the task completes', async () => {
    const id = await start(t.api, 'patience', { variables: { patience: 'PT2S' } });
    // Pass 1 armed two seconds; pass 2 arms an hour, so that it waits for its task however slow the machine is.
    const { revision } = (await t.api.get(`/api/instances/${id}`)).body;
    expect((await t.api.patch(`/api/instances/${id}/variables`, { revision, set: { patience: 'PT1H' } })).status).toBe(200);
    const first = await fetchOne(t.api, 'w', 'patience-work');
    // The first attempt is never completed: its timer fires, cancels it and starts pass 2.
    const second = await fetchOne(t.api, 'w', 'patience-work');
    expect(second.id).not.toBe(first.id);
    expect((await complete(t.api, first, 'w')).status).toBe(409);
    expect((await complete(t.api, second, 'w')).status).toBe(204);
    await waitForStatus(t.api, id, 'completed');
    const { rows } = await t.db.pool.query<{ state: string }>(
      'select state from timers where instance_id = $1 order by created_at',
      [id],
    );
    expect(rows.map((r) => r.state)).toEqual(['fired', 'canceled']);
    const events = await history(id);
    expect(events.filter((e) => e.kind === 'step:completed' && e.stepId === 'timeout').map((e) => e.data?.scopePath)).toEqual([
      '/loop:merge#1',
    ]);
    expect(events.find((e) => e.kind === 'loop:completed')?.data).toEqual({ passes: 2 });
  });

  it('given a message catch in the loop, each pass subscribes afresh and a revision sent twice moves it once', async () => {
    const id = await start(t.api, 'revisions', { variables: { orderId: 'r-1' } });
    await work(id, 'revisions-review', { approved: false });
    const sent = await t.api.post('/api/messages', { name: 'revised', correlationKey: 'r-1', messageId: 'rev-1' });
    expect(sent.body).toMatchObject({ status: 'matched', instanceId: id });
    expect(
      (await t.api.post('/api/messages', { name: 'revised', correlationKey: 'r-1', messageId: 'rev-1' })).body,
    ).toMatchObject({
      status: 'duplicate',
    });
    await work(id, 'revisions-review', { approved: false });
    expect(
      (await t.api.post('/api/messages', { name: 'revised', correlationKey: 'r-1', messageId: 'rev-2' })).body,
    ).toMatchObject({
      status: 'matched',
    });
    await work(id, 'revisions-review', { approved: true });
    await waitForStatus(t.api, id, 'completed');
    const { rows } = await t.db.pool.query('select 1 from subscriptions where instance_id = $1', [id]);
    expect(rows).toEqual([]);
    expect(count(await history(id), 'step:completed', 'review')).toBe(3);
  });

  it('given a multi-instance task and an event race in the body, each pass asks every element afresh and the timer of the race that lost is never armed again', async () => {
    const id = await start(t.api, 'rounds', { variables: { reviewers: ['ann', 'bob'], roundId: 'round-1' } });
    const firstRound = [await fetchOne(t.api, 'w', 'rounds-ask'), await fetchOne(t.api, 'w', 'rounds-ask')];
    for (const task of firstRound) expect((await complete(t.api, task, 'w')).status).toBe(204);
    // Nobody decides: the race's timer fires and the list goes round again.
    const secondRound = [await fetchOne(t.api, 'w', 'rounds-ask'), await fetchOne(t.api, 'w', 'rounds-ask')];
    expect(secondRound.map((x) => x.variables.reviewer).sort()).toEqual(['ann', 'bob']);
    expect(secondRound.every((x) => x.scopePath === '/loop:ask#2')).toBe(true);
    for (const task of secondRound) expect((await complete(t.api, task, 'w')).status).toBe(204);
    const decided = await t.api.post('/api/messages', { name: 'rounds-decided', correlationKey: 'round-1', messageId: 'rd-1' });
    expect(decided.body).toMatchObject({ status: 'matched', instanceId: id });
    await waitForStatus(t.api, id, 'completed');
    const { rows } = await t.db.pool.query<{ state: string }>(
      'select state from timers where instance_id = $1 order by created_at',
      [id],
    );
    expect(rows.map((r) => r.state)).toEqual(['fired', 'canceled']);
    const events = await history(id);
    expect(events.filter((e) => e.kind === 'loop:completed' && e.stepId === 'ask')).toHaveLength(2);
    expect(events.find((e) => e.kind === 'loop:completed' && e.stepId === 'loop:ask')?.data).toEqual({ passes: 2 });
  });
});
