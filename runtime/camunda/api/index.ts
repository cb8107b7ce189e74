// The Camunda 7 compatible REST API under /engine-rest (docs/camunda-compatibility.md).
// Its JSON bodies are read by the security layer in front of it, with a limit of their own
// (larger: File variables travel base64); multipart deployments are read by their route, and
// errors are answered in Camunda's shape.
import { Router } from 'express';
import type { Engine } from '../../engine/context.ts';
import type { ParkedPolls } from '../../engine/parked-polls.ts';
import type { ProgressCoalescer } from '../../engine/progress.ts';
import type { GroupDirectory } from '../../security/people.ts';
import { batchRouter } from './batch-routes.ts';
import { deploymentRouter } from './deployment-routes.ts';
import { taskRouter } from './task-routes.ts';
import { camundaErrorHandler, camundaNotFoundRoute, sendJson } from './errors.ts';
import { externalTaskLogRouter } from './external-task-log-routes.ts';
import { externalTaskRouter } from './external-task-routes.ts';
import { historyRouter, incidentRouter } from './history-routes.ts';
import { conditionRouter, messageRouter, signalRouter } from './message-routes.ts';
import { processDefinitionSuspensionRouter, processInstanceBatchRouter } from './instance-batch-routes.ts';
import { executionRouter, processDefinitionRouter, processInstanceRouter } from './process-routes.ts';
import { processDefinitionStatisticsRouter } from './statistics-routes.ts';
import { migrationRouter } from './migration-routes.ts';
import { processInstanceModificationRouter } from './modification-routes.ts';

/** Above any poll interval of a Camunda client, so an idle keep-alive socket is never closed under its next request. */
export const CAMUNDA_KEEP_ALIVE_TIMEOUT_MS = 65_000;

/** The Camunda 7 REST version whose subset Baton follows (docs/camunda-compatibility.md). */
export const CAMUNDA_REST_VERSION = '7.20.0';

export function camundaRouter(
  engine: Engine,
  parkedPolls: ParkedPolls,
  progress: ProgressCoalescer,
  groups: GroupDirectory = new Map(),
  onBatchCreated: () => void = () => {},
): Router {
  const router = Router();
  // Authorization (Basic or Bearer, e.g. the client's BasicAuthInterceptor) is checked by the security layer in front of
  // this router, not here.
  // Tools such as Camunda Modeler ask which engine and REST version they talk to before deploying.
  router.get('/engine', (_req, res) => sendJson(res, 200, [{ name: 'default' }]));
  router.get('/version', (_req, res) => sendJson(res, 200, { version: CAMUNDA_REST_VERSION }));
  router.use('/external-task', externalTaskRouter(engine, parkedPolls, progress));
  router.use('/task', taskRouter(engine, groups));
  router.use('/deployment', deploymentRouter(engine));
  router.use('/incident', incidentRouter(engine));
  router.use('/history/external-task-log', externalTaskLogRouter(engine));
  router.use('/history', historyRouter(engine));
  // Before the definition routes: /process-definition/statistics is not a definition id.
  router.use('/process-definition', processDefinitionStatisticsRouter(engine));
  router.use('/process-definition', processDefinitionRouter(engine), processDefinitionSuspensionRouter(engine));
  // Before the instance routes: /process-instance/delete and /suspended are not instance ids.
  router.use(
    '/process-instance',
    processInstanceBatchRouter(engine, onBatchCreated),
    processInstanceModificationRouter(engine),
    processInstanceRouter(engine),
  );
  router.use('/batch', batchRouter(engine));
  router.use('/migration', migrationRouter(engine, onBatchCreated));
  router.use('/execution', executionRouter(engine));
  router.use('/message', messageRouter(engine));
  router.use('/signal', signalRouter(engine));
  router.use('/condition', conditionRouter(engine));
  router.use(camundaNotFoundRoute);
  router.use(camundaErrorHandler(engine.log));
  return router;
}
