// Roll-up: records are folded into hourly aggregates (collection `usage`) continuously, once they are
// `settledMs` old, so that usage and the ledger check read aggregates plus a minute or two of records. Records
// stay for the call log until retention (and, on the embedded store, which keeps every document in memory,
// beyond the newest maxRecords) and are then deleted, never before they are rolled and settled.
//
// Never counts a record twice nor loses one, also when two rollers overlap (the housekeeping lease makes that
// rare, not impossible): each aggregate says up to when it holds its hour's records (`through`) and moves
// forward only by compare-and-set; a roller whose update matched nothing lost the race and stops, and
// deletion is bounded by the watermark, which moves only after every aggregate of the batch moved.
import { DuplicateKeyError, type Collection, type Doc, type Store } from '../store/port.ts';
import { type CallDoc, type Ledger, type LedgerOptions, type UsageRow, bucketId, hourly } from './ledger.ts';

export interface RolledDoc extends Doc, UsageRow {
  /** The aggregate holds every record of its hour made before this time. */
  through: Date;
  /** Credits of the charged records it holds (their ranges of the credit line), and of those refunded. */
  debited?: number;
  refunded?: number;
}

interface WatermarkDoc extends Doc {
  /** Every record made before this time is in its aggregate. */
  through: Date;
}

const WATERMARK = 'rollup';
const PAGE = 2000;

/** Another roller moved an aggregate or the watermark first: it does the work; this run stops. */
class LostRace extends Error {}

export class RollUp {
  private readonly state: Collection<WatermarkDoc>;
  /** On the embedded store: when each record this process wrote was written, oldest first (no sort of the ledger needed). */
  private writtenAt: Date[] = [];
  private sinceRoll = 0;

  constructor(
    store: Store,
    private readonly ledger: Ledger,
    private readonly options: LedgerOptions,
  ) {
    this.state = store.collection<WatermarkDoc>('ledger_state');
  }

  async watermark(): Promise<Date> {
    return (await this.state.findOne({ _id: WATERMARK }))?.through ?? new Date(0);
  }

  /** Notes records just written; true when the embedded store's maxRecords calls for a roll now. */
  recorded(docs: CallDoc[]): boolean {
    if (this.options.maxRecords === Infinity) return false;
    for (const d of docs) this.writtenAt.push(d.at);
    this.sinceRoll += docs.length;
    return this.sinceRoll >= this.options.maxRecords / 4;
  }

  /** Rolls what is old enough, then deletes what retention and maxRecords allow. Returns how many records it rolled. */
  async run(): Promise<number> {
    this.sinceRoll = 0;
    // A record stamped before the target but not stored yet would be passed over for good: stop short of this
    // process's write in flight (other instances' writes: settledMs is their margin).
    const target = new Date(Math.min(Date.now() - this.options.settledMs, this.ledger.writingSince()?.getTime() ?? Infinity));
    await this.state
      .insertOne({ _id: WATERMARK, through: new Date(0) })
      .catch((err: unknown) => (err instanceof DuplicateKeyError ? undefined : Promise.reject(err)));
    let from = await this.watermark();
    let rolled = 0;
    try {
      while (from < target) {
        const { records, end } = await this.nextBatch(from, target);
        await this.applyPendingRefunds(records);
        await this.fold(records, end);
        const moved = await this.state.updateOne({ _id: WATERMARK, through: from }, { $set: { through: end } });
        if (moved.matched === 0) throw new LostRace();
        rolled += records.length;
        from = end;
      }
    } catch (err) {
      if (!(err instanceof LostRace)) throw err;
    }
    await this.deleteExpired(await this.watermark());
    return rolled;
  }

  /** Records made in [from, target), oldest first, a page at a time; `end` is where the next page starts. */
  private async nextBatch(from: Date, target: Date): Promise<{ records: CallDoc[]; end: Date }> {
    const page = await this.ledger.calls.find({ at: { $gte: from, $lt: target } }, { sort: { at: 1 }, limit: PAGE });
    if (page.length < PAGE) return { records: page, end: target };
    const last = page.at(-1)!.at;
    if (last.getTime() > from.getTime()) return { records: page.filter((c) => c.at < last), end: last };
    // A whole page made in one millisecond: take every record of that millisecond.
    const end = new Date(last.getTime() + 1);
    return { records: await this.ledger.calls.find({ at: { $gte: from, $lt: end } }), end };
  }

  /** A refunded record is rolled only with its refund applied, so that aggregates hold only settled money. */
  private async applyPendingRefunds(records: CallDoc[]): Promise<void> {
    const refunded = records.filter((c) => c.outcome === 'refunded' && c.from !== undefined);
    if (refunded.length === 0) return;
    const lines = new Map((await this.ledger.credits.docs.find({ _id: { $in: [...new Set(refunded.map((c) => c.owner_id))] } })).map((d) => [d._id, d]));
    for (const c of refunded) {
      const line = lines.get(c.owner_id);
      if (line && c.from! >= line.settled && !(line.refunds ?? []).includes(c.from!)) await this.ledger.credits.refund(c.owner_id, c.from!, c.charged);
    }
  }

  private async fold(records: CallDoc[], end: Date): Promise<void> {
    const groups = new Map<string, CallDoc[]>();
    for (const c of records) {
      const id = bucketId(c);
      const group = groups.get(id);
      if (group) group.push(c);
      else groups.set(id, [c]);
    }
    if (groups.size === 0) return;
    const existing = new Map((await this.ledger.rolled.find({ _id: { $in: [...groups.keys()] } })).map((r) => [r._id, r]));
    for (const [_id, group] of groups) {
      const current = existing.get(_id);
      if (current && current.through >= end) continue; // holds this batch already (a run stopped before the watermark moved)
      const fresh = current ? group.filter((c) => c.at >= current.through) : group;
      const charged = fresh.filter((c) => c.from !== undefined);
      const totals = {
        calls: fresh.length,
        credits: sum(fresh, (c) => c.credits),
        errors: fresh.filter((c) => c.outcome !== 'ok').length,
        refunds: fresh.filter((c) => c.outcome === 'refunded').length,
        debited: sum(charged, (c) => c.charged),
        refunded: sum(
          charged.filter((c) => c.outcome === 'refunded'),
          (c) => c.charged,
        ),
      };
      if (!current) {
        const { calls: _calls, credits: _credits, errors: _errors, refunds: _refunds, ...bucket } = hourly(group[0]);
        await this.ledger.rolled.insertOne({ _id, ...bucket, ...totals, through: end }).catch((err: unknown) => {
          throw err instanceof DuplicateKeyError ? new LostRace() : err;
        });
      } else {
        const moved = await this.ledger.rolled.updateOne({ _id, through: current.through }, { $inc: totals, $set: { through: end } });
        if (moved.matched === 0) throw new LostRace();
      }
    }
  }

  /**
   * Deletes records past retention, and on the embedded store those beyond the newest maxRecords: only records
   * already rolled (before the watermark) and settled (their range below the owner's `settled`, settlement.ts).
   */
  private async deleteExpired(watermark: Date): Promise<void> {
    let cutoff = Math.min(watermark.getTime(), Date.now() - this.options.retentionMs);
    const { maxRecords } = this.options;
    if (maxRecords !== Infinity && this.writtenAt.length > maxRecords) {
      cutoff = Math.max(cutoff, Math.min(watermark.getTime(), this.writtenAt[this.writtenAt.length - maxRecords - 1].getTime() + 1));
    } else if (maxRecords !== Infinity && (await this.ledger.calls.countDocuments({})) > maxRecords) {
      // Fewer than maxRecords written by this process: the ledger itself says where the limit falls (sorting
      // every record to find it cost about 80 ms a roll-up at 7,000 records, so only when it is passed).
      const beyond = (await this.ledger.calls.find({}, { sort: { at: -1 }, skip: maxRecords, limit: 1, projection: { at: 1 } }))[0]?.at;
      if (beyond) cutoff = Math.max(cutoff, Math.min(watermark.getTime(), beyond.getTime() + 1));
    }
    const before = new Date(cutoff);
    // Owner by owner, by time and place on the line: no list of ids to match (nedb compares every record of a
    // page with every id of an `$in`).
    for (;;) {
      const page = await this.ledger.calls.find({ at: { $lt: before } }, { limit: PAGE, projection: { _id: 1, owner_id: 1 } });
      if (page.length === 0) break;
      const owners = [...new Set(page.map((c) => c.owner_id))];
      const lines = await this.ledger.credits.docs.find({ _id: { $in: owners } }, { projection: { _id: 1, settled: 1 } });
      const settled = new Map(lines.map((d) => [d._id, d.settled ?? 0]));
      let deleted = 0;
      for (const owner of owners) {
        deleted += await this.ledger.calls.deleteMany({
          owner_id: owner,
          at: { $lt: before },
          $or: [{ from: { $exists: false } }, { from: { $lt: settled.get(owner) ?? 0 } }],
        });
      }
      // Records not settled yet stay until settlement passes them (the next run deletes them).
      if (deleted === 0) break;
    }
    this.writtenAt = this.writtenAt.filter((at) => at >= before);
  }
}

function sum<T>(items: T[], value: (item: T) => number): number {
  return items.reduce((total, item) => total + value(item), 0);
}
