-- Why: with both partial indexes of `timers` on the predicate `state = 'waiting'`, a
-- look-up of an instance's waiting timers (a transition ending its wait, cancel,
-- terminate) can use either. When the table was last analyzed while no timer waited
-- (each one fired) and a burst of timers came since, PostgreSQL counts one waiting timer,
-- finds the two indexes equally cheap and takes the smaller, `timers_due_idx`: every such
-- look-up then reads all waiting timers, 7-40 ms each, until autovacuum analyzes the table
-- again (docs/PERFORMANCE.md, "Stale statistics and partial indexes"). The instance index
-- names the waiting state by the states it is not, and those look-ups say it the same way
-- (store/open-states.ts OPEN_TIMER_SQL): they match this predicate and do not imply the due
-- index's, so no estimate can send them there. The check constraint on `state` keeps the
-- two equal.
drop index timers_instance_idx;
create index timers_instance_idx on timers (instance_id, step_id) where state not in ('fired', 'canceled');
