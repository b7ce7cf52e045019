// Credit balances. A charge is ONE conditional atomic update (never below zero, also under
// concurrency); a refund is one increment. `granted` tracks what the operator gave, so that
// granted - balance = sum of kept charges.
import type { Collection, Doc, Store } from '../store/index.ts';

export interface CreditDoc extends Doc {
  /** _id is the owner id. */
  balance: number;
  granted: number;
}

export class Credits {
  private readonly credits: Collection<CreditDoc>;

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
      const drained = await this.credits.findOneAndUpdate({ _id: ownerId, balance: current.balance }, { $inc: { balance: -current.balance, granted: -current.balance } });
      if (drained) return drained.balance;
    }
  }

  /** Takes `cost` credits if the balance allows; false (nothing taken) otherwise. */
  async charge(ownerId: string, cost: number): Promise<boolean> {
    if (cost === 0) return true;
    const doc = await this.credits.findOneAndUpdate({ _id: ownerId, balance: { $gte: cost } }, { $inc: { balance: -cost } });
    return doc !== null;
  }

  async refund(ownerId: string, cost: number): Promise<void> {
    if (cost === 0) return;
    await this.credits.updateOne({ _id: ownerId }, { $inc: { balance: cost } });
  }
}
