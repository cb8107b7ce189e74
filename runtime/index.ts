// Public entry point of the runtime package.
export { startBatonServer, type BatonServer, type BatonServerOptions } from './server.ts';
export { compileBpmn, fingerprintPlan } from './compiler/index.ts';
export type { Plan, PlanStep, PlanFlow, Diagnostic, CompileResult } from './compiler/plan.ts';
export { startEmbeddedPostgres } from './store/embedded.ts';
export { applyMigrations } from './store/migrate.ts';
export { readConfig, type Config } from './config.ts';
export { createWorker, BpmnError, LockLostError, TemplateRefusedError, WorkerStoppingError } from './worker/index.ts';
export type {
  Worker,
  WorkerOptions,
  WorkerTask,
  TaskContext,
  TaskHandler,
  SubscribeOptions,
  ElementTemplate,
  WorkerAuth,
  WorkerHooks,
  WorkerLogger,
} from './worker/index.ts';
