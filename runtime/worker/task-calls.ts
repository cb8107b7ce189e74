// Calls on one held task: extend the lease in the background, report a result, unlock, progress.
import { createBackoff, sleep } from './backoff.ts';
import { isTransient, type CallOutcome, type HttpClient } from './http.ts';
import type { WorkerLogger } from './types.ts';

/** The pair that proves the lock: only it may touch the task (fencing). */
export interface Holder {
  taskId: string;
  workerId: string;
  lockToken: string;
}

/** A result the engine decides on; the call names match the native routes. */
export type TaskReport =
  | { call: 'complete'; body: { variables?: Record<string, unknown> } }
  | { call: 'failure'; body: { errorMessage: string; errorDetails?: string } }
  | { call: 'bpmn-error'; body: { errorCode: string; errorMessage?: string; variables?: Record<string, unknown> } };

export type ReportResult =
  | { kind: 'applied' }
  | { kind: 'lock_lost'; afterRetry: boolean }
  | { kind: 'not_found' }
  | { kind: 'refused'; status: number; type: string; message: string }
  | { kind: 'gave_up'; error: string };

export interface CallDeps {
  http: HttpClient;
  log: WorkerLogger;
  /** longest wait for an answer's headers */
  callTimeoutMs: number;
  /** completes go through it when set: several that finish in one turn of the event loop become one call */
  completions?: CompletionBatcher;
}

function pathOf(h: Holder, call: string): string {
  return `/api/external-tasks/${encodeURIComponent(h.taskId)}/${call}`;
}

/**
 * Sends a result, repeating it over network errors and 5xx: a repeat by the holder is answered
 * 204 and changes nothing, so the result is applied once. 409 ends it: the lock is gone.
 */
export async function sendReport(
  deps: CallDeps,
  h: Holder,
  report: TaskReport,
  opts: { attempts: number; signal: AbortSignal },
): Promise<ReportResult> {
  if (report.call === 'complete' && deps.completions) return deps.completions.complete(h, report.body, opts);
  return sendOne(deps, h, report, opts);
}

async function sendOne(
  deps: CallDeps,
  h: Holder,
  report: TaskReport,
  opts: { attempts: number; signal: AbortSignal },
): Promise<ReportResult> {
  const backoff = createBackoff(100, 5_000);
  let lastError = '';
  for (let attempt = 1; attempt <= opts.attempts && !opts.signal.aborted; attempt++) {
    const outcome = await deps.http.post(
      pathOf(h, report.call),
      { workerId: h.workerId, lockToken: h.lockToken, ...report.body },
      { timeoutMs: deps.callTimeoutMs },
    );
    if (outcome.kind === 'ok') return { kind: 'applied' };
    if (outcome.kind === 'refused' && !isTransient(outcome)) return resultOfRefusal(outcome, attempt > 1);
    lastError = describe(outcome);
    deps.log.warn({ taskId: h.taskId, call: report.call, attempt, error: lastError }, 'task:report_retry');
    await sleep(backoff.next(), opts.signal);
  }
  return { kind: 'gave_up', error: opts.signal.aborted ? 'the worker stopped' : lastError };
}

function resultOfRefusal(outcome: Extract<CallOutcome<unknown>, { kind: 'refused' }>, afterRetry: boolean): ReportResult {
  if (outcome.status === 409) return { kind: 'lock_lost', afterRetry };
  if (outcome.status === 404 && outcome.type === 'NotFound') return { kind: 'not_found' };
  return { kind: 'refused', status: outcome.status, type: outcome.type, message: outcome.message };
}

function describe(outcome: CallOutcome<unknown>): string {
  if (outcome.kind === 'unreachable') return outcome.error.message;
  if (outcome.kind === 'refused') return `${outcome.status} ${outcome.type}: ${outcome.message}`;
  return 'ok';
}

export interface CompletionBatcher {
  complete(
    h: Holder,
    body: { variables?: Record<string, unknown> },
    opts: { attempts: number; signal: AbortSignal },
  ): Promise<ReportResult>;
}

/** The most tasks one complete-batch call carries (the server's limit). */
const BATCH_LIMIT = 100;

type BatchResult = 'completed' | 'repeated' | 'lock_lost' | 'not_found';

/**
 * Completes of one worker that finish in the same turn of the event loop go out as one
 * complete-batch call (one commit on the server); a lone complete goes out on its own.
 * No delay is added. A batch call that fails in any way is repeated task by task with
 * the single call and its retries, which is safe: a repeat by the holder changes nothing.
 * A server without the batch route (404) is not asked again.
 */
export function createCompletionBatcher(deps: CallDeps): CompletionBatcher {
  type Queued = {
    h: Holder;
    body: { variables?: Record<string, unknown> };
    opts: { attempts: number; signal: AbortSignal };
    resolve: (r: ReportResult) => void;
  };
  let queue: Queued[] = [];
  let batchRoute = true;
  const single = (q: Queued) => sendOne(deps, q.h, { call: 'complete', body: q.body }, q.opts).then(q.resolve);

  async function sendBatch(items: Queued[]): Promise<void> {
    const outcome = await deps.http.post<{ results: { id: string; result: BatchResult }[] }>(
      '/api/external-tasks/complete-batch',
      {
        workerId: items[0]!.h.workerId,
        tasks: items.map((q) => ({ id: q.h.taskId, lockToken: q.h.lockToken, ...q.body })),
      },
      { timeoutMs: deps.callTimeoutMs },
    );
    const answered =
      outcome.kind === 'ok' && Array.isArray(outcome.body?.results)
        ? new Map(outcome.body.results.map((r) => [r.id, r.result]))
        : undefined;
    if (answered) {
      // A task the answer does not list (it never should) is sent on its own.
      const unlisted = items.filter((q) => !settle(q, answered.get(q.h.taskId)));
      await Promise.all(unlisted.map(single));
      return;
    }
    if (outcome.kind === 'refused' && outcome.status === 404) batchRoute = false;
    deps.log.warn(
      { tasks: items.length, error: outcome.kind === 'ok' ? 'the answer holds no results' : describe(outcome) },
      'task:batch_complete_retried_singly',
    );
    await Promise.all(items.map(single));
  }

  function flush(): void {
    const batch = queue;
    queue = [];
    const byWorker = new Map<string, Queued[]>();
    for (const q of batch) byWorker.set(q.h.workerId, [...(byWorker.get(q.h.workerId) ?? []), q]);
    for (const items of byWorker.values()) {
      for (let i = 0; i < items.length; i += BATCH_LIMIT) {
        const part = items.slice(i, i + BATCH_LIMIT);
        void (part.length === 1 || !batchRoute ? Promise.all(part.map(single)) : sendBatch(part));
      }
    }
  }

  return {
    complete(h, body, opts) {
      return new Promise((resolve) => {
        if (queue.length === 0) setImmediate(flush);
        queue.push({ h, body, opts, resolve });
      });
    },
  };
}

/** Resolves a queued complete from its batch result; false when there is none to go by. */
function settle(q: { resolve: (r: ReportResult) => void }, result: BatchResult | undefined): boolean {
  if (result === 'completed' || result === 'repeated') q.resolve({ kind: 'applied' });
  else if (result === 'lock_lost') q.resolve({ kind: 'lock_lost', afterRetry: false });
  else if (result === 'not_found') q.resolve({ kind: 'not_found' });
  else return false;
  return true;
}

export interface Heartbeat {
  stop(): void;
}

/**
 * Extends the lease every third of its duration while the handler runs. A 409 or 404 means
 * the lock is gone (expired and re-taken, task canceled): onLost aborts the handler.
 */
export function startHeartbeat(deps: CallDeps, h: Holder, lockDurationMs: number, onLost: () => void): Heartbeat {
  const stopped = new AbortController();
  const every = Math.max(50, Math.floor(lockDurationMs / 3));
  void (async () => {
    let wait = every;
    while (!stopped.signal.aborted) {
      await sleep(wait, stopped.signal);
      if (stopped.signal.aborted) return;
      const outcome = await deps.http.post(
        pathOf(h, 'extend-lock'),
        { workerId: h.workerId, lockToken: h.lockToken, lockDurationMs },
        { timeoutMs: Math.min(deps.callTimeoutMs, Math.max(1_000, every)) },
      );
      if (stopped.signal.aborted) return;
      if (outcome.kind === 'refused' && (outcome.status === 409 || outcome.status === 404)) {
        deps.log.warn({ taskId: h.taskId, status: outcome.status }, 'task:lock_lost');
        onLost();
        return;
      }
      if (outcome.kind !== 'ok') deps.log.warn({ taskId: h.taskId, error: describe(outcome) }, 'task:extend_failed');
      // After a miss, try again sooner: two more misses still fit inside the lease.
      wait = outcome.kind === 'ok' ? every : Math.max(50, Math.floor(every / 2));
    }
  })();
  return { stop: () => stopped.abort() };
}

/** Gives the task back without using a retry. 409 means it is already not ours: also fine. */
export async function unlockTask(deps: CallDeps, h: Holder): Promise<boolean> {
  const backoff = createBackoff(100, 1_000);
  for (let attempt = 1; attempt <= 3; attempt++) {
    const outcome = await deps.http.post(
      pathOf(h, 'unlock'),
      { workerId: h.workerId, lockToken: h.lockToken },
      { timeoutMs: deps.callTimeoutMs },
    );
    if (outcome.kind === 'ok') return true;
    if (!isTransient(outcome)) return false;
    await sleep(backoff.next());
  }
  deps.log.warn({ taskId: h.taskId }, 'task:unlock_failed');
  return false;
}

export type ProgressResult = 'sent' | 'lock_lost' | 'not_sent';

/** One progress report; best effort, never retried (a later report supersedes it). */
export async function sendProgress(deps: CallDeps, h: Holder, data: unknown): Promise<ProgressResult> {
  const outcome = await deps.http.post(
    pathOf(h, 'progress'),
    { workerId: h.workerId, lockToken: h.lockToken, data },
    { timeoutMs: deps.callTimeoutMs },
  );
  if (outcome.kind === 'ok') return 'sent';
  if (outcome.kind === 'refused' && outcome.status === 409) return 'lock_lost';
  deps.log.debug({ taskId: h.taskId, error: describe(outcome) }, 'task:progress_not_sent');
  return 'not_sent';
}
