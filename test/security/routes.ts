// Every route the routers declare, found by reading their source: a route added
// without a mount prefix here fails the role test instead of going unchecked.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/** Where each router function is mounted (runtime/server.ts, runtime/camunda/api/index.ts, designer-routes.ts). */
export const MOUNTS: Record<string, string> = {
  definitionsRouter: '/api/definitions',
  instancesRouter: '/api/instances',
  tasksRouter: '/api/external-tasks',
  progressRouter: '/api/external-tasks',
  incidentsRouter: '/api/incidents',
  batchesRouter: '/api/batches',
  userTasksRouter: '/api/user-tasks',
  meRouter: '/api/me',
  flowLimitsRouter: '/api/flow-limits',
  elementTemplatesRouter: '/api/element-templates',
  topicsRouter: '/api/topics',
  eventsRouter: '/api',
  diagramsRouter: '/api/diagrams',
  lintRouter: '/api/definitions',
  camundaRouter: '/engine-rest',
  externalTaskRouter: '/engine-rest/external-task',
  taskRouter: '/engine-rest/task',
  incidentRouter: '/engine-rest/incident',
  historyRouter: '/engine-rest/history',
  externalTaskLogRouter: '/engine-rest/history/external-task-log',
  deploymentRouter: '/engine-rest/deployment',
  processDefinitionRouter: '/engine-rest/process-definition',
  processDefinitionStatisticsRouter: '/engine-rest/process-definition',
  processInstanceRouter: '/engine-rest/process-instance',
  processInstanceBatchRouter: '/engine-rest/process-instance',
  processDefinitionSuspensionRouter: '/engine-rest/process-definition',
  batchRouter: '/engine-rest/batch',
  processInstanceModificationRouter: '/engine-rest/process-instance',
  migrationRouter: '/engine-rest/migration',
  executionRouter: '/engine-rest/execution',
  messageRouter: '/engine-rest/message',
  signalRouter: '/engine-rest/signal',
  conditionRouter: '/engine-rest/condition',
  readinessRouter: '',
  metricsRouter: '',
  openApiRouter: '',
};

export interface DeclaredRoute {
  method: string;
  path: string;
  file: string;
  router: string;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : [],
  );
}

export function declaredRoutes(root: string): DeclaredRoute[] {
  const routes: DeclaredRoute[] = [];
  for (const file of ['runtime/api', 'runtime/camunda/api', 'runtime/ops'].flatMap((dir) => sourceFiles(path.join(root, dir)))) {
    const text = readFileSync(file, 'utf8');
    // Split the file into router functions; routes belong to the function above them.
    const parts = text.split(/export function (\w+Router)\(/);
    for (let i = 1; i < parts.length; i += 2) {
      const router = parts[i] ?? '';
      for (const m of (parts[i + 1] ?? '').matchAll(/router\.(get|post|put|patch|delete)\(\s*'([^']*)'/g)) {
        const prefix = MOUNTS[router];
        if (prefix === undefined)
          throw new Error(`${file}: router ${router} has routes but no mount prefix in test/security/routes.ts`);
        routes.push({
          method: (m[1] ?? '').toUpperCase(),
          path: `${prefix}${m[2] === '/' ? '' : m[2]}` || '/',
          file: path.relative(root, file),
          router,
        });
      }
    }
  }
  routes.push({ method: 'GET', path: '/healthz', file: 'runtime/server.ts', router: 'app' });
  return routes;
}

/** A concrete path: every :param becomes a uuid nobody has. */
export function concretePath(route: string): string {
  return route.replace(/:(\w+)/g, (_m, name: string) =>
    name === 'key' ? 'no-such-key' : name === 'version' ? '1' : name === 'name' ? 'x' : '00000000-0000-4000-8000-000000000000',
  );
}
