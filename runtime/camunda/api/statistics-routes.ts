// /engine-rest/process-definition/statistics and /process-definition/{id}/statistics (also by key):
// Camunda's runtime statistics, per definition and per activity, as Cockpit reads them. Baton has
// no jobs: failedJobs is 0, and a failed external task counts as a failedExternalTask incident,
// as it does in Camunda.
import { Router } from 'express';
import type { Engine } from '../../engine/context.ts';
import { isUuid } from '../../shared/uuid.ts';
import { listCamundaDefinitions } from '../store/process-queries.ts';
import { readActivityStatistics, readDefinitionStatistics, type IncidentCount } from '../store/statistics.ts';
import { CamundaError, invalidRequest, sendJson } from './errors.ts';
import { camundaIncidentType } from './process-query.ts';
import { readFlag, readText, type Source } from './query-params.ts';
import { processDefinitionView } from './views.ts';

const DEFINITION_CLASS = 'org.camunda.bpm.engine.rest.dto.repository.ProcessDefinitionStatisticsResultDto';
const ACTIVITY_CLASS = 'org.camunda.bpm.engine.rest.dto.repository.ActivityStatisticsResultDto';

/** Which incidents to count: none (the answer's list stays empty), every kind (null), or one. */
type IncidentSelection = { counted: false } | { counted: true; kinds: string[] | null };

/** failedJobs is read (and checked) but changes nothing: Baton has no jobs to count. */
function readStatisticsQuery(query: Source, allowRoot: boolean): IncidentSelection {
  readFlag(query, 'failedJobs', 'query');
  const all = readFlag(query, 'incidents', 'query');
  // Every Baton incident is its own root cause: root incidents are all incidents.
  const root = allowRoot && readFlag(query, 'rootIncidents', 'query');
  const forType = readText(query, 'incidentsForType', 200);
  if ([all, root, forType !== undefined].filter(Boolean).length > 1)
    throw invalidRequest(
      `Only one of the query parameter incidents${allowRoot ? ', rootIncidents' : ''} or incidentsForType can be set.`,
    );
  if (forType !== undefined) return { counted: true, kinds: [forType === 'failedExternalTask' ? 'task_failed' : forType] };
  return all || root ? { counted: true, kinds: null } : { counted: false };
}

function incidentsView(selection: IncidentSelection, counts: IncidentCount[]) {
  if (!selection.counted) return [];
  return counts.map((c) => ({ incidentType: camundaIncidentType(c.kind), incidentCount: c.count }));
}

export function processDefinitionStatisticsRouter(engine: Engine): Router {
  const router = Router();

  router.get('/statistics', async (req, res) => {
    const selection = readStatisticsQuery(req.query, true);
    const rows = await readDefinitionStatistics(engine.pool, selection.counted ? selection.kinds : null);
    sendJson(
      res,
      200,
      rows.map((r) => ({
        '@class': DEFINITION_CLASS,
        id: r.id,
        instances: r.instances,
        failedJobs: 0,
        incidents: incidentsView(selection, r.incidents),
        definition: processDefinitionView(r),
      })),
    );
  });

  const activities = async (selection: IncidentSelection, definitionId: string) => {
    const rows = await readActivityStatistics(engine.pool, definitionId, selection.counted ? selection.kinds : null);
    return rows.map((r) => ({
      '@class': ACTIVITY_CLASS,
      id: r.id,
      instances: r.instances,
      failedJobs: 0,
      incidents: incidentsView(selection, r.incidents),
    }));
  };
  router.get('/key/:key/statistics', async (req, res) => {
    const key = String(req.params.key);
    const selection = readStatisticsQuery(req.query, false);
    const [d] = await listCamundaDefinitions(engine.pool, {
      key,
      latestVersion: true,
      sorting: [],
      firstResult: 0,
      maxResults: 1,
    });
    if (!d)
      throw new CamundaError(404, 'InvalidRequestException', `No matching process definition with key: ${key} and no tenant-id`);
    sendJson(res, 200, await activities(selection, d.id));
  });
  // As in Camunda, an unknown id has no activities to count: the answer is an empty list.
  router.get('/:id/statistics', async (req, res) => {
    const id = String(req.params.id);
    const selection = readStatisticsQuery(req.query, false);
    sendJson(res, 200, isUuid(id) ? await activities(selection, id) : []);
  });

  return router;
}
