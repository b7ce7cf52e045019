// The call log over the management API (GET /api/calls, GET /api/calls/{id}) with the fixture provider: filters,
// cursor paging newest first, CSV and JSON downloads, a call's detail with its error and what it meant for its
// credits, an interrupted call told honestly; the dashboard's "Try" (POST .../tools/{id}/call) charged and
// recorded like any call; the owner's low-balance alert (PATCH /api/me) and the operator's words about credits.
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listCalls } from '../runtime/api/calls.ts';
import type { CallDoc } from '../runtime/billing/ledger.ts';
import { ConfigError, DEFAULT_CREDITS_HELP, loadConfig } from '../runtime/config.ts';
import { STORE_INDEXES } from '../runtime/indexes.ts';
import { storeTargets } from './support/stores.ts';
import { type Owner, type TestService, createOwner, createServer, startTestService } from './support/service.ts';
import { takeBlock } from './support/ledger.ts';
import { rpc } from './support/tool-calls.ts';
import { DEMO_SPECS, useDemoUpstream } from './support/upstream.ts';

const demo = useDemoUpstream();
const targets = storeTargets('call_log');
let svc: TestService;
let owner: Owner;
let a: { serverId: string; key: string };
let b: { serverId: string; key: string };

const echo = (server: { serverId: string; key: string }, args: Record<string, unknown>) =>
  rpc(svc.url, server.serverId, server.key, 'tools/call', { name: 'demo_echo', arguments: args });
const get = (p: string, token = owner.token) => svc.call('GET', p, { token });

beforeAll(async () => {
  svc = await startTestService(DEMO_SPECS);
  owner = await createOwner(svc, 1000);
  a = await createServer(svc, owner, { id: 'alpha', accounts: demo.account(), tools: [{ base_tool: 'demo_echo', account: 'demo' }] });
  b = await createServer(svc, owner, { id: 'beta', accounts: demo.account(), tools: [{ base_tool: 'demo_echo', account: 'demo' }] });
  // In order: ok on alpha, a provider failure (refunded), a provider 404 (kept), a refusal before any charge, then beta.
  await echo(a, { message: 'one' });
  await echo(a, { message: 'two', status: 503 });
  await echo(a, { message: 'three', status: 404 });
  await echo(a, { status: 200 });
  for (let i = 0; i < 5; i++) await echo(b, { message: `b${i}` });
}, 60_000);
afterAll(async () => {
  await svc?.close();
});

describe('GET /api/calls', () => {
  it('lists newest first and keeps limit and server working as before', async () => {
    const all = (await get('/api/calls')).body;
    expect(all.calls).toHaveLength(9);
    expect(all.next_cursor).toBeNull();
    const times = all.calls.map((c: { at: string }) => Date.parse(c.at));
    expect([...times].sort((x, y) => y - x)).toEqual(times);
    expect(all.calls[0]).toMatchObject({ server_id: 'beta', tool: 'demo_echo', outcome: 'ok', code: 'ok', charged: 2, credits: 2, via: null });
    expect(all.calls[0]).not.toHaveProperty('owner_id');
    const one = (await get('/api/calls?limit=1&server=alpha')).body.calls;
    expect(one).toHaveLength(1);
    expect(one[0]).toMatchObject({ server_id: 'alpha', outcome: 'rejected', code: 'invalid_arguments', charged: 0 });
  });

  it('filters by server, key, tool, outcome and time, each alone and together', async () => {
    const ids = async (query: string) => (await get(`/api/calls?${query}`)).body.calls.map((c: { id: string }) => c.id);
    const all = (await get('/api/calls')).body.calls;
    expect(await ids('server=beta')).toHaveLength(5);
    const keyA = all.find((c: { server_id: string }) => c.server_id === 'alpha').key_id;
    expect(await ids(`key=${keyA}`)).toHaveLength(4);
    expect(await ids('tool=demo_echo')).toHaveLength(9);
    expect(await ids('tool=nothing_like_it')).toHaveLength(0);
    const refunded = (await get('/api/calls?outcome=refunded')).body.calls;
    expect(refunded).toEqual([
      expect.objectContaining({ server_id: 'alpha', code: 'provider_error', provider_status: 503, charged: 2, credits: 0, message: expect.any(String) }),
    ]);
    expect(await ids('outcome=tool_error,rejected&server=alpha')).toHaveLength(2);
    expect(await ids('outcome=ok&server=alpha')).toHaveLength(1);
    // From the fourth newest on: the four newest are beta's; `to` before the first call: nothing.
    const from = all[3].at;
    expect((await ids(`from=${encodeURIComponent(from)}&server=beta`)).length).toBeGreaterThanOrEqual(4);
    expect(await ids(`to=${encodeURIComponent(new Date(Date.parse(all.at(-1).at) - 1000).toISOString())}`)).toHaveLength(0);
  });

  it('pages with a cursor: every call once, in order, whatever the page size', async () => {
    const all = (await get('/api/calls')).body.calls.map((c: { id: string }) => c.id);
    for (const size of [1, 2, 4]) {
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const page: { calls: Array<{ id: string }>; next_cursor: string | null } = (await get(`/api/calls?limit=${size}${cursor ? `&cursor=${cursor}` : ''}`))
          .body;
        expect(page.calls.length).toBeLessThanOrEqual(size);
        seen.push(...page.calls.map((c) => c.id));
        cursor = page.next_cursor;
      } while (cursor);
      expect(seen).toEqual(all);
    }
  });

  it('refuses bad parameters with a message that names them', async () => {
    for (const [query, words] of [
      ['limit=0', '"limit" must be an integer from 1 to 500'],
      ['limit=501', '"limit"'],
      ['outcome=fine', '"outcome": fine is not an outcome'],
      ['from=yesterday', '"from" must be an ISO 8601 time'],
      ['from=2026-02-01&to=2026-01-01', '"from" must not be after "to"'],
      ['cursor=nonsense', '"cursor" is not a cursor of this list'],
      ['format=xml', '"format" must be csv or json'],
      ['server=a&server=b', '"server" is given more than once'],
    ]) {
      const res = await get(`/api/calls?${query}`);
      expect(res.status, query).toBe(400);
      expect(res.body.message, query).toContain(words);
    }
  });

  it('downloads what a filter selects as CSV (names beside ids, formulas defused) and as JSON', async () => {
    const res = await fetch(`${svc.url}/api/calls?server=alpha&format=csv`, { headers: { authorization: `Bearer ${owner.token}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/csv');
    expect(res.headers.get('content-disposition')).toMatch(/^attachment; filename="calls-.*\.csv"$/);
    const lines = (await res.text()).trim().split('\r\n');
    expect(lines[0]).toBe(
      'at,id,server_id,server_name,key_id,key_name,tool,outcome,code,charged,credits,latency_ms,provider_status,message,via,calls,end_user_id',
    );
    expect(lines).toHaveLength(5);
    expect(lines.find((l) => l.includes('provider_error'))).toMatch(/,alpha,test server,key_\w+,test key,demo_echo,refunded,provider_error,2,0,\d+,503,/);
    const json = await get('/api/calls?outcome=refunded&format=json');
    expect(json.body.calls).toHaveLength(1);
  });

  it("shows one call in detail with its error and what it meant for its credits; another owner's is not found", async () => {
    const [refunded] = (await get('/api/calls?outcome=refunded')).body.calls;
    const detail = (await get(`/api/calls/${refunded.id}`)).body;
    expect(detail).toMatchObject({ id: refunded.id, code: 'provider_error', provider_status: 503, charged: 2, credits: 0 });
    expect(detail.message).toMatch(/503|failed/);
    expect(detail.explanation).toBe('Refunded: the provider failed on its side (HTTP 503). The 2 credits charged at the start were given back.');
    const [kept] = (await get('/api/calls?outcome=tool_error')).body.calls;
    expect((await get(`/api/calls/${kept.id}`)).body.explanation).toMatch(/^Kept: the provider answered the request with an error \(HTTP 404\)/);
    const [rejected] = (await get('/api/calls?outcome=rejected')).body.calls;
    expect((await get(`/api/calls/${rejected.id}`)).body.explanation).toMatch(/^Refused before any charge: the arguments did not fit/);

    const stranger = await createOwner(svc, 10);
    expect((await get(`/api/calls/${refunded.id}`, stranger.token)).status).toBe(404);
    expect((await get('/api/calls', stranger.token)).body.calls).toEqual([]);
  });
});

describe('an interrupted call in the log', () => {
  it('after a stop between charge and record: refunded at the next start, tool unknown, said so', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'calls-interrupted-'));
    let disk = await startTestService(DEMO_SPECS, { onDisk: dir });
    try {
      const who = await createOwner(disk, 50);
      // What a stop in the middle of a call leaves on disk: a charge on the owner's credit line, no record.
      expect(await takeBlock(disk.store, who.id, 3)).not.toBeNull();
      await disk.close();
      disk = await startTestService(DEMO_SPECS, { onDisk: dir });
      const [call] = (await disk.call('GET', '/api/calls', { token: who.token })).body.calls;
      expect(call).toMatchObject({ outcome: 'refunded', code: 'interrupted', server_id: '', key_id: '', tool: '', charged: 3, credits: 0 });
      const detail = (await disk.call('GET', `/api/calls/${call.id}`, { token: who.token })).body;
      expect(detail.explanation).toBe(
        'Refunded: the service stopped during this call; which tool it was is not known. The 3 credits charged at the start were given back.',
      );
      expect((await disk.call('GET', '/api/credits', { token: who.token })).body.balance).toBe(50);
    } finally {
      await disk.close();
    }
  });
});

describe('POST /api/servers/{id}/tools/{tool_id}/call (the dashboard\'s "Try")', () => {
  let toolId: string;
  const tryIt = (body: unknown, serverId = a.serverId, id = toolId) =>
    svc.call('POST', `/api/servers/${serverId}/tools/${id}/call`, { token: owner.token, body });

  beforeAll(async () => {
    toolId = (await get(`/api/servers/${a.serverId}/tools`)).body.tools[0].id;
  });

  it('runs the call like a client would get it: charged, recorded as from the dashboard', async () => {
    const before = (await get('/api/credits')).body.balance;
    const ok = await tryIt({ arguments: { message: 'from the page' } });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({
      tool: 'demo_echo',
      result: {
        isError: false,
        structuredContent: { echo: 'from the page' },
        content: [{ type: 'text', text: JSON.stringify({ echo: 'from the page', channel: null }) }],
      },
      balance: before - 2,
    });
    const failed = await tryIt({ arguments: { message: 'x', status: 503 } });
    expect(failed.status).toBe(200);
    expect(failed.body.result).toMatchObject({
      isError: true,
      structuredContent: { error: { code: 'provider_error', provider_status: 503, retryable: true } },
    });
    expect(failed.body.balance).toBe(before - 2);

    const mine = (await get('/api/calls?key=dashboard')).body.calls;
    expect(mine).toHaveLength(2);
    expect(mine.map((c: { via: string; outcome: string; server_id: string }) => [c.via, c.outcome, c.server_id])).toEqual([
      ['dashboard', 'refunded', 'alpha'],
      ['dashboard', 'ok', 'alpha'],
    ]);
  });

  it('refuses what a client would be refused, and what is not a call', async () => {
    const invalid = await tryIt({ arguments: { status: 200 } });
    expect(invalid.body.result).toMatchObject({ isError: true, structuredContent: { error: { code: 'invalid_arguments' } } });
    expect((await tryIt({ arguments: [1] })).body.message).toBe('"arguments" must be an object of parameter values');
    expect((await tryIt({ args: {} })).status).toBe(400);
    expect((await tryIt({}, a.serverId, 'tool_nope')).status).toBe(404);
    expect((await tryIt({}, b.serverId)).status).toBe(404);
    const stranger = await createOwner(svc, 10);
    expect((await svc.call('POST', `/api/servers/${a.serverId}/tools/${toolId}/call`, { token: stranger.token, body: {} })).status).toBe(404);

    await svc.call('PATCH', `/api/servers/${a.serverId}`, { token: owner.token, body: { active: false } });
    try {
      const inactive = await tryIt({ arguments: { message: 'x' } });
      expect(inactive.status).toBe(409);
      expect(inactive.body.message).toContain('is inactive: activate it to call its tools');
    } finally {
      await svc.call('PATCH', `/api/servers/${a.serverId}`, { token: owner.token, body: { active: true } });
    }
  });
});

describe('the low-balance alert (PATCH /api/me)', () => {
  it('defaults to 10% of the last grant (20 without one), is set and reset by the owner, and audited', async () => {
    const fresh = await createOwner(svc, 0);
    expect((await get('/api/me', fresh.token)).body).toMatchObject({ balance: 0, credit_alert: 20, credit_alert_default: 20 });
    await svc.call('POST', `/api/admin/owners/${fresh.id}/credits`, { token: svc.operatorToken, body: { amount: 450 } });
    expect((await get('/api/me', fresh.token)).body).toMatchObject({ balance: 450, credit_alert: 45, credit_alert_default: 45 });
    // A debit is no grant: the default stays.
    await svc.call('POST', `/api/admin/owners/${fresh.id}/credits`, { token: svc.operatorToken, body: { amount: -50 } });
    expect((await get('/api/me', fresh.token)).body.credit_alert).toBe(45);

    const set = await svc.call('PATCH', '/api/me', { token: fresh.token, body: { credit_alert: 120 } });
    expect(set.body).toMatchObject({ credit_alert: 120, credit_alert_default: 45 });
    expect((await get('/api/me', fresh.token)).body.credit_alert).toBe(120);
    const reset = await svc.call('PATCH', '/api/me', { token: fresh.token, body: { credit_alert: null } });
    expect(reset.body.credit_alert).toBe(45);
    for (const bad of [-1, 1.5, '10', 2_000_000_000]) {
      const res = await svc.call('PATCH', '/api/me', { token: fresh.token, body: { credit_alert: bad } });
      expect(res.status).toBe(400);
      expect(res.body.message).toContain('"credit_alert" must be a whole number of credits');
    }
    expect((await svc.call('PATCH', '/api/me', { token: fresh.token, body: { email: 'x@example.com' } })).status).toBe(400);
    const events = (await get('/api/audit?action=owner.update', fresh.token)).body.events;
    expect(events.map((e: { changes: unknown }) => e.changes)).toEqual([
      { credit_alert: { from: 120, to: 'default' } },
      { credit_alert: { from: 'default', to: 120 } },
    ]);
  });
});

describe('CREDITS_HELP_TEXT and CREDITS_HELP_URL', () => {
  it('are the words and link of the credits banner, checked at start with the other settings', () => {
    expect(loadConfig({}).creditsHelp).toEqual({ text: DEFAULT_CREDITS_HELP, url: undefined });
    expect(loadConfig({ CREDITS_HELP_TEXT: ' Write to billing. ', CREDITS_HELP_URL: 'mailto:billing@example.com' }).creditsHelp).toEqual({
      text: 'Write to billing.',
      url: 'mailto:billing@example.com',
    });
    let message = '';
    try {
      loadConfig({ CREDITS_HELP_TEXT: 'line one\nline two', CREDITS_HELP_URL: 'javascript:alert(1)' });
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      message = (err as Error).message;
    }
    expect(message).toContain('CREDITS_HELP_TEXT must be one line of at most 500 characters, without control characters');
    expect(message).toContain('CREDITS_HELP_URL must be an http(s) or mailto: URL (got "javascript:alert(1)")');
    for (const bad of ['ftp://example.com', 'billing.example.com', 'https://'])
      expect(() => loadConfig({ CREDITS_HELP_URL: bad })).toThrow(/CREDITS_HELP_URL must be an http\(s\) or mailto: URL/);
    expect(() => loadConfig({ CREDITS_HELP_TEXT: 'x'.repeat(501) })).toThrow(/CREDITS_HELP_TEXT/);
  });
});

for (const target of targets) {
  describe.runIf(target.enabled)(`the call log's query on ${target.name}`, () => {
    it('pages newest first on (at, _id), records written together included, each filter alone and combined', async () => {
      const store = await target.open();
      try {
        await store.ensureIndexes(STORE_INDEXES);
        const calls = store.collection<CallDoc>('calls');
        const at = (i: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, Math.floor(i / 3))); // three records share each time
        const docs: CallDoc[] = Array.from({ length: 30 }, (_, i) => ({
          _id: `call_${String(i).padStart(2, '0')}`,
          at: at(i),
          owner_id: i % 10 === 9 ? 'someone else' : 'me',
          server_id: i % 2 ? 'odd' : 'even',
          key_id: `key_${i % 3}`,
          tool: i % 5 ? 'read' : 'write',
          outcome: i % 4 ? 'ok' : 'refunded',
          code: i % 4 ? 'ok' : 'timeout',
          charged: 1,
          credits: i % 4 ? 1 : 0,
          latency_ms: i,
        }));
        await calls.insertMany(docs);
        const mine = docs.filter((d) => d.owner_id === 'me').sort((a, b) => b.at.getTime() - a.at.getTime() || (a._id < b._id ? 1 : -1));
        const walk = async (q: Parameters<typeof listCalls>[2], limit: number) => {
          const seen: string[] = [];
          let cursor: string | undefined;
          do {
            const page = await listCalls(calls, 'me', q, { limit, cursor });
            seen.push(...page.calls.map((c) => c._id));
            cursor = page.next_cursor ?? undefined;
          } while (cursor);
          return seen;
        };
        expect(await walk({}, 4)).toEqual(mine.map((d) => d._id));
        expect(await walk({ server: 'odd', key: 'key_1' }, 2)).toEqual(mine.filter((d) => d.server_id === 'odd' && d.key_id === 'key_1').map((d) => d._id));
        expect(await walk({ tool: 'write', outcomes: ['refunded', 'ok'] }, 1)).toEqual(mine.filter((d) => d.tool === 'write').map((d) => d._id));
        expect(await walk({ outcomes: ['refunded'], from: at(6), to: at(20) }, 3)).toEqual(
          mine.filter((d) => d.outcome === 'refunded' && d.at >= at(6) && d.at <= at(20)).map((d) => d._id),
        );
      } finally {
        await store.close();
      }
    });
  });
}

describe("one owner cannot erase another's call log (the embedded store's LEDGER_MAX_RECORDS)", () => {
  let capped: TestService;
  afterAll(async () => {
    await capped?.close();
  });

  it('logs free rejections up to 60 a minute per owner and counts the rest; a paying owner trims only its own log; the other keeps every record', async () => {
    capped = await startTestService({
      ...DEMO_SPECS,
      LEDGER_MAX_RECORDS: '200',
      LEDGER_ROLL_AFTER_SECONDS: '1',
      RATE_LIMIT_BURST: '100000',
      RATE_LIMIT_PER_MINUTE: '1000000',
    });
    const log = async (o: Owner) =>
      (await capped.call('GET', '/api/calls?limit=500', { token: o.token })).body.calls as Array<{ outcome: string; code: string; calls: number }>;
    const victim = await createOwner(capped, 100);
    const v = await createServer(capped, victim, { accounts: demo.account(), tools: [{ base_tool: 'demo_echo', account: 'demo' }] });
    for (let i = 0; i < 20; i++) await rpc(capped.url, v.serverId, v.key, 'tools/call', { name: 'demo_echo', arguments: { message: `mine ${i}` } });
    const attacker = await createOwner(capped, 1000);
    const x = await createServer(capped, attacker, { accounts: demo.account(), tools: [{ base_tool: 'demo_echo', account: 'demo' }] });
    const batch = (args: Record<string, unknown>) =>
      fetch(`${capped.url}/mcp/${x.serverId}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${x.key}` },
        body: JSON.stringify(
          Array.from({ length: 50 }, (_, id) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'demo_echo', arguments: args } })),
        ),
      }).then((res) => res.json());

    // 1,000 free rejected calls (no message: invalid arguments), five times the whole log's cap.
    for (let i = 0; i < 20; i++) await batch({ status: 200 });
    await capped.flush();
    const rejections = await log(attacker);
    expect(rejections.filter((c) => c.code === 'invalid_arguments').length).toBeLessThanOrEqual(120); // 60 a minute; the burst may span two
    expect(rejections.filter((c) => c.code === 'rejections_counted').length).toBeGreaterThan(0);
    expect(rejections.reduce((n, c) => n + c.calls, 0)).toBe(1000);
    expect((await capped.call('GET', '/api/usage', { token: attacker.token })).body).toMatchObject({ total_calls: 1000, total_credits: 0 });

    // 300 paid calls: more than the log holds once the victim's records are counted. The attacker's share is what
    // the victim leaves of the 200 (180), plus at most the rest of a batch of 50 written together (one time stamp).
    for (let i = 0; i < 6; i++) await batch({ message: `paid ${i}` });
    await expect
      .poll(async () => (await capped.call('POST', '/api/admin/ledger/housekeep', { token: capped.operatorToken }), (await log(attacker)).length), {
        timeout: 30_000,
      })
      .toBeLessThanOrEqual(180 + 49);
    // The victim's log is whole; the attacker kept its newest records (its paid calls), its usage counts all.
    const mine = await log(victim);
    expect(mine).toHaveLength(20);
    expect(mine.every((c) => c.outcome === 'ok')).toBe(true);
    expect((await log(attacker)).slice(0, 150).every((c) => c.outcome === 'ok')).toBe(true);
    expect((await capped.call('GET', '/api/usage', { token: attacker.token })).body).toMatchObject({ total_calls: 1300, total_credits: 600 });
  }, 60_000);
});
