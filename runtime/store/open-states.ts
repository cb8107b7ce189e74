// How a look-up of one instance's (or one task's) open rows names the open state, where the
// table also has a partial index over that state for other readers (the due timers, the open
// incidents, the locked and ready tasks by topic or expiry).
// Written as the states a row is not, these predicates do not imply that index's
// (`state = 'waiting'`, `status = 'open'`), so the planner cannot take it: with statistics
// from a moment when no row was open, it would count one open row, find that index as cheap
// as the instance's and read every open row of the table to find the instance's (a timer
// cancel 13.3 ms with 10,000 waiting; docs/PERFORMANCE.md, "Stale statistics and partial
// indexes"). The tables' check constraints keep the two forms equal.

/** A timer not yet fired, waiting or suspended; matches the predicate of timers_instance_idx (migration 0015). */
export const OPEN_TIMER_SQL = "state not in ('fired', 'canceled')";

/** A timer that may fire: open and not suspended with its instance; implies timers_instance_idx's predicate. */
export const WAITING_TIMER_SQL = "state not in ('fired', 'canceled', 'suspended')";

/** An open incident; incidents_instance_idx has no predicate. */
export const OPEN_INCIDENT_SQL = "status <> 'resolved'";

/**
 * A task a worker holds, in look-ups by the task's id (the guards of complete, failure,
 * extend, unlock, progress). `state = 'locked'` lets stale statistics (analyzed while few
 * tasks were locked) send them through external_tasks_locked_topic_idx, reading every
 * locked task: 1.2 ms per guard with 3,000 held against 0.02 ms by the primary key.
 */
export const HELD_TASK_SQL = "state not in ('ready', 'done', 'failed', 'canceled', 'suspended')";

/** A task waiting to be fetched, in a look-up by its id (the ready indexes are by topic). */
export const READY_TASK_SQL = "state not in ('locked', 'done', 'failed', 'canceled', 'suspended')";

/** An open task (ready, locked, failed or suspended), in look-ups by task or instance id: what a cancel cancels, what Camunda lists. */
export const OPEN_TASK_SQL = "state not in ('done', 'canceled')";
