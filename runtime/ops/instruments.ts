// Counters and histograms fed by the code paths that already do the work (fetch,
// sweeper, failure, timer firing): one observe per event, no extra SQL. They count
// for this process; Prometheus sums the nodes. Each server's registry (metrics.ts)
// registers these same objects.
import { Counter, Histogram, type Metric } from 'prom-client';

export const fetchToLockSeconds = new Histogram({
  name: 'baton_task_fetch_to_lock_seconds',
  help: 'Time from a task becoming fetchable (created, retry time reached, lease expired or unlocked) to a worker locking it',
  labelNames: ['topic'],
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
  registers: [],
});

export const lockExpiries = new Counter({
  name: 'baton_task_lock_expiries_total',
  help: 'Task leases this node\'s sweeper returned to ready because they expired',
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

export const processInstruments: Metric[] = [fetchToLockSeconds, lockExpiries, taskRetries, timerLatenessSeconds];

/** Called with the tasks a fetch just locked. */
export function observeLocked(tasks: readonly { topic: string; retry_at: Date }[]): void {
  const now = Date.now();
  for (const task of tasks) fetchToLockSeconds.observe({ topic: task.topic }, Math.max(0, now - task.retry_at.getTime()) / 1000);
}
