// The where clause of a list statement that names only the filters given: a condition
// like `($1 is null or status = $1)` leaves a generic plan (the pool's, db.ts) no index
// to go by, so each filter given adds its own condition and placeholder.

/**
 * Joins the conditions given (false and undefined are left out) with `and`. Each condition
 * takes its values through `param`, which answers the next placeholder ($1, $2, …); call it
 * only for a condition that is kept (`given && \`col = ${param(value)}\``).
 */
export function whereGiven(conditions: (param: (value: unknown) => string) => (string | false | undefined)[]): {
  sql: string;
  values: unknown[];
} {
  const values: unknown[] = [];
  const kept = conditions((value) => `$${values.push(value)}`).filter((c): c is string => typeof c === 'string');
  return { sql: kept.length > 0 ? kept.join(' and ') : 'true', values };
}
