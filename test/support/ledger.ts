// Options of a Ledger that a test builds on a store of its own: the service's defaults (30 days of records, 400
// of aggregates), one partition, roll-up after 10 s.
import type { LedgerOptions } from '../../runtime/billing/ledger.ts';

const HOUR = 3_600_000;

export const LEDGER_OPTIONS: LedgerOptions = {
  maxRecords: Infinity,
  retentionMs: 30 * 24 * HOUR,
  usageRetentionMs: 400 * 24 * HOUR,
  rejectionsPerMinute: 1000,
  partitions: 1,
  leaseMs: 60_000,
  maxCallMs: 15 * 60_000,
  settledMs: 10_000,
  instance: 'test-a',
};
