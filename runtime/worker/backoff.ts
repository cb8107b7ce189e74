// Exponential back-off with full jitter, and a sleep that stop() can cut short.

export interface Backoff {
  /** the next delay; grows with each call until reset() */
  next(): number;
  reset(): void;
}

export function createBackoff(minMs: number, maxMs: number): Backoff {
  let failures = 0;
  return {
    next() {
      const ceiling = Math.min(maxMs, minMs * 2 ** failures);
      failures = Math.min(failures + 1, 30);
      // Full jitter spreads many workers that lost the server at the same instant.
      return Math.max(minMs / 2, Math.random() * ceiling);
    },
    reset() {
      failures = 0;
    },
  };
}

/** Resolves after ms, or at once when signal aborts (never rejects). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}
