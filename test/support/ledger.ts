// Options of a Ledger that a test builds on a store of its own: the service's defaults (30 days of records, 400
// of aggregates), one partition, roll-up after 10 s; and a credit block left by a process that stopped.
import { randomBytes } from 'node:crypto';
import { Credits } from '../../runtime/billing/credits.ts';
import type { LedgerOptions } from '../../runtime/billing/ledger.ts';
import type { Store } from '../../runtime/store/port.ts';

const HOUR = 3_600_000;

export const LEDGER_OPTIONS: LedgerOptions = {
  maxRecords: Infinity,
  retentionMs: 30 * 24 * HOUR,
  usageRetentionMs: 400 * 24 * HOUR,
  rejectionsPerMinute: 1000,
  partitions: 1,
  leaseMs: 60_000,
  maxCallMs: 15 * 60_000,
  blockLeaseMs: 30_000,
  settledMs: 10_000,
  instance: 'test-a',
};

/**
 * A block of `size` credits taken as a process takes one (Credits.exchange), as a process that then stops leaves
 * it: no record, no return. Its id and where its range starts; null when the balance does not cover it.
 */
export async function takeBlock(
  store: Store,
  ownerId: string,
  size: number,
  leaseMs = LEDGER_OPTIONS.blockLeaseMs,
): Promise<{ id: string; from: number } | null> {
  const credits = new Credits(store);
  const line = await credits.line(ownerId);
  const id = `b${randomBytes(8).toString('hex')}`;
  if (!line || !(await credits.exchange(ownerId, line, { id, size, until: new Date(store.clock.now() + leaseMs) }, []))) return null;
  return { id, from: line.debited };
}
