// Public entry point of the worker SDK.
export { createWorker } from './worker.ts';
export { BpmnError, LockLostError, TemplateRefusedError, WorkerStoppingError } from './errors.ts';
export type {
  ElementTemplate,
  SubscribeOptions,
  TaskContext,
  TaskHandler,
  Worker,
  WorkerAuth,
  WorkerHooks,
  WorkerLogger,
  WorkerOptions,
  WorkerTask,
} from './types.ts';
