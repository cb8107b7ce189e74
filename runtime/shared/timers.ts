// ISO-8601 timer expressions of BPMN timer events. Checked here at deploy; the
// due time itself is computed by PostgreSQL (its clock decides, and it reads the
// same ISO forms: `'PT10S'::interval`, `'2026-12-01T09:00:00Z'::timestamptz`).
// A cron cycle (Camunda 7's Quartz, Zeebe's Spring form, both with seconds) is read by
// croner, in UTC; its next occurrence is computed here and handed over as a time.
import { Cron } from 'croner';
import type { TimerSpec } from '../compiler/plan.ts';

const DURATION = /^P(?!$)(\d+Y)?(\d+M)?(\d+W)?(\d+D)?(T(?=\d)(\d+H)?(\d+M)?(\d+(\.\d+)?S)?)?$/;
// A date with a time and a zone (Z or ±hh:mm): a date without one is ambiguous across nodes.
const DATE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/;
const CYCLE = /^R(\d*)\/(?:([^/]+)\/)?([^/]+)$/;

/** Where the first due time comes from: a delay from now, or an absolute time (never earlier than now). */
export type DueRule = { interval: string } | { at: string };

export type TimerCheck = { ok: true; due: DueRule } | { ok: false; message: string };

export function isIsoDuration(text: string): boolean {
  return DURATION.test(text);
}

/** Validates a timer and tells how its first firing is computed. */
export function firstDue(timer: TimerSpec): TimerCheck {
  const text = timer.expression.trim();
  switch (timer.kind) {
    case 'duration':
      return isIsoDuration(text)
        ? { ok: true, due: { interval: text } }
        : { ok: false, message: `timeDuration "${text}" is not an ISO-8601 duration such as PT10S or P1DT2H` };
    case 'date':
      return checkDate(text, 'timeDate');
    case 'cycle': {
      if (isCron(text)) {
        const next = nextCron(timer, new Date());
        return 'message' in next ? { ok: false, message: next.message } : { ok: true, due: { at: next.at.toISOString() } };
      }
      const m = CYCLE.exec(text);
      if (!m || !isIsoDuration(m[3] ?? '')) {
        return { ok: false, message: `timeCycle "${text}" is not R[n]/duration or R[n]/start/duration (for example R3/PT1H)` };
      }
      if (m[2] === undefined) return { ok: true, due: { interval: m[3] as string } };
      return checkDate(m[2], 'timeCycle start');
    }
  }
}

function checkDate(text: string, what: string): TimerCheck {
  if (!DATE.test(text) || Number.isNaN(Date.parse(text))) {
    return {
      ok: false,
      message: `${what} "${text}" must be an ISO-8601 date and time with a zone, such as 2026-12-01T09:00:00Z or 2026-12-01T10:00:00+01:00`,
    };
  }
  return { ok: true, due: { at: text } };
}

/** An ISO cycle starts with R; five to seven fields are a cron expression. */
export function isCron(text: string): boolean {
  const fields = text.trim().split(/\s+/);
  return !text.trim().startsWith('R') && fields.length >= 5 && fields.length <= 7;
}

/** The first occurrence of a cron cycle after `after`; a pattern that cannot be read, or never fires again, says why. */
export function nextCron(timer: TimerSpec, after: Date): { at: Date } | { message: string } {
  const text = timer.expression.trim();
  let cron: Cron;
  try {
    // Quartz and Spring both write start/step ("0/5"), which croner reads with sloppyRanges.
    cron = new Cron(text, { timezone: 'UTC', paused: true, sloppyRanges: true, alternativeWeekdays: timer.quartz === true });
  } catch (cause) {
    return {
      message: `timeCycle "${text}" is not a cron expression Baton reads: ${cause instanceof Error ? cause.message : String(cause)}`,
    };
  }
  const at = cron.nextRun(after);
  return at ? { at } : { message: `timeCycle "${text}" never fires after ${after.toISOString()}` };
}

/** A cycle's period and how many firings it has (null: unbounded); undefined for other timers. */
export function cycleOf(timer: TimerSpec): { interval: string; repeats: number | null } | undefined {
  if (timer.kind !== 'cycle') return undefined;
  const m = CYCLE.exec(timer.expression.trim());
  if (!m || !isIsoDuration(m[3] ?? '')) return undefined;
  return { interval: m[3] as string, repeats: m[1] ? Number(m[1]) : null };
}
