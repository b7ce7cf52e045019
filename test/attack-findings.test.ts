// The findings of the attack run, each reproduced over real HTTP against the service on loopback: an open
// redirect after sign-in, sign-in throttling raced by concurrency, a client-chosen X-Forwarded-For, cancelled
// calls that ran for free, missing security headers, the password change, client ID metadata fetches
// without limit, and bad input that answered 500 or a network error. (The redirect in Chromium:
// attack-findings.browser.test.ts.)
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type N8nSandbox, startN8nSandbox } from '../sandboxes/n8n/n8n-sandbox.ts';
import { type HttpsHost, startHttpsHost } from './support/https-host.ts';
import { type Owner, type TestService, createOwner, createServer, startTestService } from './support/service.ts';
import { s256 } from '../runtime/oauth/grants.ts';

const PASSWORD = 'correct horse battery';
const email = () => `person-${Math.random().toString(36).slice(2)}@example.com`;

/** Signs up over the API; the session cookie and CSRF token a page would hold. */
async function signUp(svc: TestService, address = email(), headers: Record<string, string> = {}) {
  const res = await fetch(`${svc.url}/api/auth/signup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ email: address, password: PASSWORD }),
  });
  const body = (await res.json()) as { csrf_token?: string; message?: string };
  return { status: res.status, email: address, cookie: res.headers.getSetCookie()[0]?.split(';')[0] ?? '', csrf: body.csrf_token ?? '', body };
}

/** A request as the dashboard's own page sends it: session cookie, Origin and CSRF token. */
async function asPage(svc: TestService, session: { cookie: string; csrf: string }, method: string, path: string, body?: unknown) {
  const res = await fetch(svc.url + path, {
    method,
    headers: {
      cookie: session.cookie,
      origin: svc.url,
      'x-csrf-token': session.csrf,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : null };
}

/** A plain JSON POST of a revision whose results carry structuredContent. */
const MCP_HEADERS = (key: string) => ({
  'content-type': 'application/json',
  accept: 'application/json',
  'mcp-protocol-version': '2025-11-25',
  authorization: `Bearer ${key}`,
});

const login = (svc: TestService, address: string, password: string, headers: Record<string, string> = {}) =>
  fetch(`${svc.url}/api/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ email: address, password }),
  });

/** The value of one Prometheus series of GET /metrics. */
async function metric(svc: TestService, name: string): Promise<number> {
  const text = await (await fetch(`${svc.url}/metrics`, { headers: { authorization: `Bearer ${svc.operatorToken}` } })).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.split(' ')[1]) : NaN;
}

describe('open redirect after sign-in (server side)', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService();
  });
  afterAll(() => svc.close());

  it('follows only a path of this origin as the browser parses it: a tab, backslash or dot segment never leads to another host', async () => {
    const session = await signUp(svc);
    const after = async (next: string) => {
      const res = await fetch(`${svc.url}/login?next=${encodeURIComponent(next)}`, { headers: { cookie: session.cookie }, redirect: 'manual' });
      expect(res.status, next).toBe(302);
      return res.headers.get('location');
    };
    for (const next of [
      '/\t/127.0.0.1:9/x',
      '/\n/127.0.0.1:9',
      '//127.0.0.1:9/x',
      '/\\127.0.0.1:9',
      '\\/127.0.0.1:9',
      '/.//127.0.0.1:9/x',
      'http://127.0.0.1:9/',
      'servers',
    ])
      expect(await after(next), JSON.stringify(next)).toBe('/');
    expect(await after('/servers?tab=keys#new')).toBe('/servers?tab=keys#new');
    // Signed out, the refused value is not carried on to the sign-up link either.
    const page = await (await fetch(`${svc.url}/login?next=${encodeURIComponent('/\t/127.0.0.1:9')}`)).text();
    expect(page).not.toContain('127.0.0.1:9');
  });
});

describe('sign-in throttling under concurrency', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService({ TRUST_PROXY: 'true' });
  });
  afterAll(() => svc.close());

  // Each test signs in from its own address (the service trusts X-Forwarded-For here): the per-address count stays its own.
  const FROM_A = { 'x-forwarded-for': '192.0.2.1' };
  const FROM_B = { 'x-forwarded-for': '192.0.2.2' };

  it('evaluates at most 5 of 50 parallel wrong passwords for one e-mail; the rest are 429 with Retry-After', async () => {
    const { email: address } = await signUp(svc);
    const before = await metric(svc, 'tool_server_password_checks_total');
    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => login(svc, address, `wrong password ${i}`, FROM_A)));
    const statuses = answers.map((r) => r.status);
    expect(statuses.filter((s) => s === 401).length).toBe(5);
    expect(statuses.filter((s) => s === 429).length).toBe(45);
    for (const r of answers.filter((a) => a.status === 429)) expect(Number(r.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await metric(svc, 'tool_server_password_checks_total')) - before).toBe(5);
    // Still blocked for the right password; nothing was computed for it.
    expect((await login(svc, address, PASSWORD, FROM_A)).status).toBe(429);
    expect((await metric(svc, 'tool_server_password_checks_total')) - before).toBe(5);
  });

  it('a success gives the attempt back: four failures, a success, four failures and a success all pass', async () => {
    const { email: address } = await signUp(svc);
    for (let round = 0; round < 2; round++) {
      for (let i = 0; i < 4; i++) expect((await login(svc, address, `wrong password ${i}`, FROM_B)).status).toBe(401);
      expect((await login(svc, address, PASSWORD, FROM_B)).status).toBe(200);
    }
  });

  it('bounds the password checks running at once: the excess gets 503 with Retry-After, never an error', async () => {
    // Distinct e-mails and client addresses, so no throttle applies: only the bound on concurrent checks.
    const before = await metric(svc, 'tool_server_password_checks_total');
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, i) => login(svc, email(), 'some wrong password', { 'x-forwarded-for': `198.51.100.${i + 1}` })),
    );
    const statuses = answers.map((r) => r.status);
    expect(statuses.every((s) => s === 401 || s === 503)).toBe(true);
    const busy = answers.filter((r) => r.status === 503);
    expect(busy.length).toBeGreaterThan(0);
    for (const r of busy) {
      expect(r.headers.get('retry-after')).toBe('1');
      expect(((await r.json()) as { message: string }).message).toMatch(/busy/);
    }
    expect((await metric(svc, 'tool_server_password_checks_total')) - before).toBe(statuses.filter((s) => s === 401).length);
  });
});

describe('TRUST_PROXY: the client address is the one the trusted proxy appended', () => {
  /**
   * Eleven sign-ups (10 allowed per address) whose X-Forwarded-For starts with a value the client chose each time.
   * The proxies append loopback addresses: with e-mail off, open sign-up is for this machine only, so a wrong
   * entry taken for the client's would also be refused (403), not only counted apart.
   */
  async function signUps(svc: TestService, forwarded: (i: number) => string): Promise<number[]> {
    const statuses: number[] = [];
    for (let i = 0; i < 11; i++) statuses.push((await signUp(svc, email(), { 'x-forwarded-for': forwarded(i) })).status);
    return statuses;
  }

  it('one proxy (TRUST_PROXY_HOPS=1, the default): the right-most entry, whatever the client put before it', async () => {
    const svc = await startTestService({ TRUST_PROXY: 'true' });
    try {
      const statuses = await signUps(svc, (i) => `10.9.8.${i}, 127.0.0.7`);
      expect(statuses.slice(0, 10)).toEqual(Array(10).fill(201));
      expect(statuses[10]).toBe(429);
    } finally {
      await svc.close();
    }
  });

  it('two proxies (TRUST_PROXY_HOPS=2): the entry the outer proxy appended', async () => {
    const svc = await startTestService({ TRUST_PROXY: 'true', TRUST_PROXY_HOPS: '2' });
    try {
      const statuses = await signUps(svc, (i) => `10.9.8.${i}, 127.0.0.8, 10.0.0.${i}`);
      expect(statuses.slice(0, 10)).toEqual(Array(10).fill(201));
      expect(statuses[10]).toBe(429);
    } finally {
      await svc.close();
    }
  });

  it('refuses a hop count that is not a whole number from 1 to 10', async () => {
    await expect(startTestService({ TRUST_PROXY: 'true', TRUST_PROXY_HOPS: '0' })).rejects.toThrow(/TRUST_PROXY_HOPS must be an integer from 1 to 10/);
  });
});

describe('a cancelled call is paid for once the provider got the request', () => {
  let svc: TestService;
  let sim: N8nSandbox;
  let owner: Owner;
  let serverId: string;
  let key: string;
  beforeAll(async () => {
    [svc, sim] = await Promise.all([startTestService({ MAX_BODY_BYTES: String(32 * 1024 * 1024) }), startN8nSandbox()]);
    owner = await createOwner(svc, 100);
    ({ serverId, key } = await createServer(svc, owner, { tools: [{ base_tool: 'automation_Trigger_Workflow_Webhook' }] }));
  });
  afterAll(() => Promise.all([svc.close(), sim.close()]));

  const balance = async () => (await svc.call('GET', '/api/credits', { token: owner.token })).body.balance as number;
  const lastCall = async () => (await svc.call('GET', '/api/calls?limit=1', { token: owner.token })).body.calls[0];
  const trigger = (id: number, args: Record<string, unknown>, signal?: AbortSignal) =>
    fetch(`${svc.url}/mcp/${serverId}`, {
      method: 'POST',
      signal,
      headers: MCP_HEADERS(key),
      body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'automation_Trigger_Workflow_Webhook', arguments: args } }),
    });

  it('keeps the charge when the client goes away after the webhook received the request, and the webhook did run', async () => {
    sim.setSlowWebhookDelay(20_000);
    const before = await balance();
    const calls = sim.webhookCalls.length;
    const controller = new AbortController();
    const pending = trigger(1, { webhook_url: sim.webhookUrl('slow'), body: { order: 42 } }, controller.signal).catch((e: Error) => e);
    await expect.poll(() => sim.webhookCalls.length, { timeout: 5000 }).toBe(calls + 1);
    controller.abort();
    expect(await pending).toBeInstanceOf(Error);
    await expect
      .poll(lastCall, { timeout: 5000 })
      .toMatchObject({ tool: 'automation_Trigger_Workflow_Webhook', outcome: 'tool_error', code: 'cancelled', credits: 1 });
    expect(await balance()).toBe(before - 1);
    expect(sim.webhookCalls.at(-1)).toMatchObject({ workflowId: sim.ids.slow, body: { order: 42 } });
  });

  it('keeps it on notifications/cancelled after the request was sent, and says so', async () => {
    sim.setSlowWebhookDelay(20_000);
    const before = await balance();
    const calls = sim.webhookCalls.length;
    const pending = trigger(7, { webhook_url: sim.webhookUrl('slow'), body: {} });
    await expect.poll(() => sim.webhookCalls.length, { timeout: 5000 }).toBe(calls + 1);
    const cancel = await fetch(`${svc.url}/mcp/${serverId}`, {
      method: 'POST',
      headers: MCP_HEADERS(key),
      body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 7 } }),
    });
    expect(cancel.status).toBe(202);
    const answer = (await (await pending).json()) as { result: { isError: boolean; structuredContent: { error: { code: string; message: string } } } };
    expect(answer.result.isError).toBe(true);
    expect(answer.result.structuredContent.error).toMatchObject({
      code: 'cancelled',
      message: 'The call was cancelled after the provider received the request (it may have acted on it), so its credits are kept',
    });
    expect(await balance()).toBe(before - 1);
  });

  it('refunds a cancellation before the request was sent: a provider that never takes the whole request', async () => {
    // Reads the first bytes (the request has started), then nothing: 24 MB cannot fit in the sockets' buffers.
    const stalled = new Set<net.Socket>();
    const host = net.createServer((socket) => {
      stalled.add(socket);
      socket.once('data', () => socket.pause());
    });
    await new Promise<void>((resolve) => host.listen(0, '127.0.0.1', resolve));
    try {
      const before = await balance();
      const controller = new AbortController();
      const url = `http://127.0.0.1:${(host.address() as net.AddressInfo).port}/webhook/big`;
      const pending = trigger(2, { webhook_url: url, body: { blob: 'x'.repeat(24 * 1024 * 1024) } }, controller.signal).catch((e: Error) => e);
      await expect.poll(() => [...stalled].some((s) => s.isPaused()), { timeout: 10_000 }).toBe(true);
      controller.abort();
      expect(await pending).toBeInstanceOf(Error);
      await expect.poll(lastCall, { timeout: 5000 }).toMatchObject({ outcome: 'refunded', code: 'cancelled', credits: 0 });
      expect(await balance()).toBe(before);
    } finally {
      for (const s of stalled) s.destroy();
      await new Promise((r) => host.close(r));
    }
  });
});

describe('security headers', () => {
  const answers = async (svc: TestService) => {
    const owner = await createOwner(svc, 0);
    return {
      owner,
      list: [
        await fetch(`${svc.url}/healthz`),
        await fetch(`${svc.url}/api/me`),
        await fetch(`${svc.url}/api/servers`, { headers: { authorization: `Bearer ${owner.token}` } }),
        await fetch(`${svc.url}/mcp/none`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' }),
        await fetch(`${svc.url}/.well-known/oauth-authorization-server`),
        await fetch(`${svc.url}/no/such/route`, { method: 'POST' }),
        await fetch(`${svc.url}/login`),
      ],
    };
  };

  it('with an https public URL: Strict-Transport-Security on every answer; nosniff on every JSON answer', async () => {
    const svc = await startTestService({ PUBLIC_URL: 'https://tools.example.com' });
    try {
      for (const res of (await answers(svc)).list) {
        expect(res.headers.get('strict-transport-security'), res.url).toBe('max-age=31536000');
        expect(res.headers.get('x-content-type-options'), res.url).toBe('nosniff');
      }
    } finally {
      await svc.close();
    }
  });

  describe('with an http public URL', () => {
    let svc: TestService;
    beforeAll(async () => {
      svc = await startTestService();
    });
    afterAll(() => svc.close());

    it('no Strict-Transport-Security (a browser would refuse plain http afterwards); nosniff still', async () => {
      for (const res of (await answers(svc)).list) {
        expect(res.headers.get('strict-transport-security'), res.url).toBeNull();
        expect(res.headers.get('x-content-type-options'), res.url).toBe('nosniff');
      }
    });

    it('answers that show a secret once are never stored by a cache', async () => {
      const session = await signUp(svc);
      const server = await asPage(svc, session, 'POST', '/api/servers', { name: 'S' });
      const shown = [
        await asPage(svc, session, 'POST', `/api/servers/${server.body.id}/api-keys`, { name: 'k' }),
        await asPage(svc, session, 'POST', '/api/api-keys', { name: 'g' }),
        await asPage(svc, session, 'POST', '/api/me/tokens', { name: 't' }),
        await svc.call('POST', '/api/admin/owners', { token: svc.operatorToken, body: { email: email() } }),
        await svc.call('POST', '/oauth/register', { body: { redirect_uris: ['http://127.0.0.1:9/cb'] } }),
      ];
      expect(shown.map((r) => r.status)).toEqual([201, 201, 201, 201, 201]);
      for (const res of shown) expect(res.headers.get('cache-control')).toBe('no-store');
    });
  });
});

describe('password change', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService();
  });
  afterAll(() => svc.close());

  it('throttles wrong current passwords per owner like sign-in: the 6th try is 429, even with the right one', async () => {
    const session = await signUp(svc);
    const change = (current: string) => asPage(svc, session, 'POST', '/api/me/password', { current_password: current, new_password: 'a new long passphrase' });
    for (let i = 0; i < 5; i++) expect((await change(`wrong current ${i}`)).status).toBe(400);
    const blocked = await change(PASSWORD);
    expect(blocked.status).toBe(429);
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(blocked.body.message).toMatch(/Too many wrong current passwords/);
    // Another owner is not affected.
    const other = await signUp(svc);
    expect((await asPage(svc, other, 'POST', '/api/me/password', { current_password: PASSWORD, new_password: 'a new long passphrase' })).status).toBe(204);
  });

  it('revokes the management tokens too unless asked not to', async () => {
    const session = await signUp(svc);
    const token = (await asPage(svc, session, 'POST', '/api/me/tokens', { name: 'script' })).body.token as string;
    expect((await svc.call('GET', '/api/me', { token })).status).toBe(200);
    expect(
      (await asPage(svc, session, 'POST', '/api/me/password', { current_password: PASSWORD, new_password: 'second long passphrase', revoke_tokens: false }))
        .status,
    ).toBe(204);
    expect((await svc.call('GET', '/api/me', { token })).status).toBe(200);
    expect(
      (await asPage(svc, session, 'POST', '/api/me/password', { current_password: 'second long passphrase', new_password: 'third long passphrase' })).status,
    ).toBe(204);
    expect((await svc.call('GET', '/api/me', { token })).status).toBe(401);
    expect((await asPage(svc, session, 'GET', '/api/me/tokens')).body.tokens).toEqual([]);
    const bad = await asPage(svc, session, 'POST', '/api/me/password', {
      current_password: 'third long passphrase',
      new_password: 'fourth long passphrase',
      revoke_tokens: 'yes',
    });
    expect(bad.status).toBe(400);
    expect(bad.body.message).toBe('"revoke_tokens" must be true or false');
  });
});

describe('client ID metadata documents', () => {
  let svc: TestService;
  let host: HttpsHost;
  const fetched: string[] = [];
  beforeAll(async () => {
    host = await startHttpsHost((req, res) => {
      fetched.push(req.url ?? '');
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not found"}');
    });
    svc = await startTestService({ OUTBOUND_CA_FILE: host.caFile });
  });
  afterAll(() => Promise.all([svc.close(), host.close()]));

  const authorize = (clientId: string) =>
    fetch(
      `${svc.url}/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: clientId, redirect_uri: 'http://127.0.0.1:9/cb', code_challenge: s256('v'.repeat(43)), code_challenge_method: 'S256', resource: `${svc.url}/mcp/x` })}`,
      { redirect: 'manual', headers: { accept: 'text/html' } },
    );

  it('remembers a failed fetch briefly: the same broken document is fetched once for many requests', async () => {
    const url = `${host.url}/clients/broken.json`;
    const answers = await Promise.all(Array.from({ length: 5 }, () => authorize(url)));
    for (const res of answers) expect(await res.text()).toContain('answered HTTP 404');
    const token = await fetch(`${svc.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'authorization_code', code: 'x', client_id: url }),
    });
    expect(token.status).toBe(401);
    expect(fetched.filter((p) => p === '/clients/broken.json')).toHaveLength(1);
  });

  it('limits the fetches one client address can cause: 30 anonymous requests for new documents, at most 20 fetches', async () => {
    const start = fetched.length;
    const answers = [];
    for (let i = 0; i < 30; i++) answers.push(await authorize(`${host.url}/clients/${i}.json`));
    expect(fetched.length - start).toBeLessThanOrEqual(20);
    const refused = answers.filter((r) => r.status === 429);
    expect(refused.length).toBeGreaterThanOrEqual(10);
    expect(await refused[0].text()).toMatch(/Too many client ID metadata documents were fetched for your address; try again in \d+ s/);
    // The token endpoint is limited the same way (its own RFC error).
    const token = await fetch(`${svc.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'authorization_code', code: 'x', client_id: `${host.url}/clients/other.json` }),
    });
    expect(token.status).toBe(429);
    expect(Number(token.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await token.json()).toMatchObject({ error: 'temporarily_unavailable' });
  });
});

describe('bad input answers 400 or invalid_arguments, never 500 or a network error', () => {
  const NOWHERE = 'http://127.0.0.1:9';
  let svc: TestService;
  let owner: Owner;
  let server: Awaited<ReturnType<typeof createServer>>;
  beforeAll(async () => {
    svc = await startTestService();
    owner = await createOwner(svc, 10);
    server = await createServer(svc, owner, {
      accounts: {
        db: { kind: 'database', name: 'db', url: NOWHERE, key: 'sb_secret_test_key' },
        notion: { kind: 'workspace', name: 'notion', integration_token: 'ntn_test_token', api_url: NOWHERE },
      },
      tools: [{ base_tool: 'get_page', account: 'notion' }, { base_tool: 'automation_Trigger_Workflow_Webhook' }],
    });
  });
  afterAll(() => svc.close());

  const balance = async () => (await svc.call('GET', '/api/credits', { token: owner.token })).body.balance as number;
  /** tools/call with the arguments as JSON text (a lone surrogate survives only as an escape in text). */
  async function callWithText(name: string, argumentsText: string) {
    const res = await fetch(`${svc.url}/mcp/${server.serverId}`, {
      method: 'POST',
      headers: MCP_HEADERS(server.key),
      body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"${name}","arguments":${argumentsText}}}`,
    });
    expect(res.status).toBe(200);
    return ((await res.json()) as { result: { isError: boolean; structuredContent: { error: { code: string; message: string } } } }).result;
  }

  it('answers tool defaults nested 400,000 deep with 400 naming the limit, on create and on update', async () => {
    const deep = '['.repeat(400_000) + ']'.repeat(400_000);
    const send = (method: string, path: string, body: string) =>
      fetch(svc.url + path, { method, headers: { authorization: `Bearer ${owner.token}`, 'content-type': 'application/json' }, body });
    const created = await send(
      'POST',
      `/api/servers/${server.serverId}/tools`,
      `{"base_tool":"database_read_records","name":"deep","account_id":"${server.accountIds.db}","defaults":{"filters":${deep}}}`,
    );
    expect(created.status).toBe(400);
    expect(((await created.json()) as { message: string }).message).toBe('"defaults" are nested more than 32 levels deep (the limit)');
    const tools = (await svc.call('GET', `/api/servers/${server.serverId}/tools`, { token: owner.token })).body.tools as Array<{ id: string }>;
    const updated = await send('PATCH', `/api/servers/${server.serverId}/tools/${tools[0].id}`, `{"defaults":{"page_id":${deep}}}`);
    expect(updated.status).toBe(400);
    expect(((await updated.json()) as { message: string }).message).toBe('"defaults" are nested more than 32 levels deep (the limit)');
  });

  it('a lone surrogate in a path value is invalid_arguments naming the argument, charged nothing', async () => {
    const before = await balance();
    const result = await callWithText('get_page', '{"page_id":"abc\\ud800"}');
    expect(result.isError).toBe(true);
    expect(result.structuredContent.error).toMatchObject({ code: 'invalid_arguments' });
    expect(result.structuredContent.error.message).toBe('Invalid arguments: "page_id" contains a lone surrogate (U+D800), which is not valid Unicode text');
    expect(await balance()).toBe(before);
  });

  it('a lone surrogate deep in the arguments, in a value or in a key, is named by its path', async () => {
    const before = await balance();
    const webhook = (headers: string) => callWithText('automation_Trigger_Workflow_Webhook', `{"webhook_url":"${NOWHERE}/webhook/x","body":${headers}}`);
    const inValue = await webhook('{"items":[{"a":"ok"},{"b":"x\\udfff"}]}');
    expect(inValue.structuredContent.error.message).toBe(
      'Invalid arguments: "body.items.1.b" contains a lone surrogate (U+DFFF), which is not valid Unicode text',
    );
    const inKey = await webhook('{"items":[{"\\ud83d":1}]}');
    expect(inKey.structuredContent.error.message).toBe(
      'Invalid arguments: "body.items.0.\ud83d" contains a lone surrogate (U+D83D), which is not valid Unicode text',
    );
    expect(await balance()).toBe(before);
  });

  it('a header value that is not ASCII is invalid_arguments naming the argument, charged nothing', async () => {
    const before = await balance();
    for (const value of ['日本', 'caf\u00e9', 'line\r\nInjected: 1']) {
      const result = await callWithText(
        'automation_Trigger_Workflow_Webhook',
        JSON.stringify({ webhook_url: `${NOWHERE}/webhook/x`, headers: { 'X-Token': value } }),
      );
      expect(result.isError, value).toBe(true);
      expect(result.structuredContent.error.code, value).toBe('invalid_arguments');
      expect(result.structuredContent.error.message, value).toMatch(/^"headers\.X-Token" /);
    }
    expect(await balance()).toBe(before);
  });

  it('refuses a Notion token (or any account field) with a line break or another control character when it is saved', async () => {
    for (const token of ['ntn_abc\r\n', 'ntn_a\nb', 'ntn_abc\u0000', 'ntn_abc\t']) {
      const res = await svc.call('POST', '/api/accounts', { token: owner.token, body: { kind: 'workspace', name: 'n', integration_token: token } });
      expect(res.status, JSON.stringify(token)).toBe(400);
      expect(res.body.message).toBe(
        '"integration_token" (Integration Token) must not contain a line break or another control character (often copied by accident)',
      );
    }
    const patched = await svc.call('PATCH', `/api/accounts/${server.accountIds.notion}`, { token: owner.token, body: { integration_token: 'ntn_new\r\n' } });
    expect(patched.status).toBe(400);
    const url = await svc.call('POST', '/api/accounts', {
      token: owner.token,
      body: { kind: 'database', name: 'd', url: 'https://x.supabase.co', key: 'k\r\nX: 1' },
    });
    expect(url.status).toBe(400);
    expect(url.body.message).toMatch(/^"key" \(.*\) must not contain a line break/);
    // A secret that goes into a header must be ASCII, or every call with it would fail.
    const accented = await svc.call('POST', '/api/accounts', {
      token: owner.token,
      body: { kind: 'workspace', name: 'n', integration_token: 'ntn_caf\u00e9' },
    });
    expect(accented.status).toBe(400);
    expect(accented.body.message).toBe(
      '"integration_token" (Integration Token) is sent in the Authorization header, so it must be ASCII: it contains "é" (U+00E9)',
    );
  });
});
