// Public shapes of the worker SDK: options, the task a handler sees, its context.

/** Credentials sent with every call: a bearer token, or HTTP basic (as the Camunda client's interceptor). */
export type WorkerAuth = { bearer: string } | { username: string; password: string };

/** Where log records go; pino loggers fit. The message is the event name (`task:completed`). */
export interface WorkerLogger {
  debug(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/**
 * Camunda's element-template JSON (Camunda 7 or Zeebe, as its `$schema` says), binding this
 * topic: `camunda:topic` (with `camunda:type` = external) or the `zeebe:taskDefinition` type.
 */
export interface ElementTemplate {
  $schema?: string;
  id: string;
  name: string;
  /** a published id and version never changes: bump it with every change */
  version?: number;
  properties: object[];
  [field: string]: unknown;
}

export interface WorkerOptions {
  /** server root, e.g. http://127.0.0.1:8080 (the SDK talks to its native /api) */
  baseUrl: string;
  /** unique per process; recorded in the history of every task it touches */
  workerId: string;
  /** most handlers running at once (default 4); the worker fetches only as many tasks as it has free slots */
  concurrency?: number;
  /** lease asked for each task (default 30 s); a topic may set its own in subscribe() */
  lockDurationMs?: number;
  auth?: WorkerAuth;
  /** how long one fetch waits on the server for a task (long polling; default 20 s) */
  pollWaitMs?: number;
  /** how long stop() waits for running handlers before it aborts and unlocks them (default 10 s) */
  stopGraceMs?: number;
  /** back-off between failed fetches: doubles from minMs up to maxMs, with full jitter */
  backoff?: { minMs?: number; maxMs?: number };
  /** tries of one complete/failure/bpmn-error call over network errors and 5xx (default 10) */
  reportAttempts?: number;
  /** longest wait for the answer to a task call (default 30 s); a call past it counts as a network error */
  callTimeoutMs?: number;
  log?: WorkerLogger;
  /** calls into the life of each task, for tests and instrumentation (see WorkerHooks) */
  hooks?: WorkerHooks;
}

/** Calls the SDK makes at fixed points of a task's life; each one it awaits. */
export interface WorkerHooks {
  /**
   * After the handler has returned or thrown (its side effect is done) and before the result is
   * sent. The result waits for it, and the lease is still extended meanwhile. Crash drills kill
   * the process here; a hook that throws is logged (`task:hook_failed`) and the result is sent.
   */
  afterHandler?(task: WorkerTask): Promise<void> | void;
}

export interface SubscribeOptions {
  /** lease for this topic's tasks; defaults to the worker's lockDurationMs */
  lockDurationMs?: number;
  /** published when the worker starts, so the designer offers it for this topic (docs/workers.md, "Element templates") */
  template?: ElementTemplate;
}

/** One locked attempt of an external task, as the handler sees it. */
export interface WorkerTask {
  id: string;
  topic: string;
  instanceId: string;
  stepId: string;
  businessKey: string | null;
  /** 1 for the first lock of this task; every lock counts (retries, lease expiry, unlock) */
  attempt: number;
  retriesLeft: number;
  /** the same for every attempt of this step in this generation and loop pass: pass it to side effects */
  idempotencyKey: string;
  /** inside a loop, the pass the task belongs to, e.g. `/loop:Review#2` */
  scopePath?: string;
  /** all instance variables at fetch time */
  variables: Record<string, unknown>;
}

export interface TaskContext {
  /** aborts when the lock is lost or the worker stops past its grace period; reason says which */
  signal: AbortSignal;
  /** sends a progress report users see live; best effort (see docs/workers.md) */
  progress(data: unknown): Promise<void>;
}

/** Return an object to complete with those variables, or nothing to complete without any. */
export type TaskHandler = (
  task: WorkerTask,
  ctx: TaskContext,
) => Promise<Record<string, unknown> | void | undefined> | Record<string, unknown> | void | undefined;

export interface Worker {
  readonly workerId: string;
  subscribe(topic: string, handler: TaskHandler, opts?: SubscribeOptions): Worker;
  /** publishes the subscriptions' templates, then fetches in the background; idempotent */
  start(): Worker;
  /**
   * Resolves once start() has published the templates and the worker fetches. Rejects with a
   * TemplateRefusedError when the server refused a template (the worker is stopped then), or
   * a WorkerStoppingError when stop() came first.
   */
  ready(): Promise<void>;
  /** fetches nothing new, waits for running handlers up to the grace period, unlocks what it still holds */
  stop(): Promise<void>;
  /** handlers running or reporting right now */
  readonly running: number;
}
