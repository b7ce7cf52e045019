// Credit balances, kept as a credit line per owner so that a charge costs one update of a document that never
// grows, on one store or across instances without transactions.
//
// A charge is ONE conditional atomic update of the owner's document: the balance goes down (never below zero,
// also under concurrency) and `debited`, the total ever taken by charges, goes up by the same amount. The
// update answers with the new total, so each charge owns the range [from, from + cost) of the owner's credit
// line. The call's ledger record carries that range: a range with no record is a call still running or one a
// crash interrupted (settlement.ts finds and refunds those). A refund gives the credits back in one update
// guarded by the range's start (`refunds`), so it happens once whoever applies it and however often.
//
// Charges of one owner that arrive together (in one turn of the event loop, or while the previous update is in
// flight) share one update (group commit, group-commit.ts).
//
// granted - balance = debited - refunded, always (both move in the same updates).
import type { Collection, Doc, Store } from '../store/port.ts';
import { KeyedGroupCommit } from './group-commit.ts';

export interface CreditDoc extends Doc {
  /** _id is the owner id. */
  balance: number;
  granted: number;
  /** The end of the credit line: every credit ever taken by a charge. */
  debited: number;
  /** Every range below this point is settled: recorded (or recorded as interrupted), its refund applied. */
  settled: number;
  /** Starts of refunded ranges at or above `settled` whose refund is applied: what makes a refund happen once. */
  refunds?: number[];
  /** settled < debited: settlement has work here (indexed, so it never scans every owner). */
  unsettled: boolean;
  /**
   * Points of the credit line with the time they were read: a range below a point older than any call is not
   * running. (These two lists may be missing where empty: FerretDB does not store an empty array set on insert.)
   */
  marks?: Array<{ at: Date; debited: number }>;
}

/** A charge that went through: its range on the owner's credit line starts here. */
export type ChargeStart = number;

const FRESH_LINE = { debited: 0, settled: 0, unsettled: false };
/** Attempts at a batch whose total the balance does not cover, each with a fresh read of the balance. */
const FIT_ATTEMPTS = 4;

export class Credits {
  readonly docs: Collection<CreditDoc>;
  private readonly charges = new KeyedGroupCommit<number, ChargeStart | null>((ownerId, costs) => this.take(ownerId, costs));

  /** `onCharged`: told the balance a charge left (the low-credit e-mail alert); synchronous, it must not wait. */
  constructor(
    store: Store,
    private readonly onCharged?: (ownerId: string, balance: number) => void,
  ) {
    this.docs = store.collection<CreditDoc>('credits');
  }

  async balance(ownerId: string): Promise<number> {
    return (await this.docs.findOne({ _id: ownerId }))?.balance ?? 0;
  }

  /** Adds credits; a negative amount debits, down to zero at most. Returns the new balance. */
  async grant(ownerId: string, amount: number): Promise<number> {
    if (amount >= 0) {
      const doc = await this.docs.findOneAndUpdate(
        { _id: ownerId },
        { $inc: { balance: amount, granted: amount }, $setOnInsert: FRESH_LINE },
        { upsert: true },
      );
      return doc!.balance;
    }
    for (;;) {
      const doc = await this.docs.findOneAndUpdate({ _id: ownerId, balance: { $gte: -amount } }, { $inc: { balance: amount, granted: amount } });
      if (doc) return doc.balance;
      // Not enough: take what is there (retry if a concurrent call moved the balance meanwhile).
      const current = await this.docs.findOne({ _id: ownerId });
      if (!current || current.balance === 0) return 0;
      const drained = await this.docs.findOneAndUpdate(
        { _id: ownerId, balance: current.balance },
        { $inc: { balance: -current.balance, granted: -current.balance } },
      );
      if (drained) return drained.balance;
    }
  }

  /** Takes `cost` credits if the balance allows: the start of the charge's range, or null (nothing taken). */
  charge(ownerId: string, cost: number): Promise<ChargeStart | null> {
    return this.charges.add(ownerId, cost);
  }

  /**
   * One update for the whole batch when the balance covers it. Otherwise the charges that fit, in order of
   * arrival, in one update after reading the balance (again if a concurrent update moved it); the rest are refused.
   */
  private async take(ownerId: string, costs: number[]): Promise<Array<ChargeStart | null>> {
    const starts: Array<ChargeStart | null> = costs.map(() => null);
    let chosen = costs.map((_, i) => i);
    for (let attempt = 0; attempt < FIT_ATTEMPTS && chosen.length > 0; attempt++) {
      if (attempt > 0) chosen = fitting(costs, chosen, await this.balance(ownerId));
      const total = chosen.reduce((sum, i) => sum + costs[i], 0);
      if (total === 0) break;
      const doc = await this.docs.findOneAndUpdate(
        { _id: ownerId, balance: { $gte: total } },
        { $inc: { balance: -total, debited: total }, $set: { unsettled: true } },
      );
      if (!doc) continue;
      this.onCharged?.(ownerId, doc.balance);
      let from = doc.debited - total;
      for (const i of chosen) {
        starts[i] = from;
        from += costs[i];
      }
      break;
    }
    return starts;
  }

  /**
   * Gives back the credits of the range starting at `from`, once: a no-op when that refund was applied already
   * (by this call, a retry, or settlement). Returns whether this update applied it.
   */
  async refund(ownerId: string, from: ChargeStart, cost: number): Promise<boolean> {
    const { matched } = await this.docs.updateOne(
      { _id: ownerId, settled: { $lte: from }, refunds: { $ne: from } },
      { $inc: { balance: cost }, $push: { refunds: from } },
    );
    return matched === 1;
  }
}

/** Of the charges `among` (indexes into costs, in order of arrival), those that fit in `balance`, first come first served. */
function fitting(costs: number[], among: number[], balance: number): number[] {
  const chosen: number[] = [];
  let left = balance;
  for (const i of among) {
    if (costs[i] > left) continue;
    chosen.push(i);
    left -= costs[i];
  }
  return chosen;
}
