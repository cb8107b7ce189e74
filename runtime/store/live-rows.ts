// How a look-up of one instance's live rows names the live state, where the table also has
// a partial index over that state for other readers (the due timers, the open incidents).
// Written as the states a row is not, these predicates do not imply that index's
// (`state = 'waiting'`, `status = 'open'`), so the planner cannot take it: with statistics
// from a moment when no row was live, it counted one live row, found that index as cheap
// as the instance's and read every live row of the table to find the instance's
// (docs/PERFORMANCE.md, "Session 9"). The tables' check constraints keep the two forms equal.

/** A waiting timer; matches the predicate of timers_instance_idx (migration 0015). */
export const OPEN_TIMER_SQL = "state not in ('fired', 'canceled')";

/** An open incident; incidents_instance_idx has no predicate. */
export const OPEN_INCIDENT_SQL = "status <> 'resolved'";
