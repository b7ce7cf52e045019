// The call ledger: one record per tools/call (time, owner, server, key, tool, credits charged and kept,
// outcome, the error's code and message, latency), written before the answer is sent. A charged call's record
// carries the start of its range on the owner's credit line (credits.ts): the record is what settles the
// charge. Kept: nothing more to do. Refunded: the refund follows the record, guarded so it happens once.
//
// Records of concurrent calls are written together (group commit: one insertMany for those that ended
// together, each call awaiting its batch). Usage is read from hourly aggregates (rollup.ts, kept current every
// minute) plus the few records not rolled yet, so no page loads a month of records. Around this file:
// settlement.ts (ranges a crash left without a record), rollup.ts (aggregates, retention), ledger-check.ts
// (the invariant, exact under traffic).
import { DuplicateKeyError, type Collection, type Doc, type Filter, type Store } from '../store/port.ts';
import { Lease } from '../store/lease.ts';
import type { ChargeStart, Credits } from './credits.ts';
import { GroupCommit } from './group-commit.ts';
import { type InvariantReport, checkLedger } from './ledger-check.ts';
import { type RolledDoc, RollUp } from './rollup.ts';
import { Settlement } from './settlement.ts';

/** How a call ended: kept its charge (ok, tool_error), gave it back (refunded), or was never charged (rejected). */
export type CallOutcome = 'ok' | 'tool_error' | 'refunded' | 'rejected';

export interface CallDoc extends Doc {
  /** When the record's write began (the end of the call); the roll-up waits for writes still under way (rollup.ts). */
  at: Date;
  owner_id: string;
  /** Empty for the record of a range a crash interrupted: nothing said which call it was. */
  server_id: string;
  /** The credential that made the call (an API key or an OAuth grant id). */
  key_id: string;
  tool: string;
  outcome: CallOutcome;
  /** `ok` or the error code. */
  code: string;
  /** Credits charged when the call started. */
  charged: number;
  /** Credits kept: charged, minus the refund. */
  credits: number;
  latency_ms: number | null;
  /** Start of the call's range on the owner's credit line; absent when nothing was charged. */
  from?: ChargeStart;
  /** `<owner>:<from, padded>` (chargeKey), unique: one record per range, even if a call outlived the time after which it counts as interrupted. */
  charge_key?: string;
  /** The error's message as the client got it (it never holds argument values or secrets). */
  message?: string;
  /** The provider's HTTP status when the provider answered the failing request. */
  provider_status?: number | null;
  /** Where the call came from when not from an MCP client: `dashboard` for the owner's "Try" in the dashboard. */
  via?: CallVia;
  /** The owner's end user the call acted as (runtime/access/end-users.ts); the credits are still the owner's. */
  end_user_id?: string;
}

export type CallVia = 'dashboard';

/** Hourly usage per owner, server, key and tool. */
export interface UsageRow {
  owner_id: string;
  server_id: string;
  key_id: string;
  tool: string;
  hour: Date;
  calls: number;
  credits: number;
  errors: number;
  refunds: number;
}

export interface UsageFilter {
  server?: string;
  key?: string;
  tool?: string;
  from?: Date;
  to?: Date;
}

/** What a call needs to make its record: who made it, which tool, and its charge. */
export interface CallCharge {
  id: string;
  server_id: string;
  key_id: string;
  tool: string;
  cost: number;
  from?: ChargeStart;
  via?: CallVia;
  end_user_id?: string;
}

export interface LedgerOptions {
  /** On the embedded store, which holds every document in memory: the most records kept (older ones live on as aggregates). */
  maxRecords: number;
  /** How long records are kept for the call log before only their aggregates remain. */
  retentionMs: number;
  /** Longer than any call can last: a range without a record older than this is an interrupted call. */
  maxCallMs: number;
  /**
   * Records are rolled once this old, so that one being written by another instance is never missed (a slow
   * store's write time, with margin); this process's own writes hold the roll-up back until they are stored.
   */
  settledMs: number;
  /** Who runs the housekeeping (the lease holder's name in the store). */
  instance: string;
  onBackgroundError?: (err: unknown) => void;
}

const HOUR = 3_600_000;
/** Writes of a batch of records retried after a store error, before the calls fail. */
const RECORD_ATTEMPTS = 3;
/** Long enough for a run on a big ledger; a holder that dies delays the next run by at most this. */
const HOUSEKEEPING_LEASE_MS = 5 * 60_000;

export class Ledger {
  readonly calls: Collection<CallDoc>;
  readonly rolled: Collection<RolledDoc>;
  readonly settlement: Settlement;
  readonly rollUp: RollUp;
  private readonly records = new GroupCommit<CallDoc, void>((docs) => this.insert(docs));
  /** The stamp of the batch of records being written (one at a time), until the store has it. */
  private writing: Date | null = null;
  private readonly housekeepingLease: Lease;
  /** The housekeeping under way in this process (one at a time). */
  private housekeeping: Promise<{ refunded: number; rolled: number } | null> | null = null;

  constructor(
    store: Store,
    readonly credits: Credits,
    readonly options: LedgerOptions,
  ) {
    this.calls = store.collection<CallDoc>('calls');
    this.rolled = store.collection<RolledDoc>('usage');
    this.settlement = new Settlement(this.calls, credits, options.maxCallMs);
    this.rollUp = new RollUp(store, this, options);
    this.housekeepingLease = new Lease(store, 'ledger-housekeeping', options.instance);
  }

  /** Writes a call's record; resolves once it is stored, with the records of the calls that ended alongside. */
  record(doc: CallDoc): Promise<void> {
    return this.records.add(doc);
  }

  /**
   * Records the outcome of a charged call, then, for a refund, gives its credits back (once, however often
   * this is retried: credits.refund is guarded by the range).
   */
  async finish(doc: CallDoc, refund: boolean): Promise<void> {
    await this.record(doc);
    if (refund && doc.from !== undefined) await retried(() => this.credits.refund(doc.owner_id, doc.from!, doc.charged));
  }

  /** The stamp of the records this process is writing: its roll-up stays behind it, whatever settledMs says (rollup.ts). */
  writingSince(): Date | null {
    return this.writing;
  }

  private async insert(docs: CallDoc[]): Promise<void> {
    try {
      await retried(
        () => {
          // Stamped as written: a record never lands behind the roll-up's watermark (rollup.ts).
          this.writing = new Date();
          for (const doc of docs) doc.at = this.writing;
          return this.calls.insertMany(docs);
        },
        (err) => !(err instanceof DuplicateKeyError),
      );
    } catch (err) {
      if (!(err instanceof DuplicateKeyError)) throw err;
      // A call that outlived maxCallMs had its range settled as interrupted (and refunded) meanwhile: that
      // record stands; the others of the batch are written one by one.
      for (const doc of docs) await this.calls.insertOne(doc).catch((e: unknown) => (e instanceof DuplicateKeyError ? undefined : Promise.reject(e)));
    } finally {
      this.writing = null;
    }
    if (this.rollUp.recorded(docs)) this.housekeep().catch((err: unknown) => this.options.onBackgroundError?.(err));
  }

  /** Waits for the records being written (at shutdown). */
  async flush(): Promise<void> {
    await this.records.idle();
    await this.housekeeping;
  }

  /** The owner's latest calls, newest first. */
  latest(ownerId: string, limit: number, serverId?: string): Promise<CallDoc[]> {
    return this.calls.find(serverId ? { owner_id: ownerId, server_id: serverId } : { owner_id: ownerId }, { sort: { at: -1 }, limit });
  }

  /** Hourly usage: the aggregates of the hours asked for, plus the records not rolled into them yet. */
  async usage(ownerId: string, f: UsageFilter): Promise<UsageRow[]> {
    const filter: Filter = { owner_id: ownerId };
    if (f.server) filter.server_id = f.server;
    if (f.key) filter.key_id = f.key;
    if (f.tool) filter.tool = f.tool;
    const hourRange = f.from || f.to ? { hour: { ...(f.from ? { $gte: f.from } : {}), ...(f.to ? { $lt: f.to } : {}) } } : {};
    const { records, rolled } = await this.unrolledThenRolled(filter, { at: { $gte: f.from ?? new Date(0), ...(f.to ? { $lt: f.to } : {}) } }, hourRange);
    return mergedUsage(rolled, records);
  }

  /**
   * The records not rolled yet (those at or after the roll-up's watermark), then the aggregates: in this order, a
   * roll-up in between counts a record in its aggregate, whose `through` then says to skip the record; the other
   * order could miss it.
   */
  async unrolledThenRolled(
    filter: Filter,
    atRange: { at: Record<string, Date> },
    hourRange: Filter = {},
  ): Promise<{ records: CallDoc[]; rolled: RolledDoc[] }> {
    const watermark = await this.rollUp.watermark();
    const since = atRange.at.$gte && atRange.at.$gte > watermark ? atRange.at.$gte : watermark;
    const records = await this.calls.find({ ...filter, at: { ...atRange.at, $gte: since } });
    const rolled = await this.rolled.find({ ...filter, ...hourRange });
    return { records, rolled };
  }

  /** Checks balance = granted - kept - open for one owner or all (exact under traffic: ledger-check.ts). */
  check(ownerId?: string): Promise<InvariantReport[]> {
    return checkLedger(this, ownerId);
  }

  /**
   * Settles ranges left without a record: at start on the embedded store (one process: nothing is running, so
   * every such range was interrupted) pass `everything`. Returns the credits refunded.
   */
  settleAfterStop(): Promise<number> {
    return this.settlement.settleAll('everything');
  }

  /**
   * The periodic work, by one instance at a time (a lease; each step is also safe if two ran it): settle what
   * calls left open, then roll records into the hourly aggregates and apply retention. Returns credits refunded.
   */
  housekeep(): Promise<{ refunded: number; rolled: number } | null> {
    this.housekeeping ??= (async () => {
      if (!(await this.housekeepingLease.acquire(HOUSEKEEPING_LEASE_MS))) return null;
      try {
        const refunded = await this.settlement.settleAll('stale');
        const rolled = await this.rollUp.run();
        return { refunded, rolled };
      } finally {
        await this.housekeepingLease.release();
      }
    })().finally(() => {
      this.housekeeping = null;
    });
    return this.housekeeping;
  }
}

/** The record of a call (charged or not). */
export function recordOf(
  call: CallCharge,
  ownerId: string,
  outcome: CallOutcome,
  code: string,
  kept: number,
  latencyMs: number | null,
  error?: { message: string; provider_status?: number | null },
): CallDoc {
  return {
    _id: call.id,
    at: new Date(),
    owner_id: ownerId,
    server_id: call.server_id,
    key_id: call.key_id,
    tool: call.tool,
    outcome,
    code,
    charged: call.from === undefined ? 0 : call.cost,
    credits: kept,
    latency_ms: latencyMs,
    ...(call.from === undefined ? {} : { from: call.from, charge_key: chargeKey(ownerId, call.from) }),
    ...(error ? { message: error.message, provider_status: error.provider_status ?? null } : {}),
    ...(call.via ? { via: call.via } : {}),
    ...(call.end_user_id ? { end_user_id: call.end_user_id } : {}),
  };
}

/**
 * A charged record's key: the owner, then its place on the line zero-padded, so that one unique index both keeps
 * one record per range and walks an owner's records in the line's order (settlement.ts).
 */
export const chargeKey = (ownerId: string, from: ChargeStart) => `${ownerId}:${String(from).padStart(16, '0')}`;
/** Above every charge key of the owner (';' follows ':'). */
export const chargeKeysEnd = (ownerId: string) => `${ownerId};`;
export const hourOf = (at: Date) => new Date(Math.floor(at.getTime() / HOUR) * HOUR);
export const bucketId = (c: Pick<CallDoc, 'owner_id' | 'server_id' | 'key_id' | 'tool' | 'at'>) =>
  `${c.owner_id}|${c.server_id}|${c.key_id}|${c.tool}|${hourOf(c.at).toISOString()}`;

/** Aggregates plus the records they do not hold yet (a record older than its aggregate's `through` is in it). */
export function mergedUsage(rolled: RolledDoc[], records: CallDoc[]): UsageRow[] {
  const rows = new Map<string, UsageRow>();
  const through = new Map<string, Date>();
  const add = (id: string, r: UsageRow) => {
    const row = rows.get(id) ?? {
      owner_id: r.owner_id,
      server_id: r.server_id,
      key_id: r.key_id,
      tool: r.tool,
      hour: r.hour,
      calls: 0,
      credits: 0,
      errors: 0,
      refunds: 0,
    };
    row.calls += r.calls;
    row.credits += r.credits;
    row.errors += r.errors;
    row.refunds += r.refunds;
    rows.set(id, row);
  };
  for (const r of rolled) {
    add(r._id, r);
    through.set(r._id, r.through);
  }
  for (const c of unrolled(records, through)) add(bucketId(c), hourly(c));
  return [...rows.values()].sort((a, b) => a.hour.getTime() - b.hour.getTime() || a.tool.localeCompare(b.tool));
}

/** The records that the aggregates (by id, their `through`) do not hold. */
export function unrolled(records: CallDoc[], through: ReadonlyMap<string, Date>): CallDoc[] {
  return records.filter((c) => c.at >= (through.get(bucketId(c)) ?? new Date(0)));
}

export function hourly(c: CallDoc): UsageRow {
  return {
    owner_id: c.owner_id,
    server_id: c.server_id,
    key_id: c.key_id,
    tool: c.tool,
    hour: hourOf(c.at),
    calls: 1,
    credits: c.credits,
    errors: c.outcome === 'ok' ? 0 : 1,
    refunds: c.outcome === 'refunded' ? 1 : 0,
  };
}

/** Retries a store write after a transient error (not after one that `retryable` says is final). */
async function retried<T>(write: () => Promise<T>, retryable: (err: unknown) => boolean = () => true): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await write();
    } catch (err) {
      if (attempt >= RECORD_ATTEMPTS || !retryable(err)) throw err;
      await new Promise((resolve) => setTimeout(resolve, 50 * 4 ** attempt));
    }
  }
}
