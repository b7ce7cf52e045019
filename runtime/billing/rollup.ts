// Roll-up: records are folded into hourly aggregates (collection `usage`) and into each owner's totals
// (`usage_totals`) continuously, once they are `settledMs` old by the store's clock, so that usage reads
// aggregates plus a minute or two of records and the ledger check reads one totals document plus those records.
// Records stay for the call log until retention (and, on the embedded store, which keeps every document in
// memory, within the caps of log-caps.ts) and are then deleted, never before they are rolled and settled. Hourly
// aggregates are deleted after USAGE_RETENTION_DAYS (their credits stay in the owner's totals).
//
// Work is shared out by partition (partitions.ts): a run rolls the slots of one partition, each slot from its own
// watermark (slots of a partition move together, so one query serves them). Every time involved is the store's
// (store/clock.ts): records are stamped with it when written, and the target is the store's time minus
// settledMs, so an instance whose host clock is off neither passes over another's records nor leaves its own
// behind.
//
// Never counts a record twice nor loses one, also when two rollers overlap (the partition's lease, renewed while
// a run lasts, makes that rare, not impossible): each aggregate, each owner's totals and each slot's watermark
// say up to when they hold their records (`through`) and move forward only by compare-and-set; a roller whose
// update matched nothing lost the race and stops; deletion is bounded by the watermark.
import type { LeaseHold } from '../store/lease.ts';
import { DuplicateKeyError, type Collection, type Doc, type Filter, type Store } from '../store/port.ts';
import { LogCaps } from './log-caps.ts';
import { type CallDoc, type Ledger, type LedgerOptions, type UsageRow, bucketId, hourly, unrolled } from './ledger.ts';
import { slotOf, slotsOf } from './partitions.ts';

export interface RolledDoc extends Doc, UsageRow {
  /** The aggregate holds every record of its hour made before this time. */
  through: Date;
  /** Credits of the charged records it holds (their ranges of the credit line), and of those refunded. */
  debited?: number;
  refunded?: number;
}

/** One owner's totals over every record ever rolled: what the ledger check reads instead of every aggregate. */
export interface TotalsDoc extends Doc {
  /** _id is the owner id. */
  slot: number;
  calls: number;
  credits: number;
  errors: number;
  refunds: number;
  debited: number;
  refunded: number;
  /** Holds every record of the owner made before this time. */
  through: Date;
}

/**
 * Every slot's watermark in one document: field `s<slot>`, before which every record of the slot is in its
 * aggregates and its owner's totals. One read and one guarded update per batch, whatever the number of slots.
 */
type WatermarksDoc = Doc;

type Totals = Pick<TotalsDoc, 'calls' | 'credits' | 'errors' | 'refunds' | 'debited' | 'refunded'>;

const WATERMARKS = 'rollup-slots';
const field = (slot: number) => `s${slot}`;
/** The single watermark of the version before slots; where the slots' own start. */
const LEGACY_WATERMARK = 'rollup';
const PAGE = 2000;
const HOUR = 3_600_000;

/** Another roller moved an aggregate or a watermark first: it does the work; this run stops. */
class LostRace extends Error {}

export class RollUp {
  readonly totals: Collection<TotalsDoc>;
  private readonly state: Collection<WatermarksDoc>;
  private readonly caps: LogCaps | null;
  private sinceTrim = 0;
  /** When this process last deleted each partition's aggregates past retention (once an hour is enough). */
  private readonly usageSwept = new Map<number, number>();

  constructor(
    private readonly store: Store,
    private readonly ledger: Ledger,
    private readonly options: LedgerOptions,
  ) {
    this.state = store.collection<WatermarksDoc>('ledger_state');
    this.totals = store.collection<TotalsDoc>('usage_totals');
    this.caps = options.maxRecords === Infinity ? null : new LogCaps(options.maxRecords, options.maxRecordsPerOwner ?? options.maxRecords);
  }

  /** Below this time every record of the owner is rolled (its slot's watermark; before the slot has one, the older single one). */
  async watermark(ownerId: string): Promise<Date> {
    const docs = new Map((await this.state.find({ _id: { $in: [WATERMARKS, LEGACY_WATERMARK] } })).map((d) => [d._id, d]));
    return (docs.get(WATERMARKS)?.[field(slotOf(ownerId))] ?? docs.get(LEGACY_WATERMARK)?.through ?? new Date(0)) as Date;
  }

  /** The watermarks of these slots. */
  private async watermarks(slots: number[]): Promise<Map<number, Date>> {
    const doc = await this.state.findOne({ _id: WATERMARKS });
    return new Map(slots.flatMap((slot) => (doc?.[field(slot)] instanceof Date ? [[slot, doc[field(slot)] as Date]] : [])));
  }

  /** Notes records just written; true when the embedded store's caps call for a trim now. */
  recorded(docs: CallDoc[]): boolean {
    if (!this.caps) return false;
    this.sinceTrim += docs.length;
    return this.caps.noted(docs) && this.sinceTrim >= Math.min(this.caps.maxRecords, this.caps.maxPerOwner) / 4;
  }

  /**
   * Rolls what is old enough in the partition's slots, then deletes what retention and the caps allow. Stops
   * early when the lease is lost. Returns how many records of calls it rolled.
   */
  async run(partition: number, hold: LeaseHold): Promise<number> {
    this.sinceTrim = 0;
    const slots = slotsOf(partition, this.options.partitions);
    await this.adoptOlderRecords(slots);
    // A record stamped before the target but not stored yet would be passed over for good: stop short of this
    // process's write in flight (other instances' writes: settledMs is their margin).
    const target = new Date(Math.min(this.store.clock.now() - this.options.settledMs, this.ledger.writingSince()?.getTime() ?? Infinity));
    let rolled = 0;
    try {
      while (await hold.keep()) {
        // The slots furthest behind first; those at the same point move together.
        const marks = [...(await this.watermarks(slots))];
        const from = new Date(Math.min(...marks.map(([, through]) => through.getTime())));
        if (from >= target) break;
        const group = marks.filter(([, through]) => through.getTime() === from.getTime()).map(([slot]) => slot);
        const { records, end } = await this.nextBatch({ slot: { $in: group } }, from, target);
        await this.applyPendingRefunds(records);
        await this.fold(records, end);
        const moved = await this.state.updateOne(
          { _id: WATERMARKS, ...Object.fromEntries(group.map((slot) => [field(slot), from])) },
          { $set: Object.fromEntries(group.map((slot) => [field(slot), end])) },
        );
        if (moved.matched === 0) throw new LostRace();
        rolled += records.filter((c) => c.count !== 0).length; // calls, not the rests of credit blocks
      }
    } catch (err) {
      if (!(err instanceof LostRace)) throw err;
    }
    await this.deleteExpired(slots);
    await this.deleteOldAggregates(partition, slots);
    return rolled;
  }

  /**
   * The first run of a slot in a ledger of the version before slots: its owners' records get their slot, and its
   * watermark starts where the single one was (records before it are rolled already).
   */
  private async adoptOlderRecords(slots: number[]): Promise<void> {
    const existing = await this.watermarks(slots);
    const missing = slots.filter((slot) => !existing.has(slot));
    if (missing.length === 0) return;
    const adopted = new Set<string>();
    let after = '';
    for (;;) {
      const page = await this.ledger.calls.find({ slot: null, _id: { $gt: after } }, { sort: { _id: 1 }, limit: PAGE, projection: { _id: 1, owner_id: 1 } });
      for (const { owner_id: owner } of page) {
        if (adopted.has(owner) || !missing.includes(slotOf(owner))) continue;
        adopted.add(owner);
        await this.ledger.calls.updateMany({ owner_id: owner, slot: null }, { $set: { slot: slotOf(owner) } });
      }
      if (page.length < PAGE) break;
      after = page.at(-1)!._id;
    }
    const through = (await this.state.findOne({ _id: LEGACY_WATERMARK }))?.through ?? new Date(0);
    // Set once: another instance adopting the same slots at the same time makes this match nothing (or its
    // insert a duplicate), and its watermarks stand.
    await this.state
      .updateOne(
        { _id: WATERMARKS, $and: missing.map((slot) => ({ [field(slot)]: { $exists: false } })) },
        { $set: Object.fromEntries(missing.map((slot) => [field(slot), through])) },
        { upsert: true },
      )
      .catch((err: unknown) => (err instanceof DuplicateKeyError ? undefined : Promise.reject(err)));
  }

  /** Records of the slots made in [from, target), oldest first, a page at a time; `end` is where the next page starts. */
  private async nextBatch(filter: Filter, from: Date, target: Date): Promise<{ records: CallDoc[]; end: Date }> {
    const page = await this.ledger.calls.find(Object.assign({}, filter, { at: { $gte: from, $lt: target } }), { sort: { at: 1 }, limit: PAGE });
    if (page.length < PAGE) return { records: page, end: target };
    const last = page.at(-1)!.at;
    if (last.getTime() > from.getTime()) return { records: page.filter((c) => c.at < last), end: last };
    // A whole page made in one millisecond: take every record of that millisecond.
    const end = new Date(last.getTime() + 1);
    return { records: await this.ledger.calls.find(Object.assign({}, filter, { at: { $gte: from, $lt: end } })), end };
  }

  /**
   * A refunded record charged before blocks is rolled only with its refund applied. (A record of a block is
   * rolled as it is: its block gives the refund back, and the ledger check counts it pending while the block lives.)
   */
  private async applyPendingRefunds(records: CallDoc[]): Promise<void> {
    const refunded = records.filter((c) => c.outcome === 'refunded' && c.from !== undefined && c.block === undefined);
    if (refunded.length === 0) return;
    const lines = new Map((await this.ledger.credits.docs.find({ _id: { $in: [...new Set(refunded.map((c) => c.owner_id))] } })).map((d) => [d._id, d]));
    for (const c of refunded) {
      const line = lines.get(c.owner_id);
      if (line && c.from! >= line.settled && !(line.refunds ?? []).includes(c.from!)) await this.ledger.credits.refund(c.owner_id, c.from!, c.charged);
    }
  }

  /**
   * Adds the batch (its records, up to `end`) to the hourly aggregates and the owners' totals: one read of each,
   * then one insert and one bulk update of each, every update guarded by the `through` it was computed from.
   */
  private async fold(records: CallDoc[], end: Date): Promise<void> {
    if (records.length === 0) return;
    const buckets = groupBy(records, bucketId);
    const owners = groupBy(records, (c) => c.owner_id);
    const [existing, totals] = await Promise.all([
      this.ledger.rolled.find({ _id: { $in: [...buckets.keys()] } }).then((rows) => new Map(rows.map((r) => [r._id, r]))),
      this.totals.find({ _id: { $in: [...owners.keys()] } }).then((docs) => new Map(docs.map((t) => [t._id, t]))),
    ]);
    // Owners without totals yet start from their aggregates plus what of this batch they do not hold.
    const starting = await this.startingTotals(new Map([...owners].filter(([owner]) => !totals.has(owner))), end);

    const newRows: RolledDoc[] = [];
    const rowUpdates: Array<{ filter: Filter; update: { $inc: Totals; $set: { through: Date } } }> = [];
    for (const [_id, group] of buckets) {
      const current = existing.get(_id);
      if (current && current.through >= end) continue; // holds this batch already (a run stopped before the watermark moved)
      const fresh = current ? group.filter((c) => c.at >= current.through) : group;
      if (!current) {
        const { calls: _calls, credits: _credits, errors: _errors, refunds: _refunds, ...bucket } = hourly(group[0]);
        newRows.push({ _id, ...bucket, ...totalsOf(fresh), through: end });
      } else rowUpdates.push({ filter: { _id, through: current.through }, update: { $inc: totalsOf(fresh), $set: { through: end } } });
    }
    const newTotals: TotalsDoc[] = [];
    const totalUpdates: Array<{ filter: Filter; update: { $inc: Totals; $set: { through: Date } } }> = [];
    for (const [owner, group] of owners) {
      const current = totals.get(owner);
      if (current) {
        if (current.through >= end) continue;
        totalUpdates.push({
          filter: { _id: owner, through: current.through },
          update: { $inc: totalsOf(group.filter((c) => c.at >= current.through)), $set: { through: end } },
        });
      } else newTotals.push({ _id: owner, slot: slotOf(owner), ...starting.get(owner)!, through: end });
    }
    await insertAll(this.ledger.rolled, newRows);
    await updateAll(this.ledger.rolled, rowUpdates);
    await insertAll(this.totals, newTotals);
    await updateAll(this.totals, totalUpdates);
  }

  /**
   * Each of these owners' records before `end`, for its first totals: its aggregates (one read, so each row is
   * taken at one `through`) plus the records of this batch that their row does not hold yet. A row already past
   * `end` means a roller with a later batch is at work (or stopped mid-run): this run stops (LostRace) rather than
   * move the watermark past this owner's records without its totals holding them. (Skipping the owner here, as
   * before, lost records: that other roller could still create the totals at its own, earlier, end after this
   * one had moved the watermark past it, and no batch would ever add the records in between.) A later run gets as
   * far: its target is later, and a page ends at the same record.
   */
  private async startingTotals(batches: Map<string, CallDoc[]>, end: Date): Promise<Map<string, Totals>> {
    const out = new Map<string, Totals>();
    if (batches.size === 0) return out;
    const rows = await this.ledger.rolled.find({ owner_id: { $in: [...batches.keys()] } });
    if (rows.some((row) => row.through > end)) throw new LostRace();
    const through = new Map(rows.map((row) => [row._id, row.through]));
    for (const [owner, group] of batches) {
      const held = rows
        .filter((row) => row.owner_id === owner)
        .map((row) => Object.assign({}, row, { debited: row.debited ?? 0, refunded: row.refunded ?? 0 }));
      out.set(owner, sumTotals([...held, totalsOf(unrolled(group, through))]));
    }
    return out;
  }

  /**
   * Deletes the slots' records past retention, and on the embedded store those beyond the caps: only records
   * already rolled (before their slot's watermark) and settled (their range below the owner's `settled`,
   * settlement.ts).
   */
  private async deleteExpired(slots: number[]): Promise<void> {
    const marks = await this.watermarks(slots);
    const rolledBefore = (owner: string) => marks.get(slotOf(owner))?.getTime() ?? 0;
    const retained = this.store.clock.now() - this.options.retentionMs;
    const before = new Date(Math.min(retained, ...[...marks.values()].map((d) => d.getTime())));
    // A page of records at a time, then owner by owner, by time and place on the line: no list of ids to match
    // (nedb compares every record of a page with every id of an `$in`).
    for (;;) {
      const page = await this.ledger.calls.find({ slot: { $in: slots }, at: { $lt: before } }, { limit: PAGE, projection: { _id: 1, owner_id: 1 } });
      if (page.length === 0) break;
      let deleted = 0;
      for (const owner of new Set(page.map((c) => c.owner_id))) deleted += await this.deleteSettled(owner, before);
      // Records not settled yet stay until settlement passes them (the next run deletes them).
      if (deleted === 0) break;
    }
    if (!this.caps) return;
    for (const [owner, cutoff] of await this.caps.cutoffs(this.ledger.calls)) {
      if (!slots.includes(slotOf(owner))) continue;
      const upTo = new Date(Math.min(cutoff.getTime(), rolledBefore(owner)));
      await this.caps.forget(this.ledger.calls, owner, upTo, await this.deleteSettled(owner, upTo));
    }
  }

  private async deleteSettled(owner: string, before: Date): Promise<number> {
    const settled = (await this.ledger.credits.docs.findOne({ _id: owner }))?.settled ?? 0;
    return this.ledger.calls.deleteMany({ owner_id: owner, at: { $lt: before }, $or: [{ from: { $exists: false } }, { from: { $lt: settled } }] });
  }

  /**
   * Hourly aggregates past USAGE_RETENTION_DAYS go, once an hour, for the partition's owners whose totals hold
   * them (an owner with no call since an older version wrote its aggregates has no totals yet: the ledger check
   * still reads them).
   */
  private async deleteOldAggregates(partition: number, slots: number[]): Promise<void> {
    const now = this.store.clock.now();
    if (now - (this.usageSwept.get(partition) ?? 0) < HOUR) return;
    this.usageSwept.set(partition, now);
    const before = new Date(now - this.options.usageRetentionMs);
    let after = '';
    for (;;) {
      const page = await this.ledger.rolled.find(
        { hour: { $lt: before }, _id: { $gt: after } },
        { sort: { _id: 1 }, limit: PAGE, projection: { _id: 1, owner_id: 1 } },
      );
      const owners = [...new Set(page.map((r) => r.owner_id))].filter((owner) => slots.includes(slotOf(owner)));
      const totalled = owners.length ? await this.totals.find({ _id: { $in: owners } }, { projection: { _id: 1 } }) : [];
      for (const { _id } of totalled) await this.ledger.rolled.deleteMany({ owner_id: _id, hour: { $lt: before } });
      if (page.length < PAGE) return;
      after = page.at(-1)!._id;
    }
  }
}

function totalsOf(records: CallDoc[]): Totals {
  const charged = records.filter((c) => c.from !== undefined);
  return {
    calls: sum(records, (c) => c.count ?? 1),
    credits: sum(records, (c) => c.credits),
    errors: sum(records, (c) => (c.outcome === 'ok' ? 0 : (c.count ?? 1))),
    refunds: sum(records, (c) => (c.outcome === 'refunded' ? (c.count ?? 1) : 0)),
    debited: sum(charged, (c) => c.charged),
    refunded: sum(
      charged.filter((c) => c.outcome === 'refunded'),
      (c) => c.charged,
    ),
  };
}

function sumTotals(parts: Totals[]): Totals {
  const keys = ['calls', 'credits', 'errors', 'refunds', 'debited', 'refunded'] as const;
  return Object.fromEntries(keys.map((k) => [k, sum(parts, (p) => p[k])])) as Totals;
}

function groupBy<T>(items: T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const group = groups.get(k);
    if (group) group.push(item);
    else groups.set(k, [item]);
  }
  return groups;
}

/** New aggregates: a duplicate means another roller made it first. */
async function insertAll<T extends Doc>(collection: Collection<T>, docs: T[]): Promise<void> {
  if (docs.length === 0) return;
  await collection.insertMany(docs).catch((err: unknown) => {
    throw err instanceof DuplicateKeyError ? new LostRace() : err;
  });
}

/** Guarded updates in one round trip: one that matched nothing means another roller moved that document first. */
async function updateAll<T extends Doc>(
  collection: Collection<T>,
  updates: Array<{ filter: Filter; update: Parameters<Collection<T>['updateOne']>[1] }>,
): Promise<void> {
  if (updates.length === 0) return;
  const { matched } = await collection.bulkUpdate(updates);
  if (matched < updates.length) throw new LostRace();
}

function sum<T>(items: T[], value: (item: T) => number): number {
  return items.reduce((total, item) => total + value(item), 0);
}
