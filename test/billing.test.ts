// Billing over real HTTP with the fixture provider (test/fixtures/specs) and its loopback upstream: the charge
// before the call under concurrency, an insufficient balance, refund or keep by the provider's answer, usage
// and the ledger's invariant, the metrics of calls and credits, operator grants and debits.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Owner, type TestService, createOwner, createServer, startTestService } from './support/service.ts';
import { rpc } from './support/tool-calls.ts';
import { DEMO_SPECS as SPECS, useDemoUpstream } from './support/upstream.ts';

const demo = useDemoUpstream();
const demoAccount = demo.account;
const echo = (svc: TestService, serverId: string, key: string, args: Record<string, unknown>) =>
  rpc(svc.url, serverId, key, 'tools/call', { name: 'demo_echo', arguments: args });

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
    demo.upstream.delayMs = 20;
    const before = demo.upstream.requests.length;
    const results = await Promise.all(Array.from({ length: 50 }, (_, i) => echo(svc, server.serverId, server.key, { message: `m${i}` })));
    demo.upstream.delayMs = 0;
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
    expect(demo.upstream.requests.length - before).toBe(30);
  });

  it('an insufficient balance calls no upstream and charges nothing', async () => {
    const before = demo.upstream.requests.length;
    const r = await echo(svc, server.serverId, server.key, { message: 'x' });
    expect(r.body.result.isError).toBe(true);
    expect(demo.upstream.requests.length).toBe(before);
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

describe('GET /api/usage reads a bounded number of aggregates', () => {
  let svc: TestService;
  afterAll(() => svc?.close());

  it('refuses a range with more than 20,000 hourly rows, naming what to narrow; a narrower range is read', async () => {
    svc = await startTestService(SPECS);
    const owner = await createOwner(svc, 0);
    // 400 days of 60 keys' hourly aggregates would be 576,000 rows; 21,000 is enough to pass the limit.
    const hour = Date.UTC(2026, 0, 1);
    const rows = Array.from({ length: 21_000 }, (_, i) => ({
      _id: `${owner.id}|srv|key_${i % 30}|demo_echo|${new Date(hour + Math.floor(i / 30) * 3_600_000).toISOString()}`,
      owner_id: owner.id,
      server_id: 'srv',
      key_id: `key_${i % 30}`,
      tool: 'demo_echo',
      hour: new Date(hour + Math.floor(i / 30) * 3_600_000),
      calls: 1,
      credits: 2,
      errors: 0,
      refunds: 0,
      through: new Date(hour + (Math.floor(i / 30) + 1) * 3_600_000),
    }));
    await svc.store.collection('usage').insertMany(rows);
    const all = await svc.call('GET', '/api/usage', { token: owner.token });
    expect(all.status).toBe(400);
    expect(all.body.message).toBe('More than 20,000 hourly rows match: ask for a shorter time (from, to) or for one server, key or tool');
    const day = await svc.call('GET', `/api/usage?from=2026-01-02T00:00:00Z&to=2026-01-03T00:00:00Z`, { token: owner.token });
    expect(day.body).toMatchObject({ total_calls: 24 * 30, total_credits: 24 * 30 * 2 });
    const oneKey = await svc.call('GET', '/api/usage?key=key_7', { token: owner.token });
    expect(oneKey.body.total_calls).toBe(700);
  });
});
