// Moving a running instance to another version of its process: its step and flow rows, and the
// open work that names a step (tasks, timers, subscriptions, incidents, called instances and
// their returns), take the new version's element ids, inside the transition that holds the
// instance's lock (engine/migration.ts). The transition's own write then records the move.
import type { Queryable } from './db.ts';
import { OPEN_INCIDENT_SQL, OPEN_TASK_SQL, OPEN_TIMER_SQL } from './open-states.ts';

export interface InstanceMove {
  instanceId: string;
  definitionId: string;
  version: number;
  /** old step id -> new step id for every step row kept (identity included) */
  steps: Map<string, string>;
  /** the topic each open service task takes in the new version, by new step id */
  topics: Map<string, string>;
  /** flow rows kept */
  flows: string[];
  /** steps whose timers and subscriptions end: waits the new version does not have */
  endedWaits: string[];
}

export async function moveInstanceToVersion(db: Queryable, m: InstanceMove): Promise<void> {
  const kept = [...m.steps.keys()];
  const renamed = [...m.steps].filter(([from, to]) => from !== to);
  const olds = renamed.map(([from]) => from);
  const news = renamed.map(([, to]) => to);
  // First the rows the new version has no place for: a renamed row may take the id of one of them.
  await db.query({
    name: 'migration_drop_rows',
    text: `with sd as (delete from steps where instance_id = $1 and step_id <> all($2::text[])),
                tc as (update timers set state = 'canceled' where instance_id = $1 and step_id = any($4::text[]) and ${OPEN_TIMER_SQL}),
                sb as (delete from subscriptions where instance_id = $1 and step_id = any($4::text[])),
                -- a wait whose timer could not be set holds an incident, which ends with it
                ir as (update incidents set status = 'resolved', resolved_at = now()
                        where instance_id = $1 and step_id = any($4::text[]) and ${OPEN_INCIDENT_SQL})
           delete from flows where instance_id = $1 and flow_id <> all($3::text[])`,
    values: [m.instanceId, kept, m.flows, m.endedWaits],
  });
  await db.query({
    name: 'migration_move_rows',
    text: `with r as (select * from unnest($2::text[], $3::text[]) as r(old_id, new_id)),
                st as (update steps s set step_id = r.new_id from r where s.instance_id = $1 and s.step_id = r.old_id),
                tk as (update external_tasks x set step_id = r.new_id from r where x.instance_id = $1 and x.step_id = r.old_id and x.${OPEN_TASK_SQL}),
                tm as (update timers x set step_id = r.new_id from r where x.instance_id = $1 and x.step_id = r.old_id and x.${OPEN_TIMER_SQL}),
                sb as (update subscriptions x set step_id = r.new_id from r where x.instance_id = $1 and x.step_id = r.old_id),
                ic as (update incidents x set step_id = r.new_id from r where x.instance_id = $1 and x.step_id = r.old_id and x.${OPEN_INCIDENT_SQL}),
                ch as (update instances x set parent_step_id = r.new_id from r
                        where x.parent_instance_id = $1 and x.parent_step_id = r.old_id
                          and x.status not in ('completed', 'canceled', 'compensated'))
           update call_returns x set parent_step_id = r.new_id from r where x.parent_instance_id = $1 and x.parent_step_id = r.old_id`,
    values: [m.instanceId, olds, news],
  });
  // Open tasks take their element's topic in the new version; a worker holding one completes it by id.
  await db.query({
    name: 'migration_retopic',
    text: `with t as (select * from unnest($2::text[], $3::text[]) as t(step_id, topic)),
                tk as (update external_tasks x set topic = t.topic from t
                        where x.instance_id = $1 and x.step_id = t.step_id and x.${OPEN_TASK_SQL} and x.topic <> t.topic)
           update instances set definition_id = $4, definition_version = $5 where id = $1`,
    values: [m.instanceId, [...m.topics.keys()], [...m.topics.values()], m.definitionId, m.version],
  });
}
