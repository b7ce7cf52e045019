// The embedded store holds every document in memory, so there the call log is capped (LEDGER_MAX_RECORDS), and
// fairly: no owner can push another's records out. Each owner keeps its newest records, at most maxPerOwner of
// them (LEDGER_MAX_RECORDS_PER_OWNER); when all owners together hold more than maxRecords, the largest logs are
// trimmed first, down to the largest equal share that fits, and no log below it. Older records live on in
// their aggregates (rollup.ts deletes only what is rolled and settled). Records written together share their
// time stamp and go or stay together, so a log may keep up to a batch's worth beyond its share.
import type { Collection } from '../store/port.ts';
import type { CallDoc } from './ledger.ts';

export class LogCaps {
  /** Each owner's record times (ms), oldest first; read from the ledger at the first trim, then kept up to date. */
  private times: Map<string, number[]> | null = null;
  private total = 0;

  constructor(
    readonly maxRecords: number,
    readonly maxPerOwner: number,
  ) {}

  /** Notes records just written; true when an owner or the whole log is a quarter past its cap. */
  noted(docs: CallDoc[]): boolean {
    let over = false;
    for (const doc of docs) {
      this.total++;
      const times = this.times?.get(doc.owner_id);
      if (times) times.push(doc.at.getTime());
      else this.times?.set(doc.owner_id, [doc.at.getTime()]);
      if ((this.times?.get(doc.owner_id)?.length ?? 0) > this.maxPerOwner * 1.25) over = true;
    }
    return over || this.total > this.maxRecords * 1.25;
  }

  /** For each owner beyond its share: the time before which its records go (its newest ones stay). */
  async cutoffs(calls: Collection<CallDoc>): Promise<Map<string, Date>> {
    const times = await this.load(calls);
    const share = fairShare(
      [...times.values()].map((t) => t.length),
      this.maxRecords,
      this.maxPerOwner,
    );
    const cutoffs = new Map<string, Date>();
    for (const [owner, t] of times) if (t.length > share) cutoffs.set(owner, new Date(t[t.length - share]));
    return cutoffs;
  }

  /**
   * Records of the owner before `before` were deleted, those that could be: when some could not (not rolled or
   * settled yet), the owner's records still before `before` are read again (not every owner's: under traffic
   * that is most trims, and each read of the whole log cost a scan of every record the store holds).
   */
  async forget(calls: Collection<CallDoc>, owner: string, before: Date, deleted: number): Promise<void> {
    const known = this.times?.get(owner);
    if (!known) return;
    const older = known.filter((t) => t < before.getTime()).length;
    const left =
      older === deleted
        ? []
        : (await calls.find({ owner_id: owner, at: { $lt: before } }, { projection: { at: 1 } })).map(({ at }) => at.getTime()).sort((a, b) => a - b);
    // Records noted meanwhile are newer than `before`: they are in the list read again now.
    const times = this.times?.get(owner);
    if (!times) return;
    const stay = [...left, ...times.filter((t) => t >= before.getTime())];
    this.total -= times.length - stay.length;
    if (stay.length === 0) this.times!.delete(owner);
    else this.times!.set(owner, stay);
  }

  private async load(calls: Collection<CallDoc>): Promise<Map<string, number[]>> {
    if (this.times) return this.times;
    const times = new Map<string, number[]>();
    for (const { owner_id, at } of await calls.find({}, { projection: { owner_id: 1, at: 1 } })) {
      const list = times.get(owner_id);
      if (list) list.push(at.getTime());
      else times.set(owner_id, [at.getTime()]);
    }
    for (const list of times.values()) list.sort((a, b) => a - b);
    this.total = [...times.values()].reduce((n, list) => n + list.length, 0);
    this.times = times;
    return times;
  }
}

/** The most records each owner may keep: at most `perOwner`, and all owners' together at most `total` (max-min fair). */
export function fairShare(counts: number[], total: number, perOwner: number): number {
  const kept = (share: number) => counts.reduce((n, c) => n + Math.min(c, share), 0);
  if (kept(perOwner) <= total) return perOwner;
  let low = 0;
  let high = perOwner;
  while (low < high) {
    const mid = Math.ceil((low + high) / 2);
    if (kept(mid) <= total) low = mid;
    else high = mid - 1;
  }
  return low;
}
