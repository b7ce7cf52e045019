// A small time-bounded cache for hot-path lookups (keys, servers, tool lists). Entries made stale by a
// change on this instance are deleted at once; other instances see the change within `ttlMs`.
export class TtlCache<K, V> {
  private readonly entries = new Map<K, { value: V; expires: number }>();

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

  /** Keeps `value` for the cache's lifetime, or for `ttlMs` when given. */
  set(key: K, value: V, ttlMs = this.ttlMs): void {
    if (ttlMs <= 0) return;
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value as K);
    this.entries.set(key, { value, expires: Date.now() + ttlMs });
  }

  delete(key: K): void {
    this.entries.delete(key);
  }

  clear(): void {
    this.entries.clear();
  }
}
