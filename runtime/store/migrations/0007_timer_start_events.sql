-- Why: timer start events. Their timers belong to a definition, not an instance
-- (instance_id null); a cycle keeps its period and how many firings are left so
-- each firing can schedule the next one.
alter table timers add column cycle_interval text;
alter table timers add column repeats_left integer check (repeats_left is null or repeats_left >= 0);
create index timers_start_idx on timers (definition_id) where instance_id is null and state = 'waiting';
