// Every dashboard page rendered from the demo data set (the four sandboxes, calls in the ledger, a connected
// OAuth app). The views compile strictly (runtime/dashboard/views.ts): a `{{name}}` the page's data lacks
// throws, so a misspelt or forgotten variable fails here as a 500 instead of rendering as nothing.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Demo, startDemo } from '../runtime/demo-data.ts';
import { s256 } from '../runtime/oauth/grants.ts';
import { providerTitles } from '../runtime/toolspec/catalog.ts';
import { connectV2 } from './support/mcp-clients.ts';

let demo: Demo;
let base: string;
let cookie: string;
let csrf: string;
let consentQuery: URLSearchParams;

beforeAll(async () => {
  demo = await startDemo({ PORT: '0', LOG_LEVEL: 'warn', HOST: '127.0.0.1' });
  base = demo.service.url;
  // Calls in the ledger: ok, a provider error and an invalid call, for the overview's figures and latest calls.
  const client = await connectV2(base, demo.serverId, demo.apiKey);
  for (const [name, args] of [
    ['database_read_records', { table: 'todos', limit: 5 }],
    ['database_read_records', { table: 'no_such_table' }],
    ['tracker_get_issue', {}],
  ] as const) {
    await client.callTool({ name, arguments: args });
  }
  await client.close();

  const login = await fetch(`${base}/api/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: demo.owner.email, password: demo.owner.password }),
  });
  expect(login.status).toBe(200);
  cookie = login.headers.getSetCookie()[0].split(';')[0];
  csrf = ((await login.json()) as { csrf_token: string }).csrf_token;

  // Keys of every kind: a global key linked to the server, a revoked one, a revoked server key; a second server
  // (so a global key has a server to be linked to).
  const api = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(base + path, {
      method,
      headers: { authorization: `Bearer ${demo.owner.token}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    expect(res.status, path).toBeLessThan(300);
    return (await res.json()) as Record<string, string>;
  };
  await api('POST', '/api/servers', { name: 'Second server', id: 'second' });
  const linked = await api('POST', '/api/api-keys', { name: 'agent everywhere' });
  await api('POST', `/api/api-keys/${linked.id}/servers/${demo.serverId}`);
  const revoked = await api('POST', '/api/api-keys', { name: 'old global' });
  await api('DELETE', `/api/api-keys/${revoked.id}`);
  const serverKey = await api('POST', `/api/servers/${demo.serverId}/api-keys`, { name: 'old server key' });
  await api('DELETE', `/api/servers/${demo.serverId}/api-keys/${serverKey.id}`);

  // A connected app, so that the keys page lists one.
  const redirect = 'http://127.0.0.1:9/callback';
  const registered = await fetch(`${base}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_name: 'Views test client', redirect_uris: [redirect], token_endpoint_auth_method: 'none' }),
  });
  const { client_id } = (await registered.json()) as { client_id: string };
  const verifier = randomBytes(32).toString('base64url');
  consentQuery = new URLSearchParams({
    response_type: 'code',
    client_id,
    redirect_uri: redirect,
    code_challenge: s256(verifier),
    code_challenge_method: 'S256',
    resource: `${base}/mcp/${demo.serverId}`,
    state: 'views',
  });
  const decided = await fetch(`${base}/api/oauth/authorize`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', cookie, 'x-csrf-token': csrf, origin: base },
    body: JSON.stringify({ ...Object.fromEntries(consentQuery), decision: 'approve' }),
  });
  expect(decided.status).toBe(200);
  const code = new URL(((await decided.json()) as { redirect_to: string }).redirect_to).searchParams.get('code')!;
  const token = await fetch(`${base}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'authorization_code', client_id, code, redirect_uri: redirect, code_verifier: verifier }),
  });
  expect(token.status).toBe(200);
}, 120_000);

afterAll(async () => {
  await demo?.close();
});

async function page(path: string, signedIn: boolean): Promise<{ status: number; html: string }> {
  const res = await fetch(base + path, { headers: { accept: 'text/html', ...(signedIn ? { cookie } : {}) }, redirect: 'manual' });
  return { status: res.status, html: await res.text() };
}

/** A rendered page: the expected status, a whole document, and no value that rendered as a JavaScript artefact. */
function expectPage(got: { status: number; html: string }, status = 200): void {
  expect(got.status, got.html.slice(0, 300)).toBe(status);
  expect(got.html).toMatch(/^<!doctype html>/i);
  expect(got.html).toContain('</html>');
  expect(got.html).not.toMatch(/\[object Object\]|>undefined<|="undefined"|>NaN</);
}

describe('dashboard views with the demo data set', () => {
  it('renders the signed-out pages', async () => {
    for (const path of ['/login', '/signup', '/invite', '/login?next=%2Fkeys']) expectPage(await page(path, false));
    expectPage(await page('/no-such-page', false), 404);
    // An authorization request that names no known client: the consent view's problem page.
    expectPage(await page('/oauth/authorize?client_id=nobody', false), 400);
  });

  it('renders every signed-in page', async () => {
    const paths = [
      '/',
      '/accounts',
      '/servers',
      `/servers/${demo.serverId}`,
      '/servers/second',
      `/servers/${demo.serverId}/tools/new`,
      '/keys',
      '/settings',
      '/settings?changed=1',
    ];
    for (const path of paths) expectPage(await page(path, true));
    expectPage(await page('/no-such-page', true), 404);
    expectPage(await page(`/oauth/authorize?${consentQuery}`, true));
  });

  it('renders the tool form of every base tool (the field partial for every kind of parameter)', async () => {
    const tools = [...demo.service.catalog.current.tools.keys()];
    expect(tools.length).toBeGreaterThan(20);
    for (const id of tools) expectPage(await page(`/servers/${demo.serverId}/tools/new?base=${id}`, true));
  });

  it('names the providers of the catalog, as their provider.yaml titles them', async () => {
    const names = 'Jira Cloud, n8n, Notion and Supabase (PostgREST Data API)';
    expect(providerTitles(demo.service.catalog.current, 'and')).toBe(names);
    expect((await page('/signup', false)).html).toContain(`Store your ${names} credentials once`);
  });

  it('shows the data it was given: the overview lists the calls, the keys page the connected app', async () => {
    const overview = (await page('/', true)).html;
    expect(overview).toContain('database_read_records');
    expect(overview).toContain('error · table_not_found');
    expect(overview).toContain('rejected · invalid_arguments');
    const keys = (await page('/keys', true)).html;
    expect(keys).toContain('Views test client');
    expect(keys).toContain('agent everywhere');
    expect(keys).toContain('old server key');
  });
});
