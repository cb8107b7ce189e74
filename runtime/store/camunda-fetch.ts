// Fetch-and-lock with Camunda's per-topic filters, priority switch and createTime sorting.
// Same lease effects as store/tasks.ts fetchAndLock (new token, attempt + 1, task:locked).
import type { Queryable } from './db.ts';
import { MATCHING_TYPES_SQL, decodeTypes, type StoredType } from './camunda-variables.ts';
import type { LockedTaskRow } from './tasks.ts';

export interface CamundaTopicFilter {
  topicName: string;
  lockDuration: number;
  businessKey?: string | null;
  processDefinitionId?: string | null;
  processDefinitionIdIn?: string[] | null;
  processDefinitionKey?: string | null;
  processDefinitionKeyIn?: string[] | null;
  /** Baton has no version tags: a filter on one matches nothing */
  processDefinitionVersionTag?: string | null;
  processVariables?: Record<string, unknown> | null;
  /** Baton has no tenants (every task has tenant null): a non-empty list matches nothing */
  tenantIdIn?: string[] | null;
}

export interface CamundaFetchParams {
  workerId: string;
  maxTasks: number;
  usePriority: boolean;
  /** createTime order after priority */
  createTimeOrder: 'asc' | 'desc';
  topics: CamundaTopicFilter[];
}

export interface CamundaLockedTask extends LockedTaskRow {
  definition_id: string;
  definition_key: string;
  types: StoredType[];
}

/** One statement: pick, lock and record; the variables and their types are read with the same snapshot. */
export async function fetchAndLockCamunda(db: Queryable, p: CamundaFetchParams): Promise<CamundaLockedTask[]> {
  const order = `${p.usePriority ? 't.priority desc, ' : ''}t.created_at ${p.createTimeOrder === 'desc' ? 'desc' : 'asc'}`;
  const { rows } = await db.query<CamundaLockedTask & { types: unknown }>({
    name: `fetch_and_lock_camunda_${p.usePriority ? 'p' : 'n'}_${p.createTimeOrder}`,
    text: `with f as (
             select * from rows from (jsonb_to_recordset($1::jsonb) as (
               "topicName" text, "lockDuration" bigint, "businessKey" text, "processDefinitionId" text,
               "processDefinitionIdIn" jsonb, "processDefinitionKey" text, "processDefinitionKeyIn" jsonb,
               "processDefinitionVersionTag" text, "processVariables" jsonb, "tenantIdIn" jsonb)) with ordinality as f(
               "topicName", "lockDuration", "businessKey", "processDefinitionId", "processDefinitionIdIn", "processDefinitionKey",
               "processDefinitionKeyIn", "processDefinitionVersionTag", "processVariables", "tenantIdIn", n)),
           picked as (
             select t.id, (select f."lockDuration" from f where f."topicName" = t.topic and ${filterSql('i')} order by f.n limit 1) as lock_ms
               from external_tasks t join instances i on i.id = t.instance_id
              where t.state = 'ready' and t.topic = any($2::text[]) and t.retry_at <= now()
                and exists (select 1 from f where f."topicName" = t.topic and ${filterSql('i')})
              order by ${order}
              limit $3
              for update of t skip locked),
           locked as (
             update external_tasks t
                set state = 'locked', worker_id = $4, lock_token = gen_random_uuid(), attempt = t.attempt + 1, last_result = null,
                    lock_expires_at = now() + picked.lock_ms * interval '1 millisecond'
               from picked where t.id = picked.id
             returning t.*),
           ev as (
             insert into events (instance_id, generation, kind, step_id, task_id, attempt, data)
             select l.instance_id, l.generation, 'task:locked', l.step_id, l.id, l.attempt,
                    jsonb_build_object('workerId', l.worker_id, 'lockExpiresAt', l.lock_expires_at)
               from locked l
              order by l.instance_id) -- frame heads are locked at commit in this order: no deadlock between fetchers
           select l.*, i.business_key, i.variables, i.definition_id, i.definition_key, ${MATCHING_TYPES_SQL} as types
             from locked l join instances i on i.id = l.instance_id
            order by ${order.replaceAll('t.', 'l.')}`,
    values: [JSON.stringify(p.topics), p.topics.map((t) => t.topicName), p.maxTasks, p.workerId],
  });
  return rows.map((r) => ({ ...r, types: decodeTypes(r.types) }));
}

// Every filter of a topic entry is optional (null = no filter).
function filterSql(i: string): string {
  return `(f."businessKey" is null or ${i}.business_key = f."businessKey")
      and (f."processDefinitionId" is null or ${i}.definition_id::text = f."processDefinitionId")
      and (f."processDefinitionIdIn" is null or ${i}.definition_id::text in (select jsonb_array_elements_text(f."processDefinitionIdIn")))
      and (f."processDefinitionKey" is null or ${i}.definition_key = f."processDefinitionKey")
      and (f."processDefinitionKeyIn" is null or ${i}.definition_key in (select jsonb_array_elements_text(f."processDefinitionKeyIn")))
      and f."processDefinitionVersionTag" is null
      and (f."tenantIdIn" is null or jsonb_array_length(f."tenantIdIn") = 0)
      and (f."processVariables" is null or not exists (
            select 1 from jsonb_each(f."processVariables") kv where ${i}.variables -> kv.key is distinct from kv.value))`;
}
