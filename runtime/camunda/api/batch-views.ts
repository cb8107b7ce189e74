// Baton batches as Camunda's BatchDto and BatchStatisticsDto. Baton has no seed, monitor or
// batch jobs: an instance is a job, made when the batch reaches it (invocationsPerBatchJob 1),
// so jobsCreated counts the instances reached and the job definition ids are null.
import type { BatchOperation } from '../../model/vocabulary.ts';
import type { CamundaBatchRow } from '../store/batches.ts';
import { formatCamundaDate } from './dates.ts';

/** Camunda's batch type of each Baton operation; a retry batch retries every open incident, a failed task's among them. */
export const CAMUNDA_BATCH_TYPE = {
  cancel: 'instance-deletion',
  suspend: 'instance-update-suspension-state',
  resume: 'instance-update-suspension-state',
  retry: 'set-external-task-retries',
  migrate: 'instance-migration',
} as const satisfies Record<BatchOperation, string>;

/** The operations a Camunda batch type names; a type Baton has no batches of names none. */
export function operationsOfType(type: string): BatchOperation[] {
  return (Object.keys(CAMUNDA_BATCH_TYPE) as BatchOperation[]).filter((op) => CAMUNDA_BATCH_TYPE[op] === type);
}

export function batchDtoView(b: CamundaBatchRow) {
  const startTime = formatCamundaDate(b.created_at);
  return {
    id: b.id,
    type: CAMUNDA_BATCH_TYPE[b.operation],
    totalJobs: b.total,
    jobsCreated: b.done + b.failed + b.skipped,
    batchJobsPerSeed: 0,
    invocationsPerBatchJob: 1,
    seedJobDefinitionId: null,
    monitorJobDefinitionId: null,
    batchJobDefinitionId: null,
    suspended: false,
    tenantId: null,
    createUserId: b.created_by,
    startTime,
    executionStartTime: startTime,
  };
}

/** A failed instance is done with (Baton does not try it again), so it is not among the remaining jobs as in Camunda. */
export function batchStatisticsView(b: CamundaBatchRow) {
  return {
    ...batchDtoView(b),
    remainingJobs: Math.max(0, b.total - b.done - b.failed - b.skipped),
    completedJobs: b.done + b.skipped,
    failedJobs: b.failed,
  };
}
