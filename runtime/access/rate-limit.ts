// Per-key rate limits: a burst window and a per-minute window, both enforced (rate-limiter-flexible;
// in memory on the embedded store, in MongoDB when the service runs on MongoDB so instances share counters).
import { RateLimiterMemory, RateLimiterMongo, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { RateOutcome } from '../mcp/backend.ts';

export interface RateLimits {
  burstPoints: number;
  burstSeconds: number;
  minutePoints: number;
}

export class KeyRateLimiter {
  private readonly windows: Array<{ limiter: RateLimiterAbstract; points: number }>;

  constructor(limits: RateLimits, mongo?: { client: unknown; dbName?: string }) {
    const make = (points: number, duration: number, keyPrefix: string): RateLimiterAbstract =>
      mongo
        ? new RateLimiterMongo({ storeClient: mongo.client, dbName: mongo.dbName, tableName: 'rate_limits', points, duration, keyPrefix })
        : new RateLimiterMemory({ points, duration, keyPrefix });
    this.windows = [
      { limiter: make(limits.burstPoints, limits.burstSeconds, 'burst'), points: limits.burstPoints },
      { limiter: make(limits.minutePoints, 60, 'minute'), points: limits.minutePoints },
    ];
  }

  /** Counts `requests` in every window; refused when any window is exhausted. */
  async consume(keyId: string, requests = 1): Promise<RateOutcome> {
    let tightest: { res: RateLimiterRes; limit: number } | undefined;
    for (const w of this.windows) {
      try {
        const res = await w.limiter.consume(keyId, requests);
        if (!tightest || res.remainingPoints < tightest.res.remainingPoints) tightest = { res, limit: w.points };
      } catch (err) {
        if (!(err instanceof RateLimiterRes)) throw err;
        const reset = Math.max(1, Math.ceil(err.msBeforeNext / 1000));
        return {
          allowed: false,
          headers: { 'RateLimit-Limit': String(w.points), 'RateLimit-Remaining': '0', 'RateLimit-Reset': String(reset), 'Retry-After': String(reset) },
        };
      }
    }
    const { res, limit } = tightest!;
    return {
      allowed: true,
      headers: {
        'RateLimit-Limit': String(limit),
        'RateLimit-Remaining': String(res.remainingPoints),
        'RateLimit-Reset': String(Math.max(1, Math.ceil(res.msBeforeNext / 1000))),
      },
    };
  }
}
