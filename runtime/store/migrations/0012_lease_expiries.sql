-- Why: a task that kills every worker that takes it would cycle forever (docs/RELIABILITY.md,
-- "Known weak spots": lease expiries are counted). Its expired leases are counted; past
-- `retries + the allowance` the engine ends it like a task out of retries.
alter table external_tasks add column lease_expiries integer not null default 0 check (lease_expiries >= 0);
