// How a page of due timers is split into firing transactions: equal chunks, a multiple
// of the lanes, none above the cap, in due order.
import { describe, expect, it } from 'vitest';
import { FIRING_LANES, FIRINGS_PER_TRANSACTION, chunkFor } from '../../../runtime/engine/waits.ts';

const sizes = (n: number) =>
  chunkFor(
    Array.from({ length: n }, (_, i) => i),
    4,
    25,
  ).map((c) => c.length);

describe('chunkFor', () => {
  it('given a burst of 167 due timers and 4 lanes of at most 25, then 8 chunks of at most 21 (two even rounds), not 4 full ones and a short round', () => {
    expect(sizes(167)).toEqual([21, 21, 21, 21, 21, 21, 21, 20]);
  });

  it('given 100, 10, 3 or no timers, then one round of the lanes (or fewer chunks when there are fewer timers), in due order', () => {
    expect(sizes(100)).toEqual([25, 25, 25, 25]);
    expect(sizes(10)).toEqual([3, 3, 3, 1]);
    expect(sizes(3)).toEqual([1, 1, 1]);
    expect(sizes(0)).toEqual([]);
    expect(chunkFor([1, 2, 3, 4, 5], 4, 25).flat()).toEqual([1, 2, 3, 4, 5]);
  });

  it("given the scheduler's own lanes and cap, then a burst of 167 is one transaction of 41-42 a lane and 250 are two even rounds", () => {
    const own = (n: number) =>
      chunkFor(
        Array.from({ length: n }, (_, i) => i),
        FIRING_LANES,
        FIRINGS_PER_TRANSACTION,
      ).map((c) => c.length);
    expect(own(167)).toEqual([42, 42, 42, 41]);
    expect(own(250)).toEqual([32, 32, 32, 32, 32, 32, 32, 26]);
  });
});
