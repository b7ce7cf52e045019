// Per-key rate limits: a burst window and a per-minute window, both enforced.
//
// One process (the embedded store): counters in memory, a window from a key's first call. Several instances (MongoDB): the
// counters are shared in the store, but a call does not write them: each instance reserves a block of a window's
// points from the shared counter and spends it locally, so most calls cost no store operation at all. Blocks are a
// fraction of what the window has left (so near the limit they shrink to single points and instances hold little
// unused), and a window the store says is used up is refused locally until it resets. The trade-off: an instance
// may hold a few reserved points it does not use before the window resets, so under a load above the limit a key
// gets slightly fewer calls than the limit (measured within 10%), never more. Shared windows are fixed slices of
// the store's time (store/clock.ts), the same for every instance whatever its host's clock says, so no instance
// admits past the limit nor refuses for longer than a window. When the store does not answer in time or fails,
// each instance falls back to its own in-memory limits (so N instances allow up to N times the limit) instead of
// failing calls, and tries the store again for the next block.
import type { RateOutcome } from '../mcp/backend.ts';
import type { StoreClock } from '../store/clock.ts';
import { type Collection, type Doc, DuplicateKeyError, type IndexSpec, type Store } from '../store/port.ts';

export interface RateLimits {
  burstPoints: number;
  burstSeconds: number;
  minutePoints: number;
}

export const RATE_LIMIT_COLLECTION = 'rate_limits';
/**
 * The shared counters' indexes: one document per key and window, and their expiry (a TTL index where the server
 * has them; elsewhere sweepExpiredCounters deletes them).
 */
export const RATE_LIMIT_INDEXES: IndexSpec[] = [
  { collection: RATE_LIMIT_COLLECTION, fields: ['key'], unique: true },
  { collection: RATE_LIMIT_COLLECTION, fields: ['expire'], expireAfterSeconds: 0 },
];

/** Deletes counters whose window ended (those of keys that were not used since; the others are replaced). */
export async function sweepExpiredCounters(store: Store): Promise<number> {
  return store.collection(RATE_LIMIT_COLLECTION).deleteMany({ expire: { $lt: store.clock.date() } });
}

/** A key's use of one window, shared by every instance. */
interface CounterDoc extends Doc {
  /** _id and key: `<window name>:<key>:<window start, store time in ms>`. */
  key: string;
  /** Points reserved by the instances. */
  points: number;
  /** The window's end (deleted afterwards). */
  expire: Date;
}

/** A block is this fraction of what the window had left at the last reservation. */
const BLOCK_FRACTION = 1 / 8;
/**
 * How long a reservation may take before this call is judged by the in-memory fallback (which admits up to N times
 * the limit across N instances): reservations took up to 255 ms on FerretDB on a busy 2-core machine, so a
 * store that is merely loaded does not count as down.
 */
const STORE_TIMEOUT_MS = 1000;
/** After the store failed or was slow, calls use the fallback this long before the store is tried again. */
const DEGRADED_MS = 5000;
/** Reservations attempted when other instances keep taking what the window had left; then it counts as used up. */
const RESERVE_ATTEMPTS = 4;

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

  /**
   * `shared`: the store whose counters several instances share (MongoDB); in memory without it. `onFallback`: told
   * each time a window falls back to this instance's own limits (for DEGRADED_MS), so that it shows in the log.
   */
  constructor(limits: RateLimits, shared?: Store, onFallback?: (window: string, ms: number) => void) {
    const make = (points: number, duration: number, name: string): Window =>
      shared ? new ReservedWindow(points, duration, name, shared, onFallback) : new LocalWindow(points, duration);
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

/**
 * A window counted in memory, every call: it starts at a key's first call and lasts `durationSeconds` (as
 * rate-limiter-flexible's memory limiter counts, without its timer per key and window).
 */
class LocalWindow implements Window {
  private readonly counts = new Map<string, { start: number; used: number }>();
  private readonly durationMs: number;
  private sweptAt = Date.now();

  constructor(
    readonly points: number,
    durationSeconds: number,
  ) {
    this.durationMs = durationSeconds * 1000;
  }

  async consume(key: string, requests: number): Promise<Verdict> {
    const now = Date.now();
    if (now - this.sweptAt >= this.durationMs) this.sweep(now);
    let count = this.counts.get(key);
    if (!count || now >= count.start + this.durationMs) {
      count = { start: now, used: 0 };
      this.counts.set(key, count);
    }
    const resetMs = count.start + this.durationMs - now;
    if (count.used + requests > this.points) return { allowed: false, remaining: 0, resetMs };
    count.used += requests;
    return { allowed: true, remaining: this.points - count.used, resetMs };
  }

  /** Forgets the windows that ended (once per window length). */
  private sweep(now: number): void {
    this.sweptAt = now;
    for (const [key, count] of this.counts) if (now >= count.start + this.durationMs) this.counts.delete(key);
  }
}

/** What this instance holds of a key's window: points reserved and not spent yet, until the window resets. */
interface Allowance {
  /** The window's start (store time). */
  start: number;
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
  private readonly counters: Collection<CounterDoc>;
  private readonly clock: StoreClock;
  private readonly durationMs: number;
  private readonly fallback: LocalWindow;
  private readonly allowances = new Map<string, Allowance>();
  private sweptAt: number;
  /** Until then the store is not asked: it failed or was too slow moments ago. */
  private degradedUntil = 0;

  constructor(
    readonly points: number,
    durationSeconds: number,
    private readonly name: string,
    store: Store,
    private readonly onFallback?: (window: string, ms: number) => void,
  ) {
    this.counters = store.collection<CounterDoc>(RATE_LIMIT_COLLECTION);
    this.clock = store.clock;
    this.durationMs = durationSeconds * 1000;
    this.sweptAt = this.clock.now();
    this.fallback = new LocalWindow(points, durationSeconds);
  }

  async consume(key: string, requests: number): Promise<Verdict> {
    const now = this.clock.now();
    if (now < this.degradedUntil) return this.fallback.consume(key, requests);
    this.sweep(now);
    // The window is a fixed slice of the store's time: every instance counts the same one.
    const start = now - (now % this.durationMs);
    let a = this.allowances.get(key);
    if (!a || a.start !== start) {
      a = { start, points: 0, sharedLeft: this.points, resetAt: start + this.durationMs, exhausted: false };
      this.allowances.set(key, a);
    }
    while (a.points < requests && !a.exhausted) {
      if (a.reserving) {
        await a.reserving;
        continue;
      }
      // The reservation this call waited for may have found the store down.
      if (this.clock.now() < this.degradedUntil) return this.fallback.consume(key, requests);
      const block = Math.max(requests, Math.floor(a.sharedLeft * BLOCK_FRACTION));
      const reservation = this.reserve(key, a, block, requests);
      a.reserving = reservation.then(() => undefined);
      const reserved = await reservation.finally(() => (a.reserving = undefined));
      if (reserved === 'unavailable') {
        this.degradedUntil = this.clock.now() + DEGRADED_MS;
        this.onFallback?.(this.name, DEGRADED_MS);
        return this.fallback.consume(key, requests);
      }
    }
    const resetMs = Math.max(0, a.resetAt - this.clock.now());
    if (a.exhausted || a.points < requests) return { allowed: false, remaining: 0, resetMs };
    a.points -= requests;
    return { allowed: true, remaining: a.points + a.sharedLeft, resetMs };
  }

  /**
   * Takes `block` points (fewer if the window has less left, at least `requests`) from the shared counter into the
   * allowance; 'unavailable' when the store failed or was too slow.
   */
  private async reserve(key: string, a: Allowance, block: number, requests: number): Promise<'reserved' | 'exhausted' | 'unavailable'> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), STORE_TIMEOUT_MS)));
    try {
      const taken = await Promise.race([this.take(`${this.name}:${key}:${a.start}`, a.resetAt, block, requests), late]);
      if (taken === 'late') return 'unavailable';
      if (!taken) {
        // Used up for this window.
        a.exhausted = true;
        a.sharedLeft = 0;
        return 'exhausted';
      }
      a.points += taken.points;
      a.sharedLeft = taken.left;
      return 'reserved';
    } catch {
      return 'unavailable';
    } finally {
      clearTimeout(timer);
    }
  }

  /** One conditional increment of the window's counter (created by the first); null when not even `least` points are left. */
  private async take(id: string, end: number, want: number, least: number): Promise<{ points: number; left: number } | null> {
    for (let attempt = 0; attempt < RESERVE_ATTEMPTS; attempt++) {
      try {
        const doc = await this.counters.findOneAndUpdate(
          { _id: id, points: { $lte: this.points - want } },
          { $inc: { points: want }, $setOnInsert: { key: id, expire: new Date(end) } },
          { upsert: true },
        );
        if (doc) return { points: want, left: this.points - doc.points };
      } catch (err) {
        if (!(err instanceof DuplicateKeyError)) throw err;
        // The counter exists and has less than `want` left: take what it has, if that is enough.
      }
      const left = this.points - ((await this.counters.findOne({ _id: id }))?.points ?? 0);
      if (left < least) return null;
      want = Math.min(want, left);
    }
    return null;
  }

  /** Forgets the allowances of windows that ended (once per window length). */
  private sweep(now: number): void {
    if (now - this.sweptAt < this.durationMs) return;
    this.sweptAt = now;
    for (const [key, a] of this.allowances) if (now >= a.resetAt && !a.reserving) this.allowances.delete(key);
  }
}
