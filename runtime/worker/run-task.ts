// One locked task from fetch to result: heartbeat, handler, report; or lock lost; or abandoned at stop.
import { BpmnError, LockLostError, WorkerStoppingError } from './errors.ts';
import {
  sendProgress,
  sendReport,
  startHeartbeat,
  unlockTask,
  type CallDeps,
  type Holder,
  type TaskReport,
} from './task-calls.ts';
import type { TaskContext, TaskHandler, WorkerHooks, WorkerTask } from './types.ts';

/** A task as the native fetch answers it: what the handler sees plus the lock proof. */
export interface LockedTask extends WorkerTask {
  lockToken: string;
  lockExpiresAt: string;
}

export interface RunTaskDeps extends CallDeps {
  workerId: string;
  reportAttempts: number;
  hooks?: WorkerHooks;
}

export interface RunningTask {
  taskId: string;
  /** resolves when the task is settled: reported, lost, or abandoned and unlocked */
  settled: Promise<void>;
  /** at stop, past the grace period: abort the handler and unlock; or stop retrying a report */
  abandon(): Promise<void>;
}

const MAX_MESSAGE = 10_000;
const MAX_DETAILS = 100_000;

/** Where the task is; each state is left once. */
const TaskPhase = {
  working: 'working', // the handler runs, the heartbeat holds the lease
  reporting: 'reporting', // the handler finished; its result is being sent
  lost: 'lost', // the lease is gone; whatever the handler does is dropped
  abandoned: 'abandoned', // stop() gave up waiting; the task was unlocked
  done: 'done', // result sent (or refused for good)
} as const;
type TaskPhase = (typeof TaskPhase)[keyof typeof TaskPhase];

export function runTask(deps: RunTaskDeps, locked: LockedTask, handler: TaskHandler, lockDurationMs: number): RunningTask {
  const { lockToken, lockExpiresAt: _expiry, ...task } = locked;
  const holder: Holder = { taskId: task.id, workerId: deps.workerId, lockToken };
  const log = { taskId: task.id, topic: task.topic, attempt: task.attempt };
  const handlerSignal = new AbortController();
  const reportSignal = new AbortController();
  let phase: TaskPhase = TaskPhase.working;
  let settle!: () => void;
  const settled = new Promise<void>((resolve) => (settle = resolve));

  const loseLock = () => {
    if (phase !== TaskPhase.working) return;
    phase = TaskPhase.lost;
    // The slot stays taken until the handler returns: it may still be using resources.
    handlerSignal.abort(new LockLostError(task.id));
  };
  const heartbeat = startHeartbeat(deps, holder, lockDurationMs, loseLock);
  const ctx: TaskContext = {
    signal: handlerSignal.signal,
    async progress(data) {
      if (phase !== TaskPhase.working) return;
      if ((await sendProgress(deps, holder, data)) === 'lock_lost') {
        loseLock();
        throw new LockLostError(task.id);
      }
    },
  };

  void (async () => {
    const seen: WorkerTask = { ...task, variables: task.variables ?? {} };
    const report = await invokeHandler(handler, seen, ctx);
    await callAfterHandler(deps, seen, log);
    heartbeat.stop();
    if (phase !== TaskPhase.working) {
      deps.log.info({ ...log, phase }, 'task:result_dropped');
    } else {
      phase = TaskPhase.reporting;
      await deliver(deps, holder, report, reportSignal.signal, log);
      phase = TaskPhase.done;
    }
    settle();
  })().catch((err: unknown) => {
    deps.log.error({ ...log, error: String(err) }, 'task:crashed');
    settle();
  });

  return {
    taskId: task.id,
    settled,
    async abandon() {
      if (phase === TaskPhase.reporting) {
        reportSignal.abort();
        return settled;
      }
      if (phase !== TaskPhase.working) return settled;
      phase = TaskPhase.abandoned;
      heartbeat.stop();
      handlerSignal.abort(new WorkerStoppingError(task.id));
      await unlockTask(deps, holder);
      deps.log.info(log, 'task:unlocked');
      settle();
    },
  };
}

/** The afterHandler hook; its failure must not keep the result from being sent. */
async function callAfterHandler(deps: RunTaskDeps, task: WorkerTask, log: object): Promise<void> {
  if (!deps.hooks?.afterHandler) return;
  try {
    await deps.hooks.afterHandler(task);
  } catch (err) {
    deps.log.error({ ...log, hook: 'afterHandler', error: String(err) }, 'task:hook_failed');
  }
}

/** Sends the result; a result the server refuses as malformed becomes a failure, so the task does not sit locked. */
async function deliver(deps: RunTaskDeps, holder: Holder, report: TaskReport, signal: AbortSignal, log: object): Promise<void> {
  const result = await sendReport(deps, holder, report, { attempts: deps.reportAttempts, signal });
  if (result.kind === 'applied')
    return deps.log.info(
      { ...log, call: report.call },
      `task:${report.call === 'complete' ? 'completed' : report.call === 'failure' ? 'failed' : 'bpmn_error'}`,
    );
  if (result.kind === 'refused' && report.call !== 'failure') {
    const errorMessage = `The server refused the ${report.call} result: ${result.status} ${result.type}: ${result.message}`.slice(
      0,
      MAX_MESSAGE,
    );
    deps.log.error({ ...log, call: report.call, status: result.status }, 'task:result_refused');
    await sendReport(deps, holder, { call: 'failure', body: { errorMessage } }, { attempts: deps.reportAttempts, signal });
    return;
  }
  deps.log.warn({ ...log, call: report.call, result }, result.kind === 'lock_lost' ? 'task:lock_lost' : 'task:report_failed');
}

/** Runs the handler and turns what it did into the result to send; it never throws. */
async function invokeHandler(handler: TaskHandler, task: WorkerTask, ctx: TaskContext): Promise<TaskReport> {
  try {
    const value: unknown = await handler(task, ctx);
    if (value === undefined || value === null) return { call: 'complete', body: {} };
    if (typeof value === 'object' && !Array.isArray(value)) {
      JSON.stringify(value); // a BigInt or a cycle fails here, as a failure of this task
      return { call: 'complete', body: { variables: value as Record<string, unknown> } };
    }
    return failureOf(
      new TypeError(
        `The handler of topic "${task.topic}" returned ${Array.isArray(value) ? 'an array' : `a ${typeof value}`}; return an object of variables, or nothing`,
      ),
    );
  } catch (err) {
    if (err instanceof BpmnError) {
      return {
        call: 'bpmn-error',
        body: {
          errorCode: err.code,
          errorMessage: err.message.slice(0, MAX_MESSAGE),
          ...(err.variables ? { variables: err.variables } : {}),
        },
      };
    }
    return failureOf(err);
  }
}

function failureOf(err: unknown): TaskReport {
  const error = err instanceof Error ? err : new Error(String(err));
  const errorMessage = (error.message || error.name || 'Error').slice(0, MAX_MESSAGE);
  return { call: 'failure', body: { errorMessage, ...(error.stack ? { errorDetails: error.stack.slice(0, MAX_DETAILS) } : {}) } };
}
