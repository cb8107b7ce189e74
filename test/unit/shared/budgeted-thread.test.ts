// The budgeted thread user code runs in: a first message that is slow (code compiled on first
// use) is answered at load time when the spec names a warm-up, outside any caller's budget.
import { describe, expect, it } from 'vitest';
import { BudgetedThread } from '../../../runtime/shared/budgeted-thread.ts';

// The first message this thread handles busies it for 1.5 s; every later one answers at once.
const SLOW_FIRST = `
let handled = 0;
const handle = (message) => {
  handled++;
  if (handled === 1) {
    const until = Date.now() + 1500;
    while (Date.now() < until);
  }
  return { handled, message };
};
`;

describe('BudgetedThread', () => {
  it('given a warm-up message, then the slow first run happens at load and the first call answers within its budget; without one, that call misses it', () => {
    const warmed = new BudgetedThread<string, { handled: number; message: string }>(() => ({
      source: SLOW_FIRST,
      data: {},
      heapMb: 16,
      warmUp: 'warm-up',
    }));
    const cold = new BudgetedThread<string, { handled: number; message: string }>(() => ({
      source: SLOW_FIRST,
      data: {},
      heapMb: 16,
    }));
    try {
      warmed.start();
      expect(warmed.call('first', 1000)).toEqual({ ok: true, answer: { handled: 2, message: 'first' } });
      cold.start();
      expect(cold.call('first', 1000)).toEqual({ ok: false, reason: 'budget' });
      // The cold thread was stopped at its budget; the next call starts a new one, which is slow again.
      expect(cold.call('again', 1000)).toEqual({ ok: false, reason: 'budget' });
    } finally {
      warmed.stop();
      cold.stop();
    }
  });
});
