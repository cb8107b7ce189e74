-- Why: issue 8 ("stays fast when millions of finished instances pile up"). /metrics
-- counted instances by grouping the whole `instances` table at every scrape: 120 ms of
-- PostgreSQL per scrape and node with a million finished instances, growing with
-- history. The `baton_instances` gauge now counts the live statuses only, and finished
-- ones are counted as they end (ops/instruments.ts). This index served running and
-- incident; it now also holds compensating instances, so every live status is read
-- through it, whatever the history holds. Statements naming running or incident still
-- imply its predicate.
drop index instances_status_idx;
create index instances_status_idx on instances (status, created_at desc) where status in ('running', 'incident', 'compensating');
