// API keys: `mcpk_` + 32 random bytes in base62, stored only as SHA-256 with a short display prefix.
// Lookups are cached briefly; changes made on this instance drop the cache entry at once.
import type { Collection, Doc, Store } from '../store/port.ts';
import { LastUsedTimes } from '../store/last-used.ts';
import { retryTransient } from '../store/retry.ts';
import { randomId, randomToken, sha256 } from '../secrets.ts';
import type { ChangeFeed } from '../store/changes.ts';
import { TtlCache } from '../ttl-cache.ts';
import { type Restrictions, restrictionsView } from './restrictions.ts';

export interface ApiKeyDoc extends Doc {
  owner_id: string;
  name: string;
  kind: 'server' | 'global';
  server_id: string | null;
  linked_server_ids: string[];
  hash: string;
  prefix: string;
  created_at: Date;
  last_used_at: Date | null;
  revoked_at: Date | null;
  /** Absent on keys made before restrictions existed: unrestricted. */
  restrictions?: Restrictions;
  /** A key of one of the owner's end users: its calls act as them (runtime/access/end-users.ts). */
  end_user_id?: string;
  /** An owner's key that may name an end user to act for, in the X-End-User header (a trusted backend's). */
  act_for_end_users?: boolean;
}

/** Who a new key acts as: its owner (and, if allowed, any end user the request names) or one end user. */
export type KeyActor = { endUserId: string } | { actForEndUsers: boolean };

export const KEY_PREFIX = 'mcpk_';

/** The list/read view of a key: never the key or its hash. */
export function publicKey(doc: ApiKeyDoc): Record<string, unknown> {
  return {
    id: doc._id,
    name: doc.name,
    kind: doc.kind,
    prefix: doc.prefix,
    ...(doc.kind === 'server' ? { server_id: doc.server_id } : { linked_server_ids: doc.linked_server_ids }),
    // Only on the keys they concern: an end user's, and an owner's that may name end users.
    ...(doc.end_user_id ? { end_user_id: doc.end_user_id } : {}),
    ...(doc.act_for_end_users ? { act_for_end_users: true } : {}),
    created_at: doc.created_at,
    last_used_at: doc.last_used_at,
    revoked_at: doc.revoked_at,
    ...restrictionsView(doc.restrictions),
  };
}

export class ApiKeys {
  private readonly keys: Collection<ApiKeyDoc>;
  /** hash -> key document (null: no such key), for the hot path. */
  private readonly cache: TtlCache<string, ApiKeyDoc | null>;
  /** Last-used times, written in the background at most once a minute per key (never on the hot path). */
  private readonly touched: LastUsedTimes;

  /** `changes`: the feed that tells every instance of a change (store/changes.ts), so lookups may live longer. */
  constructor(store: Store, cacheMs: number, changes?: ChangeFeed) {
    this.keys = store.collection<ApiKeyDoc>('api_keys');
    this.cache = new TtlCache(cacheMs, undefined, changes && { feed: changes, name: 'api_keys' });
    this.touched = new LastUsedTimes(this.keys, store.clock);
  }

  async create(
    ownerId: string,
    name: string,
    scope: { kind: 'server'; serverId: string } | { kind: 'global' },
    restrictions: Restrictions = { access: 'all' },
    actor: KeyActor = { actForEndUsers: false },
  ): Promise<{ doc: ApiKeyDoc; key: string }> {
    const key = randomToken(KEY_PREFIX);
    const doc: ApiKeyDoc = {
      _id: randomId('key_'),
      owner_id: ownerId,
      name,
      kind: scope.kind,
      server_id: scope.kind === 'server' ? scope.serverId : null,
      linked_server_ids: [],
      hash: sha256(key),
      prefix: key.slice(0, KEY_PREFIX.length + 6),
      created_at: new Date(),
      last_used_at: null,
      revoked_at: null,
      restrictions,
      ...('endUserId' in actor ? { end_user_id: actor.endUserId } : actor.actForEndUsers ? { act_for_end_users: true } : {}),
    };
    // Not announced: no instance can have looked up a value that did not exist.
    await this.keys.insertOne(doc);
    this.cache.delete(doc.hash);
    return { doc, key };
  }

  /** Whether a bearer token has the form of an API key (by its prefix). */
  static isKey(token: string): boolean {
    return token.startsWith(KEY_PREFIX);
  }

  /** The key document for a presented key value (cached). */
  async lookup(key: string): Promise<ApiKeyDoc | null> {
    const hash = sha256(key);
    return this.cache.fetch(hash, () => this.keys.findOne({ hash }));
  }

  get(ownerId: string, id: string): Promise<ApiKeyDoc | null> {
    return this.keys.findOne({ _id: id, owner_id: ownerId });
  }

  /** An end user's keys (revoked ones too). */
  listForEndUser(ownerId: string, endUserId: string): Promise<ApiKeyDoc[]> {
    return this.keys.find({ owner_id: ownerId, end_user_id: endUserId }, { sort: { created_at: 1 } });
  }

  /** Revokes every key of an end user (their deletion); how many were live. Safe to repeat. */
  async revokeForEndUser(ownerId: string, endUserId: string): Promise<number> {
    const live = (await this.listForEndUser(ownerId, endUserId)).filter((k) => !k.revoked_at);
    for (const doc of live) await this.cache.announce(doc.hash);
    await retryTransient(() => this.keys.updateMany({ owner_id: ownerId, end_user_id: endUserId, revoked_at: null }, { $set: { revoked_at: new Date() } }));
    for (const doc of live) this.cache.delete(doc.hash);
    return live.length;
  }

  /** The server's own keys and the global keys linked to it. */
  listForServer(ownerId: string, serverId: string): Promise<ApiKeyDoc[]> {
    return this.keys.find({ owner_id: ownerId, $or: [{ server_id: serverId }, { linked_server_ids: serverId }] }, { sort: { created_at: 1 } });
  }

  /** How many keys of the owner are not revoked (its quota counts them). */
  countLive(ownerId: string): Promise<number> {
    return this.keys.countDocuments({ owner_id: ownerId, revoked_at: null });
  }

  listGlobal(ownerId: string): Promise<ApiKeyDoc[]> {
    return this.keys.find({ owner_id: ownerId, kind: 'global' }, { sort: { created_at: 1 } });
  }

  async link(ownerId: string, id: string, serverId: string): Promise<ApiKeyDoc | null> {
    return this.change({ _id: id, owner_id: ownerId, kind: 'global' }, { $addToSet: { linked_server_ids: serverId } });
  }

  async unlink(ownerId: string, id: string, serverId: string): Promise<ApiKeyDoc | null> {
    return this.change({ _id: id, owner_id: ownerId, kind: 'global', linked_server_ids: serverId }, { $pull: { linked_server_ids: serverId } });
  }

  /** Renames a key or changes its restrictions (never its value); null when it is not the owner's. */
  async update(ownerId: string, id: string, changes: { name?: string; restrictions?: Restrictions }): Promise<ApiKeyDoc | null> {
    const set: Record<string, unknown> = {};
    if (changes.name !== undefined) set.name = changes.name;
    if (changes.restrictions !== undefined) set.restrictions = changes.restrictions;
    if (!Object.keys(set).length) return this.get(ownerId, id);
    return this.change({ _id: id, owner_id: ownerId }, { $set: set });
  }

  /** Revokes one key of the server: its own key, or a global key linked to it. */
  async revoke(ownerId: string, serverId: string, id: string): Promise<ApiKeyDoc | null> {
    const doc = await this.keys.findOne({ _id: id, owner_id: ownerId, $or: [{ server_id: serverId }, { linked_server_ids: serverId }] });
    return doc && this.revokeDoc(doc);
  }

  /** Revokes a global key everywhere it is linked. */
  async revokeGlobal(ownerId: string, id: string): Promise<ApiKeyDoc | null> {
    const doc = await this.keys.findOne({ _id: id, owner_id: ownerId, kind: 'global' });
    return doc && this.revokeDoc(doc);
  }

  /**
   * Revokes every key of the server: its own keys are revoked; global keys are unlinked from it (they
   * stay valid on their other servers). Returns how many of each. Both writes are safe to repeat (a key
   * already revoked or unlinked no longer matches), so they are retried after a transient failure.
   */
  async revokeAll(ownerId: string, serverId: string): Promise<{ revoked: number; unlinked: number }> {
    const affected = await this.listForServer(ownerId, serverId);
    for (const doc of affected) await this.cache.announce(doc.hash);
    const now = new Date();
    await retryTransient(() => this.keys.updateMany({ owner_id: ownerId, server_id: serverId, revoked_at: null }, { $set: { revoked_at: now } }));
    await retryTransient(() =>
      this.keys.updateMany({ owner_id: ownerId, kind: 'global', linked_server_ids: serverId }, { $pull: { linked_server_ids: serverId } }),
    );
    for (const doc of affected) this.cache.delete(doc.hash);
    // Counted from the listing: a retried write reports only what its last attempt changed.
    return {
      revoked: affected.filter((doc) => doc.server_id === serverId && !doc.revoked_at).length,
      unlinked: affected.filter((doc) => doc.kind === 'global' && doc.linked_server_ids.includes(serverId)).length,
    };
  }

  touch(id: string): void {
    this.touched.touch(id);
  }

  /** Writes the pending last-used times: one bulk write, whatever the number of keys. */
  flush(): Promise<void> {
    return this.touched.flush();
  }

  /** Sets revoked_at once (a repeat, or a concurrent revocation, changes nothing); the key as it is now. */
  private async revokeDoc(doc: ApiKeyDoc): Promise<ApiKeyDoc | null> {
    if (doc.revoked_at) return doc;
    await this.cache.announce(doc.hash);
    const revoked = await retryTransient(() => this.keys.findOneAndUpdate({ _id: doc._id, revoked_at: null }, { $set: { revoked_at: new Date() } }));
    this.cache.delete(doc.hash);
    return revoked ?? this.keys.findOne({ _id: doc._id });
  }

  private async change(filter: Record<string, unknown>, update: Parameters<Collection<ApiKeyDoc>['findOneAndUpdate']>[1]): Promise<ApiKeyDoc | null> {
    // The key's hash (which never changes) is announced before the change.
    const before = await this.keys.findOne(filter);
    if (!before) return null;
    await this.cache.announce(before.hash);
    const doc = await this.keys.findOneAndUpdate(Object.assign({}, filter, { _id: before._id }), update);
    this.cache.delete(before.hash);
    return doc;
  }
}
