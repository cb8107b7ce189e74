// Timers computed from variables, against a real PostgreSQL through the HTTP API: a Camunda 7
// `${...}` or a Camunda 8 `=...` expression is evaluated when the catch or boundary event starts
// waiting; a value that is not a duration or date, or a date already past, stops the event in an
// incident whose retry (with the variables fixed) sets the timer; a start event's timer cannot
// read variables and is refused at deploy.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBpmn } from '../../support/bpmn.ts';
import { complete, deploy, fetchOne, start, waitForStatus } from '../../support/flows.ts';
import { startTestServer, type TestServer } from '../../support/server.ts';

let t: TestServer;

beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t?.close();
});

/** s -> wait (timer catch) -> after (task) -> e */
function catchProcess(id: string, timer: { duration?: string; date?: string }): string {
  return buildBpmn(
    id,
    [
      { id: 's', type: 'startEvent' },
      { id: 'wait', type: 'catchEvent', timer },
      { id: 'after', type: 'serviceTask', topic: `${id}-after` },
      { id: 'e', type: 'endEvent' },
    ],
    [
      { from: 's', to: 'wait' },
      { from: 'wait', to: 'after' },
      { from: 'after', to: 'e' },
    ],
  );
}

describe('timers from expressions', () => {
  it('given timeDuration ${pause} and a Camunda 8 timeDate = expression, then each is due when the variables say', async () => {
    await deploy(t.api, catchProcess('te_duration', { duration: '${pause}' }));
    const a = await start(t.api, 'te_duration', { variables: { pause: 'PT0.2S' } });
    expect((await fetchOne(t.api, 'w', 'te_duration-after')).instanceId).toBe(a);

    await deploy(t.api, catchProcess('te_date', { date: '= date and time(remindAt)' }));
    const at = new Date(Date.now() + 1500).toISOString();
    const b = await start(t.api, 'te_date', { variables: { remindAt: at } });
    const timers = await t.db.pool.query(`select due_at from timers where instance_id = $1`, [b]);
    expect(Math.abs(new Date(timers.rows[0].due_at).getTime() - Date.parse(at))).toBeLessThan(5);
    expect((await fetchOne(t.api, 'w', 'te_date-after')).instanceId).toBe(b);
  });

  it('given a value that is no duration, then the catch waits in an incident, and its retry with the variable fixed sets the timer', async () => {
    await deploy(t.api, catchProcess('te_bad', { duration: '${pause}' }));
    const id = await start(t.api, 'te_bad', { variables: { pause: 'soon' } });
    const stuck = await waitForStatus(t.api, id, 'incident');
    expect(stuck.incidents).toMatchObject([{ stepId: 'wait', kind: 'condition_error', details: { timer: '${pause}' } }]);
    expect(stuck.incidents[0].message).toContain('gives "soon"');
    const retried = await t.api.post(`/api/incidents/${stuck.incidents[0].id}/retry`, { variables: { pause: 'PT0.1S' } });
    expect(retried.status, JSON.stringify(retried.body)).toBeLessThan(300);
    expect((await fetchOne(t.api, 'w', 'te_bad-after')).instanceId).toBe(id);
  });

  it('given a date already past, then an incident, not a timer that fires at once or never', async () => {
    await deploy(t.api, catchProcess('te_past', { date: '${remindAt}' }));
    const id = await start(t.api, 'te_past', { variables: { remindAt: '2020-01-01T00:00:00Z' } });
    const stuck = await waitForStatus(t.api, id, 'incident');
    expect(stuck.incidents[0].message).toContain('already past');
    const { rowCount } = await t.db.pool.query(`select 1 from timers where instance_id = $1`, [id]);
    expect(rowCount).toBe(0);
  });

  it('given a boundary timer whose expression fails, then the boundary waits in an incident while its task runs; the task completing skips it and resolves the incident', async () => {
    await deploy(
      t.api,
      buildBpmn(
        'te_boundary',
        [
          { id: 's', type: 'startEvent' },
          { id: 'work', type: 'serviceTask', topic: 'te_boundary-work' },
          { id: 'late', type: 'boundaryEvent', attachedTo: 'work', interrupting: false, timer: { duration: '${slaDuration}' } },
          { id: 'escalate', type: 'serviceTask', topic: 'te_boundary-escalate' },
          { id: 'e', type: 'endEvent' },
          { id: 'e2', type: 'endEvent' },
        ],
        [
          { from: 's', to: 'work' },
          { from: 'work', to: 'e' },
          { from: 'late', to: 'escalate' },
          { from: 'escalate', to: 'e2' },
        ],
      ),
    );
    const id = await start(t.api, 'te_boundary');
    const stuck = await waitForStatus(t.api, id, 'incident');
    expect(stuck.incidents).toMatchObject([{ stepId: 'late', kind: 'condition_error' }]);
    const work = await fetchOne(t.api, 'w', 'te_boundary-work');
    expect((await complete(t.api, work, 'w')).status).toBe(204);
    const done = await waitForStatus(t.api, id, 'completed');
    expect(done.steps.find((s: any) => s.stepId === 'late').status).toBe('skipped');
    expect(done.incidents).toEqual([]);

    // With the variable set, the same boundary fires its path beside the task.
    const fine = await start(t.api, 'te_boundary', { variables: { slaDuration: 'PT0.1S' } });
    expect((await fetchOne(t.api, 'w', 'te_boundary-escalate')).instanceId).toBe(fine);
  });

  it('given a timer start event with an expression, then deploy answers 400 naming it', async () => {
    const xml = buildBpmn(
      'te_start',
      [
        { id: 's', type: 'timerStart', timer: { cycle: '${cycle}' } },
        { id: 'e', type: 'endEvent' },
      ],
      [{ from: 's', to: 'e' }],
    );
    const res = await t.api.post('/api/definitions', { xml });
    expect(res.status).toBe(400);
    expect(res.body.details).toEqual([
      expect.objectContaining({ elementId: 's', message: expect.stringContaining('before there are variables to read') }),
    ]);
  });
});
