// MCP authorization (OAuth 2.1) end to end: the official SDK client's own OAuth support connects to a server
// knowing only its URL (discovery, registration both ways, the consent approved on the real page in
// Chromium, token, tools/list and tools/call, refresh), then the attacks the RFCs name, over real HTTP.
import { spawn } from 'node:child_process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { type OAuthClientProvider, UnauthorizedError, auth } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumAvailable, launchChromium, signInOnPage } from './browser/chromium.ts';
import { listenOnLoopback, type RunningSandbox } from '../sandboxes/harness.ts';
import { type JiraSandbox, startJiraSandbox } from '../sandboxes/jira/jira-sandbox.ts';
import { type HttpsHost, startHttpsHost } from './support/https-host.ts';
import { MemoryOAuthClient } from './support/oauth-client.ts';
import { type TestService, createServer, startTestService } from './support/service.ts';
import { s256 } from '../runtime/oauth/grants.ts';
import { sha256 } from '../runtime/secrets.ts';

const PASSWORD = 'a long enough passphrase';

let svc: TestService;
let jira: JiraSandbox;
/** Where the browser lands after the consent (a desktop client's loopback callback). */
let callback: RunningSandbox;
let lastCallback: URL | undefined;
/** An https host serving client ID metadata documents, with a certificate the service is told to trust. */
let documents: HttpsHost;
let documentsUrl: string;
const documentBodies = new Map<string, unknown>();

/** The signed-up owner: e-mail and password for the browser, an owner token for the API. */
const owner = { email: `oauth-${Date.now()}@example.com`, token: '' };
let serverId: string;
let otherServerId: string;

beforeAll(async () => {
  // A self-signed certificate for 127.0.0.1, trusted by the service through OUTBOUND_CA_FILE.
  documents = await startHttpsHost((req, res) => {
    const body = documentBodies.get(req.url ?? '');
    res.writeHead(body === undefined ? 404 : 200, { 'content-type': 'application/json' }).end(JSON.stringify(body ?? { error: 'not found' }));
  });
  documentsUrl = documents.url;

  callback = await listenOnLoopback((req, res) => {
    const url = new URL(req.url!, 'http://127.0.0.1');
    if (url.pathname === '/callback') lastCallback = url;
    res.writeHead(200, { 'content-type': 'text/html' }).end('<p>Signed in. You can close this window.</p>');
  });
  [svc, jira] = await Promise.all([startTestService({ OUTBOUND_CA_FILE: documents.caFile, KEY_CACHE_MS: '0', STARTING_CREDITS: '100' }), startJiraSandbox()]);

  const signup = await fetch(`${svc.url}/api/auth/signup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: owner.email, password: PASSWORD }),
  });
  const session = { cookie: signup.headers.get('set-cookie')!.split(';')[0], csrf: ((await signup.json()) as { csrf_token: string }).csrf_token };
  const issued = await fetch(`${svc.url}/api/me/tokens`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', cookie: session.cookie, 'x-csrf-token': session.csrf, origin: svc.url },
    body: '{"name":"oauth test"}',
  });
  owner.token = ((await issued.json()) as { token: string }).token;
  const ownerRef = { id: '', token: owner.token };
  const account = { kind: 'tracker', name: 'Jira', site_url: jira.url, email: jira.credentials.email, api_token: jira.credentials.apiToken };
  ({ serverId } = await createServer(svc, ownerRef, { accounts: { jira: account }, tools: [{ base_tool: 'tracker_get_issue', account: 'jira' }] }));
  ({ serverId: otherServerId } = await createServer(svc, ownerRef, { tools: [] }));
});

afterAll(async () => {
  await Promise.all([svc?.close(), jira?.close(), callback?.close(), documents?.close()]);
});

/** A loopback port nothing listens on (for a callback server another process opens). */
async function freePort(): Promise<number> {
  const probe = await listenOnLoopback(() => undefined);
  const port = Number(new URL(probe.url).port);
  await probe.close();
  return port;
}

const mcpUrl = (id = serverId) => `${svc.url}/mcp/${id}`;
const redirectUri = () => `${callback.url}/callback`;

async function connect(provider: OAuthClientProvider, id = serverId): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const transport = new StreamableHTTPClientTransport(new URL(mcpUrl(id)), { authProvider: provider });
  const client = new Client({ name: 'oauth-test', version: '1.0.0' });
  await client.connect(transport);
  return { client, transport };
}

/** Raw MCP request with a bearer credential. */
const mcp = (token: string, id = serverId) =>
  fetch(mcpUrl(id), {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${token}` },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
  });

const form = (url: string, fields: Record<string, string>, headers: Record<string, string> = {}) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers }, body: new URLSearchParams(fields) });

describe.skipIf(!chromiumAvailable)('an SDK client that knows only the URL, approved in Chromium', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
  });

  /** The person's part: the authorization URL opens, they sign in, look at the consent page, approve. */
  async function approveInBrowser(url: URL, clientName = 'Test agent'): Promise<string> {
    const context = await browser.newContext({ viewport: { width: 1100, height: 900 } });
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('pageerror', (err) => problems.push(err.message));
    lastCallback = undefined;
    await page.goto(url.toString());
    expect(new URL(page.url()).pathname).toBe('/login');
    await signInOnPage(page, { email: owner.email, password: PASSWORD }, /\/oauth\/authorize/);
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toContain(`${clientName} wants to use your tools`);
    const text = await page.locator('main').textContent();
    expect(text).toContain('tracker_get_issue');
    expect(text).toMatch(/1 credit per call/);
    const redirect = url.searchParams.get('redirect_uri')!;
    await Promise.all([page.waitForURL(`${redirect}**`), page.getByRole('button', { name: 'Approve' }).click()]);
    await context.close();
    expect(problems).toEqual([]);
    if (redirect !== redirectUri()) return '';
    const landed = lastCallback as URL | undefined;
    expect(landed?.searchParams.get('iss')).toBe(svc.url);
    return landed!.searchParams.get('code')!;
  }

  async function fullFlow(provider: MemoryOAuthClient) {
    // 1. No credentials: 401 with the resource metadata URL; the SDK discovers, registers, and sends the person away.
    await expect(connect(provider)).rejects.toBeInstanceOf(UnauthorizedError);
    expect(provider.authorizationUrl?.origin).toBe(svc.url);
    expect(provider.authorizationUrl?.searchParams.get('resource')).toBe(mcpUrl());
    expect(provider.authorizationUrl?.searchParams.get('code_challenge_method')).toBe('S256');
    // 2. Approved in the browser; the code comes back to the client's loopback callback.
    const code = await approveInBrowser(provider.authorizationUrl!);
    const first = new StreamableHTTPClientTransport(new URL(mcpUrl()), { authProvider: provider });
    await first.finishAuth(code);
    expect(provider.saved?.access_token).toMatch(/^mcpat_/);
    // 3. The client works: tools/list and a paid tools/call.
    const { client } = await connect(provider);
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['tracker_get_issue']);
    const before = (await (await fetch(`${svc.url}/api/credits`, { headers: { authorization: `Bearer ${owner.token}` } })).json()) as { balance: number };
    const result = await client.callTool({ name: 'tracker_get_issue', arguments: { issue_key: 'DEMO-1', fields: 'summary' } });
    expect(result.isError).toBe(false);
    const after = (await (await fetch(`${svc.url}/api/credits`, { headers: { authorization: `Bearer ${owner.token}` } })).json()) as { balance: number };
    expect(before.balance - after.balance).toBe(1);
    await client.close();
    // 4. Refresh: a new pair; the old access token still works until it expires, the old refresh token is spent.
    const old = provider.saved!;
    expect(await auth(provider, { serverUrl: mcpUrl() })).toBe('AUTHORIZED');
    expect(provider.saved!.access_token).not.toBe(old.access_token);
    expect(provider.saved!.refresh_token).not.toBe(old.refresh_token);
    const again = await connect(provider);
    expect((await again.client.listTools()).tools).toHaveLength(1);
    await again.client.close();
  }

  // The official conformance suite's authorization-server scenarios (0.2.0-alpha.12 is the first release
  // with them; it needs Node 22, which npx takes from the npm registry): the metadata document, then the
  // authorization code grant, whose consent is given in Chromium on the URL the suite prints.
  it('passes the MCP conformance scenarios authorization-server-metadata-endpoint and authorization-code-grant', { timeout: 240_000 }, async () => {
    const port = await freePort();
    const { body: client } = await register({ client_name: 'Conformance suite', redirect_uris: [`http://127.0.0.1:${port}/callback`] });
    const child = spawn(
      'npx',
      [
        '-y',
        '-p',
        'node@22',
        '-p',
        '@modelcontextprotocol/conformance@0.2.0-alpha.12',
        'conformance',
        'authorization',
        '--url',
        svc.url,
        '--client-id',
        client.client_id,
        '--resource',
        mcpUrl(),
        '--port',
        String(port),
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const exit = new Promise<number | null>((resolve) => child.on('close', resolve));
    await expect.poll(() => /^(http\S+\/oauth\/authorize\?\S+)$/m.exec(out)?.[1], { timeout: 180_000, interval: 200 }).toBeTruthy();
    const url = /^(http\S+\/oauth\/authorize\?\S+)$/m.exec(out)![1];
    await approveInBrowser(new URL(url), 'Conformance suite');
    expect(await exit, out).toBe(0);
    expect(out).toMatch(/✓ authorization-server-metadata-endpoint: \d+ passed, 0 failed/);
    expect(out).toMatch(/✓ authorization-code-grant: 1 passed, 0 failed/);
  });

  it('with dynamic client registration', async () => {
    const provider = new MemoryOAuthClient(redirectUri);
    await fullFlow(provider);
    expect(provider.info?.client_id).toMatch(/^mcpc_/);
    // The app is listed on the Keys page's Connected apps, with the server and its last use.
    const grants = (await (await fetch(`${svc.url}/api/oauth/grants`, { headers: { authorization: `Bearer ${owner.token}` } })).json()) as {
      grants: Array<Record<string, unknown>>;
    };
    expect(grants.grants[0]).toMatchObject({ client_name: 'Test agent', registration: 'dynamic', server_id: serverId, revoked_at: null });

    // The owner disconnects it on the Keys page; the client's token stops working at once.
    const page = await browser.newPage();
    await page.goto(`${svc.url}/login?next=/keys`);
    await signInOnPage(page, { email: owner.email, password: PASSWORD }, `${svc.url}/keys`);
    const apps = page.getByRole('region', { name: 'Connected apps' });
    await expect.poll(() => apps.getByRole('row').nth(1).textContent()).toContain('Test agent');
    expect((await mcp(provider.saved!.access_token)).status).toBe(200);
    await apps.getByRole('button', { name: 'Disconnect Test agent' }).first().click();
    await Promise.all([page.waitForEvent('load'), page.getByRole('dialog').getByRole('button', { name: 'Disconnect' }).click()]);
    await expect.poll(() => apps.getByRole('row').nth(1).textContent()).toContain('revoked');
    expect((await mcp(provider.saved!.access_token)).status).toBe(401);
    await page.close();
  });

  it('with a client ID metadata document fetched over https', async () => {
    const clientId = `${documentsUrl}/clients/test-agent.json`;
    documentBodies.set('/clients/test-agent.json', {
      client_id: clientId,
      client_name: 'Test agent',
      redirect_uris: [redirectUri()],
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
    });
    const provider = new MemoryOAuthClient(redirectUri, undefined, clientId);
    await fullFlow(provider);
    expect(provider.info?.client_id).toBe(clientId);
  });
});

/** An approval made through the API (the consent page's own call), for the negative cases. */
async function approve(
  clientId: string,
  challenge: string,
  o: { resource?: string; redirect?: string; server?: string; restrictions?: Record<string, unknown> } = {},
) {
  const res = await fetch(`${svc.url}/api/oauth/authorize`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${owner.token}` },
    body: JSON.stringify({
      response_type: 'code',
      client_id: clientId,
      redirect_uri: o.redirect ?? redirectUri(),
      code_challenge: challenge,
      code_challenge_method: 'S256',
      resource: o.resource ?? mcpUrl(o.server),
      state: 'st',
      decision: 'approve',
      ...o.restrictions,
    }),
  });
  const body = (await res.json()) as { redirect_to: string; message?: string };
  if (!res.ok) throw new Error(body.message);
  return new URL(body.redirect_to).searchParams.get('code')!;
}

async function register(meta: Record<string, unknown> = {}) {
  const res = await fetch(`${svc.url}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_name: 'Raw client', redirect_uris: [redirectUri()], token_endpoint_auth_method: 'none', ...meta }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

const VERIFIER = 'v'.repeat(50);
const token = (clientId: string, code: string, verifier = VERIFIER, extra: Record<string, string> = {}) =>
  form(`${svc.url}/oauth/token`, {
    grant_type: 'authorization_code',
    client_id: clientId,
    code,
    redirect_uri: redirectUri(),
    code_verifier: verifier,
    ...extra,
  });
const refresh = (clientId: string, refreshToken: string) =>
  form(`${svc.url}/oauth/token`, { grant_type: 'refresh_token', client_id: clientId, refresh_token: refreshToken });

async function tokensFor(clientId: string, server = serverId, restrictions?: Record<string, unknown>) {
  const res = await token(clientId, await approve(clientId, s256(VERIFIER), { server, restrictions }));
  expect(res.status).toBe(200);
  return (await res.json()) as { access_token: string; refresh_token: string };
}

/** The grant (connected app) a refresh token belongs to. */
const grantOf = async (refreshToken: string) => (await svc.store.collection('oauth_refresh_tokens').findOne({ _id: sha256(refreshToken) }))!.grant_id as string;

describe('discovery documents', () => {
  it('a 401 names the resource metadata, which names this authorization server', async () => {
    const res = await fetch(mcpUrl(), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
    });
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({ error: 'Unauthorized', message: 'Invalid or expired API key' });
    const challenge = res.headers.get('www-authenticate')!;
    expect(challenge).toBe(`Bearer resource_metadata="${svc.url}/.well-known/oauth-protected-resource/mcp/${serverId}", scope="mcp:tools"`);
    const prm = await (await fetch(`${svc.url}/.well-known/oauth-protected-resource/mcp/${serverId}`)).json();
    expect(prm).toMatchObject({ resource: mcpUrl(), authorization_servers: [svc.url], scopes_supported: ['mcp:tools'] });
    const as = (await (await fetch(`${svc.url}/.well-known/oauth-authorization-server`)).json()) as Record<string, unknown>;
    expect(as).toMatchObject({
      issuer: svc.url,
      code_challenge_methods_supported: ['S256'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      client_id_metadata_document_supported: true,
      response_types_supported: ['code'],
    });
    expect(as.grant_types_supported).not.toContain('password');
  });

  it('lets browser-based clients read the documents and call the token endpoint (CORS, no cookies)', async () => {
    const preflight = await fetch(`${svc.url}/oauth/token`, {
      method: 'OPTIONS',
      headers: { origin: 'https://app.example', 'access-control-request-method': 'POST' },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('*');
    const doc = await fetch(`${svc.url}/.well-known/oauth-authorization-server`, { headers: { origin: 'https://app.example' } });
    expect(doc.headers.get('access-control-allow-origin')).toBe('*');
  });

  it('says nothing about whether a server exists', async () => {
    const [mine, none] = await Promise.all([
      fetch(`${svc.url}/.well-known/oauth-protected-resource/mcp/${serverId}`),
      fetch(`${svc.url}/.well-known/oauth-protected-resource/mcp/no-such-server`),
    ]);
    expect(mine.status).toBe(none.status);
    const other = (await none.json()) as Record<string, unknown>;
    expect(Object.keys(other)).toEqual(Object.keys((await mine.json()) as object));
  });
});

describe('registration and redirect URIs', () => {
  it('accepts https and loopback http (any port); refuses everything else with invalid_redirect_uri', async () => {
    expect((await register({ redirect_uris: ['https://app.example/cb', 'http://127.0.0.1:1/cb', 'http://[::1]/cb', 'http://localhost:9/x'] })).status).toBe(
      201,
    );
    for (const uri of [
      'http://app.example/cb',
      'javascript:alert(1)',
      'https://app.example/cb#frag',
      'com.example.app:/cb',
      'https://user:pw@app.example/cb',
      '/relative',
    ]) {
      const res = await register({ redirect_uris: [uri] });
      expect(res.status, uri).toBe(400);
      expect(res.body.error, uri).toBe('invalid_redirect_uri');
    }
    expect((await register({ grant_types: ['password'] })).body.error).toBe('invalid_client_metadata');
  });

  it('refuses an application name with control or invisible characters (bidi overrides, zero-width spaces)', async () => {
    for (const [name, code] of [
      ['Helper \u202E(rotarepo eht yb deifirev)', 'U+202E'],
      ['Pay\u200Bpal', 'U+200B'],
      ['Tab\u0009name', 'U+0009'],
      ['Isolate \u2066x\u2069', 'U+2066'],
    ]) {
      const res = await register({ client_name: name });
      expect(res.status, name).toBe(400);
      expect(res.body.error).toBe('invalid_client_metadata');
      expect(res.body.error_description).toContain(`"client_name" must not contain control or invisible characters (${code}`);
    }
  });

  it('shows the application name isolated on the consent page, whatever direction marks a name stored before the rule holds', async () => {
    const { body } = await register({ client_name: 'Plain app' });
    // As a client registered before names were checked would be stored.
    const legacy = 'Helper \u202E(rotarepo eht yb deifirev)';
    await svc.store.collection('oauth_clients').updateOne({ _id: body.client_id }, { $set: { client_name: legacy } });
    const login = await fetch(`${svc.url}/api/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: owner.email, password: PASSWORD }),
    });
    const cookie = login.headers.getSetCookie()[0].split(';')[0];
    const url = `${svc.url}/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: body.client_id, redirect_uri: redirectUri(), code_challenge: s256(VERIFIER), code_challenge_method: 'S256', resource: mcpUrl() })}`;
    const page = await (await fetch(url, { headers: { cookie, accept: 'text/html' } })).text();
    expect(page).toContain(`<h1><bdi class="client-name">${legacy}</bdi> wants to use your tools</h1>`);
    expect(page).toContain(`<dd><bdi>${legacy}</bdi> <span class="badge warn"`);
    expect(page).toContain(`<title>Authorize \u2068${legacy}\u2069`);
  });

  it('never redirects to a URI the client did not register (shown as a page instead)', async () => {
    const { body } = await register();
    for (const uri of [`${callback.url}/other`, `${redirectUri()}?x=1`, 'https://evil.example/cb']) {
      const url = `${svc.url}/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: body.client_id, redirect_uri: uri, code_challenge: s256(VERIFIER), code_challenge_method: 'S256', resource: mcpUrl() })}`;
      const res = await fetch(url, { redirect: 'manual', headers: { accept: 'text/html' } });
      expect(res.status, uri).toBe(400);
      expect(res.headers.get('location')).toBeNull();
      expect(await res.text()).toContain('is not one that \u2068Raw client\u2069 registered');
    }
  });

  it('sends other bad requests back to the client with the error of RFC 6749', async () => {
    const { body } = await register();
    const base = {
      response_type: 'code',
      client_id: body.client_id,
      redirect_uri: redirectUri(),
      code_challenge: s256(VERIFIER),
      code_challenge_method: 'S256',
      resource: mcpUrl(),
      state: 'xyz',
    };
    const cases: Array<[Record<string, string>, string]> = [
      [{ code_challenge_method: 'plain' }, 'invalid_request'],
      [{ code_challenge: '' }, 'invalid_request'],
      [{ response_type: 'token' }, 'unsupported_response_type'],
      [{ resource: '' }, 'invalid_target'],
      [{ resource: 'https://elsewhere.example/mcp/x' }, 'invalid_target'],
      [{ scope: 'admin' }, 'invalid_scope'],
    ];
    for (const [change, error] of cases) {
      const res = await fetch(`${svc.url}/oauth/authorize?${new URLSearchParams({ ...base, ...change })}`, { redirect: 'manual' });
      expect(res.status, JSON.stringify(change)).toBe(302);
      const to = new URL(res.headers.get('location')!);
      expect(to.origin + to.pathname).toBe(redirectUri());
      expect(to.searchParams.get('error'), JSON.stringify(change)).toBe(error);
      expect(to.searchParams.get('state')).toBe('xyz');
    }
  });

  it('refuses client ID metadata URLs on private addresses through the outbound guard', async () => {
    for (const clientId of [
      'https://10.0.0.1/client.json',
      'https://169.254.169.254/latest/meta-data',
      'https://[fd00::1]/c.json',
      'http://127.0.0.1/c.json',
    ]) {
      const url = `${svc.url}/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: clientId, redirect_uri: redirectUri(), code_challenge: s256(VERIFIER), code_challenge_method: 'S256', resource: mcpUrl() })}`;
      const res = await fetch(url, { redirect: 'manual', headers: { accept: 'text/html' } });
      expect(res.status, clientId).toBe(400);
      expect(res.headers.get('location')).toBeNull();
      expect(await res.text(), clientId).toMatch(/could not be read|must use https/);
    }
  });

  it('refuses a metadata document that does not name itself or carries a secret', async () => {
    const clientId = `${documentsUrl}/clients/liar.json`;
    documentBodies.set('/clients/liar.json', { client_id: `${documentsUrl}/clients/other.json`, client_name: 'Liar', redirect_uris: [redirectUri()] });
    const res = await token(clientId, 'x');
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ error: 'invalid_client', error_description: expect.stringContaining('must contain "client_id"') });
  });
});

describe('codes, tokens and their misuse', () => {
  let clientId: string;
  beforeAll(async () => {
    clientId = (await register()).body.client_id;
  });

  it('refuses a missing or wrong verifier, and a code of another client', async () => {
    const code = await approve(clientId, s256(VERIFIER));
    expect(await (await token(clientId, code, '')).json()).toMatchObject({ error: 'invalid_request' });
    const other = (await register()).body.client_id;
    const code2 = await approve(clientId, s256(VERIFIER));
    const stolen = await token(other, code2);
    expect(stolen.status).toBe(400);
    expect(await stolen.json()).toMatchObject({ error: 'invalid_grant', error_description: 'This authorization code was issued to another client' });
    // Refused, not spent: the client it was issued to still gets its tokens.
    expect((await token(clientId, code2)).status).toBe(200);
    const code3 = await approve(clientId, s256(VERIFIER));
    const wrong = await token(clientId, code3, 'w'.repeat(50));
    expect(await wrong.json()).toMatchObject({ error: 'invalid_grant', error_description: expect.stringContaining('code_verifier does not match') });
    expect(wrong.headers.get('cache-control')).toBe('no-store');
  });

  it('a reused code fails and revokes what the first exchange issued', async () => {
    const code = await approve(clientId, s256(VERIFIER));
    const first = (await (await token(clientId, code)).json()) as { access_token: string };
    expect((await mcp(first.access_token)).status).toBe(200);
    const second = await token(clientId, code);
    expect(await second.json()).toMatchObject({ error: 'invalid_grant' });
    expect((await mcp(first.access_token)).status).toBe(401);
  });

  it('a token is for one server only (audience), and expired tokens are refused', async () => {
    const t = await tokensFor(clientId);
    const elsewhere = await mcp(t.access_token, otherServerId);
    expect(elsewhere.status).toBe(401);
    expect(elsewhere.headers.get('www-authenticate')).toContain('error="invalid_token", error_description="The access token was issued for another server"');
    await svc.store.collection('oauth_access_tokens').updateMany({}, { $set: { expires_at: new Date(Date.now() - 1000) } });
    const expired = await mcp(t.access_token);
    expect(expired.status).toBe(401);
    expect(expired.headers.get('www-authenticate')).toContain('The access token expired');
  });

  it('a refresh token reused after the reuse window revokes the whole family', async () => {
    const t = await tokensFor(clientId);
    const grantId = await grantOf(t.refresh_token);
    const rotated = (await (await refresh(clientId, t.refresh_token)).json()) as { access_token: string; refresh_token: string };
    expect((await mcp(rotated.access_token)).status).toBe(200);
    // The first use was more than OAUTH_REFRESH_REUSE_SECONDS (60) ago.
    await svc.store.collection('oauth_refresh_tokens').updateOne({ _id: sha256(t.refresh_token) }, { $set: { used_at: new Date(Date.now() - 61_000) } });
    const replay = await refresh(clientId, t.refresh_token);
    expect(await replay.json()).toMatchObject({ error: 'invalid_grant', error_description: expect.stringContaining('already used') });
    expect((await mcp(rotated.access_token)).status).toBe(401);
    expect(await (await refresh(clientId, rotated.refresh_token)).json()).toMatchObject({ error: 'invalid_grant' });
    const grants = (await svc.call('GET', '/api/oauth/grants', { token: owner.token })).body.grants as Array<{ id: string; revoked_reason: string | null }>;
    expect(grants.find((g) => g.id === grantId)?.revoked_reason).toBe('refresh token reused');
  });

  it('two concurrent refreshes of one token both succeed with the same pair (a client refreshing from two places), and nothing is revoked', async () => {
    const t = await tokensFor(clientId);
    const [a, b] = await Promise.all([refresh(clientId, t.refresh_token), refresh(clientId, t.refresh_token)]);
    expect([a.status, b.status]).toEqual([200, 200]);
    const pairs = (await Promise.all([a.json(), b.json()])) as Array<{ access_token: string; refresh_token: string; expires_in: number }>;
    expect(pairs[1].refresh_token).toBe(pairs[0].refresh_token);
    expect(pairs[1].access_token).toBe(pairs[0].access_token);
    expect((await mcp(pairs[0].access_token)).status).toBe(200);
    // Within the window the same client may present it once more (an answer lost on the way): the same pair
    // again, and it rotates on as usual.
    const again = (await (await refresh(clientId, t.refresh_token)).json()) as { access_token: string; refresh_token: string };
    expect(again).toMatchObject({ access_token: pairs[0].access_token, refresh_token: pairs[0].refresh_token });
    expect((await refresh(clientId, pairs[0].refresh_token)).status).toBe(200);
    expect((await mcp(t.access_token)).status).toBe(200);
  });

  it('replays of a spent refresh token within the reuse window all get the same successor pair: one live line, never a new branch', async () => {
    const t = await tokensFor(clientId);
    const grantId = await grantOf(t.refresh_token);
    const first = (await (await refresh(clientId, t.refresh_token)).json()) as { access_token: string; refresh_token: string; expires_in: number };
    const replays = await Promise.all(Array.from({ length: 20 }, () => refresh(clientId, t.refresh_token)));
    for (const res of replays) {
      expect(res.status).toBe(200);
      const pair = (await res.json()) as { access_token: string; refresh_token: string; expires_in: number };
      expect(pair.access_token).toBe(first.access_token);
      expect(pair.refresh_token).toBe(first.refresh_token);
      expect(pair.expires_in).toBeLessThanOrEqual(first.expires_in);
    }
    const live = await svc.store.collection('oauth_refresh_tokens').find({ grant_id: grantId, used_at: null });
    expect(live.map((d) => d._id)).toEqual([sha256(first.refresh_token)]);
    const access = await svc.store.collection('oauth_access_tokens').find({ grant_id: grantId });
    expect(access).toHaveLength(2); // the code's pair and the one successor
  });

  it("a refresh token presented by another client is refused and stays its client's", async () => {
    const t = await tokensFor(clientId);
    const other = (await register()).body.client_id as string;
    const stolen = await refresh(other, t.refresh_token);
    expect(stolen.status).toBe(400);
    expect(await stolen.json()).toMatchObject({ error: 'invalid_grant', error_description: 'This refresh token was issued to another client' });
    // Not spent, not counted as a reuse: its client refreshes as if nothing happened, and nothing was revoked.
    const mine = await refresh(clientId, t.refresh_token);
    expect(mine.status).toBe(200);
    expect((await mcp(((await mine.json()) as { access_token: string }).access_token)).status).toBe(200);
    expect((await mcp(t.access_token)).status).toBe(200);
  });

  it('an authorization refreshed within its refresh lifetime stays connected for another lifetime (sliding expiry)', async () => {
    const t = await tokensFor(clientId);
    const grantId = await grantOf(t.refresh_token);
    // 29 days and 23 hours later: the refresh token has a minute left.
    const soon = new Date(Date.now() + 60_000);
    await svc.store.collection('oauth_refresh_tokens').updateOne({ _id: sha256(t.refresh_token) }, { $set: { expires_at: soon } });
    await svc.store.collection('oauth_grants').updateOne({ _id: grantId }, { $set: { idle_expires_at: soon } });
    const next = (await (await refresh(clientId, t.refresh_token)).json()) as { refresh_token: string };
    const stored = await svc.store.collection('oauth_refresh_tokens').findOne({ _id: sha256(next.refresh_token) });
    expect((stored!.expires_at as Date).getTime()).toBeGreaterThan(Date.now() + 29 * 86_400_000);
    const grant = ((await svc.call('GET', '/api/oauth/grants', { token: owner.token })).body.grants as Array<{ id: string; idle_expires_at: string }>).find(
      (g) => g.id === grantId,
    )!;
    expect(new Date(grant.idle_expires_at).getTime()).toBeGreaterThan(Date.now() + 29 * 86_400_000);
    // Left unused past its lifetime, a refresh token is refused.
    await svc.store.collection('oauth_refresh_tokens').updateOne({ _id: sha256(next.refresh_token) }, { $set: { expires_at: new Date(Date.now() - 1000) } });
    expect(await (await refresh(clientId, next.refresh_token)).json()).toMatchObject({
      error: 'invalid_grant',
      error_description: expect.stringContaining('expired'),
    });
  });

  it('an app approved read-only with a budget is restricted like a key, and the owner can change that', async () => {
    const t = await tokensFor(clientId, serverId, { access: 'read', credit_limit: { credits: 1, per: 'day' } });
    const id = await grantOf(t.refresh_token);
    const grant = ((await svc.call('GET', '/api/oauth/grants', { token: owner.token })).body.grants as Array<Record<string, unknown>>).find(
      (g) => g.id === id,
    )!;
    expect(grant).toMatchObject({ access: 'read', tools: null, credit_limit: { credits: 1, per: 'day' }, budget_spent: 0 });
    const call = (name: string) =>
      fetch(mcpUrl(), {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'mcp-protocol-version': '2025-11-25', authorization: `Bearer ${t.access_token}` },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: { issue_key: 'DEMO-1', fields: 'summary' } } }),
      }).then(async (r) => ((await r.json()) as { result: { isError: boolean; content: Array<{ text: string }> } }).result);
    expect((await call('tracker_get_issue')).isError).toBe(false);
    const over = await call('tracker_get_issue');
    expect(over.content[0].text).toContain("This connected app's budget is 1 credit per day (UTC)");
    // The owner narrows it to no tool it has (an allow-list must name tools of the server) and lifts the budget.
    const bad = await svc.call('PATCH', `/api/oauth/grants/${grant.id}`, { token: owner.token, body: { tools: ['nope'] } });
    expect(bad.body.message).toBe('"tools": no tool named nope; the tools are tracker_get_issue');
    const patched = await svc.call('PATCH', `/api/oauth/grants/${grant.id}`, { token: owner.token, body: { credit_limit: null, access: 'all' } });
    expect(patched.body).toMatchObject({ access: 'all', credit_limit: null });
    expect((await call('tracker_get_issue')).isError).toBe(false);
    // An end date passed: the app's token is refused like an expired one, and so is its refresh.
    await svc.store.collection('oauth_grants').updateOne({ _id: grant.id as string }, { $set: { 'restrictions.expires_at': new Date(Date.now() - 1000) } });
    const expired = await mcp(t.access_token);
    expect(expired.status).toBe(401);
    expect(expired.headers.get('www-authenticate')).toContain('The authorization expired');
    expect(await (await refresh(clientId, t.refresh_token)).json()).toMatchObject({ error: 'invalid_grant' });
  });

  it('revocation (RFC 7009), server deletion, key revoke-all and the owner end tokens', async () => {
    const a = await tokensFor(clientId);
    expect((await form(`${svc.url}/oauth/revoke`, { client_id: clientId, token: a.refresh_token })).status).toBe(200);
    expect((await mcp(a.access_token)).status).toBe(401);
    expect((await form(`${svc.url}/oauth/revoke`, { client_id: clientId, token: 'mcprt_unknown' })).status).toBe(200);

    const b = await tokensFor(clientId);
    const all = await svc.call('POST', `/api/servers/${serverId}/api-keys/revoke-all`, { token: owner.token });
    expect(all.body.oauth_grants_revoked).toBeGreaterThanOrEqual(1);
    expect((await mcp(b.access_token)).status).toBe(401);

    const c = await tokensFor(clientId);
    const grants = (await svc.call('GET', '/api/oauth/grants', { token: owner.token })).body.grants as Array<{ id: string; revoked_at: unknown }>;
    const active = grants.find((g) => !g.revoked_at)!;
    expect((await svc.call('DELETE', `/api/oauth/grants/${active.id}`, { token: owner.token })).status).toBe(200);
    expect((await mcp(c.access_token)).status).toBe(401);

    const temp = (await svc.call('POST', '/api/servers', { token: owner.token, body: { name: 'temporary' } })).body.id as string;
    const d = await tokensFor(clientId, temp);
    expect((await mcp(d.access_token, temp)).status).toBe(200);
    expect((await svc.call('DELETE', `/api/servers/${temp}`, { token: owner.token })).status).toBe(204);
    expect((await svc.call('POST', '/api/servers', { token: owner.token, body: { name: 'same id again', id: temp } })).status).toBe(201);
    expect((await mcp(d.access_token, temp)).status).toBe(401);
  });

  it('tokens of an OAuth app share the rate limits of a key and never appear in logs', async () => {
    const t = await tokensFor(clientId);
    const res = await mcp(t.access_token);
    expect(res.headers.get('ratelimit-limit')).toBe('100');
    const logs = svc.logs.join('\n');
    expect(logs).not.toContain(t.access_token);
    expect(logs).not.toContain(t.refresh_token);
  });

  it('the token endpoint answers bad requests with the RFC error codes', async () => {
    expect(await (await form(`${svc.url}/oauth/token`, { client_id: clientId, grant_type: 'password', username: 'a', password: 'b' })).json()).toMatchObject({
      error: 'unsupported_grant_type',
    });
    const unknown = await form(`${svc.url}/oauth/token`, { client_id: 'mcpc_nope', grant_type: 'authorization_code', code: 'x' });
    expect(unknown.status).toBe(401);
    expect(await unknown.json()).toMatchObject({ error: 'invalid_client' });
    const basic = await form(
      `${svc.url}/oauth/token`,
      { grant_type: 'authorization_code', code: 'x' },
      { authorization: `Basic ${Buffer.from('mcpc_nope:secret').toString('base64')}` },
    );
    expect(basic.status).toBe(401);
    expect(basic.headers.get('www-authenticate')).toMatch(/^Basic/);
    const twice = await fetch(`${svc.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `client_id=${clientId}&grant_type=refresh_token&refresh_token=a&refresh_token=b`,
    });
    expect(await twice.json()).toMatchObject({ error: 'invalid_request', error_description: 'refresh_token is given more than once' });
    const json = await fetch(`${svc.url}/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(await json.json()).toMatchObject({ error: 'invalid_request' });
  });

  it('a confidential client must authenticate with its secret', async () => {
    const { body } = await register({ token_endpoint_auth_method: 'client_secret_basic' });
    expect(body.client_secret).toMatch(/^mcpcs_/);
    const code = await approve(body.client_id, s256(VERIFIER));
    expect((await token(body.client_id, code)).status).toBe(401);
    const code2 = await approve(body.client_id, s256(VERIFIER));
    const basic = `Basic ${Buffer.from(`${body.client_id}:${body.client_secret}`).toString('base64')}`;
    const ok = await form(
      `${svc.url}/oauth/token`,
      { grant_type: 'authorization_code', code: code2, redirect_uri: redirectUri(), code_verifier: VERIFIER },
      { authorization: basic },
    );
    expect(ok.status).toBe(200);
  });

  it('a request for the service as a whole binds the token to the server the owner chose', async () => {
    const res = await fetch(`${svc.url}/api/oauth/authorize`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${owner.token}` },
      body: JSON.stringify({
        response_type: 'code',
        client_id: clientId,
        redirect_uri: redirectUri(),
        code_challenge: s256(VERIFIER),
        code_challenge_method: 'S256',
        resource: `${svc.url}/mcp`,
        server_id: otherServerId,
        decision: 'approve',
      }),
    });
    const code = new URL(((await res.json()) as { redirect_to: string }).redirect_to).searchParams.get('code')!;
    const t = (await (await token(clientId, code)).json()) as { access_token: string };
    expect((await mcp(t.access_token, otherServerId)).status).toBe(200);
    expect((await mcp(t.access_token, serverId)).status).toBe(401);
  });

  it("another owner's server reads as missing on the consent decision", async () => {
    const res = await fetch(`${svc.url}/api/oauth/authorize`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${owner.token}` },
      body: JSON.stringify({
        response_type: 'code',
        client_id: clientId,
        redirect_uri: redirectUri(),
        code_challenge: s256(VERIFIER),
        code_challenge_method: 'S256',
        resource: `${svc.url}/mcp/nobody-has-this`,
        decision: 'approve',
      }),
    });
    expect(res.status).toBe(404);
    expect(((await res.json()) as { message: string }).message).toBe('"server_id": no server of yours has the id nobody-has-this');
  });
});
