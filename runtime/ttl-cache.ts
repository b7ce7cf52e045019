// A small time-bounded cache for hot-path lookups (keys, servers, tool lists, accounts). Entries made stale by a
// change on this instance are deleted at once; other instances see the change within `ttlMs`: by the entry's
// expiry, or, for a cache that follows a change feed (store/changes.ts), by the feed, which lets an entry live up
// to FOLLOWED_MAX_MS while it can vouch for every change older than `ttlMs`.

import { type OffPath, offPath } from './off-path.ts';

/** An entry used in the last quarter of `ttlMs` before it expires is read again in the background (fetch). */
const REFRESH_AHEAD_FRACTION = 1 / 4;
/** How long a followed entry lives at most (then it is read again), however well the feed works. */
export const FOLLOWED_MAX_MS = 10 * 60_000;

/** What a cache needs of a change feed (store/changes.ts, `ChangeFeed`). */
export interface CacheFeed {
  announce(name: string, key: string): Promise<void>;
  follow(name: string, follower: { delete(key: string): void; clear(): void }): void;
  /** Whether every change older than `ms` has been applied. */
  current(ms: number): boolean;
  /** Whether a change of the entry was announced so recently that it may not be written yet. */
  recent(name: string, key: string): boolean;
}

interface Entry<V> {
  value: V;
  /** When its read started (host time). */
  readAt: number;
  /** The feed may keep it past `ttlMs`: nothing announced a change of it during or shortly before its read. */
  followed: boolean;
  /** A background read of it is under way. */
  refreshing?: boolean;
}

export class TtlCache<K extends string, V> {
  private readonly entries = new Map<K, Entry<V>>();
  /** Counts deletions: a read during which one happened may hold what it replaced, so the feed does not keep it. */
  private deletions = 0;
  /** Where background reads run: no call waits for them, so none runs in a call's context (its trace, its store commands). */
  private readonly offPath: OffPath = offPath();

  /** `feed`: the change feed this cache follows, and its name there (the entries may then outlive `ttlMs`). */
  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries = 10_000,
    private readonly feed?: { feed: CacheFeed; name: string },
  ) {
    feed?.feed.follow(feed.name, this);
  }

  get(key: K): V | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    if (this.expiry(e) <= Date.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return e.value;
  }

  /**
   * The key's value, from the cache or from `load` (then kept). An entry used in the last quarter of `ttlMs` before
   * it expires is loaded again in the background, so that a key in steady use never waits for the store. A change
   * on this instance (delete) while that runs wins over what it read.
   */
  async fetch(key: K, load: () => Promise<V>): Promise<V> {
    const e = this.entries.get(key);
    const now = Date.now();
    if (e) {
      const left = this.expiry(e) - now;
      if (left > 0) {
        if (!e.refreshing && left < this.ttlMs * REFRESH_AHEAD_FRACTION) this.refresh(key, e, load);
        return e.value;
      }
    }
    const deletions = this.deletions;
    const value = await load();
    this.keep(key, value, now, deletions);
    return value;
  }

  /** Keeps `value` for the cache's lifetime, or for `ttlMs` when given (then not past it, whatever the feed says). */
  set(key: K, value: V, ttlMs = this.ttlMs): void {
    if (ttlMs <= 0) return;
    this.put(key, { value, readAt: Date.now() - (this.ttlMs - ttlMs), followed: ttlMs === this.ttlMs && this.followable(key) });
  }

  /** Tells every instance following the feed that the entry is about to change (before the change is written). */
  async announce(key: K): Promise<void> {
    if (this.feed) await this.feed.feed.announce(this.feed.name, key);
  }

  delete(key: K): void {
    this.deletions++;
    this.entries.delete(key);
  }

  clear(): void {
    this.deletions++;
    this.entries.clear();
  }

  private expiry(e: Entry<V>): number {
    return e.followed && this.feed!.feed.current(this.ttlMs) ? e.readAt + FOLLOWED_MAX_MS : e.readAt + this.ttlMs;
  }

  private followable(key: K): boolean {
    return !!this.feed && !this.feed.feed.recent(this.feed.name, key);
  }

  private keep(key: K, value: V, readAt: number, deletions: number): void {
    if (this.ttlMs <= 0) return;
    this.put(key, { value, readAt, followed: deletions === this.deletions && this.followable(key) });
  }

  private put(key: K, e: Entry<V>): void {
    if (this.entries.size >= this.maxEntries && !this.entries.has(key)) this.entries.delete(this.entries.keys().next().value as K);
    this.entries.set(key, e);
  }

  private refresh(key: K, e: Entry<V>, load: () => Promise<V>): void {
    e.refreshing = true;
    const readAt = Date.now();
    const deletions = this.deletions;
    this.offPath(load).then(
      // Only over the entry it refreshes: one deleted or replaced meanwhile was changed here.
      (value) => this.entries.get(key) === e && this.keep(key, value, readAt, deletions),
      // Not tried again: the entry lives on until it expires, and the next use past then reads on the path.
      () => undefined,
    );
  }
}
