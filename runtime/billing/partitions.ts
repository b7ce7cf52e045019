// How the ledger's housekeeping is shared out: owners are spread over a fixed number of slots by a hash of their
// id (each record carries its owner's slot), and a partition is the set of slots whose number leaves its index
// when divided by the number of partitions. Settlement and roll-up run per partition, each under its own lease,
// so instances work on different partitions at once. The slots never change; the number of partitions may
// (LEDGER_PARTITIONS): each slot keeps its own roll-up watermark, whichever partition it falls in.

/** Fixed for good: records and watermarks carry slot numbers. Also the most partitions there can be. */
export const SLOTS = 64;

/** The owner's slot: FNV-1a of its id. */
export function slotOf(ownerId: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < ownerId.length; i++) {
    hash ^= ownerId.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % SLOTS;
}

/** The slots of one partition. */
export function slotsOf(partition: number, partitions: number): number[] {
  return Array.from({ length: SLOTS }, (_, slot) => slot).filter((slot) => slot % partitions === partition);
}

export function partitionOf(ownerId: string, partitions: number): number {
  return slotOf(ownerId) % partitions;
}
