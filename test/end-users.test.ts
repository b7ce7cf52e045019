// End users of an owner, end to end over HTTP on the embedded store and on MongoDB (FerretDB): the API (create,
// unique external ids, paging, search, delete that takes keys and accounts), connect links opened by a browser
// with no sign-in (plain HTTP with the end-user cookie, the OAuth sandboxes' consent pages), tools bound to the
// caller's own account, and "connect your account" inside a call for each protocol revision, through the
// official SDK clients and as bare JSON-RPC for the request states.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UrlElicitationRequiredError } from '@modelcontextprotocol/sdk/types.js';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { APP_ENV, HttpBrowser, type OAuthSandboxes, startOAuthSandboxes } from './support/connect.ts';
import { MONGODB_URL, dropTestDatabases, mongoTestUrl } from './support/mongo.ts';
import { connectV1 } from './support/mcp-clients.ts';
import { type ToolResult, failed, succeeded } from './support/tool-calls.ts';
import { type TestService, startTestService } from './support/service.ts';
import { storeTargets } from './support/stores.ts';
import { balanceOf, callersServer, invitedOwner, ownerWithCredits } from './support/end-users.ts';
import { EndUsers } from '../runtime/access/end-users.ts';
import { RequestStates } from '../runtime/access/request-states.ts';
import { ConnectSessions } from '../runtime/accounts/connect-sessions.ts';
import { s256 } from '../runtime/oauth/grants.ts';
import { StoreClock } from '../runtime/store/clock.ts';

const targets = [
  { name: 'the embedded store', enabled: true, env: () => ({}) },
  { name: 'MongoDB', enabled: Boolean(MONGODB_URL), env: () => ({ MONGODB_URL: mongoTestUrl('end_users').url }) },
];

afterAll(async () => {
  await dropTestDatabases();
});

/** An end user's browser over HTTP: the end-user cookie it is given, the page's CSRF token, forms posted. */
class EndUserBrowser extends HttpBrowser {
  /** Opens a connect link: the page, and the cookie the service gives a browser the first time. */
  async open(url: string): Promise<{ status: number; html: string }> {
    const res = await fetch(url, { redirect: 'manual', headers: this.cookie ? { cookie: this.cookie } : {} });
    const set = res.headers.get('set-cookie');
    if (set?.startsWith('ts_end_user=')) this.cookie = set.split(';')[0];
    return { status: res.status, html: await res.text() };
  }

  /** Posts a form of the connect page (as the browser does: same origin); the redirect's target, or the page. */
  async post(path: string, html: string, fields: Record<string, string>): Promise<{ status: number; location: string | null; html: string }> {
    const csrf = /name="csrf" value="([^"]+)"/.exec(html)?.[1] ?? '';
    const res = await fetch(this.serviceUrl + path, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: this.serviceUrl, cookie: this.cookie },
      body: new URLSearchParams({ csrf, ...fields }).toString(),
    });
    return { status: res.status, location: res.headers.get('location'), html: await res.text() };
  }
}

const asText = (r: { status: number; body: unknown }) => ({ status: r.status, text: JSON.stringify(r.body) });

describe.each(targets)('end users on $name', (target) => {
  let sandboxes: OAuthSandboxes;
  let svc: TestService;
  let env: Record<string, string>;

  beforeAll(async () => {
    if (!target.enabled) return;
    sandboxes = await startOAuthSandboxes();
    env = {
      ...APP_ENV,
      ...target.env(),
      MASTER_KEY: randomBytes(32).toString('hex'),
      TOOL_SPECS_DIR: sandboxes.specsDir,
      KEY_CACHE_MS: '0',
      LEDGER_ROLL_AFTER_SECONDS: '1',
    };
    svc = await startTestService(env);
    sandboxes.register(svc.url);
  }, 180_000);

  afterAll(async () => {
    await svc?.close();
    await sandboxes?.close();
  });

  // Owners the operator makes (their browser speaks with a token): sign-ups from one address are limited.
  const owner = (credits = 100) => invitedOwner(svc, credits);

  /** Connects Jira as the end user through a connect link: consent at the sandbox, then the site picker. */
  async function connectJira(eu: EndUserBrowser, link: string, site: number) {
    const page = await eu.open(link);
    expect(page.status, page.html).toBe(200);
    const started = await eu.post(new URL(link).pathname + '/oauth', page.html, { provider: 'tracker' });
    expect(started.status, started.html).toBe(302);
    const consent = await eu.follow(new URL(started.location!, svc.url).href);
    const picker = await eu.consent(consent.url, consent.html);
    expect(picker.html, picker.html.slice(0, 2000)).toContain('end-user-choose');
    const flow = /name="flow" value="([^"]+)"/.exec(picker.html)![1];
    const chosen = await eu.post(new URL(picker.url).pathname, picker.html, { flow, choice: sandboxes.atlassian.sites[site].cloudId });
    expect(chosen.status, chosen.html).toBe(302);
    const done = await eu.follow(new URL(chosen.location!, svc.url).href);
    expect(done.html).toContain('data-testid="connected"');
    return done;
  }

  it.runIf(target.enabled)('creates, pages, searches and refuses bad end users', async () => {
    const { b } = await owner();
    const made = await b.api('POST', '/api/end-users', { external_id: 'user-1', display_name: 'Ada Lovelace', email: 'ada@example.com' });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    expect(made.body).toMatchObject({ id: expect.stringMatching(/^eu_/), external_id: 'user-1', display_name: 'Ada Lovelace', email: 'ada@example.com' });
    for (const [body, words] of [
      [{ external_id: 'user-1' }, /exists already/],
      [{ external_id: '' }, /"external_id" must be/],
      [{ external_id: 'x'.repeat(201) }, /at most 200/],
      [{ external_id: 'a\nb' }, /"external_id" must be/],
      [{ external_id: 'ok', email: 'not-mail' }, /"email" must be an e-mail/],
      [{ external_id: 'ok', role: 'admin' }, /Unknown field\(s\): role/],
    ] as const) {
      const refused = await b.api('POST', '/api/end-users', body);
      expect(refused.status, JSON.stringify(refused.body)).toBe(body.external_id === 'user-1' ? 409 : 400);
      expect(refused.body.message).toMatch(words);
    }
    for (let i = 2; i <= 5; i++) await b.api('POST', '/api/end-users', { external_id: `user-${i}`, display_name: i % 2 ? 'Odd' : 'Even' });
    const first = await b.api('GET', '/api/end-users?limit=2');
    expect(first.body.end_users.map((u: any) => u.external_id)).toEqual(['user-5', 'user-4']);
    const second = await b.api('GET', `/api/end-users?limit=2&cursor=${first.body.next_cursor}`);
    expect(second.body.end_users.map((u: any) => u.external_id)).toEqual(['user-3', 'user-2']);
    const third = await b.api('GET', `/api/end-users?limit=2&cursor=${second.body.next_cursor}`);
    expect(third.body).toMatchObject({ end_users: [{ external_id: 'user-1' }], next_cursor: null });
    expect((await b.api('GET', '/api/end-users?q=even')).body.end_users.map((u: any) => u.external_id)).toEqual(['user-4', 'user-2']);
    expect((await b.api('GET', '/api/end-users?cursor=nonsense')).status).toBe(400);
    // Another owner sees none of them.
    const other = await owner();
    expect((await other.b.api('GET', `/api/end-users/${made.body.id}`)).status).toBe(404);
    expect((await other.b.api('POST', '/api/end-users', { external_id: 'user-1' })).status).toBe(201);
  });

  it.runIf(target.enabled)(
    'each end user calls with their own Jira site; cross-user keys, headers, links and request states are refused; deletion takes everything',
    async () => {
      const { b } = await owner();
      const serverId = await callersServer(b);
      const [ada, bob] = await Promise.all(['ada', 'bob'].map(async (x) => (await b.api('POST', '/api/end-users', { external_id: x })).body));
      const keyOf = async (u: any) =>
        (await b.api('POST', `/api/end-users/${u.id}/api-keys`, { server_id: serverId, name: `${u.external_id}'s key` })).body.key;
      const [adaKey, bobKey] = [await keyOf(ada), await keyOf(bob)];
      const backend = (await b.api('POST', `/api/servers/${serverId}/api-keys`, { name: 'backend', act_for_end_users: true })).body.key;
      const plain = (await b.api('POST', `/api/servers/${serverId}/api-keys`, { name: 'plain' })).body.key;

      // Not connected yet: an ordinary tool error with the link, nothing charged, nothing sent.
      const before = await balanceOf(b);
      const sent = sandboxes.atlassian.requests.length;
      const adaClient = await connectV1(svc.url, serverId, adaKey);
      const missing = failed(
        (await adaClient.callTool({ name: 'search_issues', arguments: { jql: 'project = DEMO ORDER BY created DESC' } })) as ToolResult,
      ) as any;
      expect(missing.code).toBe('account_not_connected');
      expect(missing.connect_url).toMatch(new RegExp(`^${svc.url}/connect/s/c\\.`));
      expect(missing.message).toContain(missing.connect_url);
      expect(await balanceOf(b)).toBe(before);
      expect(sandboxes.atlassian.requests.length).toBe(sent);

      // The link from a call works only in a browser that already belongs to that person.
      const stranger = new EndUserBrowser(svc.url);
      expect((await stranger.open(missing.connect_url)).status).toBe(403);

      // Each connects through a link of the owner's backend, on a site of their own.
      const linkFor = async (u: any) =>
        (await b.api('POST', '/api/connect-sessions', { end_user_id: u.id, providers: ['tracker'], return_url: 'https://app.example/done' })).body;
      const adaLink = await linkFor(ada);
      expect(adaLink.url).toMatch(/\/connect\/s\//);
      const adaBrowser = new EndUserBrowser(svc.url);
      const adaPage = await connectJira(adaBrowser, adaLink.url, 0);
      expect(adaPage.html).toContain('https://app.example/done');
      const bobBrowser = new EndUserBrowser(svc.url);
      await connectJira(bobBrowser, (await linkFor(bob)).url, 1);

      // The backend link was single use: another browser is refused, the same one still sees it.
      expect((await new EndUserBrowser(svc.url).open(adaLink.url)).status).toBe(409);
      expect((await adaBrowser.open(adaLink.url)).status).toBe(200);
      // Ada's browser cannot use Bob's call link either.
      const bobClient = await connectV1(svc.url, serverId, bobKey);
      const siteOf = async (client: ClientV1) => {
        const r = succeeded(
          (await client.callTool({ name: 'search_issues', arguments: { jql: 'project = DEMO ORDER BY created DESC', max_results: 1 } })) as ToolResult,
        );
        return r;
      };
      await siteOf(adaClient);
      await siteOf(bobClient);
      const [adaSite, bobSite] = sandboxes.atlassian.sites;
      expect(adaSite.jira.requests.some((r) => r.path.includes('/search'))).toBe(true);
      const bobCalls = bobSite.jira.requests.length;
      await siteOf(adaClient);
      expect(bobSite.jira.requests.length).toBe(bobCalls);

      // The owner's API lists each person's account with its health.
      const accounts = (await b.api('GET', `/api/end-users/${ada.id}/accounts`)).body.accounts;
      expect(accounts).toMatchObject([{ kind: 'tracker', auth: 'oauth', state: 'connected' }]);
      expect((await b.api('GET', '/api/accounts')).body.accounts).toEqual([]);

      // Headers: only a key allowed to name end users may, and only the owner's own.
      const named = async (key: string, externalId: string) => {
        const res = await fetch(`${svc.url}/mcp/${serverId}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, 'x-end-user': externalId },
          body: JSON.stringify({
            jsonrpc: '2.0',
            id: 1,
            method: 'tools/call',
            params: { name: 'search_issues', arguments: { jql: 'project = DEMO ORDER BY created DESC' } },
          }),
        });
        return { status: res.status, body: (await res.json()) as any };
      };
      expect((await named(backend, 'bob')).body.result.isError).toBe(false);
      const refusals = [
        [plain, 'bob', /may not act for end users/],
        [backend, 'nobody', /no end user with the external id "nobody"/],
        [adaKey, 'bob', /acts as its own end user only/],
      ] as const;
      for (const [key, who, words] of refusals) {
        const r = await named(key, who);
        expect(r.status).toBe(403);
        expect(r.body.message).toMatch(words);
      }
      const otherOwner = await owner();
      await otherOwner.b.api('POST', '/api/end-users', { external_id: 'carol' });
      expect((await named(backend, 'carol')).status).toBe(403);

      // The call log, per end user: Ada's calls only, the refused one charged nothing.
      const adaCalls = (await b.api('GET', `/api/calls?end_user=${ada.id}`)).body.calls;
      expect(adaCalls.length).toBeGreaterThanOrEqual(3);
      expect(adaCalls.every((c: any) => c.end_user_id === ada.id)).toBe(true);
      expect(adaCalls.at(-1)).toMatchObject({ code: 'account_not_connected', outcome: 'rejected', charged: 0 });

      // Usage per end user, the same before and after the roll-up into hourly aggregates, which keep the people a
      // backend key acted for apart (Bob's calls through it are his, not Ada's).
      const usageOf = async (u: { id: string }) => (await b.api('GET', `/api/usage?end_user=${u.id}`)).body;
      const bobsLog = (await b.api('GET', `/api/calls?end_user=${bob.id}`)).body.calls as Array<{ credits: number }>;
      const expected = (calls: Array<{ credits: number }>) => ({ total_calls: calls.length, total_credits: calls.reduce((n, c) => n + c.credits, 0) });
      for (let round = 0; round < 2; round++) {
        expect(await usageOf(ada)).toMatchObject(expected(adaCalls));
        expect(await usageOf(bob)).toMatchObject(expected(bobsLog));
        expect((await usageOf(bob)).usage.every((r: any) => r.end_user_id === bob.id)).toBe(true);
        const rolled = () => svc.store.collection<{ _id: string; end_user_id?: string }>('usage').countDocuments({ end_user_id: bob.id });
        if (round === 0)
          await expect
            .poll(async () => (await svc.call('POST', '/api/admin/ledger/housekeep', { token: svc.operatorToken }), rolled()), { timeout: 20_000 })
            .toBeGreaterThan(0);
      }
      expect((await b.api('GET', '/api/usage?end_user=eu_nobody')).body).toMatchObject({ usage: [], total_calls: 0 });

      // Deleting Bob revokes his key and removes his account at once.
      expect((await b.api('DELETE', `/api/end-users/${bob.id}`)).status).toBe(204);
      const gone = await fetch(`${svc.url}/mcp/${serverId}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${bobKey}` },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      });
      expect(gone.status).toBe(401);
      expect((await named(backend, 'bob')).status).toBe(403);
      expect((await b.api('GET', `/api/end-users/${bob.id}/accounts`)).status).toBe(404);
      await Promise.all([adaClient.close(), bobClient.close()]);
    },
    180_000,
  );

  /** A bare tools/call of `search_issues` (2026-07-28 with URL elicitation declared when `modern`): status and body. */
  async function rpc(serverId: string, key: string, o: { headers?: Record<string, string>; params?: Record<string, unknown>; modern?: boolean } = {}) {
    const modern: Record<string, string> = o.modern
      ? { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'search_issues', accept: 'application/json, text/event-stream' }
      : {};
    const meta = o.modern
      ? { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': { elicitation: { url: {} } } } }
      : {};
    const res = await fetch(`${svc.url}/mcp/${serverId}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, ...modern, ...o.headers },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'search_issues', arguments: { jql: 'project = DEMO ORDER BY created DESC' }, ...meta, ...o.params },
      }),
    });
    return { status: res.status, text: await res.text() };
  }

  it.runIf(target.enabled)(
    "no attempt of one end user, or of another owner, reaches another end user's account, links, keys or data, and none leaks it",
    async () => {
      const { b } = await owner();
      const serverId = await callersServer(b);
      const otherServerId = await callersServer(b, 'Second server');
      const person = async (externalId: string, extra: Record<string, string> = {}) =>
        (await b.api('POST', '/api/end-users', { external_id: externalId, ...extra })).body as { id: string; external_id: string };
      const ada = await person('ada', { display_name: 'Ada Lovelace', email: 'ada@example.com' });
      const [bob, carl] = [await person('bob'), await person('carl')];
      const keyOf = async (u: { id: string }, server = serverId) =>
        (await b.api('POST', `/api/end-users/${u.id}/api-keys`, { server_id: server, name: 'key' })).body.key as string;
      const [adaKey, bobKey, carlKey] = [await keyOf(ada), await keyOf(bob), await keyOf(carl)];
      const backend = (await b.api('POST', `/api/servers/${serverId}/api-keys`, { name: 'backend', act_for_end_users: true })).body.key as string;
      const plain = (await b.api('POST', `/api/servers/${serverId}/api-keys`, { name: 'plain' })).body.key as string;
      const linkFor = async (u: { id: string }) =>
        (await b.api('POST', '/api/connect-sessions', { end_user_id: u.id, providers: ['tracker'] })).body.url as string;
      const adaLink = await linkFor(ada);
      const adaBrowser = new EndUserBrowser(svc.url);
      await connectJira(adaBrowser, adaLink, 0);
      const bobBrowser = new EndUserBrowser(svc.url);
      await connectJira(bobBrowser, await linkFor(bob), 1);
      const [adaAccount] = (await b.api('GET', `/api/end-users/${ada.id}/accounts`)).body.accounts as Array<{ id: string }>;
      const adaSite = sandboxes.atlassian.sites[0];

      // Carl has no account: his call gets a link and a request state, both his own.
      const carlAsked = JSON.parse((await rpc(serverId, carlKey, { modern: true })).text);
      const carlState = carlAsked.result.requestState as string;
      const carlLink = carlAsked.result.inputRequests.connect_tracker.params.url as string;
      const accept = { inputResponses: { connect_tracker: { action: 'accept' } } };

      // Another owner, with its own server, backend key and an end user whose external id is also "ada".
      const other = await owner();
      const theirServer = await callersServer(other.b);
      const theirBackend = (await other.b.api('POST', `/api/servers/${theirServer}/api-keys`, { name: 'backend', act_for_end_users: true })).body.key as string;
      await other.b.api('POST', '/api/end-users', { external_id: 'ada' });

      const searchesBefore = adaSite.jira.requests.length;
      const refusedCall = (r: { status: number; text: string }) =>
        r.status === 401 || r.status === 403 || /"isError":true|"error":\{"code"/.test(r.text) || r.text.includes('input_required');
      const tamperedCallLink = (() => {
        const at = carlLink.indexOf('/c.') + 3;
        const [body, mac] = carlLink.slice(at).split('.');
        const claims = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
        return `${carlLink.slice(0, at)}${Buffer.from(JSON.stringify({ ...claims, e: ada.id })).toString('base64url')}.${mac}`;
      })();
      // An answer about Ada's account id that is exactly the answer about an id that does not exist (the id echoed aside).
      const likeUnknown = async (call: (id: string) => Promise<{ status: number; body: unknown }>) => {
        const [real, made] = [asText(await call(adaAccount.id)), asText(await call('acct_000000000000000000'))];
        const text = real.text.replaceAll(adaAccount.id, '<id>');
        return { status: text === made.text.replaceAll('acct_000000000000000000', '<id>') ? real.status : -1, text };
      };
      const page = async (browser: EndUserBrowser, url: string) => {
        const r = await browser.open(url);
        return { status: r.status, text: r.html };
      };
      const attempts: Array<[string, () => Promise<{ status: number; text: string }>, (r: { status: number; text: string }) => boolean]> = [
        // Keys and headers.
        ["Ada's key naming Bob", () => rpc(serverId, adaKey, { headers: { 'x-end-user': 'bob' } }), (r) => r.status === 403],
        ["Bob's key naming Ada", () => rpc(serverId, bobKey, { headers: { 'x-end-user': 'ada' } }), (r) => r.status === 403],
        ["Carl's key naming Ada", () => rpc(serverId, carlKey, { headers: { 'x-end-user': 'ada' } }), (r) => r.status === 403],
        ['a key without act_for_end_users naming Ada', () => rpc(serverId, plain, { headers: { 'x-end-user': 'ada' } }), (r) => r.status === 403],
        ['the backend naming Ada by her eu_ id', () => rpc(serverId, backend, { headers: { 'x-end-user': ada.id } }), (r) => r.status === 403],
        ['the backend naming "ADA" (ids are exact)', () => rpc(serverId, backend, { headers: { 'x-end-user': 'ADA' } }), (r) => r.status === 403],
        ['the backend naming "ad" (no prefix match)', () => rpc(serverId, backend, { headers: { 'x-end-user': 'ad' } }), (r) => r.status === 403],
        ['the backend naming "*"', () => rpc(serverId, backend, { headers: { 'x-end-user': '*' } }), (r) => r.status === 403],
        ['another owner\'s backend naming its own "ada"', () => rpc(theirServer, theirBackend, { headers: { 'x-end-user': 'ada' } }), refusedCall],
        [
          "another owner's backend on this server naming Ada",
          () => rpc(serverId, theirBackend, { headers: { 'x-end-user': 'ada' } }),
          (r) => r.status === 401 || r.status === 403,
        ],
        ["Ada's key on another owner's server", () => rpc(theirServer, adaKey), (r) => r.status === 401 || r.status === 403],
        ["Ada's key on her owner's other server", () => rpc(otherServerId, adaKey), (r) => r.status === 401 || r.status === 403],
        ["Carl's own call (no account of his)", () => rpc(serverId, carlKey), refusedCall],
        [
          'arguments naming Ada (the model cannot choose the caller)',
          () => rpc(serverId, carlKey, { params: { arguments: { jql: 'project = DEMO', end_user: 'ada', user_id: ada.id } } }),
          refusedCall,
        ],
        // Request states.
        [
          "Ada retrying with Carl's state",
          () => rpc(serverId, adaKey, { modern: true, params: { requestState: carlState, ...accept } }),
          (r) => /another caller or another call/.test(r.text),
        ],
        [
          "the backend as Ada with Carl's state",
          () => rpc(serverId, backend, { modern: true, headers: { 'x-end-user': 'ada' }, params: { requestState: carlState, ...accept } }),
          (r) => /another caller or another call/.test(r.text),
        ],
        [
          "Carl's state with other arguments",
          () => rpc(serverId, carlKey, { modern: true, params: { arguments: { jql: 'project = OTHER' }, requestState: carlState, ...accept } }),
          (r) => /another caller or another call/.test(r.text),
        ],
        [
          "Carl's state on the other server",
          () => rpc(otherServerId, carlKey, { modern: true, params: { requestState: carlState, ...accept } }),
          (r) => r.status === 401 || r.status === 403,
        ],
        [
          "Carl's state, tampered",
          () => rpc(serverId, carlKey, { modern: true, params: { requestState: `A${carlState.slice(1)}`, ...accept } }),
          (r) => /not a state this server gave/.test(r.text),
        ],
        [
          'a state made up',
          () => rpc(serverId, carlKey, { modern: true, params: { requestState: 'e30.AAAA', ...accept } }),
          (r) => /not a state this server gave/.test(r.text),
        ],
        [
          'a state that is not a string',
          () => rpc(serverId, carlKey, { modern: true, params: { requestState: { n: 1 }, ...accept } }),
          (r) => /not a state this server gave/.test(r.text),
        ],
        // Connect links.
        ["Carl's call link in Ada's browser", () => page(adaBrowser, carlLink), (r) => r.status === 403],
        ["Carl's call link in a fresh browser", () => page(new EndUserBrowser(svc.url), carlLink), (r) => r.status === 403],
        ["Carl's call link rewritten to name Ada", () => page(adaBrowser, tamperedCallLink), (r) => r.status === 404],
        ["Ada's link in Bob's browser", () => page(bobBrowser, adaLink), (r) => r.status === 409],
        ["Ada's link in a fresh browser", () => page(new EndUserBrowser(svc.url), adaLink), (r) => r.status === 409],
        ["Ada's link with its token changed", () => page(new EndUserBrowser(svc.url), `${adaLink.slice(0, -3)}xyz`), (r) => r.status === 404],
        [
          "Bob's browser posting a token to Ada's link",
          async () => {
            const r = await bobBrowser.post(`${new URL(adaLink).pathname}/token`, `<input name="csrf" value="${bobBrowser.cookie}">`, {
              provider: 'tracker',
              site_url: adaSite.url,
              email: 'x@example.com',
              api_token: 'x',
            });
            return { status: r.status, text: r.html };
          },
          (r) => r.status === 409,
        ],
        // Another owner's management API.
        ['another owner reading Ada', () => other.b.api('GET', `/api/end-users/${ada.id}`).then(asText), (r) => r.status === 404],
        ["another owner reading Ada's accounts", () => other.b.api('GET', `/api/end-users/${ada.id}/accounts`).then(asText), (r) => r.status === 404],
        ["another owner reading Ada's keys", () => other.b.api('GET', `/api/end-users/${ada.id}/api-keys`).then(asText), (r) => r.status === 404],
        [
          'another owner making a key as Ada',
          () => other.b.api('POST', `/api/end-users/${ada.id}/api-keys`, { server_id: theirServer, name: 'x' }).then(asText),
          (r) => r.status === 404,
        ],
        [
          'another owner making a connect link for Ada',
          () => other.b.api('POST', '/api/connect-sessions', { end_user_id: ada.id }).then(asText),
          (r) => r.status === 400,
        ],
        ['another owner deleting Ada', () => other.b.api('DELETE', `/api/end-users/${ada.id}`).then(asText), (r) => r.status === 404],
        [
          "another owner's call log of Ada",
          () => other.b.api('GET', `/api/calls?end_user=${ada.id}`).then(asText),
          (r) => r.status === 200 && r.text.includes('"calls":[]'),
        ],
        [
          "another owner's search for Ada",
          () => other.b.api('GET', '/api/end-users?q=lovelace').then(asText),
          (r) => r.status === 200 && r.text.includes('"end_users":[]'),
        ],
        [
          "another owner binding a tool to Ada's account",
          () =>
            likeUnknown((id) => other.b.api('POST', `/api/servers/${theirServer}/tools`, { base_tool: 'tracker_search_issues', name: 'x', account_id: id })),
          (r) => r.status === 400 || r.status === 404,
        ],
        ["another owner reading Ada's account", () => likeUnknown((id) => other.b.api('GET', `/api/accounts/${id}`)), (r) => r.status === 404],
        // Her own owner cannot turn her account into everyone's.
        [
          "her owner binding a tool to Ada's account",
          () =>
            likeUnknown((id) => b.api('POST', `/api/servers/${otherServerId}/tools`, { base_tool: 'tracker_search_issues', name: 'as_ada', account_id: id })),
          (r) => r.status === 400 || r.status === 404,
        ],
        ["her owner's accounts list", () => b.api('GET', '/api/accounts').then(asText), (r) => r.status === 200 && r.text.includes('"accounts":[]')],
      ];
      const secrets = [adaAccount.id, adaSite.cloudId, adaSite.url, 'Lovelace', 'ada@example.com'];
      const problems: string[] = [];
      for (const [what, attempt, refused] of attempts) {
        const r = await attempt();
        if (!refused(r)) problems.push(`${what}: not refused (${r.status} ${r.text.slice(0, 200)})`);
        for (const secret of secrets) if (r.text.includes(secret)) problems.push(`${what}: the answer names ${secret}`);
      }
      expect(problems).toEqual([]);
      expect(attempts.length).toBeGreaterThanOrEqual(40);
      // None of them reached Ada's site; her own call still does.
      expect(adaSite.jira.requests.length).toBe(searchesBefore);
      expect(JSON.parse((await rpc(serverId, adaKey)).text).result.isError).toBe(false);
      expect(adaSite.jira.requests.length).toBeGreaterThan(searchesBefore);
    },
    180_000,
  );

  it.runIf(target.enabled)("an end user's budget holds whichever key acts as them; it is changed and lifted with PATCH", async () => {
    const { b } = await owner(1000);
    const serverId = await callersServer(b);
    const made = await b.api('POST', '/api/end-users', { external_id: 'dora', credit_limit: { credits: 5, per: 'day' } });
    expect(made.body.credit_limit).toEqual({ credits: 5, per: 'day' });
    const dora = made.body as { id: string };
    const link = (await b.api('POST', '/api/connect-sessions', { end_user_id: dora.id, providers: ['tracker'] })).body.url as string;
    await connectJira(new EndUserBrowser(svc.url), link, 0);
    const own = (await b.api('POST', `/api/end-users/${dora.id}/api-keys`, { server_id: serverId, name: 'dora' })).body.key as string;
    const backend = (await b.api('POST', `/api/servers/${serverId}/api-keys`, { name: 'backend', act_for_end_users: true })).body.key as string;
    // Her own key and the backend naming her, in turn: the search costs 2, so one call of each fits and the
    // third is refused, whichever key makes it.
    const answers: string[] = [];
    for (let i = 0; i < 4; i++) answers.push((await rpc(serverId, i % 2 ? backend : own, { headers: i % 2 ? { 'x-end-user': 'dora' } : {} })).text);
    expect(answers.map((t) => JSON.parse(t).result.isError)).toEqual([false, false, true, true]);
    expect(answers[2]).toMatch(/This end user's budget is 5 credits per day \(UTC\) and 4 credits are spent: search_issues costs 2 credits/);
    const calls = (await b.api('GET', `/api/calls?end_user=${dora.id}`)).body.calls as Array<{ credits: number; code: string }>;
    expect(calls.reduce((n, c) => n + c.credits, 0)).toBe(4);
    expect(calls.filter((c) => c.code === 'budget_exceeded')).toHaveLength(2);
    // Bad changes are refused by name; lifting the limit lets her call again.
    for (const [body, words] of [
      [{}, /Send what changes: display_name, email, credit_limit/],
      [{ external_id: 'x' }, /Unknown field\(s\): external_id/],
      [{ credit_limit: { credits: 0, per: 'day' } }, /"credit_limit.credits" must be a whole number/],
      [{ credit_limit: { credits: 5, per: 'week' } }, /"credit_limit.per" must be "day" or "month"/],
    ] as const) {
      const r = await b.api('PATCH', `/api/end-users/${dora.id}`, body);
      expect(r.status, JSON.stringify(r.body)).toBe(400);
      expect(r.body.message).toMatch(words);
    }
    const lifted = await b.api('PATCH', `/api/end-users/${dora.id}`, { credit_limit: null, display_name: 'Dora' });
    expect(lifted.body).toMatchObject({ credit_limit: null, display_name: 'Dora', external_id: 'dora' });
    expect(JSON.parse((await rpc(serverId, own)).text).result.isError).toBe(false);
    const other = await owner();
    expect((await other.b.api('PATCH', `/api/end-users/${dora.id}`, { credit_limit: null })).status).toBe(404);
  });

  it.runIf(target.enabled)('asks a 2025-11-25 client that declared URL elicitation with -32042, and a 2026-07-28 one with input_required', async () => {
    const { b } = await owner();
    const serverId = await callersServer(b);
    const eu = (await b.api('POST', '/api/end-users', { external_id: 'dana' })).body;
    const key = (await b.api('POST', `/api/end-users/${eu.id}/api-keys`, { server_id: serverId, name: 'dana' })).body.key;

    const client = new ClientV1({ name: 'url-client', version: '1.0.0' }, { capabilities: { elicitation: { url: {} } } });
    await client.connect(new TransportV1(new URL(`${svc.url}/mcp/${serverId}`), { requestInit: { headers: { Authorization: `Bearer ${key}` } } }));
    const error = await client.callTool({ name: 'search_issues', arguments: { jql: 'x' } }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(UrlElicitationRequiredError);
    const [elicitation] = (error as UrlElicitationRequiredError).elicitations;
    expect(elicitation).toMatchObject({ mode: 'url', url: expect.stringContaining('/connect/s/c.') });
    await client.close();

    // 2026-07-28, bare: input_required with a request state; the state works once, for this call only.
    const modern = async (params: Record<string, unknown>, capabilities: Record<string, unknown> = { elicitation: { url: {} } }) => {
      const res = await fetch(`${svc.url}/mcp/${serverId}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          authorization: `Bearer ${key}`,
          'mcp-protocol-version': '2026-07-28',
          'mcp-method': 'tools/call',
          'mcp-name': 'search_issues',
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/call',
          params: {
            ...params,
            name: 'search_issues',
            _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': capabilities },
          },
        }),
      });
      return (await res.json()) as any;
    };
    const asked = await modern({ arguments: { jql: 'x' } });
    expect(asked.result).toMatchObject({
      resultType: 'input_required',
      inputRequests: { connect_tracker: { method: 'elicitation/create', params: { mode: 'url' } } },
    });
    const state = asked.result.requestState as string;
    expect(state).not.toContain(eu.id);
    const again = await modern({ arguments: { jql: 'x' }, requestState: state, inputResponses: { connect_tracker: { action: 'accept' } } });
    expect(again.result.resultType).toBe('input_required');
    const replay = await modern({ arguments: { jql: 'x' }, requestState: state, inputResponses: { connect_tracker: { action: 'accept' } } });
    expect(replay.error.message).toMatch(/used already/);
    const other = await modern({ arguments: { jql: 'y' }, requestState: again.result.requestState, inputResponses: { connect_tracker: { action: 'accept' } } });
    expect(other.error.message).toMatch(/another caller or another call/);
    const tampered = await modern({ arguments: { jql: 'x' }, requestState: `${state.slice(0, -2)}AA` });
    expect(tampered.error.message).toMatch(/not a state this server gave/);
    const declined = await modern({ arguments: { jql: 'x' }, inputResponses: { connect_tracker: { action: 'decline' } } });
    expect(declined.result.structuredContent.error.code).toBe('account_not_connected');
    // A client without URL support gets the link in an ordinary tool error.
    const plainResult = await modern({ arguments: { jql: 'x' } }, {});
    expect(plainResult.result).toMatchObject({ resultType: 'complete', isError: true, structuredContent: { error: { code: 'account_not_connected' } } });
  });

  it.runIf(target.enabled && target.name === 'MongoDB')(
    "deleting an end user stops their key on another instance at once, whatever that instance's caches",
    async () => {
      const second = await startTestService({ ...env, KEY_CACHE_MS: '30000' });
      try {
        const { b } = await owner();
        const serverId = await callersServer(b);
        const ida = (await b.api('POST', '/api/end-users', { external_id: 'ida' })).body;
        const key = (await b.api('POST', `/api/end-users/${ida.id}/api-keys`, { server_id: serverId, name: 'ida' })).body.key as string;
        const call = () =>
          fetch(`${second.url}/mcp/${serverId}`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${key}` },
            body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'search_issues', arguments: { jql: 'x' } } }),
          });
        // The second instance knows the key now (cached for 30 s): Ida has no account yet, so the tool says so.
        const known = await call();
        expect(known.status).toBe(200);
        const told = ((await known.json()) as any).result;
        expect(told.isError, JSON.stringify(told)).toBe(true);
        expect(told.content[0].text).toContain('/connect/s/c.');
        expect((await b.api('DELETE', `/api/end-users/${ida.id}`)).status).toBe(204);
        const after = await call();
        expect(after.status).toBe(401);
        expect(await after.text()).toMatch(/belonged to an end user who was deleted/);
      } finally {
        await second.close();
      }
    },
    180_000,
  );

  it.runIf(target.enabled)(
    'an MCP app approved by an end user acts as them; other people, owners and servers cannot approve for them; deleting them ends it',
    async () => {
      // Signed up: the End users page is read with the session.
      const { b } = await ownerWithCredits(svc);
      const serverId = await callersServer(b);
      const closedServerId = await callersServer(b, 'Closed to end users');
      const opened = await b.api('PATCH', `/api/servers/${serverId}`, { end_user_apps: true, end_user_sign_in_url: 'https://app.example.com/mcp-sign-in' });
      expect(opened.body).toMatchObject({ end_user_apps: true, end_user_sign_in_url: 'https://app.example.com/mcp-sign-in' });
      for (const [body, words] of [
        [{ end_user_apps: 'yes' }, /"end_user_apps" must be true or false/],
        [{ end_user_sign_in_url: 'javascript:alert(1)' }, /"end_user_sign_in_url" must be an http\(s\) URL/],
        [{ end_user_sign_in_url: 'not a url' }, /"end_user_sign_in_url" must be the http\(s\) URL of your app/],
      ] as const)
        expect((await b.api('PATCH', `/api/servers/${serverId}`, body)).body.message).toMatch(words);

      const ada = (await b.api('POST', '/api/end-users', { external_id: 'ada', display_name: 'Ada Lovelace' })).body;
      const bob = (await b.api('POST', '/api/end-users', { external_id: 'bob' })).body;
      const adaBrowser = new EndUserBrowser(svc.url);
      await connectJira(adaBrowser, (await b.api('POST', '/api/connect-sessions', { end_user_id: ada.id })).body.url, 0);
      const bobBrowser = new EndUserBrowser(svc.url);
      expect((await bobBrowser.open((await b.api('POST', '/api/connect-sessions', { end_user_id: bob.id })).body.url)).status).toBe(200);

      // A desktop client registers and sends the person to the authorization endpoint.
      const redirectUri = 'http://127.0.0.1:9/callback';
      const registered = await fetch(`${svc.url}/oauth/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ client_name: 'Ada agent', redirect_uris: [redirectUri], token_endpoint_auth_method: 'none' }),
      });
      const clientId = ((await registered.json()) as { client_id: string }).client_id;
      const verifier = 'w'.repeat(60);
      const authorizeUrl = (server: string) =>
        `${svc.url}/oauth/authorize?${new URLSearchParams({
          response_type: 'code',
          client_id: clientId,
          redirect_uri: redirectUri,
          code_challenge: s256(verifier),
          code_challenge_method: 'S256',
          resource: `${svc.url}/mcp/${server}`,
          state: 'st-1',
        })}`;
      /** An attribute's value as the browser reads it (Handlebars escapes "=", "&", quotes). */
      const unescaped = (value: string) => value.replace(/&#x([0-9A-F]+);/gi, (_, h) => String.fromCharCode(parseInt(h, 16))).replace(/&amp;/g, '&');
      /** The consent page's fields as a browser posts them back. */
      const fieldsOf = (html: string) =>
        Object.fromEntries(
          [...html.matchAll(/<input type="hidden" name="(\w+)" value="([^"]*)">/g)]
            .filter(([, name]) => name !== 'csrf')
            .map(([, name, value]) => [name, unescaped(value)]),
        );

      // Ada's browser sees the consent as herself, with the tools that will use her own account.
      const page = await adaBrowser.get(authorizeUrl(serverId));
      expect(page.status, page.html.slice(0, 500)).toBe(200);
      expect(page.html).toContain('data-testid="end-user-consent"');
      expect(page.html).toContain('wants to act as you');
      expect(page.html).toContain('Ada Lovelace');
      expect(page.html).toMatch(/search_issues<\/span> <span class="badge">your account/);
      const fields = fieldsOf(page.html);
      expect(fields).toMatchObject({ client_id: clientId, redirect_uri: redirectUri, resource: `${svc.url}/mcp/${serverId}`, state: 'st-1' });

      // Bob's browser cannot use Ada's form (its CSRF token is Ada's session's); a form from another site is refused.
      const csrfOfAda = /name="csrf" value="([^"]+)"/.exec(page.html)![1];
      const crossed = await fetch(`${svc.url}/oauth/authorize/end-user`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded', origin: svc.url, cookie: bobBrowser.cookie },
        body: new URLSearchParams({ ...fields, csrf: csrfOfAda, decision: 'approve' }).toString(),
      });
      expect(crossed.status).toBe(403);
      expect(await crossed.text()).toContain('This form has expired');
      const foreign = await fetch(`${svc.url}/oauth/authorize/end-user`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded', origin: 'https://evil.example', cookie: adaBrowser.cookie },
        body: new URLSearchParams({ ...fields, csrf: csrfOfAda, decision: 'approve' }).toString(),
      });
      expect(foreign.status).toBe(403);
      // A server closed to end users, and a browser with no session, are not offered the end user's consent.
      const closed = await adaBrowser.get(authorizeUrl(closedServerId));
      expect(closed.status).toBe(302);
      expect(closed.location).toMatch(/^\/login\?next=/);
      const closedPost = await adaBrowser.post('/oauth/authorize/end-user', page.html, {
        ...fields,
        resource: `${svc.url}/mcp/${closedServerId}`,
        decision: 'approve',
      });
      expect(closedPost.status).toBe(403);
      expect(closedPost.html).toContain('does not let its users connect applications');
      const stranger = await new EndUserBrowser(svc.url).get(authorizeUrl(serverId));
      expect(stranger.html).toContain('Sign in to connect');
      const signIn = new URL(unescaped(/href="(https:\/\/app\.example\.com[^"]+)"/.exec(stranger.html)![1]));
      expect(signIn.searchParams.get('return_to')).toBe(authorizeUrl(serverId));
      // An end user of another owner is a stranger here too.
      const other = await invitedOwner(svc);
      const eve = (await other.b.api('POST', '/api/end-users', { external_id: 'eve' })).body;
      const eveBrowser = new EndUserBrowser(svc.url);
      await eveBrowser.open((await other.b.api('POST', '/api/connect-sessions', { end_user_id: eve.id })).body.url);
      expect((await eveBrowser.get(authorizeUrl(serverId))).html).toContain('Sign in to connect');
      expect(
        (await eveBrowser.post('/oauth/authorize/end-user', (await eveBrowser.open(authorizeUrl(serverId))).html, { ...fields, decision: 'approve' })).status,
      ).toBe(403);

      // The sign-in path: the owner's app signs the person in and sends them through a connect link that returns here.
      const carl = (await b.api('POST', '/api/end-users', { external_id: 'carl' })).body;
      const carlLink = await b.api('POST', '/api/connect-sessions', { end_user_id: carl.id, return_url: signIn.searchParams.get('return_to') });
      const carlBrowser = new EndUserBrowser(svc.url);
      const carlPage = await carlBrowser.open(carlLink.body.url);
      const back = unescaped(/href="([^"]+)">Done: back to/.exec(carlPage.html)![1]);
      expect(back).toBe(authorizeUrl(serverId));
      const carlConsent = await carlBrowser.get(back);
      expect(carlConsent.html).toContain('wants to act as you');
      const denied = await carlBrowser.post('/oauth/authorize/end-user', carlConsent.html, { ...fieldsOf(carlConsent.html), decision: 'deny' });
      expect(new URL(denied.location!).searchParams.get('error')).toBe('access_denied');

      // Ada approves: the code comes back to the client, which redeems it.
      const approved = await adaBrowser.post('/oauth/authorize/end-user', page.html, { ...fields, decision: 'approve' });
      expect(approved.status, approved.html.slice(0, 500)).toBe(302);
      const landed = new URL(approved.location!);
      expect(`${landed.origin}${landed.pathname}`).toBe(redirectUri);
      expect(landed.searchParams.get('state')).toBe('st-1');
      const tokens = await fetch(`${svc.url}/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'authorization_code',
          client_id: clientId,
          code: landed.searchParams.get('code')!,
          redirect_uri: redirectUri,
          code_verifier: verifier,
        }),
      });
      expect(tokens.status).toBe(200);
      const accessToken = ((await tokens.json()) as { access_token: string }).access_token;

      // Its calls use Ada's own Jira site, never Bob's (who has none), and the owner pays.
      const adaSite = sandboxes.atlassian.sites[0];
      const searches = () => adaSite.jira.requests.filter((r) => r.path.endsWith('/search/jql')).length;
      const [before, balance] = [searches(), await balanceOf(b)];
      const call = JSON.parse((await rpc(serverId, accessToken)).text);
      expect(call.result.isError, JSON.stringify(call)).toBe(false);
      expect(searches()).toBe(before + 1);
      const cost = (await b.api('GET', '/api/catalog')).body.tools.find((t: { id: string }) => t.id === 'tracker_search_issues').credits;
      expect(await balanceOf(b)).toBe(balance - cost);
      const logged = (await b.api('GET', `/api/calls?end_user=${ada.id}`)).body.calls;
      expect(logged).toEqual([expect.objectContaining({ end_user_id: ada.id, tool: 'search_issues' })]);
      // It cannot name anyone else.
      expect((await rpc(serverId, accessToken, { headers: { 'x-end-user': 'bob' } })).status).toBe(403);
      // The owner sees whose app it is.
      const apps = (await b.api('GET', `/api/end-users/${ada.id}/apps`)).body.apps;
      expect(apps).toEqual([expect.objectContaining({ client_name: 'Ada agent', end_user_id: ada.id, server_id: serverId, revoked_at: null })]);
      expect((await b.api('GET', '/api/oauth/grants')).body.grants.find((g: { id: string }) => g.id === apps[0].id).end_user_id).toBe(ada.id);
      expect((await other.b.api('GET', `/api/end-users/${ada.id}/apps`)).status).toBe(404);
      expect((await b.get(`${svc.url}/end-users`)).html).toContain('Apps acting as them: <bdi>Ada agent</bdi>');

      // Deleting Ada ends the app at once.
      expect((await b.api('DELETE', `/api/end-users/${ada.id}`)).status).toBe(204);
      const gone = await rpc(serverId, accessToken);
      expect(gone.status).toBe(401);
      const revoked = (await b.api('GET', '/api/oauth/grants')).body.grants.find((g: { id: string }) => g.id === apps[0].id);
      expect(revoked).toMatchObject({ revoked_reason: 'its end user was deleted' });
      expect(searches()).toBe(before + 1);
    },
    180_000,
  );
});

// Every lifetime of an end user's things is in the store's time: a host whose clock is 40 minutes ahead of the
// store's (or behind it) still honours a 15-minute request state and a 30-minute link, and stamps in store time.
for (const target of storeTargets('end_user_clock').filter((t) => t.name !== 'embedded, on disk')) {
  describe.runIf(target.enabled)(`end users' lifetimes in the store's time: ${target.name}`, () => {
    it("request states, connect links, browser sessions and end users' stamps read the store's clock", async () => {
      const store = await target.open();
      for (const hostAheadMs of [-40 * 60_000, 40 * 60_000]) {
        const skewed = { ...store, clock: new StoreClock(async () => new Date(Date.now() - hostAheadMs)) };
        await skewed.clock.measure();
        const storeNow = skewed.clock.now();
        const secret = randomBytes(32);
        const states = new RequestStates(skewed, secret);
        const state = states.seal('caller\0tools/call\0digest');
        expect(await states.open('caller\0tools/call\0digest', state)).toBeNull();
        expect(await states.open('caller\0tools/call\0digest', state)).toMatch(/used already/);

        const links = new ConnectSessions(skewed, secret, { publicUrl: 'http://127.0.0.1:1' });
        const made = await links.create({ ownerId: 'own_1', endUserId: 'eu_1', providers: null, returnUrl: null });
        expect(Math.abs(made.expires_at.getTime() - (storeNow + 30 * 60_000))).toBeLessThan(5000);
        const link = await links.resolve(new URL(made.url).pathname.split('/').pop()!);
        expect(link.endUserId).toBe('eu_1');
        const fromCall = await links.resolve(new URL(links.callLink('own_1', 'eu_1', 'tracker')).pathname.split('/').pop()!);
        expect(fromCall.providers).toEqual(['tracker']);
        const started = await links.startBrowser('own_1', 'eu_1');
        expect(await links.browserOf(started.cookie)).toMatchObject({ endUserId: 'eu_1' });
        // The sweep, by the store's clock, keeps what is still in time.
        expect(await links.sweep()).toBe(0);
        expect(await states.sweep()).toBe(0);

        const person = await new EndUsers(skewed).create(`own_${hostAheadMs}`, { external_id: 'x' });
        expect(Math.abs(person.created_at.getTime() - storeNow)).toBeLessThan(5000);
      }
      await store.close();
    });
  });
}
