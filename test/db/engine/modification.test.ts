// Modifying running instances through the HTTP API against a real PostgreSQL: the operator
// repairs a gateway stuck in an incident by starting the task after it and canceling it,
// starts a later step beside the open one, cancels the last open step (the instance ends
// canceled, the worker's late complete is refused), and each refusal names the element and
// changes nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inlineDefinitions, inlineFlow as flow, inlineTask as task } from '../../support/bpmn.ts';
import { complete, deploy, fetchOne, instanceOf, start, waitForStatus } from '../../support/flows.ts';
import { startTestServer, type TestServer } from '../../support/server.ts';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
  // start -> a -> b -> end, a with a boundary timer
  await deploy(
    t.api,
    inlineDefinitions('mod-seq', [
      '<bpmn:startEvent id="start" />',
      task('a', 'mod-seq'),
      task('b', 'mod-seq'),
      '<bpmn:endEvent id="end" />',
      '<bpmn:boundaryEvent id="late" attachedToRef="a"><bpmn:timerEventDefinition><bpmn:timeDuration>PT1H</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:boundaryEvent>',
      '<bpmn:endEvent id="late_end" />',
      flow('f1', 'start', 'a'),
      flow('f2', 'a', 'b'),
      flow('f3', 'b', 'end'),
      flow('f4', 'late', 'late_end'),
    ]),
  );
  // start -> route (no flow holds for a negative amount, no default) -> approve | reject -> end
  const cond = (id: string, to: string, expr: string) =>
    `<bpmn:sequenceFlow id="${id}" sourceRef="route" targetRef="${to}"><bpmn:conditionExpression xsi:type="bpmn:tFormalExpression">${expr}</bpmn:conditionExpression></bpmn:sequenceFlow>`;
  await deploy(
    t.api,
    inlineDefinitions('mod-route', [
      '<bpmn:startEvent id="start" />',
      '<bpmn:exclusiveGateway id="route" />',
      task('approve', 'mod-route'),
      task('reject', 'mod-route'),
      '<bpmn:exclusiveGateway id="merge" />',
      '<bpmn:endEvent id="end" />',
      flow('f1', 'start', 'route'),
      cond('f_ok', 'approve', '${amount &gt; 100}'),
      cond('f_no', 'reject', '${amount &gt; 0 &amp;&amp; amount &lt;= 100}'),
      flow('f3', 'approve', 'merge'),
      flow('f4', 'reject', 'merge'),
      flow('f5', 'merge', 'end'),
    ]),
  );
});
afterAll(async () => {
  await t?.close();
});

const modify = (id: string, body: Record<string, unknown>) => t.api.post(`/api/instances/${id}/modify`, body);
const statusOf = (detail: any, stepId: string) => detail.steps.find((s: { stepId: string }) => s.stepId === stepId)?.status;

describe('instance modification', () => {
  it('given a gateway stuck in an incident, then starting the task after it and canceling it repairs the instance', async () => {
    const id = await start(t.api, 'mod-route', { variables: { amount: -5 } });
    const stuck = await waitForStatus(t.api, id, 'incident');
    expect(stuck.incidents[0]).toMatchObject({ stepId: 'route', kind: 'no_matching_flow' });

    const res = await modify(id, {
      instructions: [
        { type: 'cancel', elementId: 'route' },
        { type: 'startBefore', elementId: 'reject' },
      ],
      annotation: 'a negative amount is a refund: reject it',
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({ status: 'running', started: ['reject'], canceled: ['route'] });
    const detail = await instanceOf(t.api, id);
    expect(detail.incidents).toEqual([]);
    expect([statusOf(detail, 'route'), statusOf(detail, 'approve'), statusOf(detail, 'reject')]).toEqual([
      'canceled',
      'skipped',
      'active',
    ]);

    expect((await complete(t.api, await fetchOne(t.api, 'w', 'mod-route-reject'), 'w')).status).toBe(204);
    await waitForStatus(t.api, id, 'completed');
    const events = (await t.api.get(`/api/instances/${id}/history`)).body.items as { kind: string; data: any }[];
    expect(events.find((e) => e.kind === 'instance:modified')?.data).toMatchObject({
      started: ['reject'],
      canceled: ['route'],
      annotation: 'a negative amount is a refund: reject it',
    });
  });

  it('given an open task, then a later step started beside it runs, and the instance completes once both end', async () => {
    const id = await start(t.api, 'mod-seq');
    const a = await fetchOne(t.api, 'w', 'mod-seq-a');
    expect((await modify(id, { instructions: [{ type: 'startBefore', elementId: 'b' }] })).status).toBe(200);
    expect((await complete(t.api, await fetchOne(t.api, 'w', 'mod-seq-b'), 'w')).status).toBe(204);
    expect((await instanceOf(t.api, id)).status).toBe('running');
    expect((await complete(t.api, a, 'w')).status).toBe(204);
    const done = await waitForStatus(t.api, id, 'completed');
    expect(statusOf(done, 'late')).toBe('skipped');
    const { rows } = await t.db.pool.query(
      `select count(*)::int as n from external_tasks where instance_id = $1 and step_id = 'b'`,
      [id],
    );
    expect(rows[0].n).toBe(1);
  });

  it('given the last open task canceled, then the instance ends canceled, its timer and task end, and the worker is refused', async () => {
    const id = await start(t.api, 'mod-seq');
    const a = await fetchOne(t.api, 'w', 'mod-seq-a');
    const res = await modify(id, { instructions: [{ type: 'cancel', elementId: 'a' }] });
    expect(res.body.status).toBe('canceled');
    const detail = await instanceOf(t.api, id);
    expect([statusOf(detail, 'a'), statusOf(detail, 'late'), statusOf(detail, 'b')]).toEqual(['canceled', 'skipped', 'skipped']);
    const timers = await t.db.pool.query(`select state from timers where instance_id = $1`, [id]);
    expect(timers.rows.map((r: { state: string }) => r.state)).toEqual(['canceled']);
    expect((await complete(t.api, a, 'w')).status).toBe(409);
  });

  it('given instructions the instance cannot take, then each refusal names the element and nothing changes', async () => {
    const id = await start(t.api, 'mod-seq');
    await fetchOne(t.api, 'w', 'mod-seq-a');
    const before = await instanceOf(t.api, id);
    const cases: [Record<string, unknown>[], string][] = [
      [[{ type: 'startBefore', elementId: 'start' }], 'start'],
      [[{ type: 'startBefore', elementId: 'a' }], 'a'],
      [[{ type: 'startBefore', elementId: 'late' }], 'late'],
      [[{ type: 'startBefore', elementId: 'nope' }], 'nope'],
      [[{ type: 'cancel', elementId: 'b' }], 'b'],
      [
        [
          { type: 'startBefore', elementId: 'b' },
          { type: 'startBefore', elementId: 'b' },
        ],
        'b',
      ],
    ];
    for (const [instructions, element] of cases) {
      const res = await modify(id, { instructions });
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect(res.body.details.problems.map((p: { elementId: string }) => p.elementId)).toContain(element);
    }
    const dry = await modify(id, { instructions: [{ type: 'startBefore', elementId: 'b' }], dryRun: true });
    expect(dry.body).toMatchObject({ dryRun: true, started: ['b'] });
    expect((await modify(id, { instructions: [] })).status).toBe(400);
    expect((await modify(id, { instructions: [{ type: 'skip', elementId: 'a' }] })).status).toBe(400);
    await t.api.post(`/api/instances/${id}/suspend`, {});
    expect((await modify(id, { instructions: [{ type: 'startBefore', elementId: 'b' }] })).status).toBe(409);
    await t.api.post(`/api/instances/${id}/resume`, {});
    const after = await instanceOf(t.api, id);
    expect(after.steps).toEqual(before.steps);
    expect(after.tasks.map((x: { id: string }) => x.id)).toEqual(before.tasks.map((x: { id: string }) => x.id));
    expect(
      (await modify('00000000-0000-4000-8000-000000000000', { instructions: [{ type: 'cancel', elementId: 'a' }] })).status,
    ).toBe(404);
  });
});
