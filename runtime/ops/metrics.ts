// GET /metrics: Prometheus text from prom-client. Gauges are computed by SQL when
// scraped, at most once a second per node; labels are definition key, topic, status,
// state and incident kind only, never ids or business keys.
import { Router } from 'express';
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import { processInstruments } from './instruments.ts';
import type { ParkedPolls } from '../engine/parked-polls.ts';
import type { Pool } from '../store/db.ts';
import { relayFailures } from '../store/notifications.ts';
import { readGauges, type GaugeRows } from '../store/ops.ts';

const CACHE_MS = 1000;

function cachedGauges(pool: Pool): () => Promise<GaugeRows> {
  let last: { at: number; rows: Promise<GaugeRows> } | undefined;
  return () => {
    if (!last || Date.now() - last.at > CACHE_MS) {
      const rows = readGauges(pool);
      last = { at: Date.now(), rows };
      rows.catch(() => (last = undefined)); // a failed scrape is not cached
    }
    return last.rows;
  };
}

export function createMetricsRegistry(pool: Pool, parkedPolls: ParkedPolls): Registry {
  const register = new Registry();
  collectDefaultMetrics({ register, prefix: 'baton_' }); // includes event-loop lag
  const gauges = cachedGauges(pool);
  const sqlGauge = (name: string, help: string, labelNames: string[], fill: (g: Gauge, rows: GaugeRows) => void) =>
    new Gauge({
      name,
      help,
      labelNames,
      registers: [register],
      async collect() {
        const rows = await gauges();
        this.reset();
        fill(this, rows);
      },
    });
  sqlGauge(
    'baton_instances',
    'Live instances (running, incident, compensating) by definition key and status; finished ones: baton_instances_ended_total',
    ['definition_key', 'status'],
    (g, r) => {
      for (const row of r.instances) g.set({ definition_key: row.definition_key, status: row.status }, row.count);
    },
  );
  sqlGauge('baton_tasks', 'Open external tasks by topic and state (ready, locked)', ['topic', 'state'], (g, r) => {
    for (const row of r.tasks) g.set({ topic: row.topic, state: row.state }, row.count);
  });
  sqlGauge('baton_task_oldest_ready_seconds', 'Age of the oldest fetchable ready task per topic', ['topic'], (g, r) => {
    for (const row of r.tasks)
      if (row.state === 'ready' && row.oldest_seconds !== null) g.set({ topic: row.topic }, row.oldest_seconds);
  });
  sqlGauge('baton_incidents_open', 'Open incidents by kind', ['kind'], (g, r) => {
    for (const row of r.incidents) g.set({ kind: row.kind }, row.count);
  });
  sqlGauge(
    'baton_task_lock_expiries_5m',
    'Task leases that expired (returned by a sweeper) in the last 5 minutes, all nodes',
    [],
    (g, r) => {
      g.set(r.lockExpiries);
    },
  );
  const sqlCounter = (name: string, help: string, read: (rows: GaugeRows) => number) =>
    new Counter({
      name,
      help,
      registers: [register],
      async collect() {
        const rows = await gauges();
        this.reset();
        this.inc(read(rows));
      },
    });
  sqlCounter(
    'baton_frame_runs_written_total',
    'Runs of progress frames written (a transaction writes one per instance generation it frames), all nodes (PostgreSQL insert statistics of the frame_runs table)',
    (r) => r.inserted.frameRuns,
  );
  sqlCounter(
    'baton_incidents_created_total',
    'Incidents created, all nodes (PostgreSQL insert statistics of the incidents table)',
    (r) => r.inserted.incidents,
  );
  for (const metric of processInstruments) register.registerMetric(metric);
  new Counter({
    name: 'baton_doorbell_relay_failures_total',
    help: 'Relay statements of this process that failed; their notifications reach the other nodes only by their re-checks',
    registers: [register],
    collect() {
      this.reset();
      this.inc(relayFailures());
    },
  });
  new Gauge({
    name: 'baton_parked_long_polls',
    help: 'Long polls parked on this node',
    registers: [register],
    collect() {
      this.set(parkedPolls.parked);
    },
  });
  new Gauge({
    name: 'baton_db_pool_connections',
    help: "Connections of this node's pool by state",
    labelNames: ['state'],
    registers: [register],
    collect() {
      this.set({ state: 'total' }, pool.totalCount);
      this.set({ state: 'idle' }, pool.idleCount);
      this.set({ state: 'waiting' }, pool.waitingCount);
    },
  });
  return register;
}

export function metricsRouter(register: Registry): Router {
  const router = Router();
  router.get('/metrics', async (_req, res) => {
    const text = await register.metrics();
    res.setHeader('content-type', register.contentType);
    res.end(text);
  });
  return router;
}
