-- Why: the core tables (runtime/store/README.md, "Tables"). Every hot row carries instance_id so the
-- per-instance tables can later be co-located by it (Citus).

create table definitions (
  id           uuid primary key default gen_random_uuid(),
  key          text not null,
  version      integer not null check (version > 0),
  fingerprint  text not null,
  xml_sha256   text not null,
  xml          text not null,
  plan         jsonb not null,
  deployed_at  timestamptz not null default now(),
  unique (key, version),
  unique (key, xml_sha256)
);

create table instances (
  id             uuid primary key default gen_random_uuid(),
  definition_id  uuid not null references definitions (id),
  definition_key text not null,
  definition_version integer not null,
  business_key   text,
  status         text not null default 'running'
                 check (status in ('running', 'incident', 'completed', 'canceled')),
  variables      jsonb not null default '{}'::jsonb,
  generation     integer not null default 1,
  revision       integer not null default 1,
  created_at     timestamptz not null default now(),
  updated_at     timestamptz not null default now(),
  ended_at       timestamptz
);
-- Invariant 1: (definition key, business key) maps to one instance forever.
create unique index instances_business_key_uq on instances (definition_key, business_key)
  where business_key is not null;
create index instances_list_idx on instances (created_at desc, id desc);
create index instances_status_idx on instances (status, created_at desc)
  where status in ('running', 'incident');

-- A step row exists once the step is reached (activated or skipped); absence means pending.
create table steps (
  instance_id  uuid not null references instances (id) on delete cascade,
  step_id      text not null,
  generation   integer not null,
  status       text not null
               check (status in ('active', 'completed', 'skipped', 'incident', 'canceled')),
  activated_at timestamptz not null default now(),
  ended_at     timestamptz,
  primary key (instance_id, step_id)
);

-- A flow row exists once the flow is resolved; absence means pending.
create table flows (
  instance_id uuid not null references instances (id) on delete cascade,
  flow_id     text not null,
  generation  integer not null,
  state       text not null check (state in ('taken', 'skipped')),
  resolved_at timestamptz not null default now(),
  primary key (instance_id, flow_id)
);

create table external_tasks (
  id               uuid primary key default gen_random_uuid(),
  instance_id      uuid not null references instances (id) on delete cascade,
  step_id          text not null,
  generation       integer not null,
  topic            text not null,
  priority         integer not null default 0,
  state            text not null default 'ready'
                   check (state in ('ready', 'locked', 'done', 'failed', 'canceled')),
  retries          integer not null check (retries >= 0),
  retries_left     integer not null check (retries_left >= 0),
  attempt          integer not null default 0,
  retry_at         timestamptz not null default now(),
  worker_id        text,
  lock_token       uuid,
  lock_expires_at  timestamptz,
  -- the holder's call that ended the latest attempt; tells a repeat from a conflicting call
  last_result      text check (last_result in ('complete', 'failure', 'bpmn-error')),
  error_message    text,
  error_details    text,
  idempotency_key  text not null,
  created_at       timestamptz not null default now(),
  ended_at         timestamptz,
  unique (instance_id, step_id, generation)
);
-- Only live states are indexed: fetch-and-lock reads ready rows, the sweeper locked ones.
create index external_tasks_ready_idx on external_tasks (topic, priority desc, created_at)
  where state = 'ready';
create index external_tasks_lock_expiry_idx on external_tasks (lock_expires_at)
  where state = 'locked';

create table incidents (
  id           uuid primary key default gen_random_uuid(),
  instance_id  uuid not null references instances (id) on delete cascade,
  step_id      text not null,
  task_id      uuid references external_tasks (id),
  generation   integer not null,
  kind         text not null
               check (kind in ('task_failed', 'bpmn_error', 'no_matching_flow', 'condition_error', 'join_skipped')),
  message      text not null,
  details      jsonb,
  status       text not null default 'open' check (status in ('open', 'resolved')),
  created_at   timestamptz not null default now(),
  resolved_at  timestamptz
);
create index incidents_open_idx on incidents (created_at) where status = 'open';
create index incidents_instance_idx on incidents (instance_id);

-- Timers and the message inbox: filled by the BPMN event semantics (docs/events.md).
create table timers (
  id           uuid primary key default gen_random_uuid(),
  instance_id  uuid references instances (id) on delete cascade,
  definition_id uuid references definitions (id),
  step_id      text not null,
  generation   integer not null default 1,
  due_at       timestamptz not null,
  state        text not null default 'waiting' check (state in ('waiting', 'fired', 'canceled')),
  fired_at     timestamptz,
  created_at   timestamptz not null default now()
);
create index timers_due_idx on timers (due_at) where state = 'waiting';

create table messages (
  id              uuid primary key default gen_random_uuid(),
  message_id      text not null unique,
  name            text not null,
  correlation_key text,
  payload         jsonb not null default '{}'::jsonb,
  state           text not null default 'pending' check (state in ('pending', 'matched', 'expired')),
  instance_id     uuid references instances (id) on delete cascade,
  step_id         text,
  received_at     timestamptz not null default now(),
  matched_at      timestamptz
);
create index messages_pending_idx on messages (name, correlation_key) where state = 'pending';

-- History: one row per transition. seq comes from one sequence so task-level
-- transitions (lock, unlock, lease expiry, late result) can be recorded without
-- taking the instance's transition lock (their foreign-key check takes only KEY SHARE).
create sequence events_seq;
create table events (
  instance_id uuid not null references instances (id) on delete cascade,
  seq         bigint not null default nextval('events_seq'),
  generation  integer not null,
  kind        text not null,
  step_id     text,
  task_id     uuid,
  attempt     integer,
  data        jsonb not null default '{}'::jsonb,
  at          timestamptz not null default now(),
  primary key (instance_id, seq)
);
