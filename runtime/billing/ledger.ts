// The call ledger: one record per tools/call (time, owner, server, key, tool, credits charged and kept,
// outcome, latency), written before the answer is sent. Together with the open charges on the credits
// document (see credits.ts) it makes every charge durable with its outcome: after a crash, `reconcile`
// refunds each charge whose call never finished and records that it did.
//
// Records of concurrent calls are written together (group commit: one insertMany per turn of the event
// loop, each call awaiting its batch). Hourly usage is computed from the records; records older than the
// retention are rolled into hourly aggregates (collection `usage`) and deleted, so the ledger stays bounded.
import type { Collection, Doc, Filter, Store } from '../store/index.ts';
import type { CreditDoc, Credits, OpenCharge } from './credits.ts';

/** How a call ended: kept its charge (ok, tool_error), gave it back (refunded), or was never charged (rejected). */
export type CallOutcome = 'ok' | 'tool_error' | 'refunded' | 'rejected';

export interface CallDoc extends Doc {
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

interface RolledDoc extends Doc, UsageRow {}

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
  /** Charges of calls still running (none after reconciliation at start). */
  open: number;
  /** granted - kept - open - balance: always 0. */
  difference: number;
  ok: boolean;
}

const HOUR = 3_600_000;

export class Ledger {
  private readonly calls: Collection<CallDoc>;
  private readonly rolled: Collection<RolledDoc>;
  private batch: CallDoc[] = [];
  private written: Promise<void> | null = null;

  constructor(
    store: Store,
    private readonly credits: Credits,
  ) {
    this.calls = store.collection<CallDoc>('calls');
    this.rolled = store.collection<RolledDoc>('usage');
  }

  /** Writes a call's record; resolves once it is stored, with the records of the calls that ended alongside. */
  record(doc: CallDoc): Promise<void> {
    this.batch.push(doc);
    this.written ??= new Promise<void>((resolve, reject) =>
      setImmediate(() => {
        const docs = this.batch;
        this.batch = [];
        this.written = null;
        this.calls.insertMany(docs).then(resolve, reject);
      }),
    );
    return this.written;
  }

  /** Records the outcome of a charged call, then closes its open charge (refunding it when asked). */
  async settle(doc: CallDoc, refund: boolean): Promise<void> {
    await this.record(doc);
    await this.credits.close(doc.owner_id, doc._id, refund ? doc.charged : 0);
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
    const [rolled, records] = await Promise.all([this.rolled.find({ ...filter, ...range('hour') }), this.calls.find({ ...filter, ...range('at') })]);
    const rows = new Map<string, UsageRow>();
    const add = (r: UsageRow) => {
      const id = `${r.server_id}|${r.key_id}|${r.tool}|${r.hour.getTime()}`;
      const row = rows.get(id) ?? { owner_id: ownerId, server_id: r.server_id, key_id: r.key_id, tool: r.tool, hour: r.hour, calls: 0, credits: 0, errors: 0, refunds: 0 };
      row.calls += r.calls;
      row.credits += r.credits;
      row.errors += r.errors;
      row.refunds += r.refunds;
      rows.set(id, row);
    };
    for (const r of rolled) add(r);
    for (const c of records) add(hourly(c));
    return [...rows.values()].sort((a, b) => a.hour.getTime() - b.hour.getTime() || a.tool.localeCompare(b.tool));
  }

  /**
   * Rolls whole hours older than `retentionMs` into hourly aggregates and deletes their records. An hour's
   * aggregate is written whole and marked before its records go, so a crash in between never counts twice.
   */
  async rollUp(retentionMs: number, now = Date.now()): Promise<number> {
    const before = new Date(Math.floor((now - retentionMs) / HOUR) * HOUR);
    const old = await this.calls.find({ at: { $lt: before } });
    const buckets = new Map<string, RolledDoc>();
    for (const c of old) {
      const row = hourly(c);
      const id = `${c.owner_id}|${row.server_id}|${row.key_id}|${row.tool}|${row.hour.toISOString()}`;
      const b = buckets.get(id) ?? { _id: id, ...row, calls: 0, credits: 0, errors: 0, refunds: 0 };
      b.calls += row.calls;
      b.credits += row.credits;
      b.errors += row.errors;
      b.refunds += row.refunds;
      buckets.set(id, b);
    }
    for (const b of buckets.values()) {
      const { _id, ...fields } = b;
      // The records of a whole hour are all here, so the aggregate is replaced, never added to twice.
      if (!(await this.rolled.findOne({ _id }))) await this.rolled.insertOne({ _id, ...fields });
    }
    return this.calls.deleteMany({ at: { $lt: before } });
  }

  /** Checks balance = granted - kept - open for one owner or all. */
  async check(ownerId?: string): Promise<InvariantReport[]> {
    const docs: CreditDoc[] = await this.credits.all(ownerId);
    return Promise.all(
      docs.map(async (doc) => {
        const [records, rolled] = await Promise.all([this.calls.find({ owner_id: doc._id }, { projection: { credits: 1 } }), this.rolled.find({ owner_id: doc._id }, { projection: { credits: 1 } })]);
        const kept = [...records, ...rolled].reduce((s, r) => s + r.credits, 0);
        const open = (doc.open ?? []).reduce((s, c) => s + c.cost, 0);
        const difference = doc.granted - kept - open - doc.balance;
        return { owner_id: doc._id, granted: doc.granted, balance: doc.balance, kept, open, difference, ok: difference === 0 };
      }),
    );
  }
}

/** The record of a call that was charged (from its open charge). */
export function recordOf(charge: OpenCharge, ownerId: string, outcome: CallOutcome, code: string, kept: number, latencyMs: number | null): CallDoc {
  return { _id: charge.id, at: charge.at, owner_id: ownerId, server_id: charge.server_id, key_id: charge.key_id, tool: charge.tool, outcome, code, charged: charge.cost, credits: kept, latency_ms: latencyMs };
}

function hourly(c: CallDoc): UsageRow {
  return {
    owner_id: c.owner_id,
    server_id: c.server_id,
    key_id: c.key_id,
    tool: c.tool,
    hour: new Date(Math.floor(c.at.getTime() / HOUR) * HOUR),
    calls: 1,
    credits: c.credits,
    errors: c.outcome === 'ok' ? 0 : 1,
    refunds: c.outcome === 'refunded' ? 1 : 0,
  };
}
