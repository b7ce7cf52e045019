// Credit balances. A charge is ONE conditional atomic update (never below zero, also under
// concurrency) that also lists the charge as open on the same document. The charges of one owner that
// arrive together (in one turn of the event loop, or while the previous update of their document is in
// flight) share one update (group commit, group-commit.ts); if their sum is more than the balance, each is
// tried alone. Once the ledger holds the
// call's record, a refund closes the charge in the same update that gives the credits back; kept charges
// are dropped from the list in batches. `granted` tracks what was given, so that granted - balance =
// credits kept by recorded calls + charges with no record yet (ledger.ts checks it).
import type { Collection, Doc, Store } from '../store/port.ts';
import { KeyedGroupCommit } from './group-commit.ts';

/** A charge whose call has not ended yet: what the ledger needs to record it if the process dies. */
export interface OpenCharge {
  id: string;
  cost: number;
  at: Date;
  server_id: string;
  key_id: string;
  tool: string;
}

export interface CreditDoc extends Doc {
  /** _id is the owner id. */
  balance: number;
  granted: number;
  open?: OpenCharge[];
}

export class Credits {
  private readonly credits: Collection<CreditDoc>;
  private readonly charges = new KeyedGroupCommit<OpenCharge, boolean>((ownerId, charges) => this.take(ownerId, charges));

  constructor(store: Store) {
    this.credits = store.collection<CreditDoc>('credits');
  }

  async balance(ownerId: string): Promise<number> {
    return (await this.credits.findOne({ _id: ownerId }))?.balance ?? 0;
  }

  async ledger(ownerId: string): Promise<{ balance: number; granted: number }> {
    const doc = await this.credits.findOne({ _id: ownerId });
    return { balance: doc?.balance ?? 0, granted: doc?.granted ?? 0 };
  }

  /** Adds credits; a negative amount debits, down to zero at most. Returns the new balance. */
  async grant(ownerId: string, amount: number): Promise<number> {
    if (amount >= 0) {
      const doc = await this.credits.findOneAndUpdate({ _id: ownerId }, { $inc: { balance: amount, granted: amount } }, { upsert: true });
      return doc!.balance;
    }
    for (;;) {
      const doc = await this.credits.findOneAndUpdate({ _id: ownerId, balance: { $gte: -amount } }, { $inc: { balance: amount, granted: amount } });
      if (doc) return doc.balance;
      // Not enough: take what is there (retry if a concurrent call moved the balance meanwhile).
      const current = await this.credits.findOne({ _id: ownerId });
      if (!current || current.balance === 0) return 0;
      const drained = await this.credits.findOneAndUpdate(
        { _id: ownerId, balance: current.balance },
        { $inc: { balance: -current.balance, granted: -current.balance } },
      );
      if (drained) return drained.balance;
    }
  }

  /** Takes the charge's cost and lists it as open, in one atomic update, if the balance allows; false (nothing taken) otherwise. */
  charge(ownerId: string, charge: OpenCharge): Promise<boolean> {
    return this.charges.add(ownerId, charge);
  }

  private async take(ownerId: string, charges: OpenCharge[]): Promise<boolean[]> {
    const all = async (list: OpenCharge[]) => {
      const total = list.reduce((sum, c) => sum + c.cost, 0);
      const { matched } = await this.credits.updateOne(
        { _id: ownerId, balance: { $gte: total } },
        { $inc: { balance: -total }, $push: { open: { $each: list } } },
      );
      return matched === 1;
    };
    if (await all(charges)) return charges.map(() => true);
    if (charges.length === 1) return [false];
    // Not enough for all of them: each alone, in order of arrival.
    const taken: boolean[] = [];
    for (const c of charges) taken.push(await all([c]));
    return taken;
  }

  /** Closes an open charge, giving `refund` credits back in the same update; a no-op when it is closed already. */
  async close(ownerId: string, chargeId: string, refund: number): Promise<void> {
    await this.credits.updateOne(
      { _id: ownerId, 'open.id': chargeId },
      { $pull: { open: { id: chargeId } }, ...(refund ? { $inc: { balance: refund } } : {}) },
    );
  }

  /** Drops charges whose calls are recorded as kept, in one update (their credits stay charged). */
  async prune(ownerId: string, chargeIds: string[]): Promise<void> {
    await this.credits.updateOne({ _id: ownerId }, { $pull: { open: { id: { $in: chargeIds } } } });
  }

  /** Owners with open charges (at start, after a crash: one read of every balance). */
  async withOpenCharges(): Promise<CreditDoc[]> {
    return (await this.credits.find({})).filter((d) => d.open?.length);
  }

  all(ownerId?: string): Promise<CreditDoc[]> {
    return this.credits.find(ownerId ? { _id: ownerId } : {});
  }
}
