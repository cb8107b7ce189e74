-- Why: API callers authenticate with bearer tokens; a token is shown once and only its
-- SHA-256 is kept (tokens are 256-bit random, so a plain hash cannot be brute-forced).
-- Revoked tokens stay as rows so `baton token list` shows who had access.
create table tokens (
  name       text primary key check (length(name) between 1 and 100),
  role       text not null check (role in ('admin', 'worker', 'viewer')),
  token_hash text not null unique check (length(token_hash) = 64),
  created_at timestamptz not null default now(),
  revoked_at timestamptz
);

-- Why: retention deletes ended instances oldest first, in batches; without this index
-- every batch would scan all instances.
create index instances_retention_idx on instances (ended_at, id)
  where status in ('completed', 'canceled');

-- Why: /metrics reports lease expiries of the last minutes; a partial index keeps that
-- scrape off the whole events table and costs nothing for other event kinds.
create index events_lock_expired_idx on events (at) where kind = 'task:lock_expired';
