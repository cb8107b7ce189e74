import { describe, expect, it } from 'vitest';
import { firstDue, isIsoDuration } from '../../../runtime/shared/timers.ts';

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
});
