// The hot-path lookup cache: values never older than its lifetime, read again in the background while in use,
// and a change on this instance winning over a background read.
import { AsyncLocalStorage } from 'node:async_hooks';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { TtlCache } from '../runtime/ttl-cache.ts';

describe('TtlCache.fetch', () => {
  beforeEach(() => vi.useFakeTimers({ toFake: ['Date'], now: 1_000_000 }));
  afterEach(() => vi.useRealTimers());

  /** Lets the background read finish (the clock stands still: vi.waitFor would move it). */
  const settled = async () => {
    for (let i = 0; i < 10; i++) await new Promise((resolve) => setImmediate(resolve));
  };

  /** A loader that counts its reads and answers `value` (or waits for `gate`). */
  function loader(initial: string) {
    const l = { value: initial, reads: 0, gate: undefined as Promise<void> | undefined, load: async () => '' };
    l.load = async () => {
      l.reads++;
      const value = l.value;
      if (l.gate) await l.gate;
      return value;
    };
    return l;
  }

  it('serves from the cache, then reads in the background in the last quarter of an entry`s life, never past its life', async () => {
    const cache = new TtlCache<string, string>(4000);
    const l = loader('v1');
    expect(await cache.fetch('k', l.load)).toBe('v1');
    vi.setSystemTime(1_000_000 + 2000);
    expect(await cache.fetch('k', l.load)).toBe('v1');
    expect(l.reads).toBe(1);
    // Last quarter: answered from the cache at once, one read started for it.
    l.value = 'v2';
    let open!: () => void;
    l.gate = new Promise((resolve) => (open = resolve));
    vi.setSystemTime(1_000_000 + 3500);
    expect(await cache.fetch('k', l.load)).toBe('v1');
    expect(await cache.fetch('k', l.load)).toBe('v1');
    expect(l.reads).toBe(2);
    l.gate = undefined;
    open();
    await settled();
    expect(cache.get('k')).toBe('v2');
    expect(l.reads).toBe(2);
    // The refreshed entry lives from its read: at 3.5 s + 4 s it has expired, and the next use reads on the path.
    l.value = 'v3';
    vi.setSystemTime(1_000_000 + 7500);
    expect(await cache.fetch('k', l.load)).toBe('v3');
    expect(l.reads).toBe(3);
  });

  it('reads in the background outside the context of the call that found the entry old (that call does not wait for it)', async () => {
    const call = new AsyncLocalStorage<string>();
    const cache = new TtlCache<string, string>(4000);
    const readFor: Array<string | undefined> = [];
    const load = async () => {
      readFor.push(call.getStore());
      return 'v';
    };
    await call.run('first call', () => cache.fetch('k', load));
    vi.setSystemTime(1_000_000 + 3500);
    await call.run('later call', () => cache.fetch('k', load));
    await settled();
    expect(readFor).toEqual(['first call', undefined]);
  });

  it('keeps a change made here over what a background read found', async () => {
    const cache = new TtlCache<string, string>(4000);
    const l = loader('old');
    await cache.fetch('k', l.load);
    let open!: () => void;
    l.gate = new Promise((resolve) => (open = resolve));
    vi.setSystemTime(1_000_000 + 3500);
    await cache.fetch('k', l.load);
    // The document changes here while the background read is under way: the cache entry is dropped.
    cache.delete('k');
    l.gate = undefined;
    l.value = 'new';
    expect(await cache.fetch('k', l.load)).toBe('new');
    open();
    await settled();
    expect(cache.get('k')).toBe('new');
  });

  it('leaves an entry whose background read failed to expire, and reads on the path then', async () => {
    const cache = new TtlCache<string, string>(4000);
    await cache.fetch('k', async () => 'v1');
    vi.setSystemTime(1_000_000 + 3500);
    expect(
      await cache.fetch('k', async () => {
        throw new Error('the store failed');
      }),
    ).toBe('v1');
    await settled();
    // Not tried again while the entry lives, read on the path once it expired.
    let reads = 0;
    expect(await cache.fetch('k', async () => (reads++, 'v2'))).toBe('v1');
    expect(reads).toBe(0);
    vi.setSystemTime(1_000_000 + 4000);
    expect(await cache.fetch('k', async () => (reads++, 'v2'))).toBe('v2');
    expect(reads).toBe(1);
  });
});
