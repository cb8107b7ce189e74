// createWorker: a long-polling fetch loop that fills free slots, and a stop that leaves nothing locked.
import { pino } from 'pino';
import { createBackoff, sleep } from './backoff.ts';
import { createHttpClient } from './http.ts';
import { runTask, type LockedTask, type RunningTask } from './run-task.ts';
import { createCompletionBatcher, unlockTask } from './task-calls.ts';
import type { SubscribeOptions, TaskHandler, Worker, WorkerLogger, WorkerOptions } from './types.ts';

interface Subscription {
  handler: TaskHandler;
  lockDurationMs: number;
}

interface Settings {
  concurrency: number;
  lockDurationMs: number;
  pollWaitMs: number;
  stopGraceMs: number;
  backoffMinMs: number;
  backoffMaxMs: number;
  reportAttempts: number;
  callTimeoutMs: number;
}

export function createWorker(options: WorkerOptions): Worker {
  const settings = settingsOf(options);
  const log: WorkerLogger = options.log ?? pino({ name: 'baton-worker', level: process.env.LOG_LEVEL ?? 'info' });
  const http = createHttpClient(options.baseUrl, options.auth);
  const workerId = options.workerId;
  const subscriptions = new Map<string, Subscription>();
  const running = new Map<string, RunningTask>();
  const stopping = new AbortController();
  const slotFreed = createWakeUp();
  let poll: { abort: AbortController; answered: boolean } | undefined;
  let loop: Promise<void> | undefined;
  let stopped: Promise<void> | undefined;

  const calls = { http, log, callTimeoutMs: settings.callTimeoutMs };
  const deps = { ...calls, completions: createCompletionBatcher(calls), workerId, reportAttempts: settings.reportAttempts };

  function launch(task: LockedTask): void {
    const sub = subscriptions.get(task.topic);
    if (!sub) {
      void unlockTask(deps, { taskId: task.id, workerId, lockToken: task.lockToken });
      return;
    }
    const run = runTask(deps, task, sub.handler, sub.lockDurationMs);
    running.set(task.id, run);
    void run.settled.then(() => {
      running.delete(task.id);
      slotFreed.notify();
    });
  }

  async function fetchLoop(): Promise<void> {
    const backoff = createBackoff(settings.backoffMinMs, settings.backoffMaxMs);
    while (!stopping.signal.aborted) {
      if (running.size >= settings.concurrency) {
        await slotFreed.next(stopping.signal);
        continue;
      }
      const began = Date.now();
      const tasks = await fetchTasks(settings.concurrency - running.size).catch((err: unknown) => {
        log.error({ workerId, error: String(err) }, 'fetch:failed');
        return undefined;
      });
      if (tasks === undefined || (tasks.length === 0 && Date.now() - began < settings.pollWaitMs / 2)) {
        // Unreachable, refused, or an early empty answer (a server shutting down): do not spin.
        await sleep(backoff.next(), stopping.signal);
        continue;
      }
      backoff.reset();
      for (const task of tasks) {
        if (stopping.signal.aborted) await unlockTask(deps, { taskId: task.id, workerId, lockToken: task.lockToken });
        else launch(task);
      }
    }
  }

  async function fetchTasks(maxTasks: number): Promise<LockedTask[] | undefined> {
    const topics = [...subscriptions].map(([name, s]) => ({ name, lockDurationMs: s.lockDurationMs }));
    const current = { abort: new AbortController(), answered: false };
    poll = current;
    const outcome = await http.post<LockedTask[]>(
      '/api/external-tasks/fetch-and-lock',
      { workerId, maxTasks, waitMs: settings.pollWaitMs, topics },
      {
        signal: current.abort.signal,
        timeoutMs: settings.pollWaitMs + 30_000,
        onHeaders: () => {
          current.answered = true;
          log.debug({ workerId }, 'fetch:answered');
        },
      },
    );
    poll = undefined;
    if (outcome.kind === 'ok') return outcome.body;
    if (!stopping.signal.aborted) {
      const error =
        outcome.kind === 'unreachable' ? outcome.error.message : `${outcome.status} ${outcome.type}: ${outcome.message}`;
      log.warn({ workerId, error }, 'fetch:failed');
    }
    return undefined;
  }

  async function stopWorker(): Promise<void> {
    stopping.abort();
    // A poll the server has not answered is dropped: the server then locks nothing for it.
    // One it has answered is read, and its tasks are unlocked by the loop.
    if (poll && !poll.answered) poll.abort.abort();
    await loop;
    const all = Promise.all([...running.values()].map((r) => r.settled));
    await Promise.race([all, sleep(settings.stopGraceMs)]);
    await Promise.all([...running.values()].map((r) => r.abandon()));
    http.close();
    log.info({ workerId }, 'worker:stopped');
  }

  const worker: Worker = {
    workerId,
    get running() {
      return running.size;
    },
    subscribe(topic: string, handler: TaskHandler, opts: SubscribeOptions = {}) {
      if (subscriptions.has(topic)) throw new Error(`Topic "${topic}" already has a handler in worker ${workerId}`);
      const lockDurationMs = opts.lockDurationMs ?? settings.lockDurationMs;
      checkRange('lockDurationMs', lockDurationMs, 100, 86_400_000);
      subscriptions.set(topic, { handler, lockDurationMs });
      return worker;
    },
    start() {
      if (stopping.signal.aborted) throw new Error(`Worker ${workerId} was stopped; create a new one`);
      if (subscriptions.size === 0)
        throw new Error(`Worker ${workerId} has no subscriptions; call subscribe(topic, handler) first`);
      if (!loop) {
        log.info({ workerId, topics: [...subscriptions.keys()], concurrency: settings.concurrency }, 'worker:started');
        loop = fetchLoop();
      }
      return worker;
    },
    stop() {
      stopped ??= stopWorker();
      return stopped;
    },
  };
  return worker;
}

function settingsOf(o: WorkerOptions): Settings {
  if (!o.baseUrl) throw new TypeError('createWorker needs baseUrl');
  if (!o.workerId || o.workerId.length > 255) throw new TypeError('createWorker needs a workerId of 1 to 255 characters');
  const s: Settings = {
    concurrency: o.concurrency ?? 4,
    lockDurationMs: o.lockDurationMs ?? 30_000,
    pollWaitMs: o.pollWaitMs ?? 20_000,
    stopGraceMs: o.stopGraceMs ?? 10_000,
    backoffMinMs: o.backoff?.minMs ?? 250,
    backoffMaxMs: o.backoff?.maxMs ?? 30_000,
    reportAttempts: o.reportAttempts ?? 10,
    callTimeoutMs: o.callTimeoutMs ?? 30_000,
  };
  checkRange('concurrency', s.concurrency, 1, 500);
  checkRange('lockDurationMs', s.lockDurationMs, 100, 86_400_000);
  // Node's fetch gives up on a request whose headers take 300 s; the poll must answer well before.
  checkRange('pollWaitMs', s.pollWaitMs, 0, 240_000);
  checkRange('stopGraceMs', s.stopGraceMs, 0, 86_400_000);
  checkRange('backoff.minMs', s.backoffMinMs, 1, s.backoffMaxMs);
  checkRange('reportAttempts', s.reportAttempts, 1, 1_000);
  checkRange('callTimeoutMs', s.callTimeoutMs, 100, 600_000);
  return s;
}

function checkRange(name: string, value: number, min: number, max: number): void {
  if (!Number.isInteger(value) || value < min || value > max)
    throw new RangeError(`${name} must be an integer from ${min} to ${max}, got ${value}`);
}

/** Lets the fetch loop sleep until a slot frees up (or stop). */
function createWakeUp() {
  let waiters: (() => void)[] = [];
  return {
    notify() {
      const woken = waiters;
      waiters = [];
      for (const w of woken) w();
    },
    next(signal: AbortSignal): Promise<void> {
      return new Promise<void>((resolve) => {
        waiters.push(resolve);
        signal.addEventListener('abort', () => resolve(), { once: true });
      });
    },
  };
}
