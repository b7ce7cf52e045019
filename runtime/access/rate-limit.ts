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

  /** Consumes one point in every window; refused when any window is exhausted. */
  async consume(keyId: string): Promise<RateOutcome> {
    let tightest: { res: RateLimiterRes; points: number } | undefined;
    for (const w of this.windows) {
      try {
        const res = await w.limiter.consume(keyId);
        if (!tightest || res.remainingPoints < tightest.res.remainingPoints) tightest = { res, points: w.points };
      } catch (err) {
        if (!(err instanceof RateLimiterRes)) throw err;
        const reset = Math.max(1, Math.ceil(err.msBeforeNext / 1000));
        return {
          allowed: false,
          headers: { 'RateLimit-Limit': String(w.points), 'RateLimit-Remaining': '0', 'RateLimit-Reset': String(reset), 'Retry-After': String(reset) },
        };
      }
    }
    const { res, points } = tightest!;
    return {
      allowed: true,
      headers: { 'RateLimit-Limit': String(points), 'RateLimit-Remaining': String(res.remainingPoints), 'RateLimit-Reset': String(Math.max(1, Math.ceil(res.msBeforeNext / 1000))) },
    };
  }
}
