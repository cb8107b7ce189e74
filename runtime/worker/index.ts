// Public entry point of the worker SDK.
export { createWorker } from './worker.ts';
export { BpmnError, LockLostError, WorkerStoppingError } from './errors.ts';
export type {
  SubscribeOptions,
  TaskContext,
  TaskHandler,
  Worker,
  WorkerAuth,
  WorkerLogger,
  WorkerOptions,
  WorkerTask,
} from './types.ts';
