// Per-key rate limits: a burst window and a per-minute window, both enforced (rate-limiter-flexible).
//
// One process (the embedded store): counters in memory. Several instances (MongoDB): the counters are shared
// in the store, but a call does not write them: each instance reserves a block of a window's points from the
// shared counter and spends it locally, so most calls cost no store operation at all. Blocks are a fraction of
// what the window has left (so near the limit they shrink to single points and instances hold little unused),
// and a window the store says is used up is refused locally until it resets. The trade-off: an instance may hold
// a few reserved points it does not use before the window resets, so under a load above the limit a key gets
// slightly fewer calls than the limit (measured within 10%), never more. When the store does not answer in
// time or fails, each instance falls back to its own in-memory limits (so N instances allow up to N times the
// limit) instead of failing calls, and tries the store again for the next block.
import { RateLimiterMemory, RateLimiterMongo, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { RateOutcome } from '../mcp/backend.ts';
import type { IndexSpec, Store } from '../store/port.ts';

export interface RateLimits {
  burstPoints: number;
  burstSeconds: number;
  minutePoints: number;
}

/** Where shared counters live: the MongoDB client of the store. */
export interface SharedCounters {
  client: unknown;
  dbName: string;
}

export const RATE_LIMIT_COLLECTION = 'rate_limits';
/**
 * The shared counters' indexes: one document per key and window (rate-limiter-flexible replaces an expired one),
 * and their expiry (a TTL index where the server has them; elsewhere sweepExpiredCounters deletes them).
 */
export const RATE_LIMIT_INDEXES: IndexSpec[] = [
  { collection: RATE_LIMIT_COLLECTION, fields: ['key'], unique: true },
  { collection: RATE_LIMIT_COLLECTION, fields: ['expire'], expireAfterSeconds: 0 },
];

/** Deletes counters whose window ended (those of keys that were not used since; the others are replaced). */
export async function sweepExpiredCounters(store: Store): Promise<number> {
  return store.collection(RATE_LIMIT_COLLECTION).deleteMany({ expire: { $lt: new Date() } });
}

/** A block is this fraction of what the window had left at the last reservation. */
const BLOCK_FRACTION = 1 / 8;
/** How long a reservation may take before this call is judged by the in-memory fallback. */
const STORE_TIMEOUT_MS = 250;
/** After the store failed or was slow, calls use the fallback this long before the store is tried again. */
const DEGRADED_MS = 5000;

interface Verdict {
  allowed: boolean;
  remaining: number;
  resetMs: number;
}

interface Window {
  points: number;
  consume(key: string, requests: number): Promise<Verdict>;
}

export class KeyRateLimiter {
  private readonly windows: Window[];

  constructor(limits: RateLimits, shared?: SharedCounters) {
    const make = (points: number, duration: number, name: string): Window =>
      shared ? new ReservedWindow(points, duration, name, shared) : new LocalWindow(new RateLimiterMemory({ points, duration, keyPrefix: name }), points);
    this.windows = [make(limits.burstPoints, limits.burstSeconds, 'burst'), make(limits.minutePoints, 60, 'minute')];
  }

  /** Counts `requests` in every window; refused when any window is exhausted. */
  async consume(keyId: string, requests = 1): Promise<RateOutcome> {
    let tightest: { verdict: Verdict; limit: number } | undefined;
    for (const w of this.windows) {
      const verdict = await w.consume(keyId, requests);
      const reset = String(Math.max(1, Math.ceil(verdict.resetMs / 1000)));
      if (!verdict.allowed) {
        return { allowed: false, headers: { 'RateLimit-Limit': String(w.points), 'RateLimit-Remaining': '0', 'RateLimit-Reset': reset, 'Retry-After': reset } };
      }
      if (!tightest || verdict.remaining < tightest.verdict.remaining) tightest = { verdict, limit: w.points };
    }
    const { verdict, limit } = tightest!;
    return {
      allowed: true,
      headers: {
        'RateLimit-Limit': String(limit),
        'RateLimit-Remaining': String(verdict.remaining),
        'RateLimit-Reset': String(Math.max(1, Math.ceil(verdict.resetMs / 1000))),
      },
    };
  }
}

/** A window counted by one rate-limiter-flexible limiter, every call (in memory). */
class LocalWindow implements Window {
  constructor(
    private readonly limiter: RateLimiterAbstract,
    readonly points: number,
  ) {}

  async consume(key: string, requests: number): Promise<Verdict> {
    try {
      const res = await this.limiter.consume(key, requests);
      return { allowed: true, remaining: res.remainingPoints, resetMs: res.msBeforeNext };
    } catch (err) {
      if (!(err instanceof RateLimiterRes)) throw err;
      return { allowed: false, remaining: 0, resetMs: err.msBeforeNext };
    }
  }
}

/** What this instance holds of a key's window: points reserved and not spent yet, until the window resets. */
interface Allowance {
  points: number;
  /** What the shared window had left after the last reservation (the next block is a fraction of it). */
  sharedLeft: number;
  resetAt: number;
  /** The window is used up (the store refused a reservation): refuse locally until resetAt. */
  exhausted: boolean;
  /** A reservation under way: calls that find nothing left wait for it rather than reserve again. */
  reserving?: Promise<void>;
}

/** A window whose counter is shared by every instance, spent from locally reserved blocks (see the top of the file). */
class ReservedWindow implements Window {
  private readonly shared: RateLimiterMongo;
  private readonly fallback: LocalWindow;
  private readonly allowances = new Map<string, Allowance>();
  private sweptAt = Date.now();
  /** Until then the store is not asked: it failed or was too slow moments ago. */
  private degradedUntil = 0;

  constructor(
    readonly points: number,
    private readonly durationSeconds: number,
    name: string,
    counters: SharedCounters,
  ) {
    // Indexes are built with the store's (RATE_LIMIT_INDEXES): the library's own include a TTL index, which
    // FerretDB lacks, and would stop at it.
    this.shared = new RateLimiterMongo({
      storeClient: counters.client,
      dbName: counters.dbName,
      tableName: RATE_LIMIT_COLLECTION,
      keyPrefix: name,
      points,
      duration: durationSeconds,
      disableIndexesCreation: true,
    });
    this.fallback = new LocalWindow(new RateLimiterMemory({ points, duration: durationSeconds, keyPrefix: `${name}-fallback` }), points);
  }

  async consume(key: string, requests: number): Promise<Verdict> {
    const now = Date.now();
    if (now < this.degradedUntil) return this.fallback.consume(key, requests);
    this.sweep(now);
    let a = this.allowances.get(key);
    if (!a || now >= a.resetAt) {
      a = { points: 0, sharedLeft: this.points, resetAt: now + this.durationSeconds * 1000, exhausted: false };
      this.allowances.set(key, a);
    }
    while (a.points < requests && !a.exhausted) {
      if (a.reserving) {
        await a.reserving;
        continue;
      }
      // The reservation this call waited for may have found the store down.
      if (Date.now() < this.degradedUntil) return this.fallback.consume(key, requests);
      const block = Math.max(requests, Math.floor(a.sharedLeft * BLOCK_FRACTION));
      const reservation = this.reserve(key, a, block);
      a.reserving = reservation.then(() => undefined);
      const reserved = await reservation.finally(() => (a.reserving = undefined));
      if (reserved === 'unavailable') {
        this.degradedUntil = Date.now() + DEGRADED_MS;
        return this.fallback.consume(key, requests);
      }
    }
    if (a.exhausted || a.points < requests) return { allowed: false, remaining: 0, resetMs: Math.max(0, a.resetAt - Date.now()) };
    a.points -= requests;
    return { allowed: true, remaining: a.points + a.sharedLeft, resetMs: Math.max(0, a.resetAt - Date.now()) };
  }

  /** Takes `block` points from the shared counter into the allowance; 'unavailable' when the store failed or was too slow. */
  private async reserve(key: string, a: Allowance, block: number): Promise<'reserved' | 'exhausted' | 'unavailable'> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), STORE_TIMEOUT_MS)));
    try {
      const res = await Promise.race([this.shared.consume(key, block), late]);
      if (res === 'late') return 'unavailable';
      a.points += block;
      a.sharedLeft = res.remainingPoints;
      a.resetAt = Date.now() + res.msBeforeNext;
      return 'reserved';
    } catch (err) {
      if (!(err instanceof RateLimiterRes)) return 'unavailable';
      // Used up for this window (the points of a block the window could not cover are lost with it).
      a.exhausted = true;
      a.sharedLeft = 0;
      a.resetAt = Date.now() + err.msBeforeNext;
      return 'exhausted';
    } finally {
      clearTimeout(timer);
    }
  }

  /** Forgets the allowances of windows that ended (once per window length). */
  private sweep(now: number): void {
    if (now - this.sweptAt < this.durationSeconds * 1000) return;
    this.sweptAt = now;
    for (const [key, a] of this.allowances) if (now >= a.resetAt && !a.reserving) this.allowances.delete(key);
  }
}
