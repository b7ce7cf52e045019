// A lease: one holder at a time for a periodic job that several instances would otherwise run at once (the
// jobs stay correct if two ran it, but each would do the work twice). Held until released or until it
// expires, so a holder that dies blocks no one for longer than the lease.
import { DuplicateKeyError, type Doc, type Store, type Collection } from './port.ts';

interface LeaseDoc extends Doc {
  holder: string;
  until: Date;
}

export class Lease {
  private readonly leases: Collection<LeaseDoc>;

  constructor(
    store: Store,
    private readonly name: string,
    private readonly holder: string,
  ) {
    this.leases = store.collection<LeaseDoc>('leases');
  }

  /** Takes (or extends) the lease for `ms`; false when another holder has it. */
  async acquire(ms: number): Promise<boolean> {
    const now = new Date();
    try {
      const doc = await this.leases.findOneAndUpdate(
        { _id: this.name, $or: [{ holder: this.holder }, { until: { $lt: now } }] },
        { $set: { holder: this.holder, until: new Date(now.getTime() + ms) } },
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
}
