// The store's clock (runtime/store/clock.ts): on every store, measured at open against the store's own time
// (MongoDB's hello.localTime; the embedded store is this process); carried forward by the monotonic clock, never
// back; a host further off than the bound gets its writes refused (the store's StoreUnavailableError, the one
// 503), its reads served, and its writes back once its clock is. (Processes whose clocks are really 90 s and
// 400 s off: scale-out.test.ts.)
import { describe, expect, it } from 'vitest';
import { StoreClock, enforceClockBound } from '../runtime/store/clock.ts';
import { StoreUnavailableError } from '../runtime/store/port.ts';
import { storeTargets } from './support/stores.ts';

for (const target of storeTargets('store_clock')) {
  describe.runIf(target.enabled)(`the store's clock: ${target.name}`, () => {
    it("is the store's time, measured at open: within a round trip of this host's (the store runs here)", async () => {
      const store = await target.open();
      const { offsetMs, roundTripMs } = store.clock.offset;
      expect(Math.abs(offsetMs)).toBeLessThanOrEqual(roundTripMs + 1000);
      expect(Math.abs(store.clock.now() - Date.now())).toBeLessThanOrEqual(roundTripMs + 1000);
      expect(store.clock.refusal()).toBeNull();
      const again = await store.clock.measure();
      expect(Math.abs(again.offsetMs)).toBeLessThanOrEqual(again.roundTripMs + 1000);
      await store.close();
    });

    it('past the bound every write is refused with a message naming it and reads are served; writes come back with the clock', async () => {
      const store = await target.open();
      const docs = store.collection('clock_probe');
      await docs.insertOne({ _id: 'before' });
      // The store as a host 400 s behind it sees it (the store's time is this host's plus 400 s).
      let storeAhead = 400_000;
      const skewed = { ...store, clock: new StoreClock(async () => new Date(Date.now() + storeAhead), 300_000) };
      await skewed.clock.measure();
      expect(skewed.clock.offset.offsetMs).toBeGreaterThan(399_000);
      expect(enforceClockBound(skewed)).toMatch(/clock is 400\.\d s behind the store's, more than the 300 s allowed \(CLOCK_MAX_OFFSET_SECONDS\)/);
      const refused = await docs.insertOne({ _id: 'after' }).catch((err: unknown) => err);
      expect(refused).toBeInstanceOf(StoreUnavailableError);
      expect(refused).toMatchObject({ retryAfterSeconds: 60, message: expect.stringContaining('takes no writes until its time is synchronized (NTP)') });
      for (const write of [
        () => docs.updateOne({ _id: 'before' }, { $set: { x: 1 } }),
        () => docs.deleteMany({}),
        () => docs.findOneAndUpdate({ _id: 'before' }, { $set: { x: 1 } }),
      ])
        await expect(write()).rejects.toBeInstanceOf(StoreUnavailableError);
      expect(await docs.find({})).toEqual([{ _id: 'before' }]);
      expect(await store.status(1000)).toMatchObject({ ok: false, retryAfterSeconds: 60 });
      // Synchronized again: at the next measurement writes are taken.
      storeAhead = 0;
      await skewed.clock.measure();
      expect(enforceClockBound(skewed)).toBeNull();
      await docs.insertOne({ _id: 'after' });
      expect(await store.status(1000)).toEqual({ ok: true });
      await store.close();
    });
  });
}

describe('StoreClock', () => {
  it("carries the store's time forward by the monotonic clock, whatever the host's clock says", async () => {
    const clock = new StoreClock(async () => new Date(Date.now() - 90_000));
    const reading = await clock.measure();
    expect(reading.offsetMs).toBeGreaterThan(-91_000);
    expect(reading.offsetMs).toBeLessThan(-89_000);
    expect(Math.abs(clock.now() - (Date.now() - 90_000))).toBeLessThan(1000);
    expect(clock.refusal()).toBeNull(); // 90 s is within the default bound (300 s)
  });

  it('never goes back, also when a new measurement finds the store a little behind', async () => {
    let storeAhead = 5000;
    const clock = new StoreClock(async () => new Date(Date.now() + storeAhead));
    await clock.measure();
    const before = clock.now();
    storeAhead = 0;
    await clock.measure();
    expect(clock.now()).toBeGreaterThanOrEqual(before);
  });
});
