// The ledger's invariant: granted - balance = kept + open, where kept is what recorded calls kept and open is
// what calls and credit blocks still hold (charged ranges with no record yet: calls running, the unused rest of
// live blocks; and refunds recorded but not given back yet: those of live blocks' calls, which their block
// returns, and of ranges charged before blocks whose refund is not applied).
//
// Exact under live traffic: everything is judged against ONE read of the owner's credit line. Records of ranges
// charged after that read are left out; records that arrive after it for ranges charged before count the same
// either way (a kept record moves its credits from open to kept). The reads after it come in the order that
// never misses nor double-counts a record being rolled up (Ledger.unrolledThenRolled). A difference is
// confirmed by fresh reads before it is reported, so a roll-up that applied a refund between two reads is not
// mistaken for a break.
//
// Bounded: what is rolled is read from the owner's totals (one document, rollup.ts), plus the records not in
// them yet (a minute or two); only an owner with no call since its ledger was written by a version without
// totals is read from its hourly aggregates.
import type { CreditDoc } from './credits.ts';
import { type CallDoc, type Ledger, chargeKey, unrolled } from './ledger.ts';

export interface InvariantReport {
  owner_id: string;
  granted: number;
  balance: number;
  /** Credits kept by recorded calls (records and rolled aggregates). */
  kept: number;
  /** Credits held by calls still running, or recorded as refunded with the refund not applied yet. */
  open: number;
  /** granted - kept - open - balance: always 0. */
  difference: number;
  /**
   * Credits of settled ranges (below the line's `settled`, so recorded) that neither the aggregates nor the
   * records not rolled yet hold, at least: always 0. A lost kept record leaves `difference` at 0 (its credits
   * count as open instead of kept); this shows it once settlement has passed its range.
   */
  unaccounted: number;
  ok: boolean;
}

const CONFIRMATIONS = 3;
const PAGE = 500;

/** One owner's report, or every owner's (a page of owners at a time). */
export async function checkLedger(ledger: Ledger, ownerId?: string): Promise<InvariantReport[]> {
  if (ownerId) {
    const report = await checkOwner(ledger, ownerId);
    return report ? [report] : [];
  }
  const reports: InvariantReport[] = [];
  let after = '';
  for (;;) {
    const owners = await ledger.credits.docs.find({ _id: { $gt: after } }, { sort: { _id: 1 }, limit: PAGE, projection: { _id: 1 } });
    for (const { _id } of owners) {
      const report = await checkOwner(ledger, _id);
      if (report) reports.push(report);
    }
    if (owners.length < PAGE) return reports;
    after = owners.at(-1)!._id;
  }
}

async function checkOwner(ledger: Ledger, ownerId: string): Promise<InvariantReport | null> {
  let report: InvariantReport | null = null;
  for (let attempt = 0; attempt < CONFIRMATIONS && !report?.ok; attempt++) {
    const line = await ledger.credits.docs.findOne({ _id: ownerId });
    if (!line) return null;
    report = await reportAgainst(ledger, line);
  }
  return report;
}

/** What is rolled for the owner (credits kept, and charged), and of the records, those it does not hold. */
interface Rolled {
  kept: number;
  debited: number;
  notIn: (records: CallDoc[]) => CallDoc[];
  /** The records of the line's live blocks (read before the rolled figures, after the records not rolled). */
  inLiveBlocks: CallDoc[];
}

async function reportAgainst(ledger: Ledger, line: CreditDoc): Promise<InvariantReport> {
  const owner = line._id;
  const { records, rolled } = await ledger.unrolledThenRolled({ owner_id: owner }, { at: {} }, async (rows): Promise<Rolled> => {
    const ranges = Object.values(line.blocks ?? {}).map((b) => ({ charge_key: { $gte: chargeKey(owner, b.from), $lt: chargeKey(owner, b.end) } }));
    const inLiveBlocks = ranges.length ? await ledger.calls.find({ $or: ranges }, { projection: { _id: 1, at: 1, charged: 1, outcome: 1 } }) : [];
    const totals = await ledger.rollUp.totals.findOne({ _id: owner });
    if (totals) return { kept: totals.credits, debited: totals.debited, notIn: (rs) => rs.filter((c) => c.at >= totals.through), inLiveBlocks };
    const aggregates = await rows.find({ owner_id: owner });
    const through = new Map(aggregates.map((r) => [r._id, r.through]));
    return {
      kept: total(aggregates, (r) => r.credits),
      debited: total(aggregates, (r) => r.debited ?? 0),
      notIn: (rs) => unrolled(rs, through),
      inLiveBlocks,
    };
  });
  // Ranges charged after the line was read are not part of this snapshot.
  const mine = rolled.notIn(records).filter((c) => c.from === undefined || c.from < line.debited);
  const charged = mine.filter((c) => c.from !== undefined);
  const refundPending = (from: number) => from >= line.settled && !(line.refunds ?? []).includes(from);
  const kept = rolled.kept + total(mine, (c) => c.credits);
  const recorded = rolled.debited + total(charged, (c) => c.charged);
  // A live block's refunded records (counted above: rolled, or read not rolled) wait for the block's return.
  const counted = new Set(mine.map((c) => c._id));
  const blockRefunds = rolled.inLiveBlocks.filter((c) => c.outcome === 'refunded' && (counted.has(c._id) || rolled.notIn([c]).length === 0));
  const pending =
    total(
      charged.filter((c) => c.outcome === 'refunded' && c.block === undefined && refundPending(c.from!)),
      (c) => c.charged,
    ) + total(blockRefunds, (c) => c.charged);
  const open = line.debited - recorded + pending;
  const difference = line.granted - kept - open - line.balance;
  // Every range below `settled` is recorded (settlement moves it only past recorded ranges), and the ranges
  // tile the line from 0: what is recorded covers at least `settled`.
  const unaccounted = Math.max(0, line.settled - recorded);
  return {
    owner_id: line._id,
    granted: line.granted,
    balance: line.balance,
    kept,
    open,
    difference,
    unaccounted,
    ok: difference === 0 && unaccounted === 0,
  };
}

function total<T>(items: T[], value: (item: T) => number): number {
  return items.reduce((sum, item) => sum + value(item), 0);
}
