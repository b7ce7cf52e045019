// The call ledger: one record per tools/call (time, owner, server, key, tool, credits charged and kept,
// outcome, latency), written before the answer is sent. Together with the open charges on the credits
// document (see credits.ts) it makes every charge durable with its outcome: after a crash, `reconcile`
// refunds each charge whose call never finished and records that it did.
//
// Records of concurrent calls are written together (group commit, group-commit.ts: one insertMany for
// those that ended together, each call awaiting its batch). Hourly usage is computed from the records plus
// hourly aggregates (collection `usage`) into which records are rolled, and then deleted, once they are
// older than the retention or, on the embedded store (which keeps every document in memory), beyond the
// newest `maxRecords`: the ledger stays bounded.
import type { Collection, Doc, Filter, Store } from '../store/port.ts';
import type { CreditDoc, Credits, OpenCharge } from './credits.ts';
import { GroupCommit, KeyedGroupCommit } from './group-commit.ts';

/** How a call ended: kept its charge (ok, tool_error), gave it back (refunded), or was never charged (rejected). */
export type CallOutcome = 'ok' | 'tool_error' | 'refunded' | 'rejected';

export interface CallDoc extends Doc {
  /** When the record was written: the end of the call (so records arrive in time order). */
  at: Date;
  owner_id: string;
  server_id: string;
  /** The credential that made the call (an API key id). */
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
}

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

interface RolledDoc extends Doc, UsageRow {
  /** The aggregate holds every record of its hour written before this time. */
  through: Date;
}

export interface UsageFilter {
  server?: string;
  key?: string;
  tool?: string;
  from?: Date;
  to?: Date;
}

export interface InvariantReport {
  owner_id: string;
  granted: number;
  balance: number;
  /** Credits kept by recorded calls (records and rolled aggregates). */
  kept: number;
  /** Charges of calls still running: no record yet (none after reconciliation at start). */
  open: number;
  /** granted - kept - open - balance: always 0. */
  difference: number;
  ok: boolean;
}

const HOUR = 3_600_000;
/**
 * Records are rolled up only once they are this old, so that a record being written is never missed: its
 * time is taken when its call ends, and it is stored by the next group commit, milliseconds later. (The
 * margin also bounds what the embedded store holds beyond maxRecords: the records of the last 10 s.)
 */
const SETTLED_MS = 10_000;

export class Ledger {
  private readonly calls: Collection<CallDoc>;
  private readonly rolled: Collection<RolledDoc>;
  private readonly records = new GroupCommit<CallDoc, void>((docs) => this.insert(docs));
  private sinceRoll = 0;
  /** When each record this process wrote was written, oldest first, so that rolling needs no sort of the ledger. */
  private writtenAt: Date[] = [];
  private rolling: Promise<unknown> | null = null;
  /** Kept charges to drop from their owner's open list. */
  private readonly prunes = new KeyedGroupCommit<string, void>((ownerId, ids) => this.credits.prune(ownerId, ids));

  constructor(
    store: Store,
    private readonly credits: Credits,
    private readonly options: { maxRecords: number; onBackgroundError?: (err: unknown) => void } = { maxRecords: Infinity },
  ) {
    this.calls = store.collection<CallDoc>('calls');
    this.rolled = store.collection<RolledDoc>('usage');
  }

  /** Writes a call's record; resolves once it is stored, with the records of the calls that ended alongside. */
  record(doc: CallDoc): Promise<void> {
    return this.records.add(doc);
  }

  private async insert(docs: CallDoc[]): Promise<void> {
    await this.calls.insertMany(docs);
    if (this.options.maxRecords !== Infinity) {
      for (const d of docs) this.writtenAt.push(d.at);
      this.sinceRoll += docs.length;
      if (this.sinceRoll >= this.options.maxRecords / 4) this.rollBeyondMax();
    }
  }

  /** Rolls up what lies beyond the newest maxRecords records (in the background, one roll at a time). */
  private rollBeyondMax(): void {
    if (this.rolling) return;
    this.sinceRoll = 0;
    this.rolling = (async () => {
      const { maxRecords } = this.options;
      // The newest record beyond the limit: among those this process wrote (their times are known in order)
      // or else, while it has written fewer than the limit, found by sorting the ledger.
      const boundary =
        this.writtenAt.length > maxRecords
          ? this.writtenAt[this.writtenAt.length - maxRecords - 1]
          : (await this.calls.find({}, { sort: { at: -1 }, skip: maxRecords, limit: 1, projection: { at: 1 } }))[0]?.at;
      if (!boundary) return;
      const cutoff = new Date(Math.min(boundary.getTime() + 1, Date.now() - SETTLED_MS));
      await this.rollUp(cutoff);
      this.writtenAt = this.writtenAt.filter((at) => at >= cutoff);
    })()
      .catch((err) => this.options.onBackgroundError?.(err))
      .finally(() => {
        this.rolling = null;
        // Records that came in while rolling may call for another round.
        if (this.sinceRoll >= this.options.maxRecords / 4) this.rollBeyondMax();
      });
  }

  /**
   * Records the outcome of a charged call. A refund then closes the charge in the same update that gives
   * the credits back; a kept charge needs nothing more (its record settles it) and is dropped from the open
   * list in a batch, so a call costs one credits update, not two.
   */
  async settle(doc: CallDoc, refund: boolean): Promise<void> {
    await this.record(doc);
    if (refund) return this.credits.close(doc.owner_id, doc._id, doc.charged);
    // Not awaited: a failed prune leaves the ids listed; their records settle them, and the next start prunes them.
    this.prunes.add(doc.owner_id, doc._id).catch((err) => this.options.onBackgroundError?.(err));
  }

  /** Waits for the records and the drops of kept charges under way (at shutdown). */
  async flush(): Promise<void> {
    await this.records.idle();
    await this.prunes.idle();
  }

  /**
   * At start, before any call: every open charge is settled. A call with a record keeps what its record says
   * (its refund is applied if the crash came before it); a call with none never finished: it is refunded and
   * a record says so. Only charges opened before `before` are settled: with several instances on one
   * MongoDB, younger ones may belong to calls another instance is still running. Returns how many were refunded.
   */
  async reconcile(before = new Date()): Promise<number> {
    let refunded = 0;
    for (const owner of await this.credits.withOpenCharges()) {
      for (const charge of owner.open ?? []) {
        if (charge.at >= before) continue;
        let doc = await this.calls.findOne({ _id: charge.id });
        if (!doc) {
          doc = recordOf(charge, owner._id, 'refunded', 'interrupted', 0, null);
          await this.calls.insertOne(doc);
        }
        const refund = doc.outcome === 'refunded';
        await this.credits.close(owner._id, charge.id, refund ? charge.cost : 0);
        if (refund) refunded++;
      }
    }
    return refunded;
  }

  /** The owner's latest calls, newest first. */
  latest(ownerId: string, limit: number, serverId?: string): Promise<CallDoc[]> {
    return this.calls.find(serverId ? { owner_id: ownerId, server_id: serverId } : { owner_id: ownerId }, { sort: { at: -1 }, limit });
  }

  /** Hourly usage from the ledger: rolled aggregates plus the records still kept. */
  async usage(ownerId: string, f: UsageFilter): Promise<UsageRow[]> {
    const filter: Filter = { owner_id: ownerId };
    if (f.server) filter.server_id = f.server;
    if (f.key) filter.key_id = f.key;
    if (f.tool) filter.tool = f.tool;
    const range = (field: string) => (f.from || f.to ? { [field]: { ...(f.from ? { $gte: f.from } : {}), ...(f.to ? { $lt: f.to } : {}) } } : {});
    return this.merged(filter, range('hour'), range('at'));
  }

  /** Rolled aggregates plus the records they do not hold yet, per hour, server, key and tool. */
  private async merged(filter: Filter, hourRange: Filter = {}, atRange: Filter = {}): Promise<UsageRow[]> {
    const [rolled, records] = await Promise.all([this.rolled.find({ ...filter, ...hourRange }), this.calls.find({ ...filter, ...atRange })]);
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
    for (const c of records) {
      const id = bucketId(c);
      // A record left behind by a crash during a roll-up is already in its aggregate.
      if (c.at < (through.get(id) ?? new Date(0))) continue;
      add(id, hourly(c));
    }
    return [...rows.values()].sort((a, b) => a.hour.getTime() - b.hour.getTime() || a.tool.localeCompare(b.tool));
  }

  /**
   * Rolls the records written before `cutoff` into hourly aggregates and deletes them. Each aggregate says
   * up to when it holds its hour's records (`through`) and moves forward in one conditional update, so a
   * crash between rolling and deleting never counts a record twice: it is skipped, then deleted.
   */
  async rollUp(cutoff: Date): Promise<number> {
    const limit = new Date(Math.min(cutoff.getTime(), Date.now() - SETTLED_MS));
    const groups = new Map<string, CallDoc[]>();
    for (const c of await this.calls.find({ at: { $lt: limit } })) {
      const id = bucketId(c);
      const group = groups.get(id);
      if (group) group.push(c);
      else groups.set(id, [c]);
    }
    for (const [_id, records] of groups) {
      const existing = await this.rolled.findOne({ _id });
      const fresh = records.filter((c) => !existing || c.at >= existing.through).map(hourly);
      const sum = (k: 'calls' | 'credits' | 'errors' | 'refunds') => fresh.reduce((t, r) => t + r[k], 0);
      const totals = { calls: sum('calls'), credits: sum('credits'), errors: sum('errors'), refunds: sum('refunds') };
      if (!existing) await this.rolled.insertOne({ _id, ...fresh[0], ...totals, through: limit });
      else if (existing.through < limit) await this.rolled.updateOne({ _id, through: existing.through }, { $inc: totals, $set: { through: limit } });
    }
    return this.calls.deleteMany({ at: { $lt: limit } });
  }

  /** Checks balance = granted - kept - open for one owner or all. */
  async check(ownerId?: string): Promise<InvariantReport[]> {
    const docs: CreditDoc[] = await this.credits.all(ownerId);
    return Promise.all(
      docs.map(async (doc) => {
        const kept = (await this.merged({ owner_id: doc._id })).reduce((s, r) => s + r.credits, 0);
        // A charge recorded as kept is settled (counted in kept) even before it leaves the open list; one with
        // no record, or recorded as refunded while still listed (its refund is not applied yet), is open.
        const openIds = (doc.open ?? []).map((c) => c.id);
        const records = await this.calls.find({ _id: { $in: openIds } }, { projection: { _id: 1, outcome: 1 } });
        const settled = new Set(records.filter((c) => c.outcome !== 'refunded').map((c) => c._id));
        const open = (doc.open ?? []).filter((c) => !settled.has(c.id)).reduce((s, c) => s + c.cost, 0);
        const difference = doc.granted - kept - open - doc.balance;
        return { owner_id: doc._id, granted: doc.granted, balance: doc.balance, kept, open, difference, ok: difference === 0 };
      }),
    );
  }
}

/** The record of a call that was charged (from its open charge). */
export function recordOf(charge: OpenCharge, ownerId: string, outcome: CallOutcome, code: string, kept: number, latencyMs: number | null): CallDoc {
  return {
    _id: charge.id,
    at: new Date(),
    owner_id: ownerId,
    server_id: charge.server_id,
    key_id: charge.key_id,
    tool: charge.tool,
    outcome,
    code,
    charged: charge.cost,
    credits: kept,
    latency_ms: latencyMs,
  };
}

const hourOf = (at: Date) => new Date(Math.floor(at.getTime() / HOUR) * HOUR);
const bucketId = (c: CallDoc) => `${c.owner_id}|${c.server_id}|${c.key_id}|${c.tool}|${hourOf(c.at).toISOString()}`;

function hourly(c: CallDoc): UsageRow {
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
