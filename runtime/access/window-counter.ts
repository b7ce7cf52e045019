// Counters of events per key in a window that starts at a key's first event (rate-limiter-flexible's kind:
// management writes and downloads per owner, sign-in attempts), for limits that must be exact rather than
// cheap. On MongoDB they are shared by the instances and kept in the store in the store's time (store/clock.ts),
// so an instance whose host clock is off neither ends another's window early nor stretches it; in memory on the
// embedded store (one process).
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { type Collection, type Doc, DuplicateKeyError, type Store } from '../store/port.ts';
import { RATE_LIMIT_COLLECTION } from './rate-limit.ts';

/** What the limits ask of a counter (rate-limiter-flexible's API): `consume` throws a RateLimiterRes past the limit. */
export interface WindowCounter {
  consume(key: string): Promise<unknown>;
  reward(key: string, points: number): Promise<unknown>;
  delete(key: string): Promise<unknown>;
}

/** `points` events per `seconds` for each key, counted under `prefix`: in `shared` (MongoDB) when given. */
export function windowCounter(points: number, seconds: number, prefix: string, shared?: Store): WindowCounter {
  return shared ? new StoreWindowCounter(points, seconds * 1000, prefix, shared) : new RateLimiterMemory({ points, duration: seconds, keyPrefix: prefix });
}

/** One key's window (in RATE_LIMIT_COLLECTION, swept by sweepExpiredCounters once `expire` is past). */
interface CounterDoc extends Doc {
  key: string;
  points: number;
  expire: Date;
}

/** Two instances may each find a window ended and start it again at once; one of them then counts in the other's. */
const ATTEMPTS = 3;

class StoreWindowCounter implements WindowCounter {
  private readonly counters: Collection<CounterDoc>;

  constructor(
    private readonly points: number,
    private readonly durationMs: number,
    private readonly prefix: string,
    private readonly store: Store,
  ) {
    this.counters = store.collection<CounterDoc>(RATE_LIMIT_COLLECTION);
  }

  async consume(key: string): Promise<RateLimiterRes> {
    const doc = await this.add(key, 1);
    const res = new RateLimiterRes(
      Math.max(0, this.points - doc.points),
      Math.max(0, doc.expire.getTime() - this.store.clock.now()),
      doc.points,
      doc.points === 1,
    );
    if (doc.points > this.points) throw res;
    return res;
  }

  async reward(key: string, points: number): Promise<void> {
    await this.add(key, -points);
  }

  async delete(key: string): Promise<boolean> {
    return (await this.counters.deleteMany({ key: this.id(key) })) > 0;
  }

  /** Adds `points` to the key's window, or starts a new window with them when it ended; the window after. */
  private async add(key: string, points: number): Promise<CounterDoc> {
    const id = this.id(key);
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const now = this.store.clock.date();
      const expire = new Date(now.getTime() + this.durationMs);
      try {
        // Matched on `key` (unique), so a window that rate-limiter-flexible's own MongoDB limiter wrote is counted on.
        const doc = await this.counters.findOneAndUpdate(
          { key: id, expire: { $gt: now } },
          { $inc: { points }, $setOnInsert: { _id: id, expire } },
          { upsert: true },
        );
        if (doc) return doc;
      } catch (err) {
        if (!(err instanceof DuplicateKeyError)) throw err;
      }
      // The key's window ended: this event starts the next one, unless another instance just did.
      const restarted = await this.counters.findOneAndUpdate({ key: id, expire: { $lte: now } }, { $set: { points, expire } });
      if (restarted) return restarted;
    }
    throw new Error(`the counter ${id} kept changing under ${ATTEMPTS} attempts`);
  }

  private id(key: string): string {
    return `${this.prefix}:${key}`;
  }
}
