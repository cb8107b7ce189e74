// Timers of timer start events: one waiting row per start event of the latest version of a key.
import type { Queryable } from './db.ts';
import { notifyAfterCommit } from './notifications.ts';

export interface StartTimerSpec {
  stepId: string;
  /** first due time: an absolute time (never before now) or a delay from now */
  at: string | null;
  delay: string | null;
  /** period of a cycle; null for a one-off timeDate */
  cycleInterval: string | null;
  /** firings left after this one; null: forever */
  repeatsLeft: number | null;
}

export interface StartTimerRow {
  id: string;
  definition_id: string;
  step_id: string;
  due_at: Date;
  cycle_interval: string | null;
  repeats_left: number | null;
}

/**
 * Serializes a deploy's replacement of a key's schedule with the scheduling of a
 * cycle's next firing: without it, a firing that commits while a deploy runs could
 * insert an old version's next timer that the deploy's cancel cannot see.
 */
async function lockStartSchedule(db: Queryable, key: string): Promise<void> {
  await db.query({
    name: 'lock_start_schedule',
    text: `select pg_advisory_xact_lock(hashtext('baton:start-schedule:' || $1::text))`,
    values: [key],
  });
}

/** The same lock, taken by a firing before it touches the timer row (deploys take it before theirs). */
export async function lockStartScheduleOfTimer(db: Queryable, timerId: string): Promise<void> {
  await db.query({
    name: 'lock_start_schedule_of_timer',
    text: `select pg_advisory_xact_lock(hashtext('baton:start-schedule:' || d.key))
             from timers t join definitions d on d.id = t.definition_id where t.id = $1`,
    values: [timerId],
  });
}

/** A new version replaces the old schedule: waiting start timers of other versions of the key are canceled. */
export async function replaceStartTimers(
  db: Queryable,
  definitionId: string,
  key: string,
  timers: StartTimerSpec[],
): Promise<void> {
  await lockStartSchedule(db, key);
  await db.query(
    `update timers set state = 'canceled'
      where instance_id is null and state = 'waiting'
        and definition_id in (select id from definitions where key = $1 and id <> $2)`,
    [key, definitionId],
  );
  if (timers.length === 0) return;
  await db.query(
    `insert into timers (definition_id, step_id, generation, due_at, cycle_interval, repeats_left)
                select $1, x.step_id, 1,
                       case when x.at is not null then greatest(x.at::timestamptz, now()) else now() + x.delay::interval end,
                       x.cycle_interval, x.repeats_left
                  from unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::int[]) as x(step_id, at, delay, cycle_interval, repeats_left)`,
    [
      definitionId,
      timers.map((t) => t.stepId),
      timers.map((t) => t.at),
      timers.map((t) => t.delay),
      timers.map((t) => t.cycleInterval),
      timers.map((t) => t.repeatsLeft),
    ],
  );
  notifyAfterCommit(db, { timers: true });
}

export async function findDueStartTimers(db: Queryable, limit: number): Promise<{ id: string }[]> {
  const { rows } = await db.query<{ id: string }>({
    name: 'find_due_start_timers',
    text: `select id from timers where instance_id is null and state = 'waiting' and due_at <= now() order by due_at limit $1`,
    values: [limit],
  });
  return rows;
}

/** Fires a due start timer once; any number of schedulers may try. */
export async function markStartTimerFired(db: Queryable, timerId: string): Promise<StartTimerRow | undefined> {
  const { rows } = await db.query<StartTimerRow>({
    name: 'mark_start_timer_fired',
    text: `update timers set state = 'fired', fired_at = now()
            where id = $1 and instance_id is null and state = 'waiting' and due_at <= now()
        returning id, definition_id, step_id, due_at, cycle_interval, repeats_left`,
    values: [timerId],
  });
  return rows[0];
}

/**
 * The next firing of a cycle keeps its cadence: one period after the previous due
 * time, or at `cronAt`, the next occurrence of a cron cycle. Only while the fired
 * version is still the latest of its key: a newer version's deploy replaced the schedule.
 */
export async function scheduleNextStartTimer(db: Queryable, fired: StartTimerRow, key: string, cronAt?: Date): Promise<void> {
  await lockStartSchedule(db, key);
  await db.query(
    `insert into timers (definition_id, step_id, generation, due_at, cycle_interval, repeats_left)
     select $1, $2, 1, coalesce($6::timestamptz, $3::timestamptz + $4::interval), $4, $5
      where not exists (select 1 from definitions d join definitions newer on newer.key = d.key and newer.version > d.version
                         where d.id = $1)`,
    [
      fired.definition_id,
      fired.step_id,
      fired.due_at,
      fired.cycle_interval,
      fired.repeats_left === null ? null : fired.repeats_left - 1,
      cronAt ?? null,
    ],
  );
}
