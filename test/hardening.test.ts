// Bad input gets a clear 4xx (never a 500), batches count every item, and slow clients cannot hold a
// connection. Everything on loopback: the providers' accounts point at a port nothing listens on.
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOwner, createServer, startTestService, type Owner, type TestService } from './support/service.ts';

const NOWHERE = 'http://127.0.0.1:9';
const accounts = {
  db: { kind: 'database', name: 'db', url: NOWHERE, key: 'sb_secret_test_key' },
  notion: { kind: 'workspace', name: 'notion', integration_token: 'ntn_test_token', api_url: NOWHERE },
};

describe('bad input', () => {
  let svc: TestService;
  let owner: Owner;
  let server: Awaited<ReturnType<typeof createServer>>;
  beforeAll(async () => {
    svc = await startTestService({ RATE_LIMIT_BURST: '5' });
    owner = await createOwner(svc, 10);
    server = await createServer(svc, owner, { accounts, tools: [{ base_tool: 'create_page', account: 'notion' }] });
  });
  afterAll(() => svc.close());

  it('refuses custom-tool defaults the store cannot keep, naming the key', async () => {
    const bind = (defaults: unknown) =>
      svc.call('POST', `/api/servers/${server.serverId}/tools`, {
        token: owner.token,
        body: { base_tool: 'database_read_records', name: `r${Math.random().toString(36).slice(2)}`, account_id: server.accountIds.db, defaults },
      });
    const dotted = await bind({ table: 'todos', filters: { 'profile.name': { eq: 'x' } } });
    expect(dotted.status).toBe(400);
    expect(dotted.body.message).toBe(
      '"defaults" cannot hold the key "profile.name" (at defaults.filters.profile.name): keys may not start with "$" or contain "." or NUL',
    );
    const dollar = await bind({ table: 'todos', filters: { $where: { eq: 1 } } });
    expect(dollar.status).toBe(400);
    expect(dollar.body.message).toContain('"$where"');
    expect((await bind({ table: 'todos', filters: { done: { eq: true } } })).status).toBe(201);
  });

  it('keeps operator grants finite integers within the documented bound', async () => {
    const grant = (amount: unknown) => svc.call('POST', `/api/admin/owners/${owner.id}/credits`, { token: svc.operatorToken, body: { amount } });
    for (const amount of [1e308, -1e308, 1e9 + 1, 1.5, '10']) {
      const res = await grant(amount);
      expect(res.status, String(amount)).toBe(400);
      expect(res.body.message).toBe('"amount" must be a whole number from -1000000000 to 1000000000 (negative to debit)');
    }
    // A body of 1e999 parses as Infinity: refused the same way.
    const inf = await fetch(`${svc.url}/api/admin/owners/${owner.id}/credits`, {
      method: 'POST',
      headers: { authorization: `Bearer ${svc.operatorToken}`, 'content-type': 'application/json' },
      body: '{"amount":1e999}',
    });
    expect(inf.status).toBe(400);
    expect((await svc.call('GET', '/api/credits', { token: owner.token })).body.balance).toBe(10);
  });

  it('answers deeply nested arguments with an error naming the limit, before any charge or provider call', async () => {
    // Written as text: JSON.stringify itself runs out of stack on such a value.
    const deep = '{"nested":'.repeat(5000) + '{"title":"x"}' + '}'.repeat(5000);
    for (const version of ['2025-03-26', '2025-11-25']) {
      const res = await fetch(`${svc.url}/mcp/${server.serverId}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${server.key}`, 'content-type': 'application/json', accept: 'application/json', 'mcp-protocol-version': version },
        body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_page","arguments":{"parent":{"page_id":"p"},"properties":${deep}}}}`,
      });
      expect(res.status).toBe(200);
      const body = (await res.json()) as { result: { isError: boolean; content: Array<{ text: string }> } };
      expect(body.result.isError).toBe(true);
      expect(body.result.content[0].text).toContain('nested more than 32 levels deep (the limit)');
    }
    expect((await svc.call('GET', '/api/credits', { token: owner.token })).body.balance).toBe(10);
  });

  it('counts every item of a JSON-RPC batch against the rate limit, invalid ones included', async () => {
    const other = await createServer(svc, owner, { tools: [] });
    const batch = [{ jsonrpc: '2.0', id: 1, method: 'ping' }, ...Array.from({ length: 5 }, () => ({ nonsense: true }))];
    const res = await fetch(`${svc.url}/mcp/${other.serverId}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${other.key}`, 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify(batch),
    });
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
  });

  it('answers malformed management bodies with 4xx, never 500', async () => {
    const bodies = [
      '[]',
      '"text"',
      '1e999',
      'null',
      '{"name":5}',
      '{"name":"' + 'x'.repeat(5000) + '"}',
      '{"name":{"$gt":""}}',
      '{',
      '{"id":"../x","name":"a"}',
    ];
    const routes = [
      '/api/servers',
      `/api/servers/${server.serverId}/api-keys`,
      '/api/accounts',
      `/api/servers/${server.serverId}/tools`,
      '/api/me/tokens',
      '/api/api-keys',
    ];
    for (const route of routes) {
      for (const body of bodies) {
        const res = await fetch(svc.url + route, {
          method: 'POST',
          headers: { authorization: `Bearer ${owner.token}`, 'content-type': 'application/json' },
          body,
        });
        expect(res.status, `${route} ${body.slice(0, 40)}`).toBeLessThan(500);
      }
    }
  });

  it('refuses control and invisible characters in every name it takes, naming the character; visible text of any script is fine', async () => {
    const post = (route: string, body: unknown, token = owner.token) => svc.call('POST', route, { token, body });
    const hidden = (what: string, code: string, at: number) => `"${what}" must not contain control or invisible characters (U+${code} at character ${at})`;
    const keyName = '"name" must be a non-empty string of at most 200 characters, without control or invisible characters';
    const cases: Array<[string, Promise<{ status: number; body: any }>, string]> = [
      ['server', post('/api/servers', { name: 'Ops \u202E(lanretni)' }), hidden('name', '202E', 5)],
      [
        'server rename',
        svc.call('PATCH', `/api/servers/${server.serverId}`, { token: owner.token, body: { name: 'pay\u200Bments' } }),
        hidden('name', '200B', 4),
      ],
      ['account', post('/api/accounts', { ...accounts.db, name: 'db\u0007' }), hidden('name', '0007', 3)],
      ['server key', post(`/api/servers/${server.serverId}/api-keys`, { name: 'ci \u2066key\u2069' }), keyName],
      ['global key', post('/api/api-keys', { name: '\uFEFFglobal' }), keyName],
      ['management token', post('/api/me/tokens', { name: 'deploy\u202D' }), hidden('name', '202D', 7)],
      ['invitation', post('/api/admin/owners', { email: 'ada\u200D@example.com' }, svc.operatorToken), hidden('email', '200D', 4)],
      ['sign-up', post('/api/auth/signup', { email: 'bob\u2028@example.com', password: 'a long enough passphrase' }), hidden('email', '2028', 4)],
    ];
    for (const [what, pending, message] of cases) {
      const res = await pending;
      expect(res.status, what).toBe(400);
      expect(res.body.message, what).toBe(message);
    }
    expect((await post('/api/servers', { name: 'Zoë · 日本 · مرحبا 🚀' })).status).toBe(201);
    expect((await post(`/api/servers/${server.serverId}/api-keys`, { name: 'clé “prod”' })).status).toBe(201);
  });
});

describe('slow clients', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService({ HEADERS_TIMEOUT_MS: '1000', REQUEST_TIMEOUT_MS: '2000' });
  });
  afterAll(() => svc.close());

  /** Opens a raw connection, sends `head`, then one more byte every 200 ms; resolves when the server closes it. */
  function trickle(head: string, drip: string): Promise<{ ms: number; answer: string }> {
    return new Promise((resolve, reject) => {
      const started = Date.now();
      const socket = net.connect(svc.port, '127.0.0.1', () => socket.write(head));
      let answer = '';
      const timer = setInterval(() => socket.writable && socket.write(drip), 200);
      const giveUp = setTimeout(() => reject(new Error('the server kept a slow connection open for 15 s')), 15_000);
      socket.on('data', (d) => (answer += d));
      socket.on('error', () => undefined);
      socket.on('close', () => {
        clearInterval(timer);
        clearTimeout(giveUp);
        resolve({ ms: Date.now() - started, answer });
      });
    });
  }

  it('cuts off a client that sends its headers too slowly', async () => {
    const { ms, answer } = await trickle('POST /mcp/x HTTP/1.1\r\nHost: 127.0.0.1\r\n', 'X-Slow: a\r\n');
    expect(ms).toBeLessThan(10_000);
    expect(answer).toMatch(/^HTTP\/1\.1 408/);
  });

  it('cuts off a client that sends its body too slowly', async () => {
    // Sign-in reads the body before anything else.
    const { ms, answer } = await trickle(
      'POST /api/auth/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{',
      ' ',
    );
    expect(ms).toBeLessThan(10_000);
    expect(answer === '' || /^HTTP\/1\.1 408/.test(answer)).toBe(true);
  });
});
