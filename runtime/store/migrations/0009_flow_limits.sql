-- Why: downstream services have capacity limits (docs/workers.md, "Flow control and fair
-- priority"). A flow limit caps,
-- for one resource, the locks held at once (max_concurrent) and the new locks per
-- second (max_starts_per_second, a token bucket refilled on the database clock).
-- A resource covers the topics listed in flow_limit_topics: by default only the
-- topic named like the resource. Fetch-and-lock locks the limit rows it depends
-- on and counts held locks under that lock (store/flow-limits.ts).

create table flow_limits (
  resource               text primary key,
  -- 0 means unlimited
  max_concurrent         integer not null default 0 check (max_concurrent >= 0),
  max_starts_per_second  double precision not null default 0 check (max_starts_per_second >= 0),
  -- token bucket: tokens left at refilled_at; it holds at most greatest(max_starts_per_second, 1)
  tokens                 double precision not null default 0,
  refilled_at            timestamptz not null default now(),
  created_at             timestamptz not null default now(),
  updated_at             timestamptz not null default now()
);

-- A topic belongs to at most one resource, so a fetch knows which row to lock.
create table flow_limit_topics (
  topic     text primary key,
  resource  text not null references flow_limits (resource) on delete cascade
);
create index flow_limit_topics_resource_idx on flow_limit_topics (resource);

-- traffic_wait_ms: how long the latest attempt waited for capacity (also in its
-- task:locked event). flow_waiting_since: the first time a fetch wanted this task
-- and a flow limit held it back; cleared when it is locked.
alter table external_tasks add column traffic_wait_ms integer not null default 0 check (traffic_wait_ms >= 0);
alter table external_tasks add column flow_waiting_since timestamptz;

-- Held locks of a resource are counted per topic at every limited fetch.
create index external_tasks_locked_topic_idx on external_tasks (topic) where state = 'locked';
-- Fair turns serve the oldest ready task of the topics, whatever its priority.
create index external_tasks_ready_age_idx on external_tasks (topic, created_at) where state = 'ready';

-- A released lock (complete, failure, BPMN error, unlock, expiry, cancel) frees
-- capacity: notify baton_tasks for every topic of a resource with max_concurrent,
-- so parked long polls fetch again at once instead of at the safety re-check.
create function flow_limit_released() returns trigger language plpgsql as $$
begin
  perform pg_notify('baton_tasks', covered.topic)
     from flow_limit_topics released
     join flow_limits l on l.resource = released.resource and l.max_concurrent > 0
     join flow_limit_topics covered on covered.resource = released.resource
    where released.topic = old.topic;
  return null;
end $$;

create trigger external_tasks_flow_release after update of state on external_tasks
  for each row when (old.state = 'locked' and new.state <> 'locked')
  execute function flow_limit_released();
