// Timer start events: scheduled at deploy, each firing starts one instance.
import type { Plan } from '../compiler/plan.ts';
import type { Engine } from './context.ts';
import { startInTransaction } from './instances.ts';
import { withTransaction } from '../store/db.ts';
import { findDefinitionById } from '../store/definitions.ts';
import {
  findDueStartTimers,
  lockStartScheduleOfTimer,
  markStartTimerFired,
  scheduleNextStartTimer,
  type StartTimerSpec,
} from '../store/start-timers.ts';
import { cycleOf, firstDue, isCron, nextCron } from '../shared/timers.ts';

/** The start timers a newly deployed plan needs. */
export function startTimersOf(plan: Plan): StartTimerSpec[] {
  return plan.steps.flatMap((step) => {
    if (step.kind !== 'startEvent' || step.wait?.trigger !== 'timer') return [];
    const due = firstDue(step.wait.timer);
    if (!due.ok) return [];
    const cycle = cycleOf(step.wait.timer);
    return [
      {
        stepId: step.id,
        at: 'at' in due.due ? due.due.at : null,
        delay: 'interval' in due.due ? due.due.interval : null,
        cycleInterval: cycle?.interval ?? null,
        repeatsLeft: cycle && cycle.repeats !== null ? cycle.repeats - 1 : null,
      },
    ];
  });
}

/**
 * Fires one due start timer: the guarded update makes one scheduler win; the
 * instance starts in the same transaction, and a cycle schedules its next firing.
 */
export async function fireStartTimer(engine: Engine, timerId: string): Promise<boolean> {
  return withTransaction(engine.pool, async (tx) => {
    await lockStartScheduleOfTimer(tx, timerId); // first: a deploy takes it before the timer rows too
    const fired = await markStartTimerFired(tx, timerId);
    if (!fired) return false;
    const definition = await findDefinitionById(tx, fired.definition_id);
    if (!definition) return false;
    await startInTransaction(engine, tx, { definitionKey: definition.key, version: definition.version }, fired.step_id);
    const more = fired.repeats_left === null || fired.repeats_left > 0;
    if (fired.cycle_interval && more) await scheduleNextStartTimer(tx, fired, definition.key);
    const timer = definition.plan.steps.find((s) => s.id === fired.step_id)?.wait;
    if (timer?.trigger === 'timer' && timer.timer.kind === 'cycle' && isCron(timer.timer.expression)) {
      // A cron cycle fires at its next occurrence after this one; one that fired late skips what it missed.
      const after = new Date(Math.max(new Date(fired.due_at).getTime(), Date.now()));
      const next = nextCron(timer.timer, after);
      if ('at' in next) await scheduleNextStartTimer(tx, fired, definition.key, next.at);
    }
    return true;
  });
}

export async function fireDueStartTimers(engine: Engine, batch: number): Promise<number> {
  let fired = 0;
  for (const timer of await findDueStartTimers(engine.pool, batch)) {
    if (await fireStartTimer(engine, timer.id)) fired++;
  }
  return fired;
}
