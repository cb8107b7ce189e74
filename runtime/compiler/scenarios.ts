// A tiny algebra for "when is this flow taken?", used by soundness.ts.
// Every choosing gateway is a decision variable whose outcomes are free (the
// conditions are not evaluated). A Scenarios value is a formula in disjunctive
// normal form: a list of terms, each term a set of outcomes that must all hold.
// [] means never taken, [{}] means always taken.

/** One combination of decisions: variable -> outcome. */
export type Term = ReadonlyMap<string, string>;
export type Scenarios = readonly Term[];

export const ALWAYS: Scenarios = [new Map()];

/** Thrown when formulas grow past TERM_LIMIT; soundness.ts then skips its checks with a warning. */
export class TooManyScenarios extends Error {}

/** Far above what hand-drawn processes need; it bounds the work for generated, heavily branched ones. */
const TERM_LIMIT = 400;

export class ScenarioAlgebra {
  /** outcomes each decision variable can take */
  private readonly domains = new Map<string, readonly string[]>();

  declare(variable: string, outcomes: readonly string[]): void {
    this.domains.set(variable, outcomes);
  }

  /** `scenarios` AND (variable = outcome) */
  restrict(scenarios: Scenarios, variable: string, outcome: string): Scenarios {
    return this.both(scenarios, [new Map([[variable, outcome]])]);
  }

  /** Scenarios in which both hold. */
  both(a: Scenarios, b: Scenarios): Scenarios {
    const terms: Term[] = [];
    for (const left of a) {
      for (const right of b) {
        const merged = mergeTerms(left, right);
        if (merged) terms.push(merged);
      }
    }
    return this.simplify(terms);
  }

  /** Scenarios in which at least one holds. */
  either(list: readonly Scenarios[]): Scenarios {
    return this.simplify(list.flat());
  }

  /**
   * Keeps formulas small: drops terms implied by a smaller term (absorption) and
   * folds terms that differ only in one variable covering all its outcomes
   * (after an exclusive split and merge, the choice no longer matters).
   */
  private simplify(input: readonly Term[]): Scenarios {
    let terms = absorb(input);
    for (let changed = true; changed;) {
      changed = false;
      for (const variable of this.domains.keys()) {
        const folded = this.fold(terms, variable);
        if (folded.length < terms.length) {
          terms = absorb(folded);
          changed = true;
        }
      }
    }
    if (terms.length > TERM_LIMIT) throw new TooManyScenarios();
    return terms;
  }

  private fold(terms: readonly Term[], variable: string): Term[] {
    const outcomes = this.domains.get(variable) ?? [];
    if (outcomes.length === 0) return [...terms];
    const groups = new Map<string, { rest: Term; seen: Set<string> }>();
    for (const term of terms) {
      const outcome = term.get(variable);
      if (outcome === undefined) continue;
      const rest = new Map(term);
      rest.delete(variable);
      const key = keyOf(rest);
      const group = groups.get(key) ?? { rest, seen: new Set<string>() };
      group.seen.add(outcome);
      groups.set(key, group);
    }
    const complete = [...groups.values()].filter((g) => outcomes.every((o) => g.seen.has(o)));
    if (complete.length === 0) return [...terms];
    const folded = new Set(complete.map((g) => keyOf(g.rest)));
    const kept = terms.filter((term) => {
      if (!term.has(variable)) return true;
      const rest = new Map(term);
      rest.delete(variable);
      return !folded.has(keyOf(rest));
    });
    return [...kept, ...complete.map((g) => g.rest)];
  }
}

function mergeTerms(a: Term, b: Term): Term | undefined {
  const merged = new Map(a);
  for (const [variable, outcome] of b) {
    const existing = merged.get(variable);
    if (existing !== undefined && existing !== outcome) return undefined;
    merged.set(variable, outcome);
  }
  return merged;
}

/** Removes duplicates and every term that contains a smaller term. */
function absorb(terms: readonly Term[]): Term[] {
  const sorted = [...new Map(terms.map((t) => [keyOf(t), t])).values()].sort((a, b) => a.size - b.size);
  const kept: Term[] = [];
  for (const term of sorted) {
    if (!kept.some((smaller) => implies(term, smaller))) kept.push(term);
  }
  return kept;
}

/** True when every outcome of `smaller` is also in `term`. */
function implies(term: Term, smaller: Term): boolean {
  for (const [variable, outcome] of smaller) if (term.get(variable) !== outcome) return false;
  return true;
}

function keyOf(term: Term): string {
  return JSON.stringify([...term.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** The first variable on which the two terms disagree, if any. */
export function conflictOf(a: Term, b: Term): string | undefined {
  for (const [variable, outcome] of a) {
    const other = b.get(variable);
    if (other !== undefined && other !== outcome) return variable;
  }
  return undefined;
}
