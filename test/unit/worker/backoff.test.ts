import { describe, expect, it } from 'vitest';
import { createBackoff, sleep } from '../../../runtime/worker/backoff.ts';

describe('createBackoff', () => {
  it('given repeated failures, then delays stay between half the minimum and a ceiling that doubles up to the maximum', () => {
    const b = createBackoff(100, 1_000);
    const ceilings = [100, 200, 400, 800, 1_000, 1_000, 1_000];
    for (const ceiling of ceilings) {
      const d = b.next();
      expect(d).toBeGreaterThanOrEqual(50);
      expect(d).toBeLessThanOrEqual(ceiling);
    }
  });

  it('given reset, then the next delay is back under the minimum ceiling', () => {
    const b = createBackoff(100, 10_000);
    for (let i = 0; i < 10; i++) b.next();
    b.reset();
    expect(b.next()).toBeLessThanOrEqual(100);
  });

  it('given many draws, then delays are spread (jitter), not all equal', () => {
    const b = createBackoff(1_000, 1_000);
    const draws = new Set(Array.from({ length: 200 }, () => Math.round(b.next())));
    expect(draws.size).toBeGreaterThan(5);
  });
});

describe('sleep', () => {
  it('given an abort, then it resolves at once', async () => {
    const ctl = new AbortController();
    const began = Date.now();
    const p = sleep(60_000, ctl.signal);
    ctl.abort();
    await p;
    expect(Date.now() - began).toBeLessThan(1_000);
  });
});
