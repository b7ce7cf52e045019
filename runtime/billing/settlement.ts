// Settlement: what a stop left behind on the owners' credit lines (credits.ts). A credit block whose lease is
// over, and every call it could have started with it (maxCallMs later), belongs to a process that stopped (or
// lost the store for that long): the gaps of its range are recorded as `interrupted` and the block is returned
// (its size less what its records kept), guarded by its entry like the process's own return. Below the live
// blocks, every range is recorded; `settled` moves past them, so the next run starts there and reads only the
// records since. Ranges charged one by one before blocks are settled as then: a range with no record older than
// any call can last is refunded and recorded as `interrupted`, a refund a crash cut off is applied.
//
// Safe when several instances run it at once: an interrupted range's record has an id made of its place
// on the line (a second insert is a duplicate, ignored), refunds are guarded by the range, and `settled` moves
// by compare-and-set. The work is shared out by partition (partitions.ts); an owner whose line has not moved
// since the last pass, with nothing grown old enough meanwhile, is skipped; the moves of a page of owners are
// written together. Times are the store's (store/clock.ts): the marks one instance writes, another judges.
import type { StoreClock } from '../store/clock.ts';
import { DuplicateKeyError, type Collection, type Filter, type Update } from '../store/port.ts';
import type { BlockEntry, CreditDoc, Credits } from './credits.ts';
import { type CallDoc, chargeKey, chargeKeysEnd, rangeRecord } from './ledger.ts';
import { partitionOf, slotOf } from './partitions.ts';

/** Records read at a time while walking an owner's line; owners read at a time. */
const PAGE = 1000;

type Mode = 'everything' | 'stale';

/** What a pass over one owner's line found: refunds (and blocks returned) it applied, and where `settled` moves (with its guard). */
interface Pass {
  refunds: number;
  move?: { filter: Filter; update: Update; settledTo: number; end: number };
}

export class Settlement {
  constructor(
    private readonly calls: Collection<CallDoc>,
    private readonly credits: Credits,
    private readonly maxCallMs: number,
    private readonly clock: StoreClock,
  ) {}

  /**
   * Settles every owner with work (of one partition, when given, while its lease is kept): `everything` when no
   * call can be running (one process, at start), `stale` (ranges charged before the oldest time any running call
   * could have started) otherwise. Returns how many refunds it applied.
   */
  async settleAll(mode: Mode, partition?: { index: number; of: number; keep: () => Promise<boolean> }): Promise<number> {
    await this.upgradeOlderDocuments();
    let refunds = 0;
    let after = '';
    for (;;) {
      const page = await this.credits.docs.find({ unsettled: true, _id: { $gt: after } }, { sort: { _id: 1 }, limit: PAGE });
      const readAt = this.clock.now();
      const passes: Pass[] = [];
      let lost = false;
      for (const doc of page) {
        if (partition && partitionOf(doc._id, partition.of) !== partition.index) continue;
        // The partition's lease lost: the next run settles the rest.
        if ((lost = partition !== undefined && !(await partition.keep()))) break;
        passes.push(await this.pass(doc, mode, readAt));
      }
      refunds += passes.reduce((n, p) => n + p.refunds, 0);
      await this.move(passes);
      if (lost || page.length < PAGE) return refunds;
      after = page.at(-1)!._id;
    }
  }

  async settleOwner(ownerId: string, mode: Mode): Promise<number> {
    const doc = await this.credits.docs.findOne({ _id: ownerId });
    if (!doc) return 0;
    const pass = await this.pass(doc, mode, this.clock.now());
    await this.move([pass]);
    return pass.refunds;
  }

  /** `settled` moves by compare-and-set (if another settler moved first, its result stands: both read the same facts). */
  private async move(passes: Pass[]): Promise<void> {
    const moves = passes.flatMap((p) => (p.move ? [p.move] : []));
    if (moves.length === 0) return;
    await this.credits.docs.bulkUpdate(moves.map(({ filter, update }) => ({ filter, update })));
    const done = moves.filter((m) => m.settledTo === m.end);
    if (done.length === 0) return;
    await this.credits.docs.bulkUpdate(
      done.map((m) => ({ filter: { _id: m.filter._id, settled: m.settledTo, debited: m.settledTo }, update: { $set: { unsettled: false } } })),
    );
  }

  /** Walks the owner's line from `settled` (the doc as read at `readAt`, store time): refunds what it must, and says where `settled` moves. */
  private async pass(doc: CreditDoc, mode: Mode, readAt: number): Promise<Pass> {
    const ownerId = doc._id;
    const staleBefore = readAt - this.maxCallMs;
    let refunds = 0;
    // Blocks of processes that stopped go back first; the others are live, and settlement stays below them.
    const live: number[] = [];
    for (const [id, block] of Object.entries(doc.blocks ?? {})) {
      if (mode === 'everything' || block.until.getTime() <= staleBefore) refunds += await this.returnBlock(ownerId, id, block);
      else live.push(block.from);
    }
    // A live block's records wait for its return (their refunds are in it): `settled` stops at the first.
    const firstLive = Math.min(...live);
    // Below `safe` no call can be running: every range there is recorded, or was interrupted.
    const safe = Math.min(firstLive, mode === 'everything' ? doc.debited : (newestMarkBefore(doc.marks ?? [], staleBefore)?.debited ?? doc.settled));
    // No charge since the last pass, and nothing became old enough to settle: nothing to do until one or the other.
    if (mode === 'stale' && doc.marks?.at(-1)?.debited === doc.debited && safe <= doc.settled) return { refunds };
    /** Starts of the refunded ranges walked: below the new `settled` their guard entries are no longer needed. */
    const refunded = [...(doc.refunds ?? [])];
    const interrupted = async (from: number, credits: number) => {
      refunded.push(from);
      refunds += await this.interrupted(ownerId, from, credits);
    };
    let pos = doc.settled;
    let running = false;
    for await (const r of this.rangesFrom(ownerId, doc.settled)) {
      if (r.from >= firstLive) {
        running = true;
        break;
      }
      if (r.from > pos) {
        if (pos >= safe) {
          running = true;
          break;
        }
        const end = Math.min(r.from, safe);
        await interrupted(pos, end - pos);
        pos = end;
        if (pos < r.from) {
          running = true;
          break;
        }
      }
      // A block's return gave back the refunds of its calls.
      if (r.outcome === 'refunded' && r.block === undefined) {
        refunded.push(r.from);
        if (!(doc.refunds ?? []).includes(r.from) && (await this.credits.refund(ownerId, r.from, r.charged))) refunds++;
      }
      pos = r.from + r.charged;
    }
    if (!running && pos < safe) {
      await interrupted(pos, safe - pos);
      pos = safe;
    }
    // The newest mark old enough to be `safe` next time, the younger ones, and now.
    const older = newestMarkBefore(doc.marks ?? [], staleBefore);
    const marks = [...(older ? [older] : []), ...(doc.marks ?? []).filter((m) => m.at.getTime() > staleBefore), { at: new Date(readAt), debited: doc.debited }];
    // Below the new `settled` the refund guard rejects every range by itself: their entries go.
    return {
      refunds,
      move: {
        filter: { _id: ownerId, settled: doc.settled },
        update: { $set: { settled: pos, marks }, $pull: { refunds: { $in: [...new Set(refunded.filter((from) => from < pos))] } } },
        settledTo: pos,
        end: doc.debited,
      },
    };
  }

  /** An interrupted range: recorded (once, whoever gets there first) and refunded (once). Returns 1 if this run refunded it. */
  private async interrupted(ownerId: string, from: number, credits: number): Promise<number> {
    await this.recordInterrupted(ownerId, from, credits);
    return (await this.credits.refund(ownerId, from, credits)) ? 1 : 0;
  }

  private async recordInterrupted(ownerId: string, from: number, credits: number, block?: string): Promise<void> {
    await this.calls
      .insertOne(interruptedRecord(ownerId, from, credits, this.clock.date(), block))
      .catch((err: unknown) => (err instanceof DuplicateKeyError ? undefined : Promise.reject(err)));
  }

  /**
   * Returns the block of a process that stopped: the gaps of its range (calls it was running, its unused rest:
   * nothing tells them apart) recorded as interrupted, then what its records did not keep given back, by the
   * update that removes its entry (once, whoever gets there first). Returns the interrupted records of the block
   * if this run returned it (0 if another did), those another settler of the same block wrote first included.
   */
  private async returnBlock(ownerId: string, id: string, block: BlockEntry): Promise<number> {
    let kept = 0;
    let gaps = 0;
    let pos = block.from;
    const gap = async (end: number) => {
      await this.recordInterrupted(ownerId, pos, end - pos, id);
      gaps++;
    };
    for await (const r of this.rangesFrom(ownerId, block.from)) {
      if (r.from >= block.end) break;
      if (r.from > pos) await gap(r.from);
      if (r.code === 'interrupted' && r.block === id) gaps++;
      kept += r.credits;
      pos = r.from + r.charged;
    }
    if (pos < block.end) await gap(block.end);
    const back = [{ id, credits: block.end - block.from - kept }];
    return (await this.credits.exchange(ownerId, { debited: 0, balance: 0 }, null, back)) ? gaps : 0;
  }

  /**
   * The range of a charged call whose record the store did not take (it refused writes, or did not answer in
   * time): recorded as refunded (`store_unavailable`) and refunded, unless the call's own record reached the
   * store after all, which then decides (kept, or refunded). Returns whether the call is refunded: its block gives
   * the credits back (a range charged before blocks is refunded here).
   */
  async settleUnrecorded(call: CallDoc & { from: number; charge_key: string }): Promise<boolean> {
    const record: CallDoc = Object.assign({}, call, {
      at: this.clock.date(),
      outcome: 'refunded',
      code: 'store_unavailable',
      credits: 0,
      message:
        'The call reached the provider, but the service could not record it when it ended (its store refused the write or did not answer); its credits were refunded',
    });
    try {
      await this.calls.insertOne(record);
    } catch (err) {
      if (!(err instanceof DuplicateKeyError)) throw err;
      const stored = await this.calls.findOne({ charge_key: call.charge_key });
      if (stored?.outcome !== 'refunded') return false;
    }
    if (call.block === undefined) await this.credits.refund(call.owner_id, call.from, call.charged);
    return true;
  }

  /** The owner's charged records from `start` on, in order of their place on the line, a page at a time. */
  private async *rangesFrom(ownerId: string, start: number): AsyncGenerator<CallDoc & { from: number }> {
    let next = start;
    for (;;) {
      const page = (await this.calls.find(
        { charge_key: { $gte: chargeKey(ownerId, next), $lt: chargeKeysEnd(ownerId) } },
        { sort: { charge_key: 1 }, limit: PAGE, projection: { _id: 1, from: 1, charged: 1, credits: 1, outcome: 1, code: 1, block: 1 } },
      )) as Array<CallDoc & { from: number }>;
      yield* page;
      if (page.length < PAGE) return;
      next = page.at(-1)!.from + 1;
    }
  }

  /**
   * Credits documents written before the credit line existed get its fields; the open charges they list (a
   * crash of that version) are settled the way that version did: kept when recorded as kept, refunded otherwise.
   */
  private async upgradeOlderDocuments(): Promise<void> {
    type OlderDoc = CreditDoc & { open?: Array<{ id: string; cost: number; at: Date; server_id: string; key_id: string; tool: string }> };
    const older = (await this.credits.docs.find({ debited: { $exists: false } }, { limit: PAGE })) as OlderDoc[];
    for (const doc of older) {
      let refund = 0;
      for (const charge of doc.open ?? []) {
        let record = await this.calls.findOne({ _id: charge.id });
        if (!record) {
          record = {
            _id: charge.id,
            at: this.clock.date(),
            owner_id: doc._id,
            slot: slotOf(doc._id),
            server_id: charge.server_id,
            key_id: charge.key_id,
            tool: charge.tool,
            outcome: 'refunded',
            code: 'interrupted',
            charged: charge.cost,
            credits: 0,
            latency_ms: null,
          };
          await this.calls.insertOne(record).catch((err: unknown) => (err instanceof DuplicateKeyError ? undefined : Promise.reject(err)));
        }
        if (record.outcome === 'refunded') refund += charge.cost;
      }
      // One update gives the refunds back and starts the line: done once, whoever runs it.
      await this.credits.docs.updateOne(
        { _id: doc._id, debited: { $exists: false } },
        { $inc: { balance: refund }, $set: { debited: 0, settled: 0, unsettled: false }, $unset: { open: '' } },
      );
    }
  }
}

/** The record of a range a stop left without a record (in a block, or charged before blocks). */
function interruptedRecord(ownerId: string, from: number, credits: number, at: Date, block?: string): CallDoc {
  return Object.assign(
    rangeRecord(ownerId, from, credits, 'interrupted', at),
    { message: 'The service stopped while this call was running (which tool it was is not known); its credits were refunded' },
    block ? { block } : undefined,
  );
}

type Mark = NonNullable<CreditDoc['marks']>[number];

function newestMarkBefore(marks: Mark[], time: number): Mark | undefined {
  return marks.filter((m) => m.at.getTime() <= time).sort((a, b) => b.at.getTime() - a.at.getTime())[0];
}
