// Usage per owner, server, key, tool and hour. Counted in memory and flushed in batches (one upsert
// per bucket), so a tools/call never waits for a usage write.
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
}

type Bucket = Omit<UsageDoc, '_id' | 'calls' | 'credits' | 'errors' | 'refunds'> & { calls: number; credits: number; errors: number; refunds: number };

export class Usage {
  private readonly usage: Collection<UsageDoc>;
  private pending = new Map<string, Bucket>();

  constructor(store: Store) {
    this.usage = store.collection<UsageDoc>('usage');
  }

  record(e: UsageEvent): void {
    const hour = new Date(Math.floor(Date.now() / 3_600_000) * 3_600_000);
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
    this.pending = new Map();
    await Promise.all(
      [...batch.entries()].map(([id, b]) =>
        this.usage.updateOne(
          { _id: id },
          {
            $inc: { calls: b.calls, credits: b.credits, errors: b.errors, refunds: b.refunds },
            $setOnInsert: { owner_id: b.owner_id, server_id: b.server_id, key_id: b.key_id, tool: b.tool, hour: b.hour },
          },
          { upsert: true },
        ),
      ),
    );
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
