-- Why: issue 8. Both partial indexes of `timers` had the predicate `state = 'waiting'`, so
-- a look-up of an instance's waiting timers (a transition ending its wait, cancel,
-- terminate) could use either. When the table was last analyzed while no timer waited
-- (each one fired) and a burst of timers came since, PostgreSQL counted one waiting timer,
-- found the two indexes equally cheap and took the smaller, `timers_due_idx`: every such
-- look-up then read all waiting timers, 7-40 ms each, until autovacuum analyzed the table
-- again (docs/PERFORMANCE.md, "Session 9"). The instance index now names the waiting state
-- by the states it is not, and those look-ups say it the same way (store/live-rows.ts
-- OPEN_TIMER_SQL): they match this predicate and no longer imply the due index's, so no
-- estimate can send them there. The check constraint on `state` keeps the two equal.
drop index timers_instance_idx;
create index timers_instance_idx on timers (instance_id, step_id) where state not in ('fired', 'canceled');
