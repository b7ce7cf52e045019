// Access over real HTTP: random tokens, the key lifecycle and the authorization table, rate limits, tenant
// isolation. Credits are in billing.test.ts, custom tools and stored accounts in custom-tools.test.ts.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { randomId, randomToken, timeOrderedId } from '../runtime/secrets.ts';
import { type Owner, type TestService, createOwner, createServer, startTestService } from './support/service.ts';
import { rpc } from './support/tool-calls.ts';
import { DEMO_SPECS as SPECS, useDemoUpstream } from './support/upstream.ts';

const demo = useDemoUpstream();
const demoAccount = demo.account;
const mcp = (svc: TestService, serverId: string, key: string | undefined, method?: string) => rpc(svc.url, serverId, key, method);

describe('random tokens (keys, ids)', () => {
  it('are the prefix and 43 base62 characters for 32 bytes, every character equally likely', () => {
    const counts = new Map<string, number>();
    for (let i = 0; i < 2000; i++) {
      const token = randomToken('mcpk_');
      expect(token).toMatch(/^mcpk_[0-9A-Za-z]{43}$/);
      for (const c of token.slice(5)) counts.set(c, (counts.get(c) ?? 0) + 1);
    }
    expect(counts.size).toBe(62);
    // Chi-square over 62 characters (61 degrees of freedom): a fair source stays far below 150; taking
    // bytes modulo 62 without skipping the top 8 values would score about 560.
    const expected = (2000 * 43) / 62;
    const chiSquare = [...counts.values()].reduce((sum, n) => sum + (n - expected) ** 2 / expected, 0);
    expect(chiSquare).toBeLessThan(150);
    expect(randomId('call_')).toMatch(/^call_[0-9A-Za-z]{17}$/);
  });

  it('ids come from a pool of random bytes that never hands out the same bytes twice, across its refills', () => {
    const ids = Array.from({ length: 5000 }, () => randomId('call_')); // 125 KB of the pool: 30 refills
    expect(new Set(ids).size).toBe(ids.length);
    const counts = new Map<string, number>();
    for (const id of ids) for (const c of id.slice(5)) counts.set(c, (counts.get(c) ?? 0) + 1);
    const expected = (5000 * 17) / 62;
    expect([...counts.values()].reduce((sum, n) => sum + (n - expected) ** 2 / expected, 0)).toBeLessThan(150);
  });
});

describe('time-ordered ids', () => {
  it('sort in the order they were made, across ms, years and the ids of one ms, and stay unique', () => {
    const times = [0, 1, 61, 62, 1_700_000_000_000, Date.now(), Date.UTC(2100, 0, 1), 62 ** 8 - 1];
    const ids = times.map((time) => timeOrderedId('call_', time));
    expect([...ids].sort()).toEqual(ids);
    for (const id of ids) expect(id).toMatch(/^call_[0-9A-Za-z]{21}$/);
    const sameMs = Array.from({ length: 2000 }, () => timeOrderedId('call_', 1_800_000_000_000));
    expect(new Set(sameMs).size).toBe(sameMs.length);
    expect(new Set(sameMs.map((id) => id.slice(0, 13))).size).toBe(1);
    expect(timeOrderedId('call_', 1_800_000_000_001) > sameMs.sort().at(-1)!).toBe(true);
  });
});

describe('API keys and the authorization table', () => {
  let svc: TestService;
  let owner: Owner;
  let a: { serverId: string; key: string };
  let b: { serverId: string; key: string };

  beforeAll(async () => {
    svc = await startTestService(SPECS);
    owner = await createOwner(svc, 1000);
    a = await createServer(svc, owner, { accounts: demoAccount(), tools: [{ base_tool: 'demo_ping', account: 'demo' }] });
    b = await createServer(svc, owner, { accounts: demoAccount(), tools: [{ base_tool: 'demo_ping', account: 'demo' }] });
  });
  afterAll(() => svc?.close());

  it('a new server key works at once on its server and gets 401 on another server', async () => {
    expect((await mcp(svc, a.serverId, a.key)).status).toBe(200);
    const other = await mcp(svc, b.serverId, a.key);
    expect(other.status).toBe(401);
    expect(other.body).toEqual({ error: 'Unauthorized', message: 'Invalid or expired API key' });
    // Points OAuth clients at the metadata of the server they asked for (RFC 9728); no error code for a key.
    expect(other.headers.get('www-authenticate')).toBe(
      `Bearer resource_metadata="${svc.url}/.well-known/oauth-protected-resource/mcp/${b.serverId}", scope="mcp:tools"`,
    );
  });

  it('missing, malformed and unknown keys get 401', async () => {
    for (const key of [undefined, 'mcpk_', 'not-a-key', `mcpk_${'x'.repeat(43)}`]) expect((await mcp(svc, a.serverId, key)).status).toBe(401);
  });

  it('a global key needs no body: fetch sends a bodiless POST with Content-Length: 0', async () => {
    const res = await fetch(`${svc.url}/api/api-keys`, { method: 'POST', headers: { authorization: `Bearer ${owner.token}` } });
    expect(res.status).toBe(201);
    expect(await res.json()).toMatchObject({ kind: 'global', key: expect.stringMatching(/^mcpk_/) });
  });

  it('a global key gets 403 until linked, works once linked, and 403 again after unlink', async () => {
    const created = await svc.call('POST', '/api/api-keys', { token: owner.token, body: { name: 'ci' } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name: 'ci', kind: 'global', server_id: null, key: expect.stringMatching(/^mcpk_[0-9A-Za-z]{43}$/) });
    const key = created.body.key as string;
    const denied = await mcp(svc, a.serverId, key);
    expect(denied.status).toBe(403);
    expect(denied.body).toEqual({ error: 'Forbidden', message: 'Access denied to this resource' });
    const linked = await svc.call('POST', `/api/api-keys/${created.body.id}/servers/${a.serverId}`, { token: owner.token });
    expect(linked.body).toEqual({ id: created.body.id, linked_server_ids: [a.serverId] });
    expect((await mcp(svc, a.serverId, key)).status).toBe(200);
    expect((await mcp(svc, b.serverId, key)).status).toBe(403);
    const unlinked = await svc.call('DELETE', `/api/api-keys/${created.body.id}/servers/${a.serverId}`, { token: owner.token });
    expect(unlinked.body).toEqual({ id: created.body.id, linked_server_ids: [] });
    expect((await mcp(svc, a.serverId, key)).status).toBe(403);
  });

  it('revoke and revoke-all take effect at once; revoke-all unlinks global keys', async () => {
    const k1 = await svc.call('POST', `/api/servers/${a.serverId}/api-keys`, { token: owner.token, body: { name: 'one' } });
    const k2 = await svc.call('POST', `/api/servers/${a.serverId}/api-keys`, { token: owner.token, body: { name: 'two' } });
    const g = await svc.call('POST', '/api/api-keys', { token: owner.token, body: { name: 'g' } });
    await svc.call('POST', `/api/api-keys/${g.body.id}/servers/${a.serverId}`, { token: owner.token });
    await svc.call('POST', `/api/api-keys/${g.body.id}/servers/${b.serverId}`, { token: owner.token });
    for (const k of [k1, k2, g]) expect((await mcp(svc, a.serverId, k.body.key)).status).toBe(200);

    const revoked = await svc.call('DELETE', `/api/servers/${a.serverId}/api-keys/${k1.body.id}`, { token: owner.token });
    expect(revoked.body).toEqual({ id: k1.body.id, revoked_at: expect.any(String) });
    expect((await mcp(svc, a.serverId, k1.body.key)).status).toBe(401);

    const all = await svc.call('POST', `/api/servers/${a.serverId}/api-keys/revoke-all`, { token: owner.token });
    expect(all.body).toEqual({ revoked: 2, unlinked: 1, oauth_grants_revoked: 0 }); // k2 and the setup key; g unlinked
    expect((await mcp(svc, a.serverId, k2.body.key)).status).toBe(401);
    expect((await mcp(svc, a.serverId, a.key)).status).toBe(401);
    expect((await mcp(svc, a.serverId, g.body.key)).status).toBe(403);
    expect((await mcp(svc, b.serverId, g.body.key)).status).toBe(200);
  });

  it('an inactive server gets 403, and again 200 once active', async () => {
    const key = (await svc.call('POST', `/api/servers/${b.serverId}/api-keys`, { token: owner.token, body: { name: 'x' } })).body.key;
    await svc.call('PATCH', `/api/servers/${b.serverId}`, { token: owner.token, body: { active: false } });
    expect((await mcp(svc, b.serverId, key)).status).toBe(403);
    await svc.call('PATCH', `/api/servers/${b.serverId}`, { token: owner.token, body: { active: true } });
    expect((await mcp(svc, b.serverId, key)).status).toBe(200);
  });

  it('lists keys without their value, with prefix and last use', async () => {
    const list = await svc.call('GET', `/api/servers/${b.serverId}/api-keys`, { token: owner.token });
    const item = list.body.api_keys.find((k: { name: string }) => k.name === 'x');
    expect(Object.keys(item).sort()).toEqual([
      'access',
      'budget_spent',
      'created_at',
      'credit_limit',
      'expires_at',
      'expires_in_days',
      'id',
      'kind',
      'last_used_at',
      'name',
      'prefix',
      'revoked_at',
      'server_id',
      'tools',
    ]);
    expect(item).toMatchObject({ tools: null, access: 'all', expires_at: null, credit_limit: null, budget_spent: null });
    await svc.flush();
    const again = await svc.call('GET', `/api/servers/${b.serverId}/api-keys`, { token: owner.token });
    expect(again.body.api_keys.find((k: { name: string }) => k.name === 'x').last_used_at).not.toBeNull();
    const globals = await svc.call('GET', '/api/api-keys', { token: owner.token });
    expect(globals.body.api_keys.every((k: Record<string, unknown>) => !('key' in k) && Array.isArray(k.linked_server_ids))).toBe(true);
    expect(JSON.stringify([list.body, again.body, globals.body])).not.toMatch(/mcpk_[0-9A-Za-z]{20,}/);
  });
});

describe('rate limits', () => {
  let svc: TestService;
  afterEach(() => svc?.close());

  it('request 101 within the burst window gets 429 with headers, and passes again after the window', async () => {
    svc = await startTestService({ ...SPECS, RATE_LIMIT_BURST_SECONDS: '2' });
    const owner = await createOwner(svc, 10);
    const { serverId, key } = await createServer(svc, owner, { accounts: demoAccount(), tools: [] });
    const statuses = [];
    for (let i = 0; i < 100; i++) statuses.push((await mcp(svc, serverId, key, 'ping')).status);
    expect(statuses.every((s) => s === 200)).toBe(true);
    const refused = await mcp(svc, serverId, key, 'ping');
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({ error: 'Rate Limit Exceeded', message: 'Too many requests. Please try again later.' });
    expect(refused.headers.get('retry-after')).toMatch(/^[12]$/);
    expect(refused.headers.get('ratelimit-limit')).toBe('100');
    expect(refused.headers.get('ratelimit-remaining')).toBe('0');
    await new Promise((r) => setTimeout(r, Number(refused.headers.get('retry-after')) * 1000 + 100));
    const again = await mcp(svc, serverId, key, 'ping');
    expect(again.status).toBe(200);
    expect(again.headers.get('ratelimit-remaining')).toBe('99');
  });

  it('every request of a JSON-RPC batch counts against the limit', async () => {
    svc = await startTestService({ ...SPECS, RATE_LIMIT_BURST: '5', RATE_LIMIT_BURST_SECONDS: '5' });
    const owner = await createOwner(svc, 10);
    const { serverId, key } = await createServer(svc, owner, { accounts: demoAccount(), tools: [] });
    const batch = (n: number) =>
      fetch(`${svc.url}/mcp/${serverId}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify(Array.from({ length: n }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'ping' }))),
      });
    const four = await batch(4);
    expect(four.status).toBe(200);
    expect(four.headers.get('ratelimit-remaining')).toBe('1');
    const refused = await batch(2);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toMatch(/^[1-5]$/);
  });

  it('the per-minute limit is enforced too', async () => {
    svc = await startTestService({ ...SPECS, RATE_LIMIT_BURST: '5', RATE_LIMIT_BURST_SECONDS: '1', RATE_LIMIT_PER_MINUTE: '7' });
    const owner = await createOwner(svc, 10);
    const { serverId, key } = await createServer(svc, owner, { accounts: demoAccount(), tools: [] });
    for (let i = 0; i < 5; i++) expect((await mcp(svc, serverId, key, 'ping')).status).toBe(200);
    expect((await mcp(svc, serverId, key, 'ping')).status).toBe(429);
    await new Promise((r) => setTimeout(r, 1100));
    expect((await mcp(svc, serverId, key, 'ping')).status).toBe(200);
    expect((await mcp(svc, serverId, key, 'ping')).status).toBe(200);
    const minute = await mcp(svc, serverId, key, 'ping');
    expect(minute.status).toBe(429);
    expect(minute.headers.get('ratelimit-limit')).toBe('7');
    expect(Number(minute.headers.get('retry-after'))).toBeGreaterThan(50);
  });
});

describe('tenant isolation', () => {
  let svc: TestService;
  let alice: Owner;
  let bob: Owner;
  let aliceServer: { serverId: string; key: string; accountIds: Record<string, string> };
  let bobServer: { serverId: string; key: string };

  beforeAll(async () => {
    svc = await startTestService(SPECS);
    alice = await createOwner(svc, 100);
    bob = await createOwner(svc, 100);
    aliceServer = await createServer(svc, alice, { accounts: demoAccount(), tools: [{ base_tool: 'demo_ping', account: 'demo' }] });
    bobServer = await createServer(svc, bob, { accounts: demoAccount(), tools: [] });
  });
  afterAll(() => svc?.close());

  it('every management endpoint answers 404 for another owner’s objects', async () => {
    const s = aliceServer.serverId;
    const acct = aliceServer.accountIds.demo;
    const tools = await svc.call('GET', `/api/servers/${s}/tools`, { token: alice.token });
    const toolId = tools.body.tools[0].id;
    const keys = await svc.call('GET', `/api/servers/${s}/api-keys`, { token: alice.token });
    const keyId = keys.body.api_keys[0].id;
    const bobGlobal = await svc.call('POST', '/api/api-keys', { token: bob.token, body: { name: 'b' } });
    const attempts: Array<[string, string, unknown?]> = [
      ['GET', `/api/servers/${s}`],
      ['PATCH', `/api/servers/${s}`, { name: 'mine' }],
      ['DELETE', `/api/servers/${s}`],
      ['GET', `/api/servers/${s}/api-keys`],
      ['POST', `/api/servers/${s}/api-keys`, { name: 'steal' }],
      ['DELETE', `/api/servers/${s}/api-keys/${keyId}`],
      ['POST', `/api/servers/${s}/api-keys/revoke-all`],
      ['POST', `/api/api-keys/${bobGlobal.body.id}/servers/${s}`],
      ['POST', `/api/api-keys/${keyId}/servers/${bobServer.serverId}`],
      ['DELETE', `/api/api-keys/${keyId}/servers/${s}`],
      ['GET', `/api/accounts/${acct}`],
      ['PATCH', `/api/accounts/${acct}`, { name: 'x' }],
      ['DELETE', `/api/accounts/${acct}`],
      ['POST', `/api/accounts/${acct}/verify`],
      ['GET', `/api/servers/${s}/tools`],
      ['POST', `/api/servers/${s}/tools`, { base_tool: 'demo_ping' }],
      ['GET', `/api/servers/${s}/tools/${toolId}`],
      ['PATCH', `/api/servers/${s}/tools/${toolId}`, { description: 'x' }],
      ['DELETE', `/api/servers/${s}/tools/${toolId}`],
    ];
    for (const [method, p, body] of attempts) {
      const res = await svc.call(method, p, { token: bob.token, body });
      expect([method, p, res.status]).toEqual([method, p, 404]);
    }
    const lists = await Promise.all(['/api/servers', '/api/accounts', '/api/api-keys'].map((p) => svc.call('GET', p, { token: bob.token })));
    expect(JSON.stringify(lists.map((l) => l.body))).not.toContain(s);
    expect(JSON.stringify(lists.map((l) => l.body))).not.toContain(acct);
    // Alice's things are untouched.
    expect((await svc.call('GET', `/api/servers/${s}/tools`, { token: alice.token })).body.tools).toHaveLength(1);
    expect((await mcp(svc, s, aliceServer.key)).status).toBe(200);
  });

  it('a key of one owner never opens another owner’s server over MCP', async () => {
    expect((await mcp(svc, aliceServer.serverId, bobServer.key)).status).toBe(401);
    const g = await svc.call('POST', '/api/api-keys', { token: bob.token, body: { name: 'g' } });
    await svc.call('POST', `/api/api-keys/${g.body.id}/servers/${bobServer.serverId}`, { token: bob.token });
    expect((await mcp(svc, aliceServer.serverId, g.body.key)).status).toBe(403);
  });

  it('a tool cannot be bound to another owner’s account', async () => {
    const res = await svc.call('POST', `/api/servers/${bobServer.serverId}/tools`, {
      token: bob.token,
      body: { base_tool: 'demo_ping', account_id: aliceServer.accountIds.demo },
    });
    expect(res.status).toBe(400);
    expect(res.body.message).toBe(`"account_id": no account ${aliceServer.accountIds.demo} of yours exists`);
  });
});
