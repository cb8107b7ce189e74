// Flow limits (migration 0009): per-resource caps on held locks and on new locks
// per second, and the pieces both fetch-and-lock statements use to obey them.
//
// Enforcement: a fetch whose topics a limit covers runs in a transaction that
// first locks the limit rows (in resource order: no deadlock between fetchers),
// then picks with a new statement, so its snapshot counts every lock committed by
// the fetcher that held the rows before. The token bucket is refilled and spent on
// the database clock in that same statement.
import { withClient, withTransaction, type Pool, type PoolClient, type Queryable } from './db.ts';

export interface FlowLimitRow {
  resource: string;
  max_concurrent: number;
  max_starts_per_second: number;
  topics: string[];
  held_locks: number;
  created_at: Date;
  updated_at: Date;
}

export interface PutFlowLimitParams {
  resource: string;
  maxConcurrent: number;
  maxStartsPerSecond: number;
  /** the topics the resource covers; default: the topic named like the resource */
  topics?: string[];
}

export type PutFlowLimitResult =
  | { ok: true; limit: FlowLimitRow; created: boolean }
  | { ok: false; reason: 'topic_taken'; taken: { topic: string; resource: string }[] };

const SELECT_LIMIT = `select l.resource, l.max_concurrent, l.max_starts_per_second, l.created_at, l.updated_at,
         array(select c.topic from flow_limit_topics c where c.resource = l.resource order by c.topic) as topics,
         (select count(*) from external_tasks h join flow_limit_topics c on c.topic = h.topic
           where c.resource = l.resource and h.state = 'locked')::int as held_locks
    from flow_limits l`;

/**
 * Creates or replaces the limit of a resource. Held locks are never revoked: a
 * lower limit only stops new locks until enough are released. A topic already
 * covered by another resource is refused, and nothing changes.
 */
export async function putFlowLimit(pool: Pool, p: PutFlowLimitParams): Promise<PutFlowLimitResult> {
  const topics = [...new Set(p.topics && p.topics.length > 0 ? p.topics : [p.resource])];
  return withClient(pool, async (client) => {
    try {
      await client.query('begin');
      // The bucket keeps what it had refilled under the old rate, capped by the new size; a new one starts full.
      const { rows: upserted } = await client.query<{ created: boolean }>({
        name: 'put_flow_limit',
        text: `insert into flow_limits as l (resource, max_concurrent, max_starts_per_second, tokens, refilled_at)
               values ($1, $2::int, $3::float8, greatest($3::float8, 1), now())
               on conflict (resource) do update
                  set max_concurrent = excluded.max_concurrent, max_starts_per_second = excluded.max_starts_per_second,
                      tokens = least(greatest(excluded.max_starts_per_second, 1),
                                     l.tokens + l.max_starts_per_second * greatest(extract(epoch from now() - l.refilled_at), 0)),
                      refilled_at = now(), updated_at = now()
               returning (xmax = 0) as created`,
        values: [p.resource, p.maxConcurrent, p.maxStartsPerSecond],
      });
      await client.query({
        name: 'put_flow_limit_topics',
        text: `with dropped as (delete from flow_limit_topics where resource = $1 and topic <> all($2::text[]))
               insert into flow_limit_topics (topic, resource) select unnest($2::text[]), $1 on conflict (topic) do nothing`,
        values: [p.resource, topics],
      });
      // A new statement, so a topic another PUT committed meanwhile is seen.
      const { rows: taken } = await client.query<{ topic: string; resource: string }>({
        name: 'find_taken_flow_topics',
        text: 'select topic, resource from flow_limit_topics where topic = any($2::text[]) and resource <> $1 order by topic',
        values: [p.resource, topics],
      });
      if (taken.length > 0) {
        await client.query('rollback');
        return { ok: false, reason: 'topic_taken', taken };
      }
      const limit = await findFlowLimit(client, p.resource);
      await client.query('commit');
      if (!limit) throw new Error(`flow limit ${p.resource} vanished inside its own transaction`);
      return { ok: true, limit, created: upserted[0]?.created === true };
    } catch (err) {
      await client.query('rollback').catch(() => undefined);
      throw err;
    }
  });
}

export async function findFlowLimit(db: Queryable, resource: string): Promise<FlowLimitRow | undefined> {
  const { rows } = await db.query<FlowLimitRow>({
    name: 'find_flow_limit',
    text: `${SELECT_LIMIT} where l.resource = $1`,
    values: [resource],
  });
  return rows[0];
}

export async function listFlowLimits(db: Queryable): Promise<FlowLimitRow[]> {
  const { rows } = await db.query<FlowLimitRow>({ name: 'list_flow_limits', text: `${SELECT_LIMIT} order by l.resource` });
  return rows;
}

/** Removes a limit (its topics become unlimited); answers whether it existed. */
export async function deleteFlowLimit(db: Queryable, resource: string): Promise<boolean> {
  const { rowCount } = await db.query({
    name: 'delete_flow_limit',
    text: 'delete from flow_limits where resource = $1',
    values: [resource],
  });
  return (rowCount ?? 0) > 0;
}

/** Whether a limit covers any of the topics: the miss path of an unlimited fetch that found nothing. */
export async function flowLimitsCover(db: Queryable, topics: string[]): Promise<boolean> {
  const { rows } = await db.query<{ covered: boolean }>({
    name: 'flow_limits_cover',
    text: 'select exists (select 1 from flow_limit_topics where topic = any($1::text[])) as covered',
    values: [topics],
  });
  return rows[0]?.covered === true;
}

/** The guard of the unlimited fetch statements: they lock nothing when a limit covers a topic ($param). */
export const NO_FLOW_LIMIT_SQL = (topicsParam: string) =>
  `not exists (select 1 from flow_limit_topics fl where fl.topic = any(${topicsParam}::text[]))`;

/** Columns set on each newly locked row: the wait for capacity of this attempt. */
// Capped at the int range (24.8 days) rather than failing the fetch.
export const TRAFFIC_WAIT_SET_SQL = `traffic_wait_ms = coalesce(least(greatest(floor(extract(epoch from statement_timestamp() - t.flow_waiting_since) * 1000), 0), 2147483647)::int, 0),
                    flow_waiting_since = null`;

export interface FetchOutcome<T> {
  tasks: T[];
  /** nothing was locked and a rate limit has its next start in this many ms: poll again then */
  retryInMs?: number;
  /** a flow limit covers the topics (the fetch went the limited way): no task may be delivered to the poll */
  limited?: boolean;
}

/**
 * Runs a limited fetch: locks the limit rows of the topics (resource order), then
 * runs fetch in the same transaction with their resource names.
 */
export async function fetchWithinFlowLimits<T>(
  pool: Pool,
  topics: string[],
  fetch: (tx: PoolClient, resources: string[]) => Promise<T[]>,
): Promise<FetchOutcome<T>> {
  return withTransaction(pool, async (tx) => {
    const { rows } = await tx.query<{ resource: string; rate: number; available: number }>({
      name: 'lock_flow_limits',
      text: `select l.resource, l.max_starts_per_second as rate,
                    least(greatest(l.max_starts_per_second, 1),
                          l.tokens + l.max_starts_per_second * greatest(extract(epoch from statement_timestamp() - l.refilled_at), 0)) as available
               from flow_limits l
              where l.resource in (select c.resource from flow_limit_topics c where c.topic = any($1::text[]))
              order by l.resource
                for no key update`,
      values: [topics],
    });
    const tasks = await fetch(
      tx,
      rows.map((r) => r.resource),
    );
    if (tasks.length > 0) return { tasks, limited: true };
    // An empty bucket refills on the clock, not on a notification: say when its next token is due.
    const waits = rows.filter((r) => r.rate > 0 && r.available < 1).map((r) => Math.ceil(((1 - r.available) / r.rate) * 1000));
    return waits.length > 0 ? { tasks, retryInMs: Math.max(1, Math.min(...waits)), limited: true } : { tasks, limited: true };
  });
}

export interface LimitedPickSql {
  /** parameter holding the requested topics (text[]) */
  topics: string;
  /** parameter holding maxTasks */
  maxTasks: string;
  /** parameter holding the locked resources (text[]) */
  resources: string;
  /** select of ready candidates of the topics in `g.topics` (id, priority, created_at, …), ordered, limit maxTasks; alias t for the task */
  candidates: string;
  /** ORDER BY list over a relation alias */
  order: (alias: string) => string;
}

/**
 * The CTEs `lim … picked` of a limited fetch. `picked` holds the chosen candidates,
 * row-locked (skip locked): per resource at most its free capacity, the least of
 * max_concurrent minus the held locks and the whole tokens in the bucket; topics
 * no limit covers form one unlimited group.
 */
export function limitedPickSql(o: LimitedPickSql): string {
  return `lim as (
             select l.resource, l.max_concurrent, l.max_starts_per_second as rate,
                    least(greatest(l.max_starts_per_second, 1),
                          l.tokens + l.max_starts_per_second * greatest(extract(epoch from statement_timestamp() - l.refilled_at), 0)) as available,
                    array(select c.topic from flow_limit_topics c where c.resource = l.resource) as covered
               from flow_limits l where l.resource = any(${o.resources}::text[])),
           grp as (
             select lim.resource, array(select x from unnest(${o.topics}::text[]) x where x = any(lim.covered)) as topics,
                    least(case when lim.max_concurrent > 0 then greatest(lim.max_concurrent -
                                 (select count(*) from external_tasks h where h.state = 'locked' and h.topic = any(lim.covered)), 0) end,
                          case when lim.rate > 0 then floor(lim.available)::bigint end) as cap
               from lim
             union all
             select null, array(select x from unnest(${o.topics}::text[]) x
                                 where not exists (select 1 from flow_limit_topics c where c.topic = x)), null),
           cand as (
             select c.*, g.resource, g.cap, row_number() over (partition by g.resource order by ${o.order('c')}) as rn
               from grp g cross join lateral (${o.candidates}) c),
           wanted as (select cand.id, cand.cap, cand.rn from cand order by ${o.order('cand')} limit ${o.maxTasks}),
           chosen as (select cand.* from cand where cand.cap is null or cand.rn <= cand.cap order by ${o.order('cand')} limit ${o.maxTasks}),
           picked as (
             select chosen.* from chosen join external_tasks t on t.id = chosen.id
              where t.state = 'ready'
                for update of t skip locked),
           held_back as (
             update external_tasks t set flow_waiting_since = statement_timestamp()
              where t.id in (select h.id from external_tasks h
                              where h.id in (select w.id from wanted w where w.rn > w.cap)
                                and h.state = 'ready' and h.flow_waiting_since is null
                                for update skip locked))`;
}

/** The CTE that spends the bucket's tokens for the rows of `locked` (after limitedPickSql). */
export const SPEND_TOKENS_SQL = `spent as (
             update flow_limits l
                set tokens = lim.available - (select count(*) from locked k where k.topic = any(lim.covered)),
                    refilled_at = statement_timestamp()
               from lim where l.resource = lim.resource and lim.rate > 0)`;
