// The call ledger: one record per tools/call (time, owner, server, key, tool, credits charged and kept,
// outcome, the error's code and message, latency), written before the answer is sent. A charged call's record
// carries the start of its range on the owner's credit line (credits.ts) and the block it was charged from
// (credit-blocks.ts): the record is what settles the charge. Kept: nothing more to do. Refunded: the credits go
// back into the block, which gives them back to the balance with its return.
//
// Records of concurrent calls are written together (group commit: one insertMany for those that ended
// together, each call awaiting its batch), stamped with the store's time (store/clock.ts). Usage is read from
// hourly aggregates (rollup.ts, kept current every minute) plus the few records not rolled yet, so no page loads
// a month of records. Around this file: credit-blocks.ts (charging from blocks), settlement.ts (ranges a crash left without a record), rollup.ts
// (aggregates, totals, retention), partitions.ts (how the housekeeping is shared out), ledger-check.ts (the
// invariant, exact under traffic), rejections.ts and log-caps.ts (what keeps one owner from filling the log).
import { DuplicateKeyError, type Collection, type Doc, type Filter, type Store, StoreUnavailableError } from '../store/port.ts';
import { Lease } from '../store/lease.ts';
import { type Charge, CreditBlocks, type WantedFeed } from './credit-blocks.ts';
import type { Credits } from './credits.ts';
import { GroupCommit } from './group-commit.ts';
import { type InvariantReport, checkLedger } from './ledger-check.ts';
import { SLOTS, slotOf } from './partitions.ts';
import { RejectionLog } from './rejections.ts';
import { type RolledDoc, RollUp } from './rollup.ts';
import { Settlement } from './settlement.ts';

/** How a call ended: kept its charge (ok, tool_error), gave it back (refunded), or was never charged (rejected). */
export type CallOutcome = 'ok' | 'tool_error' | 'refunded' | 'rejected';

export interface CallDoc extends Doc {
  /** When the record's write began (the end of the call), by the store's clock; the roll-up waits for writes still under way (rollup.ts). */
  at: Date;
  owner_id: string;
  /** The owner's slot (partitions.ts): which partition of the housekeeping rolls it. Absent on records of older versions until their first roll-up. */
  slot?: number;
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
  from?: number;
  /** The block the range belongs to (credit-blocks.ts): its return gives a refund back. Absent on records of older versions. */
  block?: string;
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
  /**
   * How many calls this record stands for (1 when absent): rejections counted, not logged one by one
   * (rejections.ts); 0 for the unused rest of a block (restRecord), which is no call.
   */
  count?: number;
}

export type CallVia = 'dashboard';

/** Hourly usage per owner, server, key and tool. */
export interface UsageRow {
  owner_id: string;
  server_id: string;
  key_id: string;
  /** The end user the calls acted as; absent for calls that acted as the owner. */
  end_user_id?: string;
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
  endUser?: string;
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
  from?: number;
  block?: string;
  via?: CallVia;
  end_user_id?: string;
}

export interface LedgerOptions {
  /** On the embedded store, which holds every document in memory: the most records kept (older ones live on as aggregates). */
  maxRecords: number;
  /** Of those, the most one owner keeps (log-caps.ts); maxRecords when absent. */
  maxRecordsPerOwner?: number;
  /** How long records are kept for the call log before only their aggregates remain. */
  retentionMs: number;
  /** How long hourly aggregates are kept (their credits stay in each owner's totals). */
  usageRetentionMs: number;
  /** Each owner's rejected calls logged one by one per minute (per process); the rest are counted (rejections.ts). */
  rejectionsPerMinute: number;
  /** How the housekeeping is shared out (partitions.ts): each partition has its own lease. */
  partitions: number;
  /** A partition's lease lasts this long, renewed every third of it while a run lasts. */
  leaseMs: number;
  /** Longer than any call can last: a range without a record older than this is an interrupted call. */
  maxCallMs: number;
  /** A credit block hands out ranges this long (its lease); settlement returns a block maxCallMs after its lease. */
  blockLeaseMs: number;
  /** The change feed every process reads: lets blocks of owners with plenty be kept while idle (credit-blocks.ts). */
  feed?: WantedFeed;
  /**
   * Records are rolled once this old, so that one being written by another instance is never missed (a slow
   * store's write time, with margin); this process's own writes hold the roll-up back until they are stored.
   */
  settledMs: number;
  /** Who runs the housekeeping (the lease holder's name in the store). */
  instance: string;
  onBackgroundError?: (err: unknown) => void;
  /** Told of each partition's run (logs, tests). */
  onHousekeeping?: (run: HousekeepingRun) => void;
}

/** What a housekeeping refunded and rolled; null when every partition was held elsewhere. */
type HousekeepingDone = { refunded: number; rolled: number } | null;

/** One partition's housekeeping by one instance. */
export interface HousekeepingRun {
  partition: number;
  partitions: number;
  instance: string;
  /** Store time. */
  startedAt: number;
  endedAt: number;
  refunded: number;
  rolled: number;
  renewals: number;
}

/** More than this many aggregates for /api/usage is refused: the range or the filter should be narrower. */
export const USAGE_ROW_LIMIT = 20_000;

export class UsageTooLargeError extends Error {
  override readonly name = 'UsageTooLargeError';
  constructor() {
    super(`More than ${USAGE_ROW_LIMIT.toLocaleString('en-US')} hourly rows match: ask for a shorter time (from, to) or for one server, key or tool`);
  }
}

const HOUR = 3_600_000;
/** Writes of a batch of records retried after a store error, before the calls fail. */
const RECORD_ATTEMPTS = 3;

export class Ledger {
  readonly calls: Collection<CallDoc>;
  readonly rolled: Collection<RolledDoc>;
  readonly settlement: Settlement;
  readonly rollUp: RollUp;
  readonly blocks: CreditBlocks;
  private readonly records = new GroupCommit<CallDoc, void>((docs) => this.insert(docs));
  /** The stamp of the batch of records being written (one at a time), until the store has it. */
  private writing: Date | null = null;
  private readonly rejections: RejectionLog;
  /** One lease per partition (partitions.ts). */
  private readonly leases: Lease[];
  /** The housekeeping under way in this process (one at a time), and the one asked for meanwhile. */
  private housekeeping: Promise<HousekeepingDone> | null = null;
  private nextHousekeeping: Promise<HousekeepingDone> | null = null;
  /**
   * Charged calls whose record the store did not take (it refused writes, or did not answer): their ranges are
   * settled as interrupted as soon as the store takes writes again (settleUnrecorded). After a stop, settlement
   * finds them without this list.
   */
  private readonly unrecorded = new Map<string, CallDoc>();
  private settlingUnrecorded: Promise<void> | null = null;

  constructor(
    private readonly store: Store,
    readonly credits: Credits,
    readonly options: LedgerOptions,
  ) {
    if (!Number.isInteger(options.partitions) || options.partitions < 1 || options.partitions > SLOTS)
      throw new Error(`partitions must be an integer from 1 to ${SLOTS}`);
    this.calls = store.collection<CallDoc>('calls');
    this.rolled = store.collection<RolledDoc>('usage');
    this.settlement = new Settlement(this.calls, credits, options.maxCallMs, store.clock);
    this.blocks = new CreditBlocks(credits, store.clock, {
      leaseMs: options.blockLeaseMs,
      feed: options.feed,
      recordRest: (ownerId, blockId, from, credits) => this.records.add(restRecord(ownerId, blockId, from, credits)),
      onBackgroundError: options.onBackgroundError,
    });
    this.rollUp = new RollUp(store, this, options);
    this.rejections = new RejectionLog(options.rejectionsPerMinute, store.clock);
    this.leases = Array.from({ length: options.partitions }, (_, p) => new Lease(store, `ledger-housekeeping:${p}/${options.partitions}`, options.instance));
  }

  /**
   * Writes a call's record; resolves once it is stored, with the records of the calls that ended alongside. A
   * rejection past the owner's minute's share is counted instead (rejections.ts), and resolves at once.
   */
  record(doc: CallDoc): Promise<void> {
    if (doc.outcome === 'rejected' && !this.rejections.admit(doc)) return Promise.resolve();
    return this.records.add(doc);
  }

  /** Takes `cost` credits of the owner's for a call (from a block: credit-blocks.ts); null when the balance does not cover it. */
  charge(ownerId: string, cost: number): Promise<Charge | null> {
    return this.blocks.charge(ownerId, cost);
  }

  /**
   * Records the outcome of a charged call, then ends its charge: a refund goes back into its block. A call whose
   * record the store did not take keeps its charge until settleUnrecorded has recorded it.
   */
  async finish(doc: CallDoc, refund: boolean): Promise<void> {
    try {
      await this.record(doc);
    } catch (err) {
      if (err instanceof StoreUnavailableError && doc.charge_key !== undefined) this.unrecorded.set(doc.charge_key, doc);
      throw err;
    }
    this.release(doc, refund);
  }

  private release(doc: CallDoc, refund: boolean): void {
    if (doc.block !== undefined && doc.from !== undefined) this.blocks.release(doc.owner_id, { from: doc.from, block: doc.block }, doc.charged, refund);
  }

  /**
   * Settles the ranges of calls whose record the store did not take, each as refunded, or as its record says
   * if the write reached the store after all (Settlement.settleUnrecorded). Stops at the first store failure:
   * tried again after the next record written, at the next housekeeping and at shutdown.
   */
  settleUnrecorded(): Promise<void> {
    this.settlingUnrecorded ??= (async () => {
      for (const [key, doc] of this.unrecorded) {
        this.release(doc, await this.settlement.settleUnrecorded(doc as CallDoc & { from: number; charge_key: string }));
        this.unrecorded.delete(key);
      }
    })().finally(() => {
      this.settlingUnrecorded = null;
    });
    return this.settlingUnrecorded;
  }

  /** The stamp of the records this process is writing: its roll-up stays behind it, whatever settledMs says (rollup.ts). */
  writingSince(): Date | null {
    return this.writing;
  }

  private async insert(docs: CallDoc[]): Promise<void> {
    try {
      await retried(
        () => {
          // Stamped as written, by the store's clock: a record never lands behind the roll-up's watermark (rollup.ts).
          this.writing = this.store.clock.date();
          for (const doc of docs) doc.at = this.writing;
          return this.calls.insertMany(docs);
        },
        // A duplicate is handled below.
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
    // The store takes writes again: what it refused before is settled now.
    if (this.unrecorded.size > 0) this.settleUnrecorded().catch((err: unknown) => this.options.onBackgroundError?.(err));
  }

  /**
   * Writes the records counting rejections of minutes that are over (of every minute with `all`, at shutdown,
   * also giving back every credit block whose calls are over), waits for the records being written, and settles
   * what the store refused if it can.
   */
  async flush(all = false): Promise<void> {
    await Promise.all(this.rejections.due(all).map((doc) => this.records.add(doc)));
    if (all) await this.blocks.flush();
    await this.records.idle();
    // The run asked for during the one under way starts when that one ends: wait for it too.
    while (this.housekeeping || this.nextHousekeeping) await (this.nextHousekeeping ?? this.housekeeping);
    if (this.unrecorded.size > 0) await this.settleUnrecorded().catch(() => undefined);
  }

  /** The owner's latest calls, newest first. */
  latest(ownerId: string, limit: number, serverId?: string): Promise<CallDoc[]> {
    const calls = { owner_id: ownerId, count: { $ne: 0 } }; // not the rests of credit blocks
    return this.calls.find(serverId ? Object.assign({}, calls, { server_id: serverId }) : calls, { sort: { at: -1 }, limit });
  }

  /**
   * Hourly usage: the aggregates of the hours asked for, plus the records not rolled into them yet. More than
   * `rowLimit` aggregates is refused (UsageTooLargeError) rather than read.
   */
  async usage(ownerId: string, f: UsageFilter, rowLimit = Infinity): Promise<UsageRow[]> {
    const filter: Filter & { owner_id: string } = { owner_id: ownerId };
    if (f.server) filter.server_id = f.server;
    if (f.key) filter.key_id = f.key;
    if (f.endUser) filter.end_user_id = f.endUser;
    if (f.tool) filter.tool = f.tool;
    const hourRange = f.from || f.to ? { hour: Object.assign({}, f.from ? { $gte: f.from } : undefined, f.to ? { $lt: f.to } : undefined) } : {};
    const { records, rolled } = await this.unrolledThenRolled(filter, { at: { $gte: f.from ?? new Date(0), ...(f.to ? { $lt: f.to } : {}) } }, (rows) =>
      rows.find(Object.assign({}, filter, hourRange), rowLimit === Infinity ? {} : { limit: rowLimit + 1 }),
    );
    if (rolled.length > rowLimit) throw new UsageTooLargeError();
    return mergedUsage(rolled, records);
  }

  /**
   * The owner's records not rolled yet (those at or after its slot's watermark), then what `readRolled` reads of
   * what they are rolled into: in this order, a roll-up in between counts a record in its aggregate (or totals),
   * whose `through` then says to skip the record; the other order could miss it.
   */
  async unrolledThenRolled<R>(
    filter: Filter & { owner_id: string },
    atRange: { at: Record<string, Date> },
    readRolled: (rolled: Collection<RolledDoc>) => Promise<R>,
  ): Promise<{ records: CallDoc[]; rolled: R }> {
    const watermark = await this.rollUp.watermark(filter.owner_id);
    const since = atRange.at.$gte && atRange.at.$gte > watermark ? atRange.at.$gte : watermark;
    const records = await this.calls.find(Object.assign({}, filter, { at: Object.assign({}, atRange.at, { $gte: since }) }));
    return { records, rolled: await readRolled(this.rolled) };
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
   * The periodic work, each partition by one instance at a time (its lease, renewed while the run lasts; each
   * step is also safe if two ran it): settle what calls left open, then roll records into the aggregates and
   * apply retention. Partitions another instance holds are left to it. Returns what the runs refunded and
   * rolled, or null when every partition was held elsewhere. Asked during a run, runs once more after it: what
   * was written meanwhile may be past that run's target (it stops short of a write in flight), and nothing else
   * may come to ask again (the last records of a burst would stay beyond the caps).
   */
  housekeep(): Promise<HousekeepingDone> {
    if (this.housekeeping) {
      const after = () => {
        this.nextHousekeeping = null;
        return this.housekeep();
      };
      this.nextHousekeeping ??= this.housekeeping.then(after, after);
      return this.nextHousekeeping;
    }
    this.housekeeping = (async () => {
      await this.settleUnrecorded();
      let done = null as HousekeepingDone;
      const { partitions } = this.options;
      // Instances start at different partitions, so that each finds its own free at once.
      const first = slotOf(this.options.instance) % partitions;
      for (let i = 0; i < partitions; i++) {
        const partition = (first + i) % partitions;
        // Stamped inside the lease: once it is released, another instance's run may start at once.
        let startedAt = 0;
        let endedAt = 0;
        const run = await this.leases[partition].run(this.options.leaseMs, async (hold) => {
          startedAt = this.store.clock.now();
          const refunded = await this.settlement.settleAll('stale', { index: partition, of: partitions, keep: hold.keep });
          const rolled = (await hold.keep()) ? await this.rollUp.run(partition, hold) : 0;
          endedAt = this.store.clock.now();
          return { refunded, rolled };
        });
        if (!run) continue;
        done = { refunded: (done?.refunded ?? 0) + run.result.refunded, rolled: (done?.rolled ?? 0) + run.result.rolled };
        this.options.onHousekeeping?.({
          partition,
          partitions,
          instance: this.options.instance,
          startedAt,
          endedAt,
          ...run.result,
          renewals: run.renewals,
        });
      }
      return done;
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
    at: new Date(), // stamped again when written
    owner_id: ownerId,
    slot: slotOf(ownerId),
    server_id: call.server_id,
    key_id: call.key_id,
    tool: call.tool,
    outcome,
    code,
    charged: call.from === undefined ? 0 : call.cost,
    credits: kept,
    latency_ms: latencyMs,
    ...(call.from === undefined ? {} : { from: call.from, charge_key: chargeKey(ownerId, call.from), block: call.block }),
    ...(error ? { message: error.message, provider_status: error.provider_status ?? null } : {}),
    ...(call.via ? { via: call.via } : {}),
    ...(call.end_user_id ? { end_user_id: call.end_user_id } : {}),
  };
}

/** The record of a refunded range of the line that no known call made (a block's unused rest, an interrupted range). */
export function rangeRecord(ownerId: string, from: number, credits: number, code: string, at: Date): CallDoc {
  return {
    _id: `${code}_${ownerId}_${from}`,
    at,
    owner_id: ownerId,
    slot: slotOf(ownerId),
    server_id: '',
    key_id: '',
    tool: '',
    outcome: 'refunded',
    code,
    charged: credits,
    credits: 0,
    latency_ms: null,
    from,
    charge_key: chargeKey(ownerId, from),
  };
}

/** The record of a block's unused rest: no call (count 0), so that the records tile the line. Stamped when written. */
const restRecord = (ownerId: string, blockId: string, from: number, credits: number): CallDoc =>
  Object.assign(rangeRecord(ownerId, from, credits, 'unused_credits', new Date()), { block: blockId, count: 0 });

/**
 * A charged record's key: the owner, then its place on the line zero-padded, so that one unique index both keeps
 * one record per range and walks an owner's records in the line's order (settlement.ts).
 */
export const chargeKey = (ownerId: string, from: number) => `${ownerId}:${String(from).padStart(16, '0')}`;
/** Above every charge key of the owner (';' follows ':'). */
export const chargeKeysEnd = (ownerId: string) => `${ownerId};`;
export const hourOf = (at: Date) => new Date(Math.floor(at.getTime() / HOUR) * HOUR);
/** An aggregate per owner, server, key, tool and hour, and end user (a key that acts for many keeps them apart). */
export const bucketId = (c: Pick<CallDoc, 'owner_id' | 'server_id' | 'key_id' | 'tool' | 'at' | 'end_user_id'>) =>
  `${c.owner_id}|${c.server_id}|${c.key_id}|${c.tool}|${hourOf(c.at).toISOString()}${c.end_user_id ? `|${c.end_user_id}` : ''}`;

/** Aggregates plus the records they do not hold yet (a record older than its aggregate's `through` is in it). */
export function mergedUsage(rolled: RolledDoc[], records: CallDoc[]): UsageRow[] {
  const rows = new Map<string, UsageRow>();
  const through = new Map<string, Date>();
  const add = (id: string, r: UsageRow) => {
    const row = rows.get(id) ?? {
      owner_id: r.owner_id,
      server_id: r.server_id,
      key_id: r.key_id,
      ...(r.end_user_id ? { end_user_id: r.end_user_id } : {}),
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
  const calls = c.count ?? 1;
  return {
    owner_id: c.owner_id,
    server_id: c.server_id,
    key_id: c.key_id,
    ...(c.end_user_id ? { end_user_id: c.end_user_id } : {}),
    tool: c.tool,
    hour: hourOf(c.at),
    calls,
    credits: c.credits,
    errors: c.outcome === 'ok' ? 0 : calls,
    refunds: c.outcome === 'refunded' ? calls : 0,
  };
}

/** Retries a store write after a transient error (not after one that `retryable` says is final). */
async function retried<T>(write: () => Promise<T>, retryable: (err: unknown) => boolean = () => true): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await write();
    } catch (err) {
      // A store that refuses writes or let its deadline pass is not asked again: the call answers 503 now.
      const final = err instanceof StoreUnavailableError && !err.transient;
      if (attempt >= RECORD_ATTEMPTS || final || !retryable(err)) throw err;
      await new Promise((resolve) => setTimeout(resolve, 50 * 4 ** attempt));
    }
  }
}
