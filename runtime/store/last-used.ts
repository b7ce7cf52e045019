// Last-used times (of API keys, of OAuth grants) are noted in memory on the hot path and written in the
// background: one bulk write per flush, whatever the number of documents, and at most one write a minute per
// document from each process (a busy key would otherwise be written at every flush, every 2 s). A last-used time
// is therefore up to a minute early, by the store's clock.
import type { StoreClock } from './clock.ts';
import type { Collection, Doc } from './port.ts';

/** A document's last-used time is written again only this long after this process last wrote it. */
export const LAST_USED_EVERY_MS = 60_000;

export class LastUsedTimes {
  /** Times waiting to be written. */
  private readonly pending = new Map<string, Date>();
  /** When this process last wrote each document's time (store time). */
  private readonly written = new Map<string, number>();

  constructor(
    private readonly collection: Collection<Doc & { last_used_at: Date | null }>,
    private readonly clock: StoreClock,
  ) {}

  /** Notes a use now; nothing to write when this process wrote the document's time less than a minute ago. */
  touch(id: string): void {
    const now = this.clock.now();
    if (now - (this.written.get(id) ?? -Infinity) >= LAST_USED_EVERY_MS) this.pending.set(id, new Date(now));
  }

  /**
   * Writes the pending times ($max: an older time never overwrites a newer one, from this or another instance).
   * After a failure the times are kept for the next flush.
   */
  async flush(): Promise<void> {
    const entries = [...this.pending];
    this.pending.clear();
    const now = this.clock.now();
    for (const [id, at] of this.written) if (now - at >= LAST_USED_EVERY_MS) this.written.delete(id);
    if (entries.length === 0) return;
    try {
      await this.collection.bulkUpdate(entries.map(([id, at]) => ({ filter: { _id: id }, update: { $max: { last_used_at: at } } })));
      for (const [id, at] of entries) this.written.set(id, at.getTime());
    } catch (error) {
      for (const [id, at] of entries) if (!this.pending.has(id)) this.pending.set(id, at);
      throw error;
    }
  }
}
