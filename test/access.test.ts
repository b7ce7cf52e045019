// Access and accounting over real HTTP: key lifecycle, authorization table, rate limits, credits under
// concurrency, refunds, usage, tenant isolation, stored accounts, custom tools, restart persistence.
import { readFile, readdir } from 'node:fs/promises';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { randomId, randomToken } from '../runtime/secrets.ts';
import { connectV1 } from './support/mcp-clients.ts';
import { type Owner, type TestService, createOwner, createServer, startTestService } from './support/service.ts';
import { type DemoUpstream, startDemoUpstream } from './support/upstream.ts';

const SPECS = { TOOL_SPECS_DIR: path.resolve('test/fixtures/specs') };
let upstream: DemoUpstream;

beforeAll(async () => {
  upstream = await startDemoUpstream();
});
afterAll(async () => {
  await upstream?.close();
});

const demoAccount = () => ({ demo: { kind: 'demo', name: 'Demo', base_url: upstream.url, token: upstream.token } });

/** tools/call over bare JSON-RPC; returns the HTTP status and the JSON body. */
async function mcp(svc: TestService, serverId: string, key: string | undefined, method = 'tools/list', params?: Record<string, unknown>) {
  const res = await fetch(`${svc.url}/mcp/${serverId}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return { status: res.status, body: (await res.json()) as any, headers: res.headers };
}

const echo = (svc: TestService, serverId: string, key: string, args: Record<string, unknown>) =>
  mcp(svc, serverId, key, 'tools/call', { name: 'demo_echo', arguments: args });

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
    expect(Object.keys(item).sort()).toEqual(['created_at', 'id', 'kind', 'last_used_at', 'name', 'prefix', 'revoked_at', 'server_id']);
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

describe('credits', () => {
  let svc: TestService;
  let owner: Owner;
  let server: { serverId: string; key: string };
  const balance = async () => (await svc.call('GET', '/api/credits', { token: owner.token })).body.balance;

  beforeAll(async () => {
    svc = await startTestService(SPECS);
    owner = await createOwner(svc, 61);
    server = await createServer(svc, owner, { accounts: demoAccount(), tools: [{ base_tool: 'demo_echo', account: 'demo' }] });
  });
  afterAll(() => svc?.close());

  it('50 concurrent calls of a 2-credit tool with balance 61: exactly 30 succeed, balance 1', async () => {
    upstream.delayMs = 20;
    const before = upstream.requests.length;
    const results = await Promise.all(Array.from({ length: 50 }, (_, i) => echo(svc, server.serverId, server.key, { message: `m${i}` })));
    upstream.delayMs = 0;
    const ok = results.filter((r) => r.body.result.isError === false);
    const refused = results.filter((r) => r.body.result.isError === true);
    expect(ok.length).toBe(30);
    expect(
      refused.every(
        (r) =>
          r.body.result.structuredContent === undefined &&
          /^Insufficient credits: demo_echo costs 2 credits and the balance is [01]$/.test(r.body.result.content[0].text),
      ),
    ).toBe(true);
    expect(await balance()).toBe(1);
    // Insufficient balance never reaches the upstream.
    expect(upstream.requests.length - before).toBe(30);
  });

  it('an insufficient balance calls no upstream and charges nothing', async () => {
    const before = upstream.requests.length;
    const r = await echo(svc, server.serverId, server.key, { message: 'x' });
    expect(r.body.result.isError).toBe(true);
    expect(upstream.requests.length).toBe(before);
    expect(await balance()).toBe(1);
  });

  it('a provider 503 is refunded; a provider 400 is kept; usage and the invariant agree', async () => {
    await svc.call('POST', `/api/admin/owners/${owner.id}/credits`, { token: svc.operatorToken, body: { amount: 9 } });
    expect(await balance()).toBe(10);
    const failed = await echo(svc, server.serverId, server.key, { message: 'x', status: 503 });
    expect(failed.body.result.isError).toBe(true);
    expect(failed.body.result.content[0].text).toBe('The provider failed to answer: upstream failed with 503');
    expect(await balance()).toBe(10);
    const rejected = await echo(svc, server.serverId, server.key, { message: 'x', status: 400 });
    expect(rejected.body.result.content[0].text).toBe('The provider refused the request: upstream failed with 400');
    expect(await balance()).toBe(8);
    const usage = await svc.call('GET', `/api/usage?server=${server.serverId}&tool=demo_echo`, { token: owner.token });
    expect(usage.body.total_credits).toBe(62); // 30 successes x 2 + the kept 400
    // granted - balance = sum of kept charges
    expect(61 + 9 - (await balance())).toBe(usage.body.total_credits);
    expect(usage.body.usage[0]).toMatchObject({ server_id: server.serverId, tool: 'demo_echo', refunds: 1 });
  });

  it('counts tool calls by outcome and the credits kept in /metrics, for the operator only', async () => {
    expect((await svc.call('GET', '/metrics', { token: owner.token })).status).toBe(401);
    const res = await fetch(`${svc.url}/metrics`, { headers: { authorization: `Bearer ${svc.operatorToken}` } });
    const text = await res.text();
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(text).toContain('tool_server_tool_calls_total{tool="demo_echo",outcome="ok"} 30');
    expect(text).toMatch(/tool_server_tool_calls_total\{tool="demo_echo",outcome="insufficient_credits"\} 2[01]/);
    expect(text).toContain('tool_server_tool_calls_total{tool="demo_echo",outcome="provider_error"} 1');
    expect(text).toContain('tool_server_credits_kept_total 62');
    expect(text).toMatch(/tool_server_http_request_duration_seconds_count\{area="mcp",status="2xx"\} \d+/);
  });

  it('an operator debit never goes below zero', async () => {
    const res = await svc.call('POST', `/api/admin/owners/${owner.id}/credits`, { token: svc.operatorToken, body: { amount: -1000 } });
    expect(res.body).toEqual({ balance: 0 });
    expect((await svc.call('POST', `/api/admin/owners/${owner.id}/credits`, { token: owner.token, body: { amount: 5 } })).status).toBe(401);
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

describe('stored accounts, custom tools and restarts', () => {
  it('validates account fields, masks secrets, and keeps everything across a restart on the same DATA_DIR', async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'tool-server-disk-'));
    let svc = await startTestService(SPECS, { onDisk: dataDir });
    const owner = await createOwner(svc, 20);

    const bad = await svc.call('POST', '/api/accounts', { token: owner.token, body: { kind: 'demo', name: 'x', base_url: 'ftp://nope', token: 'tok_1' } });
    expect(bad.body).toEqual({ error: 'Bad Request', message: '"base_url" (Base URL) must be an http(s) URL' });
    const pattern = await svc.call('POST', '/api/accounts', { token: owner.token, body: { kind: 'demo', name: 'x', base_url: upstream.url, token: 'nope' } });
    expect(pattern.body.message).toBe('"token" (Token) must start with tok_');
    const kind = await svc.call('POST', '/api/accounts', { token: owner.token, body: { kind: 'mail', name: 'x' } });
    expect(kind.body.message).toMatch(/^"kind" must be one of: demo/);

    const { serverId, key, accountIds } = await createServer(svc, owner, {
      accounts: demoAccount(),
      tools: [{ base_tool: 'demo_echo', name: 'shout', account: 'demo', defaults: { status: 200, channel: 'random', message: 'hello' }, locked: ['channel'] }],
    });
    const shown = await svc.call('GET', `/api/accounts/${accountIds.demo}`, { token: owner.token });
    expect(shown.body).toMatchObject({ id: accountIds.demo, kind: 'demo', name: 'Demo', base_url: upstream.url, secret_hint: 'token: ••••1234' });
    expect(JSON.stringify(shown.body)).not.toContain(upstream.token);
    const verified = await svc.call('POST', `/api/accounts/${accountIds.demo}/verify`, { token: owner.token });
    expect(verified.body).toMatchObject({ id: accountIds.demo, verified: true, detail: 'Demo upstream accepted the credentials (GET /me).' });

    // Defaults show and become optional; locked parameters disappear and cannot be set.
    const client = await connectV1(svc.url, serverId, key);
    const [tool] = (await client.listTools()).tools;
    expect(tool.name).toBe('shout');
    expect(tool.inputSchema.properties).toMatchObject({ message: { default: 'hello' }, status: { default: 200 } });
    expect(tool.inputSchema.properties).not.toHaveProperty('channel');
    expect(tool.inputSchema.required).toBeUndefined();
    const called = await client.callTool({ name: 'shout', arguments: {} });
    expect(called.structuredContent).toEqual({ echo: 'hello', channel: 'random' });
    const override = await client.callTool({ name: 'shout', arguments: { channel: 'general' } });
    expect(override.isError).toBe(true);
    expect((override.content as Array<{ text: string }>)[0].text).toBe('Invalid arguments: "channel" is fixed by this server and cannot be set');
    await client.close();

    const badDefaults = await svc.call('POST', `/api/servers/${serverId}/tools`, {
      token: owner.token,
      body: { base_tool: 'demo_echo', name: 'x', account_id: accountIds.demo, defaults: { status: 99 } },
    });
    expect(badDefaults.body.message).toBe('"defaults" are not valid for demo_echo: "status" must be >= 200');
    const dup = await svc.call('POST', `/api/servers/${serverId}/tools`, {
      token: owner.token,
      body: { base_tool: 'demo_ping', name: 'shout', account_id: accountIds.demo },
    });
    expect(dup.status).toBe(409);

    await svc.close();
    // Nothing secret on disk in clear: not the key, not the account token.
    const files = await readdir(dataDir);
    const disk = (await Promise.all(files.map((f) => readFile(path.join(dataDir, f), 'utf8')))).join('\n');
    expect(disk).not.toContain(key);
    expect(disk).not.toContain(upstream.token);
    expect(svc.logs.join('\n')).not.toContain(key);
    expect(svc.logs.join('\n')).not.toContain(upstream.token);

    svc = await startTestService(SPECS, { onDisk: dataDir });
    const again = await connectV1(svc.url, serverId, key);
    const after = await again.callTool({ name: 'shout', arguments: { message: 'again' } });
    expect(after.structuredContent).toEqual({ echo: 'again', channel: 'random' });
    expect((await svc.call('GET', '/api/credits', { token: owner.token })).body.balance).toBe(16);
    await again.close();
    await svc.close();
  });
});
