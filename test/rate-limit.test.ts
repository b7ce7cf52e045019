// Per-key rate limits shared by several instances (three KeyRateLimiters on one MongoDB, as three processes
// would have): the limit holds across them within 10% and never above, at a small fraction of a store operation
// per call; and when the store is down or hangs, each instance falls back to its own limits instead of failing.
import { createServer, type Server, type Socket } from 'node:net';
import { MongoClient } from 'mongodb';
import { afterAll, describe, expect, it } from 'vitest';
import { KeyRateLimiter, RATE_LIMIT_INDEXES } from '../runtime/access/rate-limit.ts';
import { openMongoStore } from '../runtime/store/mongodb.ts';
import { MONGODB_URL, dropTestDatabases, mongoTestUrl } from './support/mongo.ts';

const LIMITS = { burstPoints: 100, burstSeconds: 10, minutePoints: 1000 };

describe.runIf(Boolean(MONGODB_URL))('rate limits shared through MongoDB', () => {
  const clients: MongoClient[] = [];
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await dropTestDatabases();
  });

  it('three instances together admit the limit of a window within 10%, never more, with few store operations', async () => {
    const { url, dbName } = mongoTestUrl('rate_limit');
    const store = await openMongoStore(url, { dbName });
    await store.ensureIndexes(RATE_LIMIT_INDEXES);
    await store.close();
    let storeOps = 0;
    const instances = await Promise.all(
      Array.from({ length: 3 }, async () => {
        const client = await new MongoClient(url, { monitorCommands: true }).connect();
        client.on('commandStarted', (e) => {
          if (e.commandName === 'findAndModify') storeOps++;
        });
        clients.push(client);
        return new KeyRateLimiter(LIMITS, { client, dbName });
      }),
    );
    // 600 requests of one key spread over the three instances, 30 at a time, within one burst window.
    let allowed = 0;
    let next = 0;
    await Promise.all(
      Array.from({ length: 30 }, async () => {
        while (next < 600) {
          const outcome = await instances[next++ % 3].consume('key_shared');
          if (outcome.allowed) allowed++;
        }
      }),
    );
    expect(allowed).toBeLessThanOrEqual(100);
    expect(allowed).toBeGreaterThanOrEqual(90);
    // Each instance reserved blocks, not one point per call (and refused locally once the window was used up).
    expect(storeOps / 600).toBeLessThan(0.15);
  });
});

describe('rate limits when the shared store is down or hangs', () => {
  const servers: Server[] = [];
  const sockets: Socket[] = [];
  afterAll(async () => {
    sockets.forEach((s) => s.destroy());
    await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  });

  /** A loopback port where nothing answers: `refuse` closes every connection, otherwise they hang open. */
  async function deadStore(refuse: boolean): Promise<string> {
    const server = createServer((socket) => (refuse ? socket.destroy() : sockets.push(socket)));
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return `mongodb://127.0.0.1:${(server.address() as { port: number }).port}/`;
  }

  it.each([
    ['closes every connection', true],
    ['accepts and never answers', false],
  ])('a store that %s: calls are judged by the instance own limits, quickly, never an error', async (_what, refuse) => {
    // The driver would wait a minute for the server: the calls must not (the test's own timeout is 20 s).
    const client = new MongoClient(await deadStore(refuse), { serverSelectionTimeoutMS: 60_000, directConnection: true });
    const limiter = new KeyRateLimiter({ burstPoints: 5, burstSeconds: 10, minutePoints: 1000 }, { client, dbName: 'down' });
    const outcomes = [];
    for (let i = 0; i < 7; i++) outcomes.push(await limiter.consume('key_down'));
    expect(outcomes.map((o) => o.allowed)).toEqual([true, true, true, true, true, false, false]);
    expect(outcomes[5].headers['Retry-After']).toMatch(/^\d+$/);
    await client.close();
  });
});
