-- Why: Baton stays fast when millions of finished instances pile up (docs/PERFORMANCE.md,
-- "Reads that grow with history"). Counting instances by grouping the whole `instances`
-- table at every /metrics scrape costs 120 ms of PostgreSQL per scrape and node with a
-- million finished instances, growing with history. The `baton_instances` gauge counts
-- the live statuses only, and finished ones are counted as they end (ops/instruments.ts).
-- This index holds running, incident and compensating instances, so every live status is
-- read through it, whatever the history holds. Statements naming running or incident
-- alone imply its predicate too.
drop index instances_status_idx;
create index instances_status_idx on instances (status, created_at desc) where status in ('running', 'incident', 'compensating');
