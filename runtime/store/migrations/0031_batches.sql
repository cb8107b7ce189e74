-- Why: an operator cancels or retries thousands of instances by a search filter. A batch is
-- the durable record of that request: every node runs the batches whose lease is free, a
-- chunk of instances at a time, each instance in its own transaction with its result row, so
-- a node killed mid-way leaves a batch another node finishes, applying nothing twice
-- (engine/batches.ts, scheduler/batch-runner.ts).
create table batches (
  id           uuid primary key default gen_random_uuid(),
  operation    text not null check (operation in ('cancel', 'retry', 'suspend', 'resume', 'migrate')),
  -- the instance-search filter as the request named it (GET /api/instances/count's fields)
  filter       jsonb not null,
  -- the operation's options: retry's retries and variables
  options      jsonb not null default '{}'::jsonb,
  state        text not null default 'running' check (state in ('running', 'completed', 'canceled')),
  -- instances the filter matched at creation; instances created later are not included
  total        integer not null check (total >= 0),
  done         integer not null default 0,
  failed       integer not null default 0,
  skipped      integer not null default 0,
  -- the last instance id of the last finished chunk (keyset: instances are taken in id order)
  cursor       uuid,
  -- the caller's name and role; null when the server runs without tokens
  created_by   text,
  created_at   timestamptz not null default now(),
  -- the node running it, until lease_until; an expired lease is free for any node
  lease_owner  text,
  lease_until  timestamptz,
  ended_at     timestamptz
);
create index batches_list_idx on batches (created_at desc, id desc);
create index batches_running_idx on batches (created_at) where state = 'running';

-- One row per instance a batch reached, written in the transaction that applied the operation
-- to it: a row present means the instance is done with, whatever happened after.
-- No foreign key to instances: retention may delete the instance, the result stays.
create table batch_results (
  batch_id     uuid not null references batches (id) on delete cascade,
  instance_id  uuid not null,
  outcome      text not null check (outcome in ('done', 'failed', 'skipped')),
  message      text,
  at           timestamptz not null default now(),
  primary key (batch_id, instance_id)
);
