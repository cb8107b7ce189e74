// Rate limit for requests without a valid token: a token bucket per client address.
// Failures take a token; an empty bucket answers 429 before any token lookup, so
// guessing tokens costs the guesser time and the database nothing.

export interface FailureLimiterOptions {
  /** failures allowed in a burst */
  burst: number;
  /** failures refilled per minute */
  perMinute: number;
  /** addresses tracked at most; the oldest are forgotten first */
  maxClients?: number;
}

interface Bucket {
  tokens: number;
  at: number;
}

export class FailureLimiter {
  private readonly buckets = new Map<string, Bucket>();

  constructor(private readonly opts: FailureLimiterOptions) {}

  /** ms until this client may try again; 0 when it may now */
  retryAfterMs(client: string, now = Date.now()): number {
    const b = this.refill(client, now);
    if (!b || b.tokens >= 1) return 0;
    return Math.ceil(((1 - b.tokens) * 60_000) / this.opts.perMinute);
  }

  describe(): string {
    return `${this.opts.burst} at once, then ${this.opts.perMinute} a minute`;
  }

  recordFailure(client: string, now = Date.now()): void {
    const b = this.refill(client, now) ?? { tokens: this.opts.burst, at: now };
    b.tokens = Math.max(0, b.tokens - 1);
    this.buckets.delete(client); // re-insert: Map order is then least recently failed first
    this.buckets.set(client, b);
    if (this.buckets.size > (this.opts.maxClients ?? 10_000)) {
      const oldest = this.buckets.keys().next().value;
      if (oldest !== undefined) this.buckets.delete(oldest);
    }
  }

  private refill(client: string, now: number): Bucket | undefined {
    const b = this.buckets.get(client);
    if (!b) return undefined;
    b.tokens = Math.min(this.opts.burst, b.tokens + ((now - b.at) * this.opts.perMinute) / 60_000);
    b.at = now;
    if (b.tokens >= this.opts.burst) {
      this.buckets.delete(client);
      return undefined;
    }
    return b;
  }
}
