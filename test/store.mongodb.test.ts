// The MongoDB path as set in code: write concern, timeouts, pool and retries (config and adapter), indexes built
// only when missing (TTL where the server has them), one bulk write per last-used flush, and revocations that
// survive a lost answer. The server is MONGODB_URL (FerretDB in the test runs; see test/support/mongo.ts).
import { createHash } from 'node:crypto';
import type { CommandStartedEvent, MongoClient } from 'mongodb';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../runtime/config.ts';
import { STORE_INDEXES } from '../runtime/indexes.ts';
import { WeakWriteConcernError, writeConcernFor } from '../runtime/store/mongo-options.ts';
import { openMongoStore } from '../runtime/store/mongodb.ts';
import type { Doc, Store } from '../runtime/store/port.ts';
import { MONGODB_URL, dropTestDatabases, mongoTestUrl } from './support/mongo.ts';
import { type TestService, createOwner, createServer, startTestService } from './support/service.ts';
import { type WireProxy, startWireProxy } from './support/wire-proxy.ts';

const MASTER_KEY = 'ab'.repeat(32);
const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});
afterAll(() => dropTestDatabases());

/** Every command the store's client sends from now on (the URL must ask for monitorCommands). */
function recordCommands(store: Store): CommandStartedEvent[] {
  const seen: CommandStartedEvent[] = [];
  (store.mongo!.client as MongoClient).on('commandStarted', (event) => seen.push(event));
  return seen;
}

async function openStore(options: Parameters<typeof openMongoStore>[1] = {}, url = mongoTestUrl('store_mongo', { monitorCommands: 'true' }).url) {
  const store = await openMongoStore(url, options);
  closers.push(() => store.close());
  return store;
}

describe('MongoDB configuration', () => {
  const base = { DATA_DIR: '/tmp/unused', MONGODB_URL: 'mongodb://127.0.0.1:27017/app' };

  it('refuses a URL asking for weaker writes, saying why and how to accept the risk', () => {
    for (const [query, says] of [
      ['?w=1', 'w=1'],
      ['?w=0&retryWrites=true', 'w=0'],
      ['?journal=false', 'journal=false'],
      ['?replicaSet=rs0&W=1&j=false', 'w=1 and j=false'],
    ]) {
      expect(() => loadConfig({ ...base, MONGODB_URL: base.MONGODB_URL + query })).toThrow(ConfigError);
      expect(() => loadConfig({ ...base, MONGODB_URL: base.MONGODB_URL + query })).toThrow(
        new RegExp(`MONGODB_URL asks for ${says}: .*rolled back by a failover.*MONGODB_ALLOW_WEAK_WRITES=true`),
      );
    }
    const accepted = loadConfig({ ...base, MONGODB_URL: `${base.MONGODB_URL}?w=1&journal=false`, MONGODB_ALLOW_WEAK_WRITES: 'true' });
    expect(accepted.mongo.allowWeakWrites).toBe(true);
    expect(loadConfig(base).mongo).toEqual({ poolSize: 20, deadlineMs: 3000, socketTimeoutMs: 30_000, allowWeakWrites: false });
  });

  it('writes with w=majority and journal unless the URL names a w that is not weaker', () => {
    expect(writeConcernFor('mongodb://h/db', false)).toEqual({ w: 'majority', journal: true });
    expect(writeConcernFor('mongodb://h/db?w=majority&journal=true', false)).toEqual({ w: 'majority', journal: true });
    expect(writeConcernFor('mongodb://h1,h2,h3/db?replicaSet=rs&w=2', false)).toEqual({ w: 2, journal: true });
    expect(writeConcernFor('mongodb://h/db?w=twoDataCenters', false)).toEqual({ w: 'twoDataCenters', journal: true });
    expect(writeConcernFor('mongodb://h/db?w=1&journal=false', true)).toEqual({ w: 1, journal: false });
    expect(() => writeConcernFor('mongodb://h/db?w=1', false)).toThrow(WeakWriteConcernError);
  });

  it('validates pool size and timeouts with the other variables, every problem at once', () => {
    const problems = () =>
      loadConfig({ ...base, MONGODB_POOL_SIZE: '0', MONGODB_DEADLINE_MS: 'soon', MONGODB_SOCKET_TIMEOUT_MS: '1000', MONGODB_MAX_TIME_MS: '9000' });
    expect(problems).toThrow(/MONGODB_POOL_SIZE must be an integer from 1 to 1000 \(got "0"\)/);
    expect(problems).toThrow(/MONGODB_DEADLINE_MS must be an integer/);
    expect(problems).toThrow(/MONGODB_DEADLINE_MS must be smaller than MONGODB_SOCKET_TIMEOUT_MS/);
    // Settings an older version read are named, with what replaces them.
    expect(problems).toThrow(/MONGODB_MAX_TIME_MS is replaced by MONGODB_DEADLINE_MS/);
    expect(() => loadConfig({ ...base, MONGODB_ALLOW_WEAK_WRITES: 'maybe' })).toThrow(/MONGODB_ALLOW_WEAK_WRITES must be true or false/);
  });
});

describe.runIf(MONGODB_URL)('MongoDB adapter settings (MONGODB_URL)', () => {
  it('writes with w=majority, j=true and a wtimeout, reads from the primary with a maxTimeMS: the deadline, whatever the URL says', async () => {
    const { url } = mongoTestUrl('store_mongo', {
      monitorCommands: 'true',
      w: 'majority',
      journal: 'true',
      maxPoolSize: '3',
      retryWrites: 'false',
      readPreference: 'secondaryPreferred',
    });
    const store = await openStore({ deadlineMs: 4321, poolSize: 7, socketTimeoutMs: 45_000 }, url);
    const options = (store.mongo!.client as MongoClient).options;
    expect(options).toMatchObject({
      maxPoolSize: 7,
      socketTimeoutMS: 45_000,
      serverSelectionTimeoutMS: 4321,
      waitQueueTimeoutMS: 4321,
      connectTimeoutMS: 4321,
      retryReads: true,
      retryWrites: true,
    });
    expect(options.readPreference.mode).toBe('primary');

    const commands = recordCommands(store);
    const things = store.collection<Doc>('things');
    await things.insertOne({ _id: 'a', n: 1 });
    await things.insertMany([{ _id: 'b' }, { _id: 'c' }]);
    await things.updateOne({ _id: 'a' }, { $inc: { n: 1 } });
    await things.updateMany({}, { $set: { seen: true } });
    await things.findOneAndUpdate({ _id: 'a' }, { $inc: { n: 1 } });
    await things.bulkUpdate([{ filter: { _id: 'b' }, update: { $set: { n: 2 } } }]);
    await things.deleteOne({ _id: 'c' });
    await things.deleteMany({ n: 100 });
    await things.find({ n: { $gte: 0 } });
    await things.findOne({ _id: 'a' });
    await things.countDocuments({});

    const writes = commands.filter((c) => ['insert', 'update', 'findAndModify', 'delete'].includes(c.commandName));
    expect(writes.map((c) => c.commandName)).toEqual(['insert', 'insert', 'update', 'update', 'findAndModify', 'update', 'delete', 'delete']);
    for (const write of writes) expect(write.command.writeConcern).toEqual({ w: 'majority', j: true, wtimeout: 4321 });
    const reads = commands.filter((c) => ['find', 'aggregate'].includes(c.commandName));
    expect(reads).toHaveLength(3);
    for (const read of reads) expect(read.command.maxTimeMS).toBe(4321);
  });

  it('refuses a URL asking for w=1 unless weak writes are allowed, and then writes as the URL says', async () => {
    const { url } = mongoTestUrl('store_mongo', { monitorCommands: 'true', w: '1' });
    await expect(openMongoStore(url)).rejects.toThrow(WeakWriteConcernError);
    const store = await openStore({ allowWeakWrites: true }, url);
    const commands = recordCommands(store);
    await store.collection<Doc>('things').insertOne({ _id: 'a' });
    expect(commands.find((c) => c.commandName === 'insert')!.command.writeConcern).toEqual({ w: 1, j: true, wtimeout: 3000 });
  });

  it("builds the service's indexes once: a second instance only lists them; TTL indexes where the server has them", async () => {
    const { url } = mongoTestUrl('store_mongo', { monitorCommands: 'true' });
    const first = await openStore({}, url);
    const built = recordCommands(first);
    await first.ensureIndexes(STORE_INDEXES);
    const collections = new Set(STORE_INDEXES.map((spec) => spec.collection)).size;
    expect(built.filter((c) => c.commandName === 'listIndexes')).toHaveLength(collections);
    // Every index but the embedded store's own.
    expect(built.filter((c) => c.commandName === 'createIndexes')).toHaveLength(STORE_INDEXES.filter((spec) => spec.mongodb !== false).length);

    const second = await openStore({}, url); // another instance starting
    const listed = recordCommands(second);
    await second.ensureIndexes(STORE_INDEXES);
    expect(listed.map((c) => c.commandName).sort()).toEqual(Array(collections).fill('listIndexes'));

    const client = second.mongo!.client as MongoClient;
    const sessionIndexes = await client.db(second.mongo!.dbName).collection('sessions').listIndexes().toArray();
    const expiry = sessionIndexes.find((index) => index.name === 'expires_at_1')!;
    if (second.mongo!.server === 'mongodb') expect(expiry.expireAfterSeconds).toBe(0);
    else expect(expiry.expireAfterSeconds).toBeUndefined(); // FerretDB: no TTL indexes; the sweeps delete
  });

  it('makes a plain index that should expire a TTL index (where the server has them), and leaves it alone after', async () => {
    const { url } = mongoTestUrl('store_mongo', { monitorCommands: 'true' });
    const store = await openStore({}, url);
    const db = (store.mongo!.client as MongoClient).db(store.mongo!.dbName);
    await db.collection('oauth_codes').createIndex({ expires_at: 1 }); // as an older version built it
    const spec = STORE_INDEXES.filter((s) => s.collection === 'oauth_codes');
    await store.ensureIndexes(spec);
    const [, index] = await db.collection('oauth_codes').listIndexes().toArray();
    expect(index).toMatchObject({ key: { expires_at: 1 } });
    expect(index!.expireAfterSeconds).toBe(store.mongo!.server === 'mongodb' ? 0 : undefined);
    const again = recordCommands(store);
    await store.ensureIndexes(spec);
    expect(again.map((c) => c.commandName)).toEqual(['listIndexes']);
  });

  it('says which unique index refused an index build, and names its fields', async () => {
    const store = await openStore();
    await store.collection<Doc>('owners').insertMany([
      { _id: 'o1', email: 'same@example.test' },
      { _id: 'o2', email: 'same@example.test' },
    ]);
    await expect(store.ensureIndexes([{ collection: 'owners', fields: ['email'], unique: true }])).rejects.toMatchObject({
      name: 'DuplicateKeyError',
      fields: ['email'],
    });
  });
});

describe.runIf(MONGODB_URL)('the service on MONGODB_URL', () => {
  /** The service through a relay that can lose answers (closed after the service, which flushes through it). */
  async function relay(): Promise<WireProxy> {
    const proxy = await startWireProxy(mongoTestUrl('service_mongo').url);
    closers.push(() => proxy.close());
    return proxy;
  }

  async function start(url: string): Promise<TestService> {
    const svc = await startTestService({ MONGODB_URL: url, MASTER_KEY, KEY_CACHE_MS: '0', STARTING_CREDITS: '10' });
    closers.push(() => svc.close());
    return svc;
  }
  const listTools = (svc: TestService, serverId: string, token: string) =>
    fetch(`${svc.url}/mcp/${serverId}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: '{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
    });

  it('writes the last-used times of many keys in one bulk write per flush, and each key at most once a minute', async () => {
    const svc = await start(mongoTestUrl('service_mongo', { monitorCommands: 'true' }).url);
    const owner = await createOwner(svc);
    const { serverId, key } = await createServer(svc, owner, { tools: [] });
    const keys = [key];
    for (let i = 0; i < 4; i++)
      keys.push((await svc.call('POST', `/api/servers/${serverId}/api-keys`, { token: owner.token, body: { name: `k${i}` } })).body.key);

    const commands = recordCommands(svc.store);
    const answers = await Promise.all(keys.map((k) => listTools(svc, serverId, k)));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
    await svc.flush();

    const writes = commands.filter((c) => c.commandName === 'update' && c.command.update === 'api_keys');
    // One command per flush (the 2 s timer may have flushed part of them just before).
    expect(writes.length).toBeLessThanOrEqual(2);
    expect(writes.flatMap((c) => c.command.updates as unknown[])).toHaveLength(5);
    const listed = await svc.call('GET', `/api/servers/${serverId}/api-keys`, { token: owner.token });
    expect(listed.body.api_keys.map((k: { last_used_at: string | null }) => k.last_used_at !== null)).toEqual([true, true, true, true, true]);
    // Used again and again within the minute: nothing more to write.
    for (let round = 0; round < 3; round++) {
      await Promise.all(keys.map((k) => listTools(svc, serverId, k)));
      await svc.flush();
    }
    expect(commands.filter((c) => c.commandName === 'update' && c.command.update === 'api_keys').flatMap((c) => c.command.updates as unknown[])).toHaveLength(
      5,
    );
  });

  it('revokes all keys of a server although the answer to the revocation was lost (retried, counted once)', async () => {
    const proxy = await relay();
    const svc = await start(proxy.url);
    const owner = await createOwner(svc);
    const { serverId, key } = await createServer(svc, owner, { tools: [] });
    const second = (await svc.call('POST', `/api/servers/${serverId}/api-keys`, { token: owner.token, body: { name: 'second' } })).body.key;
    const global = (await svc.call('POST', '/api/api-keys', { token: owner.token, body: { name: 'global' } })).body;
    await svc.call('POST', `/api/api-keys/${global.id}/servers/${serverId}`, { token: owner.token });

    const lost = proxy.loseAnswerOf((c) => c.update === 'api_keys' && JSON.stringify(c.updates).includes('revoked_at'));
    const res = await svc.call('POST', `/api/servers/${serverId}/api-keys/revoke-all`, { token: owner.token });
    expect(await lost).toMatchObject({ update: 'api_keys' }); // applied, answer lost
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ revoked: 2, unlinked: 1 });
    for (const k of [key, second]) expect((await listTools(svc, serverId, k)).status).toBe(401);
    expect((await listTools(svc, serverId, global.key)).status).toBe(403);
  });

  it('disconnects an OAuth app although the answer to deleting its tokens was lost', async () => {
    const proxy = await relay();
    const svc = await start(proxy.url);
    const owner = await createOwner(svc);
    const { serverId } = await createServer(svc, owner, { tools: [] });
    const redirect = 'http://127.0.0.1:9/callback';
    const client = await (
      await fetch(`${svc.url}/oauth/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ client_name: 'Lost answers', redirect_uris: [redirect], token_endpoint_auth_method: 'none' }),
      })
    ).json();
    const verifier = 'v'.repeat(50);
    const approval = await svc.call('POST', '/api/oauth/authorize', {
      token: owner.token,
      body: {
        response_type: 'code',
        client_id: client.client_id,
        redirect_uri: redirect,
        code_challenge: createHash('sha256').update(verifier).digest('base64url'),
        code_challenge_method: 'S256',
        resource: `${svc.url}/mcp/${serverId}`,
        state: 's',
        decision: 'approve',
      },
    });
    const code = new URL(approval.body.redirect_to).searchParams.get('code')!;
    const tokens = await (
      await fetch(`${svc.url}/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'authorization_code', client_id: client.client_id, code, redirect_uri: redirect, code_verifier: verifier }),
      })
    ).json();
    expect((await listTools(svc, serverId, tokens.access_token)).status).toBe(200);
    const [grant] = (await svc.call('GET', '/api/oauth/grants', { token: owner.token })).body.grants;

    const lost = proxy.loseAnswerOf((c) => c.delete === 'oauth_access_tokens');
    const res = await svc.call('DELETE', `/api/oauth/grants/${grant.id}`, { token: owner.token });
    await lost;
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ revoked_reason: 'revoked by the owner' });
    expect((await listTools(svc, serverId, tokens.access_token)).status).toBe(401);
    expect(await svc.store.collection('oauth_access_tokens').countDocuments({ grant_id: grant.id })).toBe(0);
  });
});
