// A small time-bounded cache for hot-path lookups (keys, servers, tool lists, accounts). Entries made stale by a
// change on this instance are deleted at once; other instances see the change within `ttlMs`.

/** An entry used in the last quarter of its life is read again in the background (fetch). */
const REFRESH_AHEAD_FRACTION = 1 / 4;

interface Entry<V> {
  value: V;
  expires: number;
  /** A background read of it is under way. */
  refreshing?: boolean;
}

export class TtlCache<K, V> {
  private readonly entries = new Map<K, Entry<V>>();

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries = 10_000,
  ) {}

  get(key: K): V | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    if (e.expires <= Date.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return e.value;
  }

  /**
   * The key's value, from the cache or from `load` (then kept). An entry used in the last quarter of its life is
   * loaded again in the background, so that a key in steady use never waits for the store; its value is never
   * older than `ttlMs` all the same. A change on this instance (delete) while that runs wins over what it read.
   */
  async fetch(key: K, load: () => Promise<V>): Promise<V> {
    const e = this.entries.get(key);
    const now = Date.now();
    if (e && e.expires > now) {
      if (!e.refreshing && e.expires - now < this.ttlMs * REFRESH_AHEAD_FRACTION) this.refresh(key, e, load);
      return e.value;
    }
    const value = await load();
    this.set(key, value);
    return value;
  }

  /** Keeps `value` for the cache's lifetime, or for `ttlMs` when given. */
  set(key: K, value: V, ttlMs = this.ttlMs): void {
    if (ttlMs <= 0) return;
    if (this.entries.size >= this.maxEntries && !this.entries.has(key)) this.entries.delete(this.entries.keys().next().value as K);
    this.entries.set(key, { value, expires: Date.now() + ttlMs });
  }

  delete(key: K): void {
    this.entries.delete(key);
  }

  clear(): void {
    this.entries.clear();
  }

  private refresh(key: K, e: Entry<V>, load: () => Promise<V>): void {
    e.refreshing = true;
    load().then(
      // Only over the entry it refreshes: one deleted or replaced meanwhile was changed here.
      (value) => this.entries.get(key) === e && this.set(key, value),
      // Not tried again: the entry lives on until it expires, and the next use past then reads on the path.
      () => undefined,
    );
  }
}
