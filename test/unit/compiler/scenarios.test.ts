import { describe, expect, it } from 'vitest';
import { ALWAYS, ScenarioAlgebra, TooManyScenarios, conflictOf, type Scenarios } from '../../../runtime/compiler/scenarios.ts';

function asObjects(scenarios: Scenarios): Record<string, string>[] {
  return scenarios.map((term) => Object.fromEntries(term));
}

describe('ScenarioAlgebra', () => {
  it('restricts, and finds contradictions', () => {
    const algebra = new ScenarioAlgebra();
    algebra.declare('G', ['a', 'b']);
    const a = algebra.restrict(ALWAYS, 'G', 'a');
    const b = algebra.restrict(ALWAYS, 'G', 'b');
    expect(asObjects(a)).toEqual([{ G: 'a' }]);
    expect(algebra.both(a, b)).toEqual([]);
    expect(algebra.both(a, a)).toEqual(a);
  });

  it('folds a choice away once every outcome is merged back', () => {
    const algebra = new ScenarioAlgebra();
    algebra.declare('G', ['a', 'b', 'c']);
    const parts = ['a', 'b', 'c'].map((o) => algebra.restrict(ALWAYS, 'G', o));
    expect(asObjects(algebra.either(parts.slice(0, 2)))).toEqual([{ G: 'a' }, { G: 'b' }]);
    expect(asObjects(algebra.either(parts))).toEqual([{}]);
  });

  it('absorbs terms implied by smaller ones', () => {
    const algebra = new ScenarioAlgebra();
    algebra.declare('G', ['a', 'b']);
    algebra.declare('H', ['x', 'y']);
    const narrow = algebra.restrict(algebra.restrict(ALWAYS, 'G', 'a'), 'H', 'x');
    const wide = algebra.restrict(ALWAYS, 'G', 'a');
    expect(asObjects(algebra.either([narrow, wide]))).toEqual([{ G: 'a' }]);
  });

  it('refuses to grow without bound', () => {
    const algebra = new ScenarioAlgebra();
    let scenarios: Scenarios = ALWAYS;
    const grow = () => {
      for (let i = 0; i < 12; i++) {
        algebra.declare(`V${i}`, ['a', 'b', 'c']);
        // keep only two of three outcomes so nothing folds
        scenarios = algebra.either([algebra.restrict(scenarios, `V${i}`, 'a'), algebra.restrict(scenarios, `V${i}`, 'b')]);
      }
    };
    expect(grow).toThrow(TooManyScenarios);
  });

  it('names the variable on which two terms disagree', () => {
    expect(
      conflictOf(
        new Map([
          ['G', 'a'],
          ['H', 'x'],
        ]),
        new Map([['H', 'y']]),
      ),
    ).toBe('H');
    expect(conflictOf(new Map([['G', 'a']]), new Map([['H', 'y']]))).toBeUndefined();
  });
});
