import { describe, expect, it } from 'vitest';
import { firstDue, isCron, isIsoDuration, nextCron } from '../../../runtime/shared/timers.ts';

describe('timers', () => {
  it.each(['PT10S', 'P1DT2H', 'PT0.05S', 'P1W', 'P1Y2M3D', 'PT1H30M'])('accepts the duration %s', (d) => {
    expect(isIsoDuration(d)).toBe(true);
  });

  it.each(['', 'P', 'PT', '10S', 'PT-1S', 'P1H', 'PT1D'])('refuses the duration "%s"', (d) => {
    expect(isIsoDuration(d)).toBe(false);
  });

  it('given a duration, then it is due after that interval', () => {
    expect(firstDue({ kind: 'duration', expression: 'PT5M' })).toEqual({ ok: true, due: { interval: 'PT5M' } });
  });

  it('given a date with a zone, then it is due at that time; without a zone it is refused', () => {
    expect(firstDue({ kind: 'date', expression: '2026-12-01T09:00:00Z' })).toEqual({
      ok: true,
      due: { at: '2026-12-01T09:00:00Z' },
    });
    expect(firstDue({ kind: 'date', expression: '2026-12-01T09:00:00+01:00' })).toMatchObject({ ok: true });
    const noZone = firstDue({ kind: 'date', expression: '2026-12-01T09:00:00' });
    expect(noZone.ok).toBe(false);
    expect(!noZone.ok && noZone.message).toMatch(/with a zone/);
  });

  it('given a cycle, then its first firing is one period from now, or its start', () => {
    expect(firstDue({ kind: 'cycle', expression: 'R3/PT1H' })).toEqual({ ok: true, due: { interval: 'PT1H' } });
    expect(firstDue({ kind: 'cycle', expression: 'R/2026-12-01T09:00:00Z/P1D' })).toEqual({
      ok: true,
      due: { at: '2026-12-01T09:00:00Z' },
    });
    expect(firstDue({ kind: 'cycle', expression: 'every hour' }).ok).toBe(false);
  });

  it('tells a cron cycle (five to seven fields) from an ISO one', () => {
    expect(isCron('0 0/5 * * * ?')).toBe(true);
    expect(isCron('5 4 * * *')).toBe(true);
    expect(isCron('R3/PT1H')).toBe(false);
    expect(isCron('every hour')).toBe(false);
  });

  it('given a Quartz cycle (Camunda 7), then start/step and ? are read and weekdays count from Sunday = 1', () => {
    const after = new Date('2026-12-05T06:00:01Z'); // a Saturday
    const quartz = (expression: string) => nextCron({ kind: 'cycle', expression, quartz: true }, after);
    expect(quartz('0 0/5 * * * ?')).toEqual({ at: new Date('2026-12-05T06:05:00Z') });
    expect(quartz('0 0 9 ? * 2')).toEqual({ at: new Date('2026-12-07T09:00:00Z') }); // 2 = Monday
    const spring = nextCron({ kind: 'cycle', expression: '0 0 9 * * 1' }, after); // Zeebe: 1 = Monday too
    expect(spring).toEqual({ at: new Date('2026-12-07T09:00:00Z') });
    expect(nextCron({ kind: 'cycle', expression: '0 0 9 * * 0' }, after)).toEqual({ at: new Date('2026-12-06T09:00:00Z') });
  });

  it('given a cron cycle, then it is due at its next occurrence; one that cannot be read is refused with the reason', () => {
    const due = firstDue({ kind: 'cycle', expression: '* * * * * *' });
    expect(due.ok && 'at' in due.due && Date.parse(due.due.at) - Date.now()).toBeLessThanOrEqual(1000);
    const bad = firstDue({ kind: 'cycle', expression: '0 0 25 * * ?', quartz: true });
    expect(bad).toEqual({ ok: false, message: expect.stringContaining('is not a cron expression Baton reads') });
  });
});
