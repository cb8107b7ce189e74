// When a catch or boundary timer is due. A timer written as an expression (`${remindAt}`,
// `= duration("PT" + string(hours) + "H")`) is evaluated over the variables the step sees when
// it starts waiting; its text is then read as the timer's kind says. A value that cannot be read,
// or a date already past, is a problem the caller turns into an incident: never a timer that
// silently never fires.
import type { TimerSpec } from '../compiler/plan.ts';
import type { Variables } from '../model/effects.ts';
import { cycleOf, firstDue, isCron, type TimerCheck } from '../shared/timers.ts';
import { evaluateValue } from './loops.ts';

export function timerDue(timer: TimerSpec, vars: Variables, now = Date.now()): TimerCheck {
  if (timer.feel === undefined) return firstDue(timer);
  const value = evaluateValue(timer.feel, vars);
  if (!value.ok) return value;
  if (typeof value.value !== 'string' || value.value.trim() === '')
    return {
      ok: false,
      message: `"${timer.expression}" gives ${JSON.stringify(value.value)}, not the text of a ${KIND_NAMES[timer.kind]}`,
    };
  const due = firstDue({ kind: timer.kind, expression: value.value.trim(), ...(timer.quartz ? { quartz: true as const } : {}) });
  if (!due.ok) return { ok: false, message: `"${timer.expression}" gives "${value.value}": ${due.message}` };
  if ('at' in due.due && Date.parse(due.due.at) < now)
    return { ok: false, message: `"${timer.expression}" gives ${due.due.at}, which is already past` };
  return due;
}

const KIND_NAMES: Record<TimerSpec['kind'], string> = {
  duration: 'duration (PT10M)',
  date: 'date and time (2026-12-01T09:00:00Z)',
  cycle: 'cycle (R3/PT1H)',
};

/**
 * When a repeating boundary's cycle fires next, after `firings` firings: one period from now (an
 * ISO cycle's start lies behind it), or the cron pattern's next occurrence; undefined once an
 * `R<n>` cycle has fired n times.
 */
export function nextCycleDue(timer: TimerSpec, vars: Variables): (firings: number) => TimerCheck | undefined {
  return (firings) => {
    let expression = timer.expression;
    if (timer.feel !== undefined) {
      const value = evaluateValue(timer.feel, vars);
      if (!value.ok) return value;
      if (typeof value.value !== 'string')
        return { ok: false, message: `"${timer.expression}" gives ${JSON.stringify(value.value)}, not the text of a cycle` };
      expression = value.value.trim();
    }
    const spec: TimerSpec = { kind: 'cycle', expression, ...(timer.quartz ? { quartz: true as const } : {}) };
    if (isCron(expression)) return firstDue(spec);
    const cycle = cycleOf(spec);
    if (!cycle) return { ok: false, message: `"${expression}" is not a cycle such as R3/PT1H` };
    return cycle.repeats !== null && firings >= cycle.repeats ? undefined : { ok: true, due: { interval: cycle.interval } };
  };
}
