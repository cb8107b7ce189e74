// createWorker: a long-polling fetch loop that fills free slots, and a stop that leaves nothing locked.
import { pino } from 'pino';
import { templateTopic } from './element-templates.ts';
import { createBackoff, sleep } from './backoff.ts';
import { TemplateRefusedError } from './errors.ts';
import { createHttpClient, isTransient } from './http.ts';
import { runTask, type LockedTask, type RunningTask } from './run-task.ts';
import { createCompletionBatcher, unlockTask } from './task-calls.ts';
import type { ElementTemplate, SubscribeOptions, TaskHandler, Worker, WorkerLogger, WorkerOptions } from './types.ts';

interface Subscription {
  handler: TaskHandler;
  lockDurationMs: number;
  template?: ElementTemplate;
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
  const readiness = createReadiness();

  const calls = { http, log, callTimeoutMs: settings.callTimeoutMs };
  const deps = {
    ...calls,
    completions: createCompletionBatcher(calls),
    workerId,
    reportAttempts: settings.reportAttempts,
    hooks: options.hooks,
  };

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

  /** Each template once, before the first fetch; false when one was refused or the worker stopped meanwhile. */
  async function publishTemplates(): Promise<boolean> {
    for (const [topic, sub] of subscriptions) {
      if (!sub.template) continue;
      const refused = await publishTemplate(topic, sub.template);
      if (refused) {
        log.error(
          { workerId, topic, templateId: refused.templateId, status: refused.status, error: refused.serverMessage },
          'template:refused',
        );
        readiness.reject(refused);
        void worker.stop();
        return false;
      }
      if (stopping.signal.aborted) break;
    }
    if (stopping.signal.aborted) {
      readiness.reject(new Error(`Worker ${workerId} stopped before it was ready`));
      return false;
    }
    return true;
  }

  /** PUT, tried again with the fetch back-off while the server cannot be reached or answers 5xx/429; a 4xx is final. */
  async function publishTemplate(topic: string, template: ElementTemplate): Promise<TemplateRefusedError | undefined> {
    const backoff = createBackoff(settings.backoffMinMs, settings.backoffMaxMs);
    while (!stopping.signal.aborted) {
      const outcome = await http.put('/api/element-templates', template, {
        signal: stopping.signal,
        timeoutMs: settings.callTimeoutMs,
      });
      if (outcome.kind === 'ok') {
        const created = outcome.status === 201;
        log.info({ workerId, topic, templateId: template.id, version: template.version, created }, 'template:published');
        return undefined;
      }
      if (outcome.kind === 'refused' && !isTransient(outcome))
        return new TemplateRefusedError(topic, template.id, outcome.status, outcome.type, outcome.message, outcome.details);
      if (stopping.signal.aborted) break;
      const error =
        outcome.kind === 'unreachable' ? outcome.error.message : `${outcome.status} ${outcome.type}: ${outcome.message}`;
      log.warn({ workerId, topic, templateId: template.id, error }, 'template:publish_failed');
      await sleep(backoff.next(), stopping.signal);
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
      if (opts.template) checkTemplate(topic, opts.template, loop !== undefined);
      subscriptions.set(topic, { handler, lockDurationMs, ...(opts.template ? { template: opts.template } : {}) });
      return worker;
    },
    start() {
      if (stopping.signal.aborted) throw new Error(`Worker ${workerId} was stopped; create a new one`);
      if (subscriptions.size === 0)
        throw new Error(`Worker ${workerId} has no subscriptions; call subscribe(topic, handler) first`);
      if (!loop) {
        log.info({ workerId, topics: [...subscriptions.keys()], concurrency: settings.concurrency }, 'worker:started');
        loop = publishTemplates().then((published) => {
          if (!published) return;
          readiness.resolve();
          return fetchLoop();
        });
      }
      return worker;
    },
    ready() {
      return readiness.promise;
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

/** The template must bind the topic it is subscribed with, and be published at start. */
function checkTemplate(topic: string, template: ElementTemplate, started: boolean): void {
  if (started)
    throw new Error(
      `Subscribe topic "${topic}" with its template before start(): templates are published when the worker starts`,
    );
  if (!template || typeof template !== 'object' || typeof template.id !== 'string')
    throw new TypeError(`The template of topic "${topic}" must be an element-template object with an "id"`);
  const bound = templateTopic(template);
  if (!bound.ok) throw new TypeError(bound.message);
  if (bound.topic !== topic)
    throw new TypeError(`Element template "${template.id}" binds topic "${bound.topic}" but is subscribed to topic "${topic}"`);
}

/** ready(): a promise settled once; nobody need listen to a rejection. */
function createReadiness() {
  let resolve!: () => void;
  let reject!: (err: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  promise.catch(() => {});
  return { promise, resolve, reject };
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
