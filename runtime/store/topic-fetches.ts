// When each worker last fetched each topic (migration 0021), as the nodes flush it from
// memory (engine/fetch-activity.ts). Times are the database's: a node sends how long ago
// each fetch was, not its own clock.
import type { Queryable } from './db.ts';

export interface TopicFetch {
  topic: string;
  workerId: string;
  /** milliseconds between the fetch and now, by the node's monotonic clock */
  agoMs: number;
}

export interface TopicFetchRow {
  topic: string;
  worker_id: string;
  last_fetched_at: Date;
}

/**
 * One statement per flush: upserts the fetches (a later time wins) and deletes rows last
 * fetched before the window, except those it writes (one statement may not touch a row twice).
 * Rows are written in key order, so two nodes flushing the same workers do not deadlock.
 */
export async function recordTopicFetches(db: Queryable, fetches: TopicFetch[], keepMs: number): Promise<void> {
  await db.query({
    name: 'record_topic_fetches',
    text: `with seen as (
             select t.topic, t.worker_id, max(now() - t.ago_ms * interval '1 millisecond') as fetched_at
               from unnest($1::text[], $2::text[], $3::float8[]) as t (topic, worker_id, ago_ms)
              group by t.topic, t.worker_id
           ), gone as (
             delete from topic_fetches f
              where f.last_fetched_at < now() - $4::float8 * interval '1 millisecond'
                and not exists (select 1 from seen s where s.topic = f.topic and s.worker_id = f.worker_id)
           )
           insert into topic_fetches as f (topic, worker_id, last_fetched_at)
           select topic, worker_id, fetched_at from seen order by topic, worker_id
           on conflict (topic, worker_id) do update
              set last_fetched_at = greatest(f.last_fetched_at, excluded.last_fetched_at)`,
    values: [fetches.map((f) => f.topic), fetches.map((f) => f.workerId), fetches.map((f) => f.agoMs), keepMs],
  });
}

export interface RecentTopicFetches {
  /** the database's now() when it read them */
  readAt: Date;
  rows: TopicFetchRow[];
}

/** The fetches recorded within the last windowMs, and the database's clock to place this node's unflushed ones. */
export async function readRecentTopicFetches(db: Queryable, windowMs: number): Promise<RecentTopicFetches> {
  const { rows } = await db.query<{ read_at: Date } & { [K in keyof TopicFetchRow]: TopicFetchRow[K] | null }>({
    name: 'read_recent_topic_fetches',
    text: `select n.read_at, f.topic, f.worker_id, f.last_fetched_at
             from (select now() as read_at) n
             left join topic_fetches f on f.last_fetched_at > n.read_at - $1::float8 * interval '1 millisecond'`,
    values: [windowMs],
  });
  const readAt = rows[0]?.read_at ?? new Date();
  return {
    readAt,
    rows: rows.flatMap((r) =>
      r.topic !== null && r.worker_id !== null && r.last_fetched_at !== null
        ? [{ topic: r.topic, worker_id: r.worker_id, last_fetched_at: r.last_fetched_at }]
        : [],
    ),
  };
}
