// Tool servers: the thing an MCP client talks to at /mcp/<server_id>.
import type { Collection, Doc, Store } from '../store/port.ts';
import { randomId } from '../secrets.ts';
import type { ChangeFeed } from '../store/changes.ts';
import { TtlCache } from '../ttl-cache.ts';

export interface ServerDoc extends Doc {
  owner_id: string;
  name: string;
  active: boolean;
  created_at: Date;
  /** The server "Try it with sandbox accounts" made (the service finds it again by this). */
  sandbox?: true;
  /** The owner's end users may connect MCP apps to it by OAuth, each app acting as the person who approved it. */
  end_user_apps?: boolean;
  /** Where a person with no session here signs in first: the owner's app, which sends them on through a connect link. */
  end_user_sign_in_url?: string | null;
}

/** What an owner may change on a server. */
export type ServerChanges = Partial<Pick<ServerDoc, 'name' | 'active' | 'end_user_apps' | 'end_user_sign_in_url'>>;

export const SERVER_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

export function publicServer(doc: ServerDoc): Record<string, unknown> {
  return {
    id: doc._id,
    name: doc.name,
    active: doc.active,
    sandbox: doc.sandbox === true,
    end_user_apps: doc.end_user_apps === true,
    end_user_sign_in_url: doc.end_user_sign_in_url ?? null,
    created_at: doc.created_at,
  };
}

export class Servers {
  private readonly servers: Collection<ServerDoc>;
  private readonly cache: TtlCache<string, ServerDoc | null>;

  /** `changes`: the feed that tells every instance of a change (store/changes.ts), so lookups may live longer. */
  constructor(store: Store, cacheMs: number, changes?: ChangeFeed) {
    this.servers = store.collection<ServerDoc>('servers');
    this.cache = new TtlCache(cacheMs, undefined, changes && { feed: changes, name: 'servers' });
  }

  /** How many servers the owner has (its quota counts them). */
  count(ownerId: string): Promise<number> {
    return this.servers.countDocuments({ owner_id: ownerId });
  }

  async create(ownerId: string, name: string, id?: string, sandbox = false): Promise<ServerDoc> {
    const doc: ServerDoc = {
      _id: id ?? randomId('srv_', 9),
      owner_id: ownerId,
      name,
      active: true,
      created_at: new Date(),
      ...(sandbox ? { sandbox: true as const } : {}),
    };
    await this.cache.announce(doc._id);
    await this.servers.insertOne(doc);
    this.cache.delete(doc._id);
    return doc;
  }

  list(ownerId: string): Promise<ServerDoc[]> {
    return this.servers.find({ owner_id: ownerId }, { sort: { created_at: 1 } });
  }

  get(ownerId: string, id: string): Promise<ServerDoc | null> {
    return this.servers.findOne({ _id: id, owner_id: ownerId });
  }

  /** Any owner's server, cached: the MCP hot path. */
  async lookup(id: string): Promise<ServerDoc | null> {
    return this.cache.fetch(id, () => this.servers.findOne({ _id: id }));
  }

  async update(ownerId: string, id: string, changes: ServerChanges): Promise<ServerDoc | null> {
    await this.cache.announce(id);
    const doc = await this.servers.findOneAndUpdate({ _id: id, owner_id: ownerId }, { $set: changes });
    this.cache.delete(id);
    return doc;
  }

  async delete(ownerId: string, id: string): Promise<boolean> {
    await this.cache.announce(id);
    const n = await this.servers.deleteOne({ _id: id, owner_id: ownerId });
    this.cache.delete(id);
    return n > 0;
  }
}
