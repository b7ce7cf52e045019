// The store's clock: the time every decision of the service reads (a record's stamp and the roll-up, settlement
// margins, leases, rate-limit windows, key expiry, budget periods, OAuth lifetimes, sessions), so that no decision
// depends on two hosts' clocks agreeing. Each instance measures the store's time (MongoDB's `hello.localTime`;
// the embedded store is this very process, so there it is the host's own) at start and every minute, and carries
// it forward with the monotonic clock, which no setting of the host's time moves. Between measurements it drifts
// only as the monotonic clock does (parts per million).
//
// How far the host's own clock is from the store's is kept as a health signal: the service warns past a few
// seconds, and past the bound (CLOCK_MAX_OFFSET_SECONDS) the store refuses every write of this instance
// (enforceClockBound, through Store.refuseWrites: the one 503 of a store that takes no writes): a host that far
// off is not synchronized at all, and what runs on its clock outside the service's decisions (log and trace
// times, certificate checks of outbound TLS) is wrong by as much.
import type { Store } from './port.ts';

/** Default bound of the offset: Kerberos' long-standing default for clocks that "agree". */
export const DEFAULT_MAX_OFFSET_MS = 300_000;
/** Past this offset the service says so in its log (and goes on). */
export const WARN_OFFSET_MS = 2000;
/** Round trips per measurement; the shortest one is kept (its midpoint is the most exact). */
const SAMPLES = 3;

export interface ClockReading {
  /** The store's time minus the host's clock: positive when the host is behind. */
  offsetMs: number;
  /** The round trip of the sample kept: the store's time is known within half of it. */
  roundTripMs: number;
}

/** The source of the store's refusal (Store.refuseWrites) while the clock is past its bound; measured again each minute. */
const CLOCK_REFUSAL = 'clock';
const CLOCK_RETRY_AFTER_SECONDS = 60;

export class StoreClock {
  /** The store's time at `baseMono` (performance.now()). */
  private base = Date.now();
  private baseMono = performance.now();
  /** The latest time handed out: a new measurement never moves the clock back. */
  private last = 0;
  private reading: ClockReading = { offsetMs: 0, roundTripMs: 0 };

  constructor(
    /** Asks the store for its time (one round trip). */
    private readonly storeTime: () => Promise<Date>,
    readonly maxOffsetMs = DEFAULT_MAX_OFFSET_MS,
  ) {}

  /** Milliseconds since the epoch, by the store's clock. */
  now(): number {
    this.last = Math.max(this.last, Math.floor(this.base + (performance.now() - this.baseMono)));
    return this.last;
  }

  date(): Date {
    return new Date(this.now());
  }

  /** The last measurement. */
  get offset(): ClockReading {
    return this.reading;
  }

  /** Asks the store for its time (the shortest of a few round trips) and takes it as the base from now on. */
  async measure(): Promise<ClockReading> {
    let best: { storeAt: number; mono: number; host: number; roundTripMs: number } | undefined;
    for (let i = 0; i < SAMPLES; i++) {
      const sent = performance.now();
      const storeTime = (await this.storeTime()).getTime();
      const received = performance.now();
      const host = Date.now();
      const roundTripMs = received - sent;
      // The store read its clock about halfway through the round trip.
      if (!best || roundTripMs < best.roundTripMs) best = { storeAt: storeTime + roundTripMs / 2, mono: received, host, roundTripMs };
    }
    this.base = best!.storeAt;
    this.baseMono = best!.mono;
    this.reading = { offsetMs: Math.round(best!.storeAt - best!.host), roundTripMs: Math.round(best!.roundTripMs) };
    return this.reading;
  }

  /** Why this instance must not write now (its clock is past the bound), or null. */
  refusal(): string | null {
    if (Math.abs(this.reading.offsetMs) <= this.maxOffsetMs) return null;
    return (
      `this instance's clock is ${describeOffset(this.reading.offsetMs)} the store's, more than the ${this.maxOffsetMs / 1000} s allowed ` +
      '(CLOCK_MAX_OFFSET_SECONDS), so it takes no writes until its time is synchronized (NTP); another instance may take the request'
    );
  }
}

/** After a measurement: the store refuses this instance's writes while its clock is past the bound, and takes them again once it is not. */
export function enforceClockBound(store: Store): string | null {
  const refused = store.clock.refusal();
  if (refused) store.refuseWrites(CLOCK_REFUSAL, refused, CLOCK_RETRY_AFTER_SECONDS);
  else store.allowWrites(CLOCK_REFUSAL);
  return refused;
}

/** "90.2 s behind" / "3.1 s ahead of". */
export function describeOffset(offsetMs: number): string {
  const seconds = (Math.abs(offsetMs) / 1000).toFixed(1);
  return offsetMs > 0 ? `${seconds} s behind` : `${seconds} s ahead of`;
}
