// /metrics: a scrape parses as Prometheus text and carries the gauges, counters and
// histograms with low-cardinality labels.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBpmn, singleTaskBpmn } from '../support/bpmn.ts';
import { complete, deploy, fetchOne, fetchTasks, start, waitForStatus } from '../support/flows.ts';
import { startTestServer, waitFor, type TestServer } from '../support/server.ts';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
  await deploy(t.api, singleTaskBpmn('metered', 'metered-task'));
  for (let i = 0; i < 3; i++) await start(t.api, 'metered');
  await fetchOne(t.api, 'w', 'metered-task');
});
afterAll(async () => t?.close());

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

// The text format: `# HELP`/`# TYPE` lines, then `name{a="b",...} value` per sample.
function parseMetrics(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`Not a Prometheus sample line: ${line}`);
    const labels = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="((?:\\.|[^"\\])*)"/g)].map((l) => [l[1], l[2]]));
    samples.push({ name: m[1] ?? '', labels, value: Number(m[3]) });
  }
  return samples;
}

const value = (samples: Sample[], name: string, labels: Record<string, string> = {}) =>
  samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;

async function scrape(): Promise<{ text: string; samples: Sample[]; type: string | null }> {
  const res = await fetch(`${t.url}/metrics`);
  expect(res.status).toBe(200);
  const text = await res.text();
  return { text, samples: parseMetrics(text), type: res.headers.get('content-type') };
}

describe('/metrics', () => {
  it('reports instances, tasks, waiting age, incidents, expiries, parked polls, pool and event-loop lag', async () => {
    const parked = t.api.post('/api/external-tasks/fetch-and-lock', {
      workerId: 'p',
      maxTasks: 1,
      waitMs: 3000,
      topics: [{ name: 'quiet', lockDurationMs: 1000 }],
    });
    await waitFor(async () => (t.server.parkedPolls.parked > 0 ? true : undefined), 10_000, 'a parked poll');
    const { samples, type } = await scrape();
    expect(type).toContain('text/plain');
    expect(value(samples, 'baton_instances', { definition_key: 'metered', status: 'running' })).toBe(3);
    expect(value(samples, 'baton_tasks', { topic: 'metered-task', state: 'ready' })).toBe(2);
    expect(value(samples, 'baton_tasks', { topic: 'metered-task', state: 'locked' })).toBe(1);
    expect(value(samples, 'baton_task_oldest_ready_seconds', { topic: 'metered-task' })).toBeGreaterThanOrEqual(0);
    expect(value(samples, 'baton_task_lock_expiries_5m')).toBe(0);
    expect(value(samples, 'baton_parked_long_polls')).toBe(1);
    expect(value(samples, 'baton_db_pool_connections', { state: 'total' })).toBeGreaterThan(0);
    expect(value(samples, 'baton_nodejs_eventloop_lag_seconds')).toBeGreaterThanOrEqual(0);
    expect(samples.some((s) => s.name === 'baton_incidents_open')).toBe(false); // no incidents: no series
    await parked;
  });

  it('never labels by instance id, task id or business key', async () => {
    const { samples } = await scrape();
    const uuid = /[0-9a-f]{8}-[0-9a-f]{4}-/i;
    const labelNames = new Set(samples.flatMap((s) => Object.keys(s.labels)));
    expect([...labelNames].filter((l) => /instance|business|task_id|worker/.test(l))).toEqual([]);
    expect(samples.filter((s) => Object.values(s.labels).some((v) => uuid.test(v)))).toEqual([]);
  });

  it('counts fetch-to-lock latency, retries, lock expiries, incidents, timer lateness and frames written', async () => {
    const before = (await scrape()).samples;
    const counted = (samples: Sample[], name: string, labels: Record<string, string> = {}) => value(samples, name, labels) ?? 0;
    await deploy(t.api, singleTaskBpmn('counted', 'counted-task', { retries: 1 }));
    const id = await start(t.api, 'counted');
    // A failure with a retry left, then a lease left to expire, then a final failure: an incident.
    const first = await fetchOne(t.api, 'w', 'counted-task');
    expect(
      (
        await t.api.post(`/api/external-tasks/${first.id}/failure`, {
          workerId: 'w',
          lockToken: first.lockToken,
          errorMessage: 'once',
        })
      ).status,
    ).toBe(204);
    await fetchOne(t.api, 'w', 'counted-task', 100);
    await waitFor(async () => ((await t.server.sweeper.sweep()) > 0 ? true : undefined), 5000, 'the lease to expire');
    const last = await fetchOne(t.api, 'w', 'counted-task');
    expect(
      (
        await t.api.post(`/api/external-tasks/${last.id}/failure`, {
          workerId: 'w',
          lockToken: last.lockToken,
          errorMessage: 'twice',
        })
      ).status,
    ).toBe(204);
    await waitForStatus(t.api, id, 'incident');
    await deploy(
      t.api,
      buildBpmn(
        'timed',
        [
          { id: 's', type: 'startEvent' },
          { id: 'wait', type: 'catchEvent', timer: { duration: 'PT0.1S' } },
          { id: 'e', type: 'endEvent' },
        ],
        [
          { from: 's', to: 'wait' },
          { from: 'wait', to: 'e' },
        ],
      ),
    );
    await waitForStatus(t.api, await start(t.api, 'timed'), 'completed');

    const after = (await scrape()).samples;
    const delta = (name: string, labels: Record<string, string> = {}) =>
      counted(after, name, labels) - counted(before, name, labels);
    expect(delta('baton_task_fetch_to_lock_seconds_count', { topic: 'counted-task' })).toBe(3);
    expect(value(after, 'baton_task_fetch_to_lock_seconds_bucket', { topic: 'counted-task', le: '+Inf' })).toBe(3);
    expect(delta('baton_task_retries_total', { topic: 'counted-task' })).toBe(1);
    expect(delta('baton_task_lock_expiries_total')).toBe(1);
    expect(delta('baton_timer_lateness_seconds_count')).toBe(1);
    expect(counted(after, 'baton_timer_lateness_seconds_sum')).toBeLessThan(5);
    // From PostgreSQL's insert statistics, which a backend flushes when idle (up to ~10 s later).
    await waitFor(
      async () => {
        const now = (await scrape()).samples;
        return counted(now, 'baton_incidents_created_total') >= 1 &&
          counted(now, 'baton_frame_runs_written_total') > counted(before, 'baton_frame_runs_written_total')
          ? true
          : undefined;
      },
      30_000,
      'the insert statistics of incidents and frame runs',
    );
  }, 60_000);

  it('counts instances as they start and end; the instance gauge holds the live statuses only', async () => {
    const before = (await scrape()).samples;
    const delta = (after: Sample[], name: string, labels: Record<string, string>) =>
      (value(after, name, labels) ?? 0) - (value(before, name, labels) ?? 0);
    await deploy(t.api, singleTaskBpmn('lifecycle', 'lifecycle-task'));
    await deploy(
      t.api,
      buildBpmn(
        'instant',
        [
          { id: 's', type: 'startEvent' },
          { id: 'e', type: 'endEvent' },
        ],
        [{ from: 's', to: 'e' }],
      ),
    );
    await deploy(
      t.api,
      buildBpmn(
        'timed-end',
        [
          { id: 's', type: 'startEvent' },
          { id: 'wait', type: 'catchEvent', timer: { duration: 'PT0.1S' } },
          { id: 'e', type: 'endEvent' },
        ],
        [
          { from: 's', to: 'wait' },
          { from: 'wait', to: 'e' },
        ],
      ),
    );
    const [done, batched, canceled] = [
      await start(t.api, 'lifecycle', { businessKey: 'lc-1' }),
      await start(t.api, 'lifecycle'),
      await start(t.api, 'lifecycle'),
    ];
    // The same business key again answers the existing instance: no second start.
    expect((await t.api.post('/api/instances', { definitionKey: 'lifecycle', businessKey: 'lc-1' })).status).toBe(200);
    const instant = await start(t.api, 'instant'); // started and completed in one statement
    const timed = await start(t.api, 'timed-end'); // completed by the timer batch
    const [one, two] = await fetchTasks(t.api, 'w', ['lifecycle-task'], { maxTasks: 2 });
    expect((await complete(t.api, one!, 'w')).status).toBe(204);
    expect(
      (
        await t.api.post('/api/external-tasks/complete-batch', {
          workerId: 'w',
          tasks: [{ id: two!.id, lockToken: two!.lockToken }],
        })
      ).status,
    ).toBe(200);
    expect((await t.api.post(`/api/instances/${canceled}/cancel`, {})).status).toBe(200);
    for (const id of [done, batched, instant, timed]) await waitForStatus(t.api, id, 'completed');

    const after = (await scrape()).samples;
    expect(delta(after, 'baton_instances_started_total', { definition_key: 'lifecycle' })).toBe(3);
    expect(delta(after, 'baton_instances_started_total', { definition_key: 'instant' })).toBe(1);
    expect(delta(after, 'baton_instances_started_total', { definition_key: 'timed-end' })).toBe(1);
    expect(delta(after, 'baton_instances_ended_total', { definition_key: 'lifecycle', status: 'completed' })).toBe(2);
    expect(delta(after, 'baton_instances_ended_total', { definition_key: 'lifecycle', status: 'canceled' })).toBe(1);
    expect(delta(after, 'baton_instances_ended_total', { definition_key: 'instant', status: 'completed' })).toBe(1);
    expect(delta(after, 'baton_instances_ended_total', { definition_key: 'timed-end', status: 'completed' })).toBe(1);
    // Finished instances are no gauge series: a scrape reads what is live, however long the history.
    expect(
      after.filter(
        (s) => s.name === 'baton_instances' && !['running', 'incident', 'compensating'].includes(s.labels.status ?? ''),
      ),
    ).toEqual([]);
    expect(after.some((s) => s.name === 'baton_instances' && s.labels.definition_key === 'lifecycle')).toBe(false);
    expect(value(after, 'baton_instances', { definition_key: 'counted', status: 'incident' })).toBe(1);
  });

  it('two scrapes in a row agree (the second may come from the one-second cache)', async () => {
    const a = await scrape();
    const b = await scrape();
    expect(value(b.samples, 'baton_instances', { definition_key: 'metered', status: 'running' })).toBe(
      value(a.samples, 'baton_instances', { definition_key: 'metered', status: 'running' }),
    );
  });
});
