import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBpmn } from '../../support/bpmn.ts';
import { deploy } from '../../support/flows.ts';
import { startTestServer, waitFor, type TestServer } from '../../support/server.ts';
import { fireDueStartTimers } from '../../../runtime/engine/start-timers.ts';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t.close();
});

function timerStarted(key: string, timer: { cycle?: string; date?: string }, withNoneStart = false): string {
  return buildBpmn(
    key,
    [
      { id: 'tick', type: 'timerStart', timer },
      ...(withNoneStart ? [{ id: 'manual', type: 'startEvent' as const }] : []),
      { id: 'merge', type: 'exclusiveGateway' },
      { id: 'e', type: 'endEvent' },
    ],
    [{ from: 'tick', to: 'merge' }, ...(withNoneStart ? [{ from: 'manual', to: 'merge' }] : []), { from: 'merge', to: 'e' }],
  );
}

async function instancesOf(key: string): Promise<number> {
  const { rows } = await t.db.pool.query(`select count(*)::int as n from instances where definition_key = $1`, [key]);
  return rows[0].n;
}

describe('timer start events', () => {
  it('given a cycle R3/PT0.2S, then exactly three instances start, each from the timer start event, then the schedule ends', async () => {
    await deploy(t.api, timerStarted('ticker', { cycle: 'R3/PT0.2S' }));
    await waitFor(async () => ((await instancesOf('ticker')) === 3 ? true : undefined), 10_000, 'three instances');
    const { rows } = await t.db.pool.query(
      `select state, due_at, fired_at from timers where instance_id is null and step_id = 'tick' order by due_at`,
    );
    expect(rows.map((r) => r.state)).toEqual(['fired', 'fired', 'fired']);
    for (const r of rows) expect(r.fired_at.getTime()).toBeGreaterThanOrEqual(r.due_at.getTime());
    // The cadence is kept: each due time is one period after the previous one.
    expect(rows[1].due_at.getTime() - rows[0].due_at.getTime()).toBe(200);
    const history = await t.db.pool.query(
      `select data->>'startEvent' as start from events e join instances i on i.id = e.instance_id where i.definition_key = 'ticker' and e.kind = 'instance:started'`,
    );
    expect(history.rows.map((r) => r.start)).toEqual(['tick', 'tick', 'tick']);
    const statuses = await t.db.pool.query(`select status from instances where definition_key = 'ticker'`);
    expect(statuses.rows.every((r) => r.status === 'completed')).toBe(true);
  });

  it('given a Quartz cron cycle firing every second, then it starts an instance at each whole second, twice and more, until a new version replaces it', async () => {
    await deploy(t.api, timerStarted('cron-ticker', { cycle: '0/1 * * * * ?' }));
    await waitFor(async () => ((await instancesOf('cron-ticker')) >= 2 ? true : undefined), 10_000, 'two instances');
    await deploy(t.api, timerStarted('cron-ticker', { date: '2099-01-01T00:00:00Z' }));
    const { rows } = await t.db.pool.query(
      `select t.due_at, t.state from timers t join definitions d on d.id = t.definition_id
        where d.key = 'cron-ticker' and d.version = 1 order by t.due_at`,
    );
    const fired = rows.filter((r) => r.state === 'fired');
    expect(fired.length).toBeGreaterThanOrEqual(2);
    // Each firing is due on a whole second, a later occurrence than the one before (one fired late skips what it missed).
    for (const r of fired) expect(r.due_at.getTime() % 1000).toBe(0);
    expect(fired[1].due_at.getTime()).toBeGreaterThan(fired[0].due_at.getTime());
    expect(rows.filter((r) => r.state === 'waiting')).toEqual([]);
  });

  it('given a new version, then it replaces the old schedule', async () => {
    await deploy(t.api, timerStarted('rescheduled', { cycle: 'R/PT0.2S' }));
    await waitFor(async () => ((await instancesOf('rescheduled')) >= 1 ? true : undefined), 10_000, 'a first instance');
    await deploy(t.api, timerStarted('rescheduled', { date: '2099-01-01T00:00:00Z' }));
    const { rows } = await t.db.pool.query(
      `select d.version, t.state from timers t join definitions d on d.id = t.definition_id where d.key = 'rescheduled' and t.state = 'waiting'`,
    );
    expect(rows).toEqual([{ version: 2, state: 'waiting' }]);
    const before = await instancesOf('rescheduled');
    await new Promise((r) => setTimeout(r, 500)); // the old 0.2 s cycle would have fired twice by now
    expect(await instancesOf('rescheduled')).toBe(before);
  });

  it('given deploys racing firings of the old cycle, then no timer of an old version is left waiting (20 rounds)', async () => {
    for (let round = 0; round < 20; round++) {
      const key = `race-replace-${round}`;
      await deploy(t.api, timerStarted(key, { cycle: 'R/PT0.05S' }));
      await waitFor(async () => ((await instancesOf(key)) >= 1 ? true : undefined), 10_000, 'a first instance');
      await new Promise((r) => setTimeout(r, (round % 5) * 10));
      await deploy(t.api, timerStarted(key, { date: '2099-01-01T00:00:00Z' }));
      await new Promise((r) => setTimeout(r, 120)); // a firing that was in flight has landed
      const { rows } = await t.db.pool.query(
        `select d.version from timers t join definitions d on d.id = t.definition_id where d.key = $1 and t.state = 'waiting'`,
        [key],
      );
      expect(rows, `round ${round}`).toEqual([{ version: 2 }]);
    }
  });

  it('given three schedulers on a due start timer, then it starts one instance (20 rounds)', async () => {
    for (let round = 0; round < 20; round++) {
      const key = `race-start-${round}`;
      await t.server.timers.stop(); // only the three callers below fire timers
      await deploy(t.api, timerStarted(key, { date: '2000-01-01T00:00:00Z' }));
      await Promise.all([
        fireDueStartTimers(t.server.engine, 10),
        fireDueStartTimers(t.server.engine, 10),
        fireDueStartTimers(t.server.engine, 10),
      ]);
      expect(await instancesOf(key), `round ${round}`).toBe(1);
    }
  });

  it('given a process with only a timer start event, then a manual start is refused with 409 and stores nothing; with a none start as well it starts from that one', async () => {
    await deploy(t.api, timerStarted('timer-only', { date: '2099-01-01T00:00:00Z' }));
    const refused = await t.api.post('/api/instances', { definitionKey: 'timer-only', businessKey: 'manual-1' });
    expect(refused.status).toBe(409);
    expect(await instancesOf('timer-only')).toBe(0);
    await deploy(t.api, timerStarted('both-starts', { date: '2099-01-01T00:00:00Z' }, true));
    const started = await t.api.post('/api/instances', { definitionKey: 'both-starts' });
    expect(started.status).toBe(201);
    expect(started.body.status).toBe('completed');
    const steps = await t.api.get(`/api/instances/${started.body.id}`);
    const status = Object.fromEntries(steps.body.steps.map((s: { stepId: string; status: string }) => [s.stepId, s.status]));
    expect(status).toMatchObject({ manual: 'completed', tick: 'skipped', merge: 'completed' });
  });

  it('given a timer start event with a duration, then the compiler refuses it', async () => {
    const res = await t.api.post('/api/definitions', { xml: timerStarted('bad-start', { duration: 'PT1M' } as never) });
    expect(res.status).toBe(400);
    expect(res.body.details).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ elementId: 'tick', message: expect.stringContaining('timeDate or a timeCycle') }),
      ]),
    );
  });
});
