// /metrics: a scrape parses as Prometheus text and carries the gauges with low-cardinality labels.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { singleTaskBpmn } from '../support/bpmn.ts';
import { deploy, fetchOne, start } from '../support/flows.ts';
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
    const parked = t.api.post('/api/external-tasks/fetch-and-lock', { workerId: 'p', maxTasks: 1, waitMs: 3000, topics: [{ name: 'quiet', lockDurationMs: 1000 }] });
    await waitFor(async () => (t.server.notifier.parked > 0 ? true : undefined), 10_000, 'a parked poll');
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

  it('two scrapes in a row agree (the second may come from the one-second cache)', async () => {
    const a = await scrape();
    const b = await scrape();
    expect(value(b.samples, 'baton_instances', { definition_key: 'metered', status: 'running' })).toBe(value(a.samples, 'baton_instances', { definition_key: 'metered', status: 'running' }));
  });
});
