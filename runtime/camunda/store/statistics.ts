// Runtime statistics as Camunda 7's process-definition statistics answer them: running instances
// per definition and, per activity of one definition, the instances waiting there, with the open
// incidents by type. Each is one statement over the running instances' rows.
import type { Queryable } from '../../store/db.ts';

/** A step id with a colon (`loop:<head>`, `listener:<element>:…`) is Baton's own: BPMN ids are NCNames, colon-free. */
export const BPMN_STEP_SQL = `position(':' in s.step_id) = 0`;

/**
 * The boundary events and event-subprocess starts of definition $1: while they wait on their host
 * or scope they are subscriptions in Camunda, not activity instances.
 */
const WAITING_ON_HOST_SQL = `select e->>'id' from definitions d cross join jsonb_array_elements(d.plan->'steps') e
   where d.id = $1 and e->>'kind' in ('boundaryEvent', 'eventSubProcessStart')`;

/** An instance Camunda's runtime still holds: running, in an incident, or compensating. */
const RUNNING_SQL = `i.status in ('running', 'incident', 'compensating')`;

export interface IncidentCount {
  /** Baton's incident kind */
  kind: string;
  count: number;
}

export interface DefinitionStatisticsRow {
  id: string;
  key: string;
  version: number;
  name: string | null;
  version_tag: string | null;
  deployed_at: Date;
  deployment_id: string;
  resource_name: string;
  instances: number;
  incidents: IncidentCount[];
}

/**
 * Every deployed definition with its running instances and open incidents by kind (of `kinds`
 * only when given). Definitions without instances are listed with 0, as Camunda lists them.
 */
export async function readDefinitionStatistics(db: Queryable, kinds: string[] | null): Promise<DefinitionStatisticsRow[]> {
  const { rows } = await db.query<DefinitionStatisticsRow>({
    name: 'camunda_definition_statistics',
    text: `with running as (
             select i.definition_id, count(*)::int as instances from instances i where ${RUNNING_SQL} group by i.definition_id),
           open_incidents as (
             select i.definition_id, x.kind, count(*)::int as count
               from incidents x join instances i on i.id = x.instance_id
              where x.status = 'open' and ($1::text[] is null or x.kind = any($1::text[]))
              group by i.definition_id, x.kind)
           select d.id, d.key, d.version, d.plan->>'name' as name, d.plan->>'versionTag' as version_tag, d.deployed_at, d.deployment_id, d.resource_name,
                  coalesce(r.instances, 0) as instances,
                  coalesce((select jsonb_agg(jsonb_build_object('kind', o.kind, 'count', o.count) order by o.kind)
                              from open_incidents o where o.definition_id = d.id), '[]'::jsonb) as incidents
             from definitions d left join running r on r.definition_id = d.id
            order by d.key, d.version`,
    values: [kinds],
  });
  return rows;
}

export interface ActivityStatisticsRow {
  /** the BPMN element id */
  id: string;
  instances: number;
  incidents: IncidentCount[];
}

/**
 * Per activity of one definition: the steps of running instances open there (active, or held by
 * an incident) and the open incidents by kind (of `kinds` only when given). Activities with
 * neither are left out, as Camunda leaves them out.
 */
export async function readActivityStatistics(
  db: Queryable,
  definitionId: string,
  kinds: string[] | null,
): Promise<ActivityStatisticsRow[]> {
  // The incidents are aliased s too, so BPMN_STEP_SQL reads their step id.
  const { rows } = await db.query<ActivityStatisticsRow>({
    name: 'camunda_activity_statistics',
    text: `with open_steps as (
             select s.step_id, count(*)::int as instances
               from steps s join instances i on i.id = s.instance_id
              where i.definition_id = $1 and ${RUNNING_SQL} and s.status in ('active', 'incident') and ${BPMN_STEP_SQL}
                and s.step_id not in (${WAITING_ON_HOST_SQL})
              group by s.step_id),
           open_incidents as (
             select s.step_id, s.kind, count(*)::int as count
               from incidents s join instances i on i.id = s.instance_id
              where i.definition_id = $1 and s.status = 'open' and ${BPMN_STEP_SQL}
                and ($2::text[] is null or s.kind = any($2::text[]))
              group by s.step_id, s.kind)
           select a.step_id as id, coalesce(o.instances, 0) as instances,
                  coalesce((select jsonb_agg(jsonb_build_object('kind', x.kind, 'count', x.count) order by x.kind)
                              from open_incidents x where x.step_id = a.step_id), '[]'::jsonb) as incidents
             from (select step_id from open_steps union select step_id from open_incidents) a
             left join open_steps o on o.step_id = a.step_id
            order by a.step_id`,
    values: [definitionId, kinds],
  });
  return rows;
}
