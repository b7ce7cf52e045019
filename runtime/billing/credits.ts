// Credit balances, kept as a credit line per owner so that the owner's credits cost few writes of one document
// that stays small, on one store or across instances without transactions.
//
// Credits are taken in blocks (credit-blocks.ts): ONE conditional atomic update of the owner's document takes
// a block, the balance going down by its size (never below zero, also under concurrency) and `debited`, the
// end of the line, going up by the same amount, so the block owns the range [from, from + size) of the line.
// The process that took it hands sub-ranges of it to calls from memory; each call's ledger record carries its
// range, so a range with no record is a call still running, the unused rest of a live block, or one a crash
// interrupted (settlement.ts). While the block is live the document lists it in `blocks` (its range and its
// lease): one entry per live block, whatever the number of calls or refunds. The block's return, the unused
// rest plus the refunds of its calls, is ONE update that removes its entry: the entry is what makes the return
// happen once, whoever applies it (the process, or settlement once the lease is over).
//
// granted - balance = debited - what returns and refunds gave back, always (they move in the same updates).
import type { Collection, Doc, Filter, Store } from '../store/port.ts';

/** A live block in its owner's document: its range of the line, and until when its process hands out sub-ranges (store time). */
export interface BlockEntry {
  from: number;
  end: number;
  until: Date;
}

export interface CreditDoc extends Doc {
  /** _id is the owner id. */
  balance: number;
  granted: number;
  /** The end of the credit line: every credit ever taken by a block (or, before blocks, by a charge). */
  debited: number;
  /** Every range below this point is settled: recorded (or recorded as interrupted), its refund applied. */
  settled: number;
  /** Live blocks by id: what their return (one update that removes the entry) has not given back yet. */
  blocks?: Record<string, BlockEntry>;
  /**
   * Starts of ranges charged one by one before blocks whose refund is applied (at or above `settled`): what made
   * such a refund happen once. Nothing adds to it any more; settlement empties it.
   */
  refunds?: number[];
  /** settled < debited: settlement has work here (indexed, so it never scans every owner). */
  unsettled: boolean;
  /**
   * Points of the credit line with the time they were read: a range below a point older than any call is not
   * running. (These lists may be missing where empty: FerretDB does not store an empty array set on insert.)
   */
  marks?: Array<{ at: Date; debited: number }>;
}

/** The line as a block's take needs it: its end and balance. */
export type LineState = Pick<CreditDoc, 'debited' | 'balance'>;

/** A block being returned: its id and the credits it gives back. */
export interface BlockReturn {
  id: string;
  credits: number;
}

const FRESH_LINE = { debited: 0, settled: 0, unsettled: false };

export class Credits {
  readonly docs: Collection<CreditDoc>;
  /** What this process holds in credit blocks for an owner, not handed to a call (credit-blocks.ts). */
  private heldHere: (ownerId: string) => number = () => 0;
  /** The owner's line balance as this process's last write of it answered (for `charged`). */
  private readonly lineSeen = new Map<string, number>();

  /** `onCharged`: told the balance a charge left (the low-credit e-mail alert); synchronous, it must not wait. */
  constructor(
    store: Store,
    private readonly onCharged?: (ownerId: string, balance: number) => void,
  ) {
    this.docs = store.collection<CreditDoc>('credits');
  }

  /**
   * A call was charged (credit-blocks.ts): tells `onCharged` the balance as this process knows it (the line as
   * its last write of it answered, plus what it holds). Exact with one process; other processes' blocks, given
   * back within a second of idleness, are not counted.
   */
  charged(ownerId: string): void {
    const line = this.lineSeen.get(ownerId);
    if (this.onCharged && line !== undefined) this.onCharged(ownerId, line + this.heldHere(ownerId));
  }

  /** The line's balance as a write of it answered, for `charged` (kept only when someone listens). */
  private seen(ownerId: string, balance: number): number {
    if (this.onCharged) this.lineSeen.set(ownerId, balance);
    return balance;
  }

  /** What the owner can spend: the line's balance and what this process holds of it in blocks (other instances give theirs back within a second of idleness). */
  async balance(ownerId: string): Promise<number> {
    return ((await this.docs.findOne({ _id: ownerId }))?.balance ?? 0) + this.heldHere(ownerId);
  }

  /** Told by this process's credit blocks what they hold. */
  holding(held: (ownerId: string) => number): void {
    this.heldHere = held;
  }

  /** The line's end and balance (null: an owner without credits ever). */
  async line(ownerId: string): Promise<LineState | null> {
    return (await this.docs.find({ _id: ownerId }, { limit: 1, projection: { debited: 1, balance: 1 } }))[0] ?? null;
  }

  /** Adds credits; a negative amount debits, down to zero at most. Returns the new balance. */
  async grant(ownerId: string, amount: number): Promise<number> {
    if (amount >= 0) {
      const doc = await this.docs.findOneAndUpdate(
        { _id: ownerId },
        { $inc: { balance: amount, granted: amount }, $setOnInsert: FRESH_LINE },
        { upsert: true },
      );
      return this.seen(ownerId, doc!.balance) + this.heldHere(ownerId);
    }
    for (;;) {
      const doc = await this.docs.findOneAndUpdate({ _id: ownerId, balance: { $gte: -amount } }, { $inc: { balance: amount, granted: amount } });
      if (doc) return this.seen(ownerId, doc.balance) + this.heldHere(ownerId);
      // Not enough: take what is there (retry if a concurrent call moved the balance meanwhile).
      const current = await this.docs.findOne({ _id: ownerId });
      if (!current || current.balance === 0) return 0;
      const drained = await this.docs.findOneAndUpdate(
        { _id: ownerId, balance: current.balance },
        { $inc: { balance: -current.balance, granted: -current.balance } },
      );
      if (drained) return this.seen(ownerId, drained.balance) + this.heldHere(ownerId);
    }
  }

  /**
   * ONE update of the owner's line: returns the blocks `returning` (each only if its entry is still there) and
   * takes a new block of `size` credits (none when 0) starting at the line's end as `seen`. Matches nothing (null)
   * when the line's end moved since `seen`, the balance does not cover the block, or an entry is gone: the caller
   * reads the line again and decides.
   */
  async exchange(
    ownerId: string,
    seen: LineState,
    take: { id: string; size: number; until: Date } | null,
    returning: BlockReturn[],
  ): Promise<LineState | null> {
    const back = returning.reduce((sum, r) => sum + r.credits, 0);
    const size = take?.size ?? 0;
    const filter: Filter = { _id: ownerId, ...entriesPresent(returning) };
    if (take) Object.assign(filter, { debited: seen.debited, balance: { $gte: size - back } });
    const unset = Object.fromEntries(returning.map((r) => [`blocks.${r.id}`, '' as const]));
    const doc = await this.docs.findOneAndUpdate(filter, {
      $inc: { balance: back - size, debited: size },
      ...(take ? { $set: { [`blocks.${take.id}`]: { from: seen.debited, end: seen.debited + size, until: take.until }, unsettled: true } } : {}),
      ...(returning.length ? { $unset: unset } : {}),
    });
    return doc && { debited: doc.debited, balance: this.seen(ownerId, doc.balance) };
  }

  /** The ids of the owner's live blocks. */
  async blockIds(ownerId: string): Promise<string[]> {
    const doc = (await this.docs.find({ _id: ownerId }, { limit: 1, projection: { blocks: 1 } }))[0];
    return Object.keys(doc?.blocks ?? {});
  }

  /** Which of these blocks still have their entry (the others were returned). */
  async present(ownerId: string, ids: string[]): Promise<Set<string>> {
    const live = new Set(await this.blockIds(ownerId));
    return new Set(ids.filter((id) => live.has(id)));
  }

  /**
   * Gives back the credits of a range charged one by one before blocks, once: a no-op when that refund was
   * applied already (by a retry, or settlement). Returns whether this update applied it.
   */
  async refund(ownerId: string, from: number, cost: number): Promise<boolean> {
    const { matched } = await this.docs.updateOne(
      { _id: ownerId, settled: { $lte: from }, refunds: { $ne: from } },
      { $inc: { balance: cost }, $push: { refunds: from } },
    );
    return matched === 1;
  }
}

function entriesPresent(returning: BlockReturn[]): Filter {
  return Object.fromEntries(returning.map((r) => [`blocks.${r.id}`, { $exists: true }]));
}
