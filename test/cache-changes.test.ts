// Lookups that outlive KEY_CACHE_MS through the change feed (runtime/store/changes.ts): two instances (each a
// feed and its own repositories) on one store, on the embedded store and on MongoDB. An entry lives past its
// KEY_CACHE_MS while its instance reads the feed, a change announced on the other instance drops it at the next
// read, and without reads (a store that does not answer them) entries fall back to KEY_CACHE_MS.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ApiKeys } from '../runtime/access/keys.ts';
import { ChangeFeed } from '../runtime/store/changes.ts';
import type { Store } from '../runtime/store/port.ts';
import { FOLLOWED_MAX_MS } from '../runtime/ttl-cache.ts';
import { storeTargets } from './support/stores.ts';

const KEY_CACHE_MS = 5000;
const NOW = 1_800_000_000_000;

for (const target of storeTargets('cache-changes').filter((t) => t.name !== 'embedded, on disk')) {
  describe.runIf(target.enabled)(`lookups and the change feed: ${target.name}`, () => {
    let store: Store;
    // The host's clock (what lookups' lifetimes read) stands still unless a test moves it.
    beforeEach(async () => {
      store = await target.open();
      vi.useFakeTimers({ toFake: ['Date'], now: NOW });
    });
    afterEach(async () => {
      vi.useRealTimers();
      await store.close();
    });
    const later = (ms: number) => vi.setSystemTime(Date.now() + ms);

    /** One instance: its feed (read once now) and its keys. */
    async function instance() {
      const changes = new ChangeFeed(store);
      await changes.poll();
      return { changes, keys: new ApiKeys(store, KEY_CACHE_MS, changes) };
    }

    it('keeps a key past KEY_CACHE_MS while the feed is read, and falls back to KEY_CACHE_MS when it is not', async () => {
      const a = await instance();
      const { key, doc } = await a.keys.create('own_1', 'k', { kind: 'global' });
      expect((await a.keys.lookup(key))?._id).toBe(doc._id);
      // Gone from the store without an announcement (what only a bug or a hand edit does): the cached entry says
      // whether the instance read the store again.
      await store.collection('api_keys').deleteMany({ _id: doc._id });
      for (let i = 0; i < 4; i++) {
        later(KEY_CACHE_MS / 2);
        await a.changes.poll();
        expect((await a.keys.lookup(key))?._id).toBe(doc._id);
      }
      // No read of the feed for longer than KEY_CACHE_MS: the entry is as old as that, and is read again.
      later(KEY_CACHE_MS);
      expect(await a.keys.lookup(key)).toBeNull();
    });

    it('drops a key revoked on another instance at its next read of the feed', async () => {
      const [a, b] = [await instance(), await instance()];
      const { key, doc } = await a.keys.create('own_1', 'k', { kind: 'global' });
      expect((await b.keys.lookup(key))?.revoked_at).toBeNull();
      later(2 * KEY_CACHE_MS);
      await b.changes.poll();
      expect((await b.keys.lookup(key))?.revoked_at).toBeNull();
      await a.keys.revokeGlobal('own_1', doc._id);
      await b.changes.poll();
      expect((await b.keys.lookup(key))?.revoked_at).toBeInstanceOf(Date);
    });

    it('keeps what was read while a change was announced for KEY_CACHE_MS only (the change may not be written yet)', async () => {
      const [a, b] = [await instance(), await instance()];
      const { key, doc } = await a.keys.create('own_1', 'k', { kind: 'global' });
      // The announcement of A's change, and B reading the key before A wrote it.
      await a.changes.announce('api_keys', doc.hash);
      await b.changes.poll();
      expect((await b.keys.lookup(key))?.revoked_at).toBeNull();
      // A stops before its write; someone writes the change without announcing it again.
      await store.collection('api_keys').updateOne({ _id: doc._id }, { $set: { revoked_at: new Date() } });
      later(KEY_CACHE_MS);
      await b.changes.poll();
      expect((await b.keys.lookup(key))?.revoked_at).toBeInstanceOf(Date);
    });

    it('drops what its followers hold after a gap in its reads, but not at its first read soon after it was made', async () => {
      const changes = new ChangeFeed(store);
      const clears: number[] = [];
      changes.follow('api_keys', { delete() {}, clear: () => void clears.push(Date.now()) });
      later(1000);
      await changes.poll();
      expect(clears).toEqual([]);
      // Reads that fail for 40 s (more than half of the minute of announcements a read covers).
      later(40_000);
      await changes.poll();
      expect(clears).toEqual([Date.now()]);
      later(1000);
      await changes.poll();
      expect(clears).toHaveLength(1);
      // A feed whose first read comes that long after it was made: what was read meanwhile may miss a change.
      const late = new ChangeFeed(store);
      late.follow('api_keys', { delete() {}, clear: () => void clears.push(Date.now()) });
      later(40_000);
      await late.poll();
      expect(clears).toHaveLength(2);
    });

    it('reads a followed key again after FOLLOWED_MAX_MS', async () => {
      const a = await instance();
      const { key, doc } = await a.keys.create('own_1', 'k', { kind: 'global' });
      await a.keys.lookup(key);
      await store.collection('api_keys').deleteMany({ _id: doc._id });
      // The feed read all along; a gap longer than what it reads again drops everything, so it is read often.
      for (let t = 0; t < FOLLOWED_MAX_MS; t += 20_000) {
        later(20_000);
        await a.changes.poll();
      }
      expect(await a.keys.lookup(key)).toBeNull();
    });
  });
}
