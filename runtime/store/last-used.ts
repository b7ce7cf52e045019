// Last-used times (of API keys, of OAuth grants) are noted in memory on the hot path and written in the
// background: one bulk write per flush, whatever the number of documents.
import type { Collection, Doc } from './port.ts';

/**
 * Writes the pending times ($max: an older time never overwrites a newer one, from this or another
 * instance) and empties `pending`; after a failure the times are kept for the next flush.
 */
export async function flushLastUsed(pending: Map<string, Date>, collection: Collection<Doc & { last_used_at: Date | null }>): Promise<void> {
  const entries = [...pending];
  pending.clear();
  try {
    await collection.bulkUpdate(entries.map(([id, at]) => ({ filter: { _id: id }, update: { $max: { last_used_at: at } } })));
  } catch (error) {
    for (const [id, at] of entries) if (!pending.has(id)) pending.set(id, at);
    throw error;
  }
}
