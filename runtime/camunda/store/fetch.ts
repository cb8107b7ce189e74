// Fetch-and-lock with Camunda's per-topic filters, priority switch and createTime sorting.
// Same lease effects and flow limits as store/tasks.ts fetchAndLock (new token, attempt + 1, task:locked).
import type { Pool } from '../../store/db.ts';
import {
  fetchWithinFlowLimits,
  flowLimitsCover,
  limitedPickSql,
  NO_FLOW_LIMIT_SQL,
  SPEND_TOKENS_SQL,
  TRAFFIC_WAIT_SET_SQL,
  type FetchOutcome,
} from '../../store/flow-limits.ts';
import { MATCHING_TYPES_SQL, decodeTypes, type StoredType } from './variables.ts';
import { notifyAfterCommit } from '../../store/notifications.ts';
import { PER_TOPIC_PICK_BUDGET, type FetchOrder, type LockedTaskRow } from '../../store/tasks.ts';

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

/**
 * One statement when no flow limit covers the topics: pick, lock and record; the
 * variables and their types are read with the same snapshot. Else a limited fetch
 * (store/flow-limits.ts). order 'oldest' (a fair turn) drops priority for this fetch.
 */
export async function fetchAndLockCamunda(
  pool: Pool,
  p: CamundaFetchParams & { order?: FetchOrder },
): Promise<FetchOutcome<CamundaLockedTask>> {
  const fair = p.usePriority && p.order === 'oldest';
  const order = (a: string) =>
    fair
      ? `${a}.created_at`
      : `${p.usePriority ? `${a}.priority desc, ` : ''}${a}.created_at ${p.createTimeOrder === 'desc' ? 'desc' : 'asc'}`;
  const variant = `${fair ? 'f' : p.usePriority ? 'p' : 'n'}_${p.createTimeOrder}`;
  const topics = p.topics.map((t) => t.topicName);
  const values = [JSON.stringify(p.topics), topics, p.maxTasks, p.workerId];
  // As store/tasks.ts fetchAndLock: each topic's first maxTasks, unless that is more than PER_TOPIC_PICK_BUDGET rows.
  const perTopic = new Set(topics).size * p.maxTasks <= PER_TOPIC_PICK_BUDGET;
  const pickSql = perTopic ? perTopicPickSql(order) : widePickSql(order);
  const releasedSql = perTopic ? PER_TOPIC_RELEASED_SQL : '0';
  const { rows } = await pool.query<CamundaLockedTask & { types: unknown; released: number }>({
    name: `fetch_and_lock_camunda_${variant}${perTopic ? '' : '_wide'}`,
    text: `with ${FILTERS_CTE},
           ${pickSql},
           ${lockPickedSql()}
           ${answerSql(order, releasedSql)}`,
    values,
  });
  const released = rows[0]?.released ?? 0;
  // Rows the pick locked and did not take were free again at its commit; a poll that found them locked has parked.
  if (released > 0) notifyAfterCommit(pool, { topics });
  if (rows.length > 0 || !(await flowLimitsCover(pool, topics))) return { tasks: rows.map(decodeRow) };
  return fetchWithinFlowLimits(pool, topics, async (tx, resources) => {
    const limited = await tx.query<CamundaLockedTask & { types: unknown }>({
      name: `fetch_and_lock_camunda_limited_${variant}`,
      text: `with ${FILTERS_CTE},
           ${limitedPickSql({
             topics: '$2',
             maxTasks: '$3',
             resources: '$5',
             order,
             candidates: `select t.id, t.priority, t.created_at, ${lockMsSql()} as lock_ms
                            from external_tasks t join instances i on i.id = t.instance_id
                           where t.state = 'ready' and t.topic = any(g.topics) and t.retry_at <= statement_timestamp()
                             and exists (select 1 from f where f."topicName" = t.topic and ${filterSql('i')})
                           order by ${order('t')} limit $3`,
           })},
           ${lockPickedSql()},
           ${SPEND_TOKENS_SQL}
           ${answerSql(order)}`,
      values: [...values, resources],
    });
    return limited.rows.map(decodeRow);
  });
}

// Each topic's first maxTasks ready tasks whose filters they pass, locked, then the first
// maxTasks of them all (store/tasks.ts perTopicPickSql). With priority and createTime desc no
// index has the order: each topic's ready tasks are sorted, but no other topic's. The filters
// are a subquery per task (`offset 0` keeps it one): joined, PostgreSQL guessed they pass one
// task in all and read and sorted the whole topic. A lock duration is required (at least 1),
// so a null one means that no topic entry's filters pass.
function perTopicPickSql(order: (alias: string) => string): string {
  return `cand as (
             select c.* from (select distinct unnest($2::text[]) as topic) tp
              cross join lateral (
                select t.id, t.priority, t.created_at, x.lock_ms
                  from external_tasks t
                  cross join lateral (select ${lockMsSql()} as lock_ms from instances i where i.id = t.instance_id offset 0) x
                 where t.state = 'ready' and t.topic = tp.topic and t.retry_at <= now() and ${NO_FLOW_LIMIT_SQL('$2')}
                   and x.lock_ms is not null
                 order by ${order('t')}
                 limit $3
                 for update of t skip locked) c),
           picked as (select c.id, c.lock_ms from cand c order by ${order('c')} limit $3)`;
}

// The pick across all the topics' ready tasks: locks only what it takes, but reads them all.
function widePickSql(order: (alias: string) => string): string {
  return `picked as (
             select t.id, ${lockMsSql()} as lock_ms
               from external_tasks t join instances i on i.id = t.instance_id
              where t.state = 'ready' and t.topic = any($2::text[]) and t.retry_at <= now() and ${NO_FLOW_LIMIT_SQL('$2')}
                and exists (select 1 from f where f."topicName" = t.topic and ${filterSql('i')})
              order by ${order('t')}
              limit $3
              for update of t skip locked)`;
}

const PER_TOPIC_RELEASED_SQL = '(select count(*) from cand) - (select count(*) from picked)';

const FILTERS_CTE = `f as (
             select * from rows from (jsonb_to_recordset($1::jsonb) as (
               "topicName" text, "lockDuration" bigint, "businessKey" text, "processDefinitionId" text,
               "processDefinitionIdIn" jsonb, "processDefinitionKey" text, "processDefinitionKeyIn" jsonb,
               "processDefinitionVersionTag" text, "processVariables" jsonb, "tenantIdIn" jsonb)) with ordinality as f(
               "topicName", "lockDuration", "businessKey", "processDefinitionId", "processDefinitionIdIn", "processDefinitionKey",
               "processDefinitionKeyIn", "processDefinitionVersionTag", "processVariables", "tenantIdIn", n))`;

// The lock duration of the first topic entry whose filters the task passes.
function lockMsSql(): string {
  return `(select f."lockDuration" from f where f."topicName" = t.topic and ${filterSql('i')} order by f.n limit 1)`;
}

// Same lease effects as store/tasks.ts (new token, attempt + 1, task:locked with the traffic wait).
function lockPickedSql(): string {
  return `locked as (
             update external_tasks t
                set state = 'locked', worker_id = $4, lock_token = gen_random_uuid(), attempt = t.attempt + 1, last_result = null,
                    lock_expires_at = statement_timestamp() + picked.lock_ms * interval '1 millisecond',
                    ${TRAFFIC_WAIT_SET_SQL}
               from picked where t.id = picked.id
             returning t.*),
           ev as (
             -- ordered by instance: frame heads are locked at commit in this order, so fetchers cannot deadlock
             insert into events (seq, instance_id, generation, kind, step_id, task_id, attempt, data)
             select baton_event_seq(o.instance_id), o.* from (
               select l.instance_id, l.generation, 'task:locked', l.step_id, l.id, l.attempt,
                      jsonb_build_object('workerId', l.worker_id, 'lockExpiresAt', l.lock_expires_at, 'trafficWaitMs', l.traffic_wait_ms)
                 from locked l
                order by l.instance_id) o)`;
}

// `released`: how many rows the pick locked and did not take (0 but for perTopicPickSql).
function answerSql(order: (alias: string) => string, releasedSql = '0'): string {
  return `select l.*, i.business_key, i.variables || l.local_variables as variables, i.definition_id, i.definition_key, ${MATCHING_TYPES_SQL} as types,
                  (${releasedSql})::int as released
             from locked l join instances i on i.id = l.instance_id
            order by ${order('l')}`;
}

function decodeRow(r: CamundaLockedTask & { types: unknown; released?: number }): CamundaLockedTask {
  const { released: _, ...row } = r;
  return { ...row, types: decodeTypes(r.types) };
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
