// Errors a handler throws or sees.

/**
 * A business outcome the process handles (an error boundary with this code, else an incident).
 * Throw it from a handler; it is never retried.
 */
export class BpmnError extends Error {
  override readonly name = 'BpmnError';
  constructor(
    readonly code: string,
    message?: string,
    readonly variables?: Record<string, unknown>,
  ) {
    super(message ?? code);
  }
}

/** The worker no longer holds the task's lock: stop working on it; nothing it reports is applied. */
export class LockLostError extends Error {
  override readonly name = 'LockLostError';
  constructor(
    readonly taskId: string,
    message = `The lock on task ${taskId} was lost (expired and taken by another worker, or the task was canceled)`,
  ) {
    super(message);
  }
}

/** ctx.signal's reason when stop() gave up waiting for the handler; the task was unlocked. */
export class WorkerStoppingError extends Error {
  override readonly name = 'WorkerStoppingError';
  constructor(readonly taskId: string) {
    super(`The worker stopped before the handler of task ${taskId} finished; the task was unlocked for another worker`);
  }
}

/** The server refused a subscription's element template (a 4xx): the worker did not start. */
export class TemplateRefusedError extends Error {
  override readonly name = 'TemplateRefusedError';
  constructor(
    readonly topic: string,
    readonly templateId: string,
    readonly status: number,
    readonly type: string,
    readonly serverMessage: string,
    /** what the server said to fix, e.g. the element-template schema's complaints */
    readonly details?: unknown,
  ) {
    super(
      `The server refused the element template "${templateId}" of topic "${topic}" (${status} ${type}): ${serverMessage}. The worker did not start; fix the template and start again.`,
    );
  }
}
