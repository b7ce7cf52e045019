// Per-key rate limits: a burst window and a per-minute window, both enforced.
//
// One process (the embedded store): counters in memory, a window from a key's first call. Several instances (MongoDB): the
// counters are shared in the store, but a call does not write them: each instance reserves a block of a window's
// points from the shared counter and spends it locally, so most calls cost no store operation at all. Blocks are a
// fraction of what the window has left (so near the limit they shrink to single points and instances hold little
// unused), and a window the store says is used up is refused locally until it resets. The trade-off: an instance
// may hold a few reserved points it does not use before the window resets, so under a load above the limit a key
// gets slightly fewer calls than the limit (measured within 10%), never more, with one exception. A key far from
// its limit (its last window here ended with at least half of it left, less than CALM_MS ago) does not wait for
// the store at the start of a window: the window's first call here is admitted at once and its points are paid
// from the window's first block, reserved off the call's path. Should other instances have used the whole window
// up meanwhile, that call is over the limit: at most one call per instance and window, and only for limits of at
// least ADVANCE_MIN_POINTS (so within 1% with up to ten instances). Shared windows are fixed slices of the
// store's time (store/clock.ts), the same for every instance whatever its host's clock says, so no instance admits
// past the limit (that one call aside) nor refuses for longer than a window. When the store does not answer in
// time or fails, each instance falls back to its own in-memory limits (so N instances allow up to N times the
// limit) instead of failing calls, and tries the store again for the next block.
import type { RateOutcome } from '../mcp/backend.ts';
import { type OffPath, offPath } from '../off-path.ts';
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
/** Windows of at least this many points may admit their first call in advance (see the top of the file). */
const ADVANCE_MIN_POINTS = 100;
/** A window is calm when what it had left at its last reservation here is at least this share of its points. */
const CALM_SHARE = 1 / 2;
/** How long after a calm window ended the next window of its key may admit its first call in advance. */
const CALM_MS = 60_000;

interface Verdict {
  allowed: boolean;
  remaining: number;
  resetMs: number;
}

/** A window answers at once from memory; only a reservation from the store makes a call wait (a promise). */
interface Window {
  points: number;
  consume(key: string, requests: number): Verdict | Promise<Verdict>;
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

  /**
   * Counts `requests` in every window; refused when any window is exhausted. A plain value when no window had to
   * wait for the store (nearly every call): no promise and no turn of the event loop on the call's path.
   */
  consume(keyId: string, requests = 1): RateOutcome | Promise<RateOutcome> {
    const verdicts: Verdict[] = [];
    for (let i = 0; i < this.windows.length; i++) {
      const verdict = this.windows[i]!.consume(keyId, requests);
      if (verdict instanceof Promise) return this.consumeFrom(i, verdict, verdicts, keyId, requests);
      if (!verdict.allowed) return this.outcome(verdicts, verdict);
      verdicts.push(verdict);
    }
    return this.outcome(verdicts);
  }

  /** The rest of consume() once window `i` had to wait for the store. */
  private async consumeFrom(i: number, pending: Promise<Verdict>, verdicts: Verdict[], keyId: string, requests: number): Promise<RateOutcome> {
    let verdict = await pending;
    for (;;) {
      if (!verdict.allowed) return this.outcome(verdicts, verdict);
      verdicts.push(verdict);
      if (++i === this.windows.length) return this.outcome(verdicts);
      verdict = await this.windows[i]!.consume(keyId, requests);
    }
  }

  /** Refused by the window after those of `verdicts`, or allowed with the headers of the one with the fewest points left. */
  private outcome(verdicts: Verdict[], refused?: Verdict): RateOutcome {
    if (refused) {
      const reset = String(Math.max(1, Math.ceil(refused.resetMs / 1000)));
      return {
        allowed: false,
        headers: {
          'RateLimit-Limit': String(this.windows[verdicts.length]!.points),
          'RateLimit-Remaining': '0',
          'RateLimit-Reset': reset,
          'Retry-After': reset,
        },
      };
    }
    let tightest = 0;
    for (let i = 1; i < verdicts.length; i++) if (verdicts[i]!.remaining < verdicts[tightest]!.remaining) tightest = i;
    const verdict = verdicts[tightest]!;
    return {
      allowed: true,
      headers: {
        'RateLimit-Limit': String(this.windows[tightest]!.points),
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

  consume(key: string, requests: number): Verdict {
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
  /** Points admitted in advance, paid from the window's first block. */
  advanced: number;
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
  /** Keys whose last window here was calm, and until when (store time) their next window may admit in advance. */
  private readonly calm = new Map<string, number>();
  /** Reservations made in advance run here, not in the context of the call that was admitted. */
  private readonly offPath: OffPath = offPath();
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

  consume(key: string, requests: number): Verdict | Promise<Verdict> {
    const now = this.clock.now();
    if (now < this.degradedUntil) return this.fallback.consume(key, requests);
    this.sweep(now);
    // The window is a fixed slice of the store's time: every instance counts the same one.
    const start = now - (now % this.durationMs);
    let a = this.allowances.get(key);
    if (!a || a.start !== start) {
      if (a) this.ended(key, a);
      a = { start, points: 0, sharedLeft: this.points, resetAt: start + this.durationMs, exhausted: false, advanced: 0 };
      this.allowances.set(key, a);
      if (this.points >= ADVANCE_MIN_POINTS && now < (this.calm.get(key) ?? 0)) return this.admitInAdvance(key, a, requests);
    }
    return a.points < requests && !a.exhausted ? this.consumeReserved(key, a, requests) : this.spend(a, requests, now);
  }

  /** consume() when the allowance has too few points: reserves more (or waits for the reservation under way) first. */
  private async consumeReserved(key: string, a: Allowance, requests: number): Promise<Verdict> {
    while (a.points < requests && !a.exhausted) {
      if (a.reserving) {
        await a.reserving;
        continue;
      }
      // The reservation this call waited for may have found the store down.
      if (this.clock.now() < this.degradedUntil) return this.fallback.consume(key, requests);
      const block = Math.max(requests, Math.floor(a.sharedLeft * BLOCK_FRACTION));
      if ((await this.reserving(key, a, block, requests)) === 'unavailable') return this.fallback.consume(key, requests);
    }
    return this.spend(a, requests, this.clock.now());
  }

  private spend(a: Allowance, requests: number, now: number): Verdict {
    const resetMs = Math.max(0, a.resetAt - now);
    if (a.exhausted || a.points < requests) return { allowed: false, remaining: 0, resetMs };
    a.points -= requests;
    return { allowed: true, remaining: a.points + a.sharedLeft, resetMs };
  }

  /** The first call of a calm key's new window: admitted now; its points come out of the window's first block, reserved off its path. */
  private admitInAdvance(key: string, a: Allowance, requests: number): Verdict {
    a.advanced = requests;
    const block = Math.max(requests, Math.floor(this.points * BLOCK_FRACTION));
    void this.offPath(() => this.reserving(key, a, block + requests, requests));
    return { allowed: true, remaining: this.points - requests, resetMs: a.resetAt - this.clock.now() };
  }

  /** A reservation that the window's other calls wait for rather than reserve again. */
  private reserving(key: string, a: Allowance, block: number, requests: number): Promise<'reserved' | 'exhausted' | 'unavailable'> {
    const reservation = this.reserve(key, a, block, requests);
    a.reserving = reservation.then(() => undefined);
    return reservation.finally(() => (a.reserving = undefined));
  }

  /**
   * Takes `block` points (fewer if the window has less left, at least `requests`) from the shared counter into the
   * allowance, less what was admitted in advance; 'unavailable' when the store failed or was too slow (then calls
   * are judged by this instance's own limits for DEGRADED_MS).
   */
  private async reserve(key: string, a: Allowance, block: number, requests: number): Promise<'reserved' | 'exhausted' | 'unavailable'> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), STORE_TIMEOUT_MS)));
    try {
      const taken = await Promise.race([this.take(`${this.name}:${key}:${a.start}`, a.resetAt, block, requests), late]);
      if (taken === 'late') return this.degraded();
      if (!taken) {
        // Used up for this window.
        a.exhausted = true;
        a.sharedLeft = 0;
        return 'exhausted';
      }
      a.points += taken.points - a.advanced;
      a.sharedLeft = taken.left;
      return 'reserved';
    } catch {
      return this.degraded();
    } finally {
      a.advanced = 0;
      clearTimeout(timer);
    }
  }

  private degraded(): 'unavailable' {
    this.degradedUntil = this.clock.now() + DEGRADED_MS;
    this.onFallback?.(this.name, DEGRADED_MS);
    return 'unavailable';
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

  /** Forgets the allowances of windows that ended (once per window length), and calm that no longer counts. */
  private sweep(now: number): void {
    if (now - this.sweptAt < this.durationMs) return;
    this.sweptAt = now;
    for (const [key, until] of this.calm) if (now >= until) this.calm.delete(key);
    for (const [key, a] of this.allowances) {
      if (now < a.resetAt || a.reserving) continue;
      this.ended(key, a);
      this.allowances.delete(key);
    }
  }

  /** A key's window ended here: whether it was calm (its next window may admit its first call in advance). */
  private ended(key: string, a: Allowance): void {
    if (!a.exhausted && a.sharedLeft >= this.points * CALM_SHARE) this.calm.set(key, a.resetAt + CALM_MS);
    else this.calm.delete(key);
  }
}
