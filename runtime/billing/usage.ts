// Usage per owner, server, key, tool and hour, and one record per call (what the dashboard lists as the
// latest calls). Counted in memory and flushed in batches (one upsert per bucket, one insert of all new
// call records), so a tools/call never waits for a usage write.
import { randomId } from '../secrets.ts';
import type { Collection, Doc, Filter, Store } from '../store/index.ts';

export interface UsageDoc extends Doc {
  owner_id: string;
  server_id: string;
  key_id: string;
  tool: string;
  hour: Date;
  calls: number;
  /** Credits charged and kept. */
  credits: number;
  errors: number;
  refunds: number;
}

export interface UsageEvent {
  ownerId: string;
  serverId: string;
  keyId: string;
  tool: string;
  /** Credits kept for this call (0 when refunded or not charged). */
  credits: number;
  failed: boolean;
  refunded: boolean;
  /** `ok` or the error code of the call. */
  code: string;
  latencyMs: number;
}

/** How a call ended, for people: kept a charge (ok, tool_error), gave it back (refunded), or was never charged (rejected). */
export type CallOutcome = 'ok' | 'tool_error' | 'refunded' | 'rejected';

export interface CallDoc extends Doc {
  at: Date;
  owner_id: string;
  server_id: string;
  key_id: string;
  tool: string;
  outcome: CallOutcome;
  code: string;
  /** Credits kept. */
  credits: number;
  latency_ms: number;
}

const outcomeOf = (e: UsageEvent): CallOutcome => (!e.failed ? 'ok' : e.refunded ? 'refunded' : e.credits > 0 ? 'tool_error' : 'rejected');

type Bucket = Omit<UsageDoc, '_id' | 'calls' | 'credits' | 'errors' | 'refunds'> & { calls: number; credits: number; errors: number; refunds: number };

export class Usage {
  private readonly usage: Collection<UsageDoc>;
  private readonly calls: Collection<CallDoc>;
  private pending = new Map<string, Bucket>();
  private pendingCalls: CallDoc[] = [];

  constructor(store: Store) {
    this.usage = store.collection<UsageDoc>('usage');
    this.calls = store.collection<CallDoc>('calls');
  }

  record(e: UsageEvent): void {
    const now = Date.now();
    this.pendingCalls.push({
      _id: randomId('call_'),
      at: new Date(now),
      owner_id: e.ownerId,
      server_id: e.serverId,
      key_id: e.keyId,
      tool: e.tool,
      outcome: outcomeOf(e),
      code: e.code,
      credits: e.credits,
      latency_ms: e.latencyMs,
    });
    const hour = new Date(Math.floor(now / 3_600_000) * 3_600_000);
    const id = `${e.ownerId}|${e.serverId}|${e.keyId}|${e.tool}|${hour.toISOString()}`;
    let b = this.pending.get(id);
    if (!b) {
      b = { owner_id: e.ownerId, server_id: e.serverId, key_id: e.keyId, tool: e.tool, hour, calls: 0, credits: 0, errors: 0, refunds: 0 };
      this.pending.set(id, b);
    }
    b.calls += 1;
    b.credits += e.credits;
    if (e.failed) b.errors += 1;
    if (e.refunded) b.refunds += 1;
  }

  async flush(): Promise<void> {
    const batch = this.pending;
    const calls = this.pendingCalls;
    this.pending = new Map();
    this.pendingCalls = [];
    await Promise.all([
      calls.length ? this.calls.insertMany(calls) : undefined,
      ...[...batch.entries()].map(([id, b]) =>
        this.usage.updateOne(
          { _id: id },
          {
            $inc: { calls: b.calls, credits: b.credits, errors: b.errors, refunds: b.refunds },
            $setOnInsert: { owner_id: b.owner_id, server_id: b.server_id, key_id: b.key_id, tool: b.tool, hour: b.hour },
          },
          { upsert: true },
        ),
      ),
    ]);
  }

  /** The owner's latest calls, newest first. */
  async latest(ownerId: string, limit: number, serverId?: string): Promise<CallDoc[]> {
    await this.flush();
    return this.calls.find(serverId ? { owner_id: ownerId, server_id: serverId } : { owner_id: ownerId }, { sort: { at: -1 }, limit });
  }

  async query(ownerId: string, f: { server?: string; key?: string; tool?: string; from?: Date; to?: Date }): Promise<UsageDoc[]> {
    await this.flush();
    const filter: Filter = { owner_id: ownerId };
    if (f.server) filter.server_id = f.server;
    if (f.key) filter.key_id = f.key;
    if (f.tool) filter.tool = f.tool;
    if (f.from || f.to) filter.hour = { ...(f.from ? { $gte: f.from } : {}), ...(f.to ? { $lt: f.to } : {}) };
    return this.usage.find(filter, { sort: { hour: 1, tool: 1 } });
  }
}
