// Non-interrupting boundaries that fire every time, against a real PostgreSQL through the HTTP
// API: a message, a signal and a timer cycle on a waiting task each run the boundary's own path
// once per firing; a firing that comes while the path of the one before runs waits for it; the
// host's end stops the waiting but lets the paths (and the firings waiting for them) finish.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBpmn, type EventTrigger } from '../../support/bpmn.ts';
import { complete, deploy, fetchOne, fetchTasks, instanceOf, start, waitForStatus } from '../../support/flows.ts';
import { startTestServer, type TestServer } from '../../support/server.ts';

let t: TestServer;

beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t?.close();
});

/** start -> work (service task) -> end; non-interrupting `trigger` boundary b on work -> notify (service task) -> notified */
function repeating(key: string, trigger: EventTrigger): string {
  return buildBpmn(
    key,
    [
      { id: 'start', type: 'startEvent' },
      { id: 'work', type: 'serviceTask', topic: `${key}-work` },
      { id: 'b', type: 'boundaryEvent', attachedTo: 'work', interrupting: false, ...trigger },
      { id: 'notify', type: 'serviceTask', topic: `${key}-notify` },
      { id: 'end', type: 'endEvent' },
      { id: 'notified', type: 'endEvent' },
    ],
    [
      { from: 'start', to: 'work' },
      { from: 'work', to: 'end' },
      { from: 'b', to: 'notify' },
      { from: 'notify', to: 'notified' },
    ],
  );
}

async function history(id: string): Promise<{ kind: string; stepId?: string; data: any }[]> {
  return (await t.api.get(`/api/instances/${id}/history`)).body.items;
}

describe('repeating boundaries', () => {
  it('given a non-interrupting message boundary, when the message comes three times, then its path runs three times one after another, and after the host ends a message finds nobody', async () => {
    await deploy(t.api, repeating('rb_message', { message: 'ping' }));
    const id = await start(t.api, 'rb_message', { businessKey: 'rb-1' });
    const work = await fetchOne(t.api, 'w', 'rb_message-work');
    for (let i = 1; i <= 3; i++) {
      const res = await t.api.post('/api/messages', { name: 'ping', correlationKey: 'rb-1', variables: { round: i } });
      expect(res.body, `message ${i}`).toMatchObject({ status: 'matched', instanceId: id });
    }
    const first = await fetchOne(t.api, 'w', 'rb_message-notify');
    expect(await fetchTasks(t.api, 'w', ['rb_message-notify'])).toEqual([]);
    // The host ends: the boundary stops waiting, the running path and the two firings waiting for it go on.
    expect((await complete(t.api, work, 'w')).status).toBe(204);
    const late = await t.api.post('/api/messages', { name: 'ping', correlationKey: 'rb-1', ttlMs: 0 });
    expect(late.body.status).not.toBe('matched');
    expect((await complete(t.api, first, 'w')).status).toBe(204);
    const second = await fetchOne(t.api, 'w', 'rb_message-notify');
    expect((await complete(t.api, second, 'w')).status).toBe(204);
    const third = await fetchOne(t.api, 'w', 'rb_message-notify');
    expect(new Set([first.id, second.id, third.id]).size).toBe(3);
    expect((await instanceOf(t.api, id)).status).toBe('running');
    expect((await complete(t.api, third, 'w')).status).toBe(204);
    await waitForStatus(t.api, id, 'completed');

    const events = await history(id);
    expect(events.filter((e) => e.kind === 'step:completed' && e.stepId === 'b').map((e) => e.data.firing)).toEqual([1, 2, 3]);
    expect(events.filter((e) => e.kind === 'boundary:queued').map((e) => e.data.firing)).toEqual([2, 3]);
    expect(events.find((e) => e.kind === 'boundary:ended')?.data).toEqual({ firings: 3 });
    expect(events.filter((e) => e.kind === 'step:completed' && e.stepId === 'notify').map((e) => e.data.scopePath)).toEqual([
      '/b#1',
      '/b#2',
      '/b#3',
    ]);
    const { rows } = await t.db.pool.query(
      `select scope_path from external_tasks where instance_id = $1 and step_id = 'notify' order by created_at`,
      [id],
    );
    expect(rows.map((r) => r.scope_path)).toEqual(['/b#1', '/b#2', '/b#3']);
  });

  it('given a non-interrupting signal boundary, when the signal is broadcast twice, then its path runs twice', async () => {
    await deploy(t.api, repeating('rb_signal', { signal: 'rb-alarm' }));
    const id = await start(t.api, 'rb_signal');
    const work = await fetchOne(t.api, 'w', 'rb_signal-work');
    for (let i = 0; i < 2; i++) {
      const res = await t.api.post('/api/signals', { name: 'rb-alarm' });
      expect(res.body.delivered, `signal ${i + 1}`).toBe(1);
      expect((await complete(t.api, await fetchOne(t.api, 'w', 'rb_signal-notify'), 'w')).status).toBe(204);
    }
    expect((await complete(t.api, work, 'w')).status).toBe(204);
    await waitForStatus(t.api, id, 'completed');
    const events = await history(id);
    expect(events.filter((e) => e.kind === 'step:completed' && e.stepId === 'notify')).toHaveLength(2);
  });

  it('given a non-interrupting timer cycle R2, then it fires twice, each firing running its path, and then waits no more', async () => {
    await deploy(t.api, repeating('rb_cycle', { timer: { cycle: 'R2/PT0.3S' } }));
    const id = await start(t.api, 'rb_cycle');
    const work = await fetchOne(t.api, 'w', 'rb_cycle-work');
    for (let i = 0; i < 2; i++)
      expect((await complete(t.api, await fetchOne(t.api, 'w', 'rb_cycle-notify'), 'w')).status).toBe(204);
    const waiting = async () =>
      (await t.db.pool.query(`select count(*)::int as n from timers where instance_id = $1 and state = 'waiting'`, [id])).rows[0]
        .n;
    expect(await waiting()).toBe(0);
    const steps = (await instanceOf(t.api, id)).steps as { stepId: string; status: string }[];
    expect(steps.find((s) => s.stepId === 'b')?.status).toBe('completed');
    expect((await complete(t.api, work, 'w')).status).toBe(204);
    await waitForStatus(t.api, id, 'completed');
    const events = await history(id);
    expect(events.filter((e) => e.kind === 'step:completed' && e.stepId === 'b').map((e) => e.data.firing)).toEqual([1, 2]);
  });

  it('given an unbounded timer cycle, then it fires until the host ends, and its timer ends with the host', async () => {
    await deploy(t.api, repeating('rb_forever', { timer: { cycle: 'R/PT0.2S' } }));
    const id = await start(t.api, 'rb_forever');
    const work = await fetchOne(t.api, 'w', 'rb_forever-work');
    for (let i = 0; i < 3; i++)
      expect((await complete(t.api, await fetchOne(t.api, 'w', 'rb_forever-notify'), 'w')).status).toBe(204);
    expect((await complete(t.api, work, 'w')).status).toBe(204);
    // A firing may have come due meanwhile: its path runs, and nothing after it.
    const open = await fetchTasks(t.api, 'w', ['rb_forever-notify']);
    for (const task of open) expect((await complete(t.api, task, 'w')).status).toBe(204);
    await waitForStatus(t.api, id, 'completed');
    const { rows } = await t.db.pool.query(`select count(*)::int as n from timers where instance_id = $1 and state = 'waiting'`, [
      id,
    ]);
    expect(rows[0].n).toBe(0);
  });
});
