// Counters and histograms fed by the code paths that already do the work (fetch,
// sweeper, failure, timer firing, committed transitions): one observe per event, no extra SQL. They count
// for this process; Prometheus sums the nodes. Each server's registry (metrics.ts)
// registers these same objects.
import { Counter, Histogram, type Metric } from 'prom-client';
import { onInstanceLifecycle } from '../store/transition-writer.ts';

export const fetchToLockSeconds = new Histogram({
  name: 'baton_task_fetch_to_lock_seconds',
  help: 'Time from a task becoming fetchable (created, retry time reached, lease expired or unlocked) to a worker locking it',
  labelNames: ['topic'],
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
  registers: [],
});

export const lockExpiries = new Counter({
  name: 'baton_task_lock_expiries_total',
  help: "Task leases this node's sweeper returned to ready because they expired",
  registers: [],
});

export const taskRetries = new Counter({
  name: 'baton_task_retries_total',
  help: 'Failures answered with another attempt (retries left), native and Camunda',
  labelNames: ['topic'],
  registers: [],
});

export const timerLatenessSeconds = new Histogram({
  name: 'baton_timer_lateness_seconds',
  help: 'How long after its due time a timer fired',
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
  registers: [],
});

// Instances counted as they start and end rather than by status in the table: finished
// instances pile up, live ones do not (the baton_instances gauge counts live statuses only).
export const instancesStarted = new Counter({
  name: 'baton_instances_started_total',
  help: 'Instances this node started',
  labelNames: ['definition_key'],
  registers: [],
});

export const instancesEnded = new Counter({
  name: 'baton_instances_ended_total',
  help: "Instances that ended (completed, canceled, compensated) in this node's transitions",
  labelNames: ['definition_key', 'status'],
  registers: [],
});

onInstanceLifecycle((events) => {
  for (const e of events) {
    if (e.kind === 'started') instancesStarted.inc({ definition_key: e.definitionKey });
    else instancesEnded.inc({ definition_key: e.definitionKey, status: e.kind });
  }
});

export const processInstruments: Metric[] = [
  fetchToLockSeconds,
  lockExpiries,
  taskRetries,
  timerLatenessSeconds,
  instancesStarted,
  instancesEnded,
];

/** Called with the tasks a fetch just locked. */
export function observeLocked(tasks: readonly { topic: string; retry_at: Date }[]): void {
  const now = Date.now();
  for (const task of tasks) fetchToLockSeconds.observe({ topic: task.topic }, Math.max(0, now - task.retry_at.getTime()) / 1000);
}
