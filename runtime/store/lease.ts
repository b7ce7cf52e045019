// A lease: one holder at a time for a periodic job that several instances would otherwise run at once (the
// jobs stay correct if two ran it, but each would do the work twice). Held until released or until it
// expires, so a holder that dies blocks no one for longer than the lease; a job that runs longer renews it
// (`run`), so a slow run never lets a second one start beside it. Expiry is judged by the store's clock, the
// same for every instance (clock.ts).
import { DuplicateKeyError, type Doc, type Store, type Collection } from './port.ts';

interface LeaseDoc extends Doc {
  holder: string;
  until: Date;
}

/** What a job holding a lease sees of it while it runs. */
export interface LeaseHold {
  /**
   * Renews the lease once a third of it has passed since it was last taken; false once it is lost (it may be
   * another holder's now: the job stops). The job calls it between its steps, since a busy event loop (the embedded
   * store works in memory) can hold back the timer that renews it too.
   */
  keep(): Promise<boolean>;
  /** How many times the lease was renewed so far. */
  readonly renewals: number;
}

export class Lease {
  private readonly leases: Collection<LeaseDoc>;

  constructor(
    private readonly store: Store,
    private readonly name: string,
    private readonly holder: string,
  ) {
    this.leases = store.collection<LeaseDoc>('leases');
  }

  /** Takes (or extends) the lease for `ms`; false when another holder has it. */
  async acquire(ms: number): Promise<boolean> {
    const now = this.store.clock.now();
    try {
      const doc = await this.leases.findOneAndUpdate(
        { _id: this.name, $or: [{ holder: this.holder }, { until: { $lt: new Date(now) } }] },
        { $set: { holder: this.holder, until: new Date(now + ms) } },
        { upsert: true },
      );
      return doc?.holder === this.holder;
    } catch (err) {
      // Two instances upserting a missing lease at once: the one whose insert lost does not hold it.
      if (err instanceof DuplicateKeyError) return false;
      throw err;
    }
  }

  async release(): Promise<void> {
    await this.leases.updateOne({ _id: this.name, holder: this.holder }, { $set: { until: new Date(0) } });
  }

  /**
   * Runs `job` holding the lease for `ms`, renewed every third of it while the job runs, then releases it. Null
   * (and nothing run) when another holder has it.
   */
  async run<T>(ms: number, job: (hold: LeaseHold) => Promise<T>): Promise<{ result: T; renewals: number } | null> {
    let takenAt = this.store.clock.now();
    if (!(await this.acquire(ms))) return null;
    let held = true;
    let renewals = 0;
    let renewing: Promise<boolean> | undefined;
    const keep = (): Promise<boolean> => {
      if (!held || this.store.clock.now() - takenAt < ms / 3) return Promise.resolve(held);
      const asked = this.store.clock.now();
      renewing ??= this.acquire(ms)
        .then(
          (renewed) => {
            if (renewed) [takenAt, renewals] = [asked, renewals + 1];
            return (held = renewed);
          },
          () => (held = false), // not known to be held: stop rather than overlap
        )
        .finally(() => (renewing = undefined));
      return renewing;
    };
    const timer = setInterval(() => void keep(), ms / 3);
    timer.unref();
    try {
      const result = await job({
        keep,
        get renewals() {
          return renewals;
        },
      });
      return { result, renewals };
    } finally {
      clearInterval(timer);
      // A renewal still on its way would take the lease again after the release.
      await renewing;
      if (held) await this.release();
    }
  }
}
