// Per-key rate limits shared by several instances (three KeyRateLimiters on one MongoDB, as three processes
// would have): the limit holds across them within 10% and never above, at a small fraction of a store operation
// per call; and when the store goes down or hangs, each instance falls back to its own limits instead of failing.
// The exact counters of the owners' writes and of sign-ins keep their windows whatever a host's clock says.
import { AsyncLocalStorage } from 'node:async_hooks';
import { connect, createServer, type Socket } from 'node:net';
import type { MongoClient } from 'mongodb';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { KeyRateLimiter, RATE_LIMIT_INDEXES } from '../runtime/access/rate-limit.ts';
import { windowCounter } from '../runtime/access/window-counter.ts';
import { openMongoStore } from '../runtime/store/mongodb.ts';
import type { Store } from '../runtime/store/port.ts';
import { MONGODB_URL, dropTestDatabases, mongoTestUrl } from './support/mongo.ts';

const LIMITS = { burstPoints: 100, burstSeconds: 10, minutePoints: 1000 };

describe.runIf(Boolean(MONGODB_URL))('rate limits shared through MongoDB', () => {
  const stores: Store[] = [];
  afterAll(async () => {
    await Promise.all(stores.map((s) => s.close()));
    await dropTestDatabases();
  });

  async function open(url: string, dbName: string): Promise<Store> {
    const store = await openMongoStore(url, { dbName });
    stores.push(store);
    return store;
  }

  it('three instances together admit the limit of a window within 10%, never more, with few store operations', async () => {
    const { url, dbName } = mongoTestUrl('rate_limit', { monitorCommands: 'true' });
    await (await open(url, dbName)).ensureIndexes(RATE_LIMIT_INDEXES);
    let storeOps = 0;
    let fallbacks = 0;
    const instances = await Promise.all(
      Array.from({ length: 3 }, async () => {
        const store = await open(url, dbName);
        (store.mongo!.client as MongoClient).on('commandStarted', (e) => {
          if (e.commandName === 'findAndModify') storeOps++;
        });
        return new KeyRateLimiter(LIMITS, store, () => fallbacks++);
      }),
    );
    // A window in which an instance fell back to its own limits (the store took over a second to answer a
    // reservation: a busy machine) proves nothing about the shared limit: it is measured again, in a new window.
    const window = LIMITS.burstSeconds * 1000;
    for (let attempt = 1; ; attempt++) {
      [storeOps, fallbacks] = [0, 0];
      // A window of its own: the 600 requests must not straddle two (windows are fixed slices of the store's time;
      // each instance measured it on its own, within a few milliseconds).
      await new Promise((resolve) => setTimeout(resolve, window - (stores[0].clock.now() % window) + 200));
      // 600 requests of one key spread over the three instances, 30 at a time, within one burst window.
      let allowed = 0;
      let next = 0;
      await Promise.all(
        Array.from({ length: 30 }, async () => {
          while (next < 600) {
            const outcome = await instances[next++ % 3].consume(`key_shared_${attempt}`);
            if (outcome.allowed) allowed++;
          }
        }),
      );
      if (fallbacks > 0 && attempt < 3) continue;
      expect(fallbacks, 'instances fell back to their own limits in three windows out of three').toBe(0);
      expect(allowed).toBeLessThanOrEqual(100);
      expect(allowed).toBeGreaterThanOrEqual(90);
      // Each instance reserved blocks, not one point per call (and refused locally once the window was used up).
      expect(storeOps / 600).toBeLessThan(0.15);
      break;
    }
  }, 60_000);

  it('a key far from its limit: the first call of its next window waits for no store command, and each instance admits at most one call over a window that others used up', async () => {
    const { url, dbName } = mongoTestUrl('rate_limit_advance', { monitorCommands: 'true' });
    await (await open(url, dbName)).ensureIndexes(RATE_LIMIT_INDEXES);
    const limits = { burstPoints: 100, burstSeconds: 3, minutePoints: 1_000_000 };
    // Reservations sent in a call's async context while it waited for its verdict.
    const waiting = new AsyncLocalStorage<{ now: boolean }>();
    let inCalls = 0;
    const [a, b] = await Promise.all(
      [0, 1].map(async () => {
        const store = await open(url, dbName);
        (store.mongo!.client as MongoClient).on('commandStarted', (e) => {
          if (e.commandName === 'findAndModify' && waiting.getStore()?.now) inCalls++;
        });
        return new KeyRateLimiter(limits, store);
      }),
    );
    const consume = (limiter: KeyRateLimiter, requests = 1) => {
      const call = { now: true };
      return waiting.run(call, () => Promise.resolve(limiter.consume('key_calm', requests)).finally(() => (call.now = false)));
    };
    const clock = stores[0].clock;
    const windowMs = limits.burstSeconds * 1000;
    const nextWindow = () => new Promise((resolve) => setTimeout(resolve, windowMs - (clock.now() % windowMs) + 100));

    // Window 1: a few calls through each instance (each reserves its first block on the call's path).
    await nextWindow();
    for (const limiter of [a, b, a, b]) expect((await consume(limiter)).allowed).toBe(true);
    expect(inCalls).toBeGreaterThan(0);
    // Window 2: the key was far from its limit, so each instance's first call is admitted at once, its point
    // reserved off its path; the calls after it are served from that reservation.
    await nextWindow();
    inCalls = 0;
    for (const limiter of [a, b, a, b, a, b]) expect((await consume(limiter)).allowed).toBe(true);
    expect(inCalls).toBe(0);
    // Window 3: b uses the whole window up, then a's first call is admitted in advance: one over, and a refuses the next.
    await nextWindow();
    const windowOf = () => Math.floor(clock.now() / windowMs);
    const third = windowOf();
    let admitted = 0;
    while ((await consume(b)).allowed) admitted++;
    expect(admitted).toBe(limits.burstPoints);
    expect((await consume(a)).allowed).toBe(true);
    expect((await consume(a)).allowed).toBe(false);
    expect(windowOf(), 'the machine was too slow to use a window up within it').toBe(third);
    // Window 4: a's last window was used up, so its first call waits for its reservation again.
    await nextWindow();
    inCalls = 0;
    expect((await consume(a)).allowed).toBe(true);
    expect(inCalls).toBeGreaterThan(0);
  }, 60_000);

  it("window counters run on the store's time: hosts 90 s ahead and behind see one window, neither ended nor stretched", async () => {
    const { url, dbName } = mongoTestUrl('window_counter');
    const [onTime, skewed] = [await open(url, dbName), await open(url, dbName)];
    await onTime.ensureIndexes(RATE_LIMIT_INDEXES);
    const counters = [onTime, skewed].map((store) => windowCounter(3, 60, 'owner-writes', store));
    const refusal = async (i: number) =>
      counters[i].consume('own_1').then(
        () => null,
        (res: { msBeforeNext: number }) => res.msBeforeNext,
      );
    for (let i = 0; i < 3; i++) expect(await refusal(0)).toBeNull();
    try {
      for (const skewMs of [90_000, -90_000]) {
        // The host's clock only (Date): timers and the monotonic clock the store's time is carried by keep running.
        vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + skewMs });
        const waitMs = await refusal(1);
        vi.useRealTimers();
        expect(waitMs, `a host ${skewMs / 1000} s off`).toBeGreaterThan(50_000);
        expect(waitMs).toBeLessThanOrEqual(60_000);
      }
    } finally {
      vi.useRealTimers();
    }
    // A refused event is given back, and a success starts the window again (the sign-in's right password).
    await counters[1].reward('own_1', 1);
    await counters[1].delete('own_1');
    expect(await refusal(0)).toBeNull();
  });

  it.each([
    ['closes every connection', 'refuse'],
    ['accepts and never answers', 'hang'],
  ] as const)(
    'a store that %s: calls are judged by the instance own limits, quickly, never an error',
    async (_what, failure) => {
      // The instance started with the store answering (through a relay), which then fails the chosen way.
      const relay = await startRelay(MONGODB_URL!);
      const { dbName } = mongoTestUrl('rate_limit_down');
      const store = await openMongoStore(relay.url.replace(/\/[^/?]*(\?|$)/, `/${dbName}$1`), { dbName });
      relay.fail(failure);
      const limiter = new KeyRateLimiter({ burstPoints: 5, burstSeconds: 10, minutePoints: 1000 }, store);
      const outcomes = [];
      for (let i = 0; i < 7; i++) outcomes.push(await limiter.consume('key_down'));
      expect(outcomes.map((o) => o.allowed)).toEqual([true, true, true, true, true, false, false]);
      expect(outcomes[5].headers['Retry-After']).toMatch(/^\d+$/);
      relay.close();
      await store.close().catch(() => undefined);
    },
    20_000,
  );
});

/** A loopback relay to the MongoDB server that, once told, closes every connection (`refuse`) or stops answering (`hang`). */
async function startRelay(targetUrl: string): Promise<{ url: string; fail: (how: 'refuse' | 'hang') => void; close: () => void }> {
  const [, host, port] = /^mongodb:\/\/([^/:?#]+):(\d+)/.exec(targetUrl)!;
  let failure: 'refuse' | 'hang' | undefined;
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    if (failure === 'refuse') return void client.destroy();
    const upstream = connect(Number(port), host);
    sockets.add(client).add(upstream);
    client.on('data', (d) => failure !== 'hang' && upstream.write(d));
    upstream.on('data', (d) => failure !== 'hang' && client.write(d));
    for (const s of [client, upstream]) s.on('error', () => undefined).on('close', () => (client.destroy(), upstream.destroy()));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: targetUrl.replace(/^mongodb:\/\/[^/?#]+/, `mongodb://127.0.0.1:${(server.address() as { port: number }).port}`),
    fail(how) {
      failure = how;
      if (how === 'refuse') for (const s of sockets) s.destroy();
    },
    close() {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}
