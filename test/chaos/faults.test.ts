// BATON_FAULTS parsing: every documented form, and a typo refused rather than silently ignored.
import { describe, expect, it } from 'vitest';
import { fault, parseFaults } from '../../runtime/shared/faults.ts';

describe('fault points', () => {
  it('given BATON_FAULTS with actions and modifiers, then each point gets its rule', () => {
    const rules = parseFaults('task:after-side-effect, timer:before-fire:delay:300:once,message:before-match:hang:chance:0.25');
    expect(Object.fromEntries(rules)).toEqual({
      'task:after-side-effect': { point: 'task:after-side-effect', action: { kind: 'crash' }, once: false, chance: 1 },
      'timer:before-fire': { point: 'timer:before-fire', action: { kind: 'delay', ms: 300 }, once: true, chance: 1 },
      'message:before-match': { point: 'message:before-match', action: { kind: 'hang' }, once: false, chance: 0.25 },
    });
    expect(parseFaults(undefined).size).toBe(0);
    expect(parseFaults('').size).toBe(0);
  });

  it('given an unknown point or action, then it is refused with the known names', () => {
    expect(() => parseFaults('task:after-side-efect')).toThrow(
      /unknown fault point "task:after-side-efect".*task:after-side-effect/,
    );
    expect(() => parseFaults('fetch:after-lock:explode')).toThrow(/unknown action "explode"/);
    expect(() => parseFaults('fetch:after-lock:delay:soon')).toThrow(/needs milliseconds/);
    expect(() => parseFaults('fetch:after-lock:chance:2')).toThrow(/probability/);
  });

  it('given no BATON_FAULTS in this process, then a hook returns nothing to wait for', () => {
    expect(process.env.BATON_FAULTS ?? '').toBe('');
    expect(fault('api:after-complete-commit')).toBeUndefined();
  });
});
