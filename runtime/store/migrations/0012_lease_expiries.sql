-- Why: issue 7 (RELIABILITY.md, "lease expiry never uses a retry"). A task that kills
-- every worker that takes it would cycle forever. Its expired leases are now counted;
-- past `retries + the allowance` the engine ends it like a task out of retries.
alter table external_tasks add column lease_expiries integer not null default 0 check (lease_expiries >= 0);
