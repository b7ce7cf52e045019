// Every dashboard page rendered from the demo data set (the four sandboxes, calls in the ledger, a connected
// OAuth app). The views compile strictly (runtime/dashboard/views.ts): a `{{name}}` the page's data lacks
// throws, so a misspelt or forgotten variable fails here as a 500 instead of rendering as nothing.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Demo, startDemo } from '../runtime/demo-data.ts';
import { s256 } from '../runtime/oauth/grants.ts';
import { providerTitles } from '../runtime/toolspec/catalog.ts';
import type { UsageRow } from '../runtime/billing/ledger.ts';
import { creditOutlook, outlookText } from '../runtime/dashboard/credits.ts';
import { niceStep, overviewFigures } from '../runtime/dashboard/overview.ts';
import { HttpBrowser } from './support/connect.ts';
import type { CustomToolDoc } from '../runtime/servers/custom-tools.ts';
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
  // A tool whose spec is gone (as a spec deleted or renamed leaves it: test/spec-reload.test.ts does it for real).
  await demo.service.store.collection<CustomToolDoc>('tools').insertOne({
    _id: 'tool_orphaned',
    owner_id: demo.owner.id,
    server_id: 'second',
    name: 'retired_lookup',
    base_tool: 'tracker_retired_lookup',
    account_id: null,
    defaults: {},
    locked: [],
    description: null,
    created_at: new Date(),
  });
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
  it('renders the pages of a connection: the picker, a failure, an account that needs its owner and its reconnect page', async () => {
    // The owner's browser connects the sandbox Atlassian (two sites: the picker).
    const b = Object.assign(new HttpBrowser(base), { cookie, csrf });
    const started = await b.api('POST', '/api/accounts/connect', { provider: 'tracker', sandbox: true });
    const consent = await b.follow(started.body.authorize_url);
    const picker = await b.consent(consent.url, consent.html);
    const pickerPath = new URL(picker.url).pathname + new URL(picker.url).search;
    expectPage(await page(pickerPath, true));
    const choice = /name="choice" value="([^"]+)"/.exec(picker.html)![1];
    const chosen = await b.api('POST', `/api/connect/flows/${new URL(picker.url).searchParams.get('flow')}/choose`, { choice });
    const id = new URL(chosen.body.redirect_to, base).searchParams.get('connected')!;
    expectPage(await page(`/accounts?connected=${id}`, true));
    // The picker is used up; failures signed in and out.
    expectPage(await page(pickerPath, true), 400);
    expectPage(await page('/connect/callback?code=x', true), 400);
    expectPage(await page('/connect/callback?code=x&state=y', false), 400);
    // The account needs its owner: the banner of every page, its reconnect page.
    await demo.service.store.collection('accounts').updateOne({ _id: id }, { $set: { state: 'needs_reauth', state_reason: 'Atlassian refused the grant' } });
    const accounts = await page('/accounts', true);
    expectPage(accounts);
    expect(accounts.html).toContain('data-testid="account-banner"');
    expectPage(await page(`/accounts/${id}/reconnect`, true));
    expectPage(await page(`/accounts/${demo.accounts.tracker}/reconnect`, true));
    await demo.service.store.collection('accounts').updateOne({ _id: id }, { $set: { state: 'unreachable' } });
    expectPage(await page(`/accounts/${id}/reconnect`, true));
    expectPage(await page('/accounts/nobody/reconnect', true), 404);
    // The account webhook on Settings, with a delivery that is being retried (nothing listens there).
    expect((await b.api('PUT', '/api/me/webhook', { url: 'http://127.0.0.1:9/hooks' })).status).toBe(200);
    await b.api('POST', '/api/me/webhook/ping');
    await expect.poll(async () => (await b.api('GET', '/api/me/webhook')).body.deliveries[0]?.attempts).toBe(1);
    const settings = await page('/settings', true);
    expectPage(settings);
    expect(settings.html).toContain('retrying');
    await b.api('DELETE', '/api/me/webhook');
  }, 120_000);

  it('renders the signed-out pages', async () => {
    for (const path of ['/login', '/signup', '/invite', '/login?next=%2Fkeys', '/forgot-password', '/reset-password', '/verify-email'])
      expectPage(await page(path, false));
    expectPage(await page('/unsubscribe?token=nonsense', false), 400);
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
    // The call log, filtered and not, with a problem, a call's page, and a tool's page of every base tool.
    const auth = { headers: { authorization: `Bearer ${demo.owner.token}` } };
    const calls = ((await (await fetch(`${base}/api/calls`, auth)).json()) as { calls: Array<{ id: string }> }).calls;
    for (const path of [
      '/calls',
      '/calls?outcome=tool_error&tool=database_read_records',
      '/calls?from=someday',
      '/calls?cursor=nonsense',
      `/calls/${calls[0].id}`,
    ])
      expectPage(await page(path, true));
    expect((await page('/calls?from=someday', true)).html).toContain('&quot;from&quot; must be an ISO 8601 time');
    // End users (the demo's three: two with sandbox accounts), searched, paged, one account that needs its person.
    const people = ((await (await fetch(`${base}/api/end-users`, auth)).json()) as { end_users: Array<{ id: string; external_id: string }> }).end_users;
    const ada = people.find((u) => u.external_id === 'user-1042')!;
    const [adasJira] = ((await (await fetch(`${base}/api/end-users/${ada.id}/accounts`, auth)).json()) as { accounts: Array<{ id: string }> }).accounts;
    await demo.service.store
      .collection('accounts')
      .updateOne({ _id: adasJira.id }, { $set: { state: 'needs_reauth', state_reason: 'Atlassian refused the grant' } });
    const endUsers = await page('/end-users', true);
    expectPage(endUsers);
    expect(endUsers.html).toContain('Atlassian refused the grant');
    expect(endUsers.html).toContain('None connected yet');
    expect((await page('/end-users?q=GRACE', true)).html).toContain('Budget: 500 credits a month (UTC)');
    expect((await page('/end-users?q=nobody', true)).html).toContain('No end user matches “nobody”');
    expect((await page('/end-users?cursor=nonsense', true)).html).toContain('start again from the newest');
    expect((await page(`/calls?end_user=${ada.id}`, true)).html).toContain('Ada Lovelace');
    expectPage(await page('/calls?end_user=eu_gone', true));
    const tools = ((await (await fetch(`${base}/api/servers/${demo.serverId}/tools`, auth)).json()) as { tools: Array<{ id: string }> }).tools;
    expect(tools.length).toBeGreaterThan(20);
    for (const t of tools) expectPage(await page(`/servers/${demo.serverId}/tools/${t.id}`, true));
    expectPage(await page('/calls/call_nobody', true), 404);
    expectPage(await page(`/servers/${demo.serverId}/tools/tool_nobody`, true), 404);
    expectPage(await page('/no-such-page', true), 404);
    expectPage(await page(`/oauth/authorize?${consentQuery}`, true));
  });

  it("shows an orphaned tool's row with what to do, without Try and Edit; its own page leads to the server's", async () => {
    const server = await page('/servers/second', true);
    expect(server.html).toContain('Its tool spec “tracker_retired_lookup” is gone from this service (deleted or renamed): restore it, or remove this tool.');
    expect(server.html).not.toContain('/servers/second/tools/tool_orphaned#');
    expect(server.html).toContain('data-api="DELETE /api/servers/second/tools/tool_orphaned"');
    const own = await page('/servers/second/tools/tool_orphaned', true);
    expect(own.status).toBe(302);
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

describe('overview figures', () => {
  const NOW = Date.parse('2026-03-10T12:00:00Z');
  const row = (hoursAgo: number, tool: string, calls: number, credits: number): UsageRow => ({
    owner_id: 'o',
    server_id: 's',
    key_id: 'k',
    tool,
    hour: new Date(NOW - hoursAgo * 3_600_000),
    calls,
    credits,
    errors: 0,
    refunds: 0,
  });

  it('draws a value axis in round steps and says each day in words; no use is an empty chart, not "max 1"', () => {
    expect([0, 1, 3, 4, 7, 9, 130, 999].map(niceStep)).toEqual([1, 1, 1, 1, 2, 5, 50, 500]);
    const [calls] = overviewFigures([row(1, 'a', 5, 5), row(2, 'b', 2, 4), row(30, 'a', 1, 1)], NOW).charts;
    expect(calls.empty).toBe(false);
    expect(calls.yTicks.map((t) => [t.label, t.at])).toEqual([
      ['0', 0],
      ['2', 25],
      ['4', 50],
      ['6', 75],
      ['8', 100],
    ]);
    expect(calls.bars.at(-1)!.label).toBe('2026-03-10: 7 calls (a 5, b 2)');
    expect(calls.bars.at(-2)!.label).toBe('2026-03-09: 1 call (a 1)');
    expect(calls.bars.at(-3)!.label).toBe('2026-03-08: 0 calls');
    const empty = overviewFigures([], NOW).charts;
    expect(empty.map((c) => c.empty)).toEqual([true, true]);
  });

  it("tells how long the balance lasts at the last 7 days' rate, or nothing without use", () => {
    const rows = [row(5, 'a', 10, 14), row(100, 'a', 10, 7)];
    expect(creditOutlook(rows, 30, NOW)).toEqual({ perDay: 3, daysLeft: 10 });
    expect(outlookText(creditOutlook(rows, 30, NOW))).toBe("At the last 7 days' rate (about 3 credits a day) they last about 10 days.");
    expect(outlookText(creditOutlook(rows, 2, NOW))).toBe("At the last 7 days' rate (about 3 credits a day) they last less than a day.");
    expect(outlookText(creditOutlook([row(200, 'a', 1, 1)], 30, NOW))).toBe('');
  });
});
