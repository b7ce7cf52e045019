// Connected accounts end to end, over HTTP, on the embedded store and on MongoDB (FerretDB): the operator's
// OAuth apps in the environment, the three OAuth sandboxes on loopback (a copy of tool-specs/ points at them),
// an owner's browser as plain HTTP (session cookie, consent forms posted, redirects followed), calls through
// the official MCP SDK client. Refresh edges move the sandboxes' clock; what the service's own clock decides
// (a flow's expiry, when a connection was last refreshed) is moved in its store. The browser's view (Chromium
// through each consent page from the Accounts page) is connected-accounts.browser.test.ts; several instances
// on one MongoDB, connected-accounts.scale.test.ts.
import { createHmac, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Vault, parseMasterKey } from '../runtime/accounts/accounts.ts';
import { KEEP_MS } from '../runtime/accounts/state-webhooks.ts';
import { listenOnLoopback, readBody } from '../sandboxes/harness.ts';
import { DAY, MINUTE } from '../sandboxes/oauth/clock.ts';
import { APPS, APP_ENV, HttpBrowser, type OAuthSandboxes, startOAuthSandboxes } from './support/connect.ts';
import { MONGODB_URL, dropTestDatabases, mongoTestUrl } from './support/mongo.ts';
import { connectV1 } from './support/mcp-clients.ts';
import { type ToolResult, failed, succeeded } from './support/tool-calls.ts';
import { type TestService, startTestService } from './support/service.ts';

const MASTER_KEY = randomBytes(32).toString('hex');

const targets = [
  { name: 'the embedded store', enabled: true, env: () => ({}) },
  { name: 'MongoDB', enabled: Boolean(MONGODB_URL), env: () => ({ MONGODB_URL: mongoTestUrl('connected_accounts').url }) },
];

afterAll(async () => {
  await dropTestDatabases();
});

/** An OTLP/HTTP receiver keeping every export: traces must hold no token either. */
async function startTraceReceiver() {
  const bodies: string[] = [];
  const running = await listenOnLoopback(async (req, res) => {
    bodies.push(await readBody(req));
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
  return { ...running, bodies };
}

/** A webhook receiver: what it was sent, and what it answers next (200 unless told). */
async function startWebhookReceiver() {
  const received: Array<{ headers: Record<string, string | string[] | undefined>; body: string }> = [];
  const answers: number[] = [];
  const running = await listenOnLoopback(async (req, res) => {
    received.push({ headers: req.headers, body: await readBody(req) });
    res.writeHead(answers.shift() ?? 200).end();
  });
  return { ...running, received, answers, events: () => received.map((r) => JSON.parse(r.body) as { type: string; data: any }) };
}

describe.each(targets)('connected accounts on $name', (target) => {
  let sandboxes: OAuthSandboxes;
  let svc: TestService;
  let traces: Awaited<ReturnType<typeof startTraceReceiver>>;

  beforeAll(async () => {
    if (!target.enabled) return;
    traces = await startTraceReceiver();
    sandboxes = await startOAuthSandboxes();
    svc = await startTestService({
      ...APP_ENV,
      ...target.env(),
      MASTER_KEY,
      TOOL_SPECS_DIR: sandboxes.specsDir,
      // Every call reads the account as stored: tests change what is stored (an older token pair, a clock).
      KEY_CACHE_MS: '0',
      // A connected account counts like a pasted one (no test's owner needs more).
      MAX_ACCOUNTS_PER_OWNER: '3',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${traces.url}/v1/traces`,
      OTEL_BSP_SCHEDULE_DELAY: '100',
    });
    sandboxes.register(svc.url);
  }, 180_000);

  afterAll(async () => {
    await svc?.close();
    await Promise.all([sandboxes?.close(), traces?.close()]);
  });

  /** A new owner signed in in a browser, with credits. */
  async function owner(credits = 100) {
    const browser = new HttpBrowser(svc.url);
    const id = await browser.signUp();
    await svc.call('POST', `/api/admin/owners/${id}/credits`, { token: svc.operatorToken, body: { amount: credits } });
    return { id, browser };
  }

  /** Starts a connection as the Accounts page does, and follows it to the provider's consent page. */
  async function toConsent(b: HttpBrowser, body: Record<string, unknown>) {
    const started = await b.api('POST', '/api/accounts/connect', body);
    expect(started.status, JSON.stringify(started.body)).toBe(201);
    const page = await b.follow(started.body.authorize_url);
    expect(page.status, page.html).toBe(200);
    return page;
  }

  /** The account a finished connection landed on (/accounts?connected=<id>). */
  function landedOn(page: { url: string; status: number; html: string }): string {
    const url = new URL(page.url);
    expect(url.pathname, page.html.slice(0, 3000)).toBe('/accounts');
    expect(page.status).toBe(200);
    return url.searchParams.get('connected')!;
  }

  /** Jira: consent, then the site picker (two sites), then the pick. */
  async function connectJira(b: HttpBrowser, name = 'Jira', site = 1): Promise<string> {
    const consent = await toConsent(b, { provider: 'tracker', name });
    const picker = await b.consent(consent.url, consent.html);
    expect(new URL(picker.url).pathname).toBe('/connect/choose');
    for (const s of sandboxes.atlassian.sites) expect(picker.html).toContain(s.name);
    const chosen = await b.api('POST', `/api/connect/flows/${new URL(picker.url).searchParams.get('flow')}/choose`, {
      choice: sandboxes.atlassian.sites[site].cloudId,
    });
    expect(chosen.status, JSON.stringify(chosen.body)).toBe(200);
    return landedOn(await b.follow(new URL(chosen.body.redirect_to, svc.url).href));
  }

  /** A server exposing one base tool bound to the account, and a client with its key. */
  async function serverWith(b: HttpBrowser, baseTool: string, accountId: string) {
    const server = await b.api('POST', '/api/servers', { name: `${baseTool} server` });
    const tool = await b.api('POST', `/api/servers/${server.body.id}/tools`, { base_tool: baseTool, account_id: accountId });
    expect(tool.status, JSON.stringify(tool.body)).toBe(201);
    const key = await b.api('POST', `/api/servers/${server.body.id}/api-keys`, { name: 'key' });
    const client = await connectV1(svc.url, server.body.id, key.body.key);
    return {
      serverId: server.body.id as string,
      toolId: tool.body.id as string,
      client,
      call: (args: Record<string, unknown>) => client.callTool({ name: baseTool, arguments: args }) as Promise<ToolResult>,
    };
  }

  const SEARCH = { jql: 'project = DEMO ORDER BY created DESC', max_results: 2 };
  const balanceOf = async (b: HttpBrowser) => (await b.api('GET', '/api/me')).body.balance as number;
  const account = async (b: HttpBrowser, id: string) => (await b.api('GET', `/api/accounts/${id}`)).body;
  const refreshes = () => sandboxes.atlassian.tokenRequestCount('refresh_token');

  it.runIf(target.enabled)(
    'connects Jira, Notion and Supabase through their consent pages: verified accounts that hold no token and call with it',
    async () => {
      const { browser: b } = await owner();

      // Jira: two sites, the second picked; calls go to api.atlassian.com/ex/jira/<its cloud id> with the bearer.
      const jiraId = await connectJira(b, 'Jira', 1);
      const jira = await account(b, jiraId);
      const site = sandboxes.atlassian.sites[1];
      expect(jira).toMatchObject({
        kind: 'tracker',
        name: 'Jira',
        auth: 'oauth',
        state: 'connected',
        state_reason: null,
        cloud_id: site.cloudId,
        site_url: site.url,
      });
      expect(jira.checked_at).toBeTruthy();
      expect(jira.verified_at).toBeTruthy();
      const tracker = await serverWith(b, 'tracker_search_issues', jiraId);
      expect(succeeded(await tracker.call(SEARCH)).issues).toHaveLength(2);
      const reached = site.jira.requests.find((r) => r.path === '/rest/api/3/search/jql')!;
      expect(reached.gateway).toBe(true);
      expect(String(reached.headers.authorization)).toMatch(/^Bearer eyJ/);
      expect(sandboxes.atlassian.sites[0].jira.requests.filter((r) => r.path.startsWith('/rest/api/3/search'))).toHaveLength(0);
      await tracker.client.close();

      // Notion: the person shares one page on the consent page; the integration sees exactly it.
      const notionConsent = await toConsent(b, { provider: 'workspace', name: 'Notion' });
      const [, pageId, title] = /name="page"\s+value="([^"]+)"\s*\/>([^<]+)</.exec(notionConsent.html)!;
      const notionId = landedOn(await b.consent(notionConsent.url, notionConsent.html, 'accept', [['page', pageId]]));
      expect(await account(b, notionId)).toMatchObject({
        kind: 'workspace',
        auth: 'oauth',
        state: 'connected',
        workspace_name: sandboxes.notion.oauth.workspace.name,
      });
      const workspace = await serverWith(b, 'search_pages', notionId);
      const found = succeeded(await workspace.call({ query: title.trim() }));
      expect(found.results.map((r: { title: string }) => r.title)).toContain(title.trim());
      expect(String(sandboxes.notion.requests.at(-1)!.headers.authorization)).toMatch(/^Bearer /);
      await workspace.client.close();

      // Supabase: the organization on the consent page, then the project and the key: anon obeys row-level security.
      const supabaseConsent = await toConsent(b, { provider: 'database', name: 'Supabase' });
      const acme = sandboxes.supabase.organizations.find((o) => o.name === 'Acme')!;
      const picker = await b.consent(supabaseConsent.url, supabaseConsent.html, 'accept', [['organization', acme.slug]]);
      expect(picker.html).toContain('Bypasses row-level security');
      expect(picker.html).toContain('Obeys row-level security');
      const project = sandboxes.supabase.projects[0];
      const chosen = await b.api('POST', `/api/connect/flows/${new URL(picker.url).searchParams.get('flow')}/choose`, { choice: `${project.ref}/anon` });
      const supabaseId = landedOn(await b.follow(new URL(chosen.body.redirect_to, svc.url).href));
      const supabase = await account(b, supabaseId);
      expect(supabase).toMatchObject({ kind: 'database', auth: 'oauth', state: 'connected', url: project.url, project_ref: project.ref, key_name: 'anon' });
      expect(supabase.secret_hint).toBe(`key: ••••${project.keys.anonKey.slice(-4)}`);
      const database = await serverWith(b, 'database_read_records', supabaseId);
      expect(succeeded(await database.call({ table: 'todos' })).data).toHaveLength(3);
      await database.client.close();

      // No token in what the API shows.
      const listed = JSON.stringify((await b.api('GET', '/api/accounts')).body);
      for (const r of sandboxes.atlassian.requests) expect(listed).not.toContain(String(r.headers.authorization ?? 'none').replace(/^Bearer /, ''));
      expect(listed).not.toContain(project.keys.anonKey);
      // The audit trail says who connected what.
      const audit = (await b.api('GET', '/api/audit?action=account')).body.events;
      expect(audit.filter((e: { action: string }) => e.action === 'account.connect')).toHaveLength(3);
      // The owner's quota of accounts is said before a fourth goes to a consent page.
      const full = await b.api('POST', '/api/accounts/connect', { provider: 'workspace', name: 'Another' });
      expect(full.status).toBe(403);
      expect(full.body.message).toContain('at most 3 accounts');
    },
    120_000,
  );

  it.runIf(target.enabled)(
    'refreshes an expired access token once for twenty concurrent calls, retries them, and keeps the rotated refresh token',
    async () => {
      const { browser: b } = await owner(1000);
      const id = await connectJira(b);
      const tracker = await serverWith(b, 'tracker_search_issues', id);
      expect(succeeded(await tracker.call(SEARCH)).issues).toHaveLength(2);
      const before = refreshes();
      const stored = await svc.store.collection<any>('accounts').findOne({ _id: id });

      // An hour later (on the provider's clock) the access token is refused: one refresh, every call retried once.
      sandboxes.clock.advance(61 * MINUTE);
      const results = await Promise.all(Array.from({ length: 20 }, () => tracker.call(SEARCH)));
      for (const r of results) expect(succeeded(r).issues).toHaveLength(2);
      expect(refreshes()).toBe(before + 1);
      const after = await svc.store.collection<any>('accounts').findOne({ _id: id });
      expect(after.connection.version).toBe(stored.connection.version + 1);
      // The new pair is stored (rotated: the refresh token changed too).
      const vault = new Vault(parseMasterKey(MASTER_KEY));
      const tokens = (doc: any) => vault.open(doc.connection.tokens, `${id}\0connection`);
      expect(tokens(after).refresh_token).not.toBe(tokens(stored).refresh_token);
      expect(tokens(after).access_token).not.toBe(tokens(stored).access_token);
      // Twenty-one calls of 2 credits charged and kept: the refresh cost the caller nothing.
      expect(await balanceOf(b)).toBe(1000 - 21 * 2);
      await tracker.client.close();
    },
    120_000,
  );

  it.runIf(target.enabled)(
    'refreshes before expiry when the provider said when it expires',
    async () => {
      const { browser: b } = await owner();
      const id = await connectJira(b);
      const tracker = await serverWith(b, 'tracker_search_issues', id);
      // The service's own clock says the token expires within the minute: refreshed before the call, not after a 401.
      await svc.store.collection('accounts').updateOne({ _id: id }, { $set: { 'connection.expires_at': new Date(Date.now() + 30_000) } });
      const before = refreshes();
      const api = sandboxes.atlassian.requests.length;
      expect(succeeded(await tracker.call(SEARCH)).issues).toHaveLength(2);
      expect(refreshes()).toBe(before + 1);
      // Each request of the call sent once: none was refused for an expired token and sent again.
      const sent = sandboxes.atlassian.requests
        .slice(api)
        .filter((r) => r.path.startsWith('/ex/jira/'))
        .map((r) => r.path);
      expect(sent).toContain(`/ex/jira/${sandboxes.atlassian.sites[1].cloudId}/rest/api/3/search/jql`);
      expect(new Set(sent).size).toBe(sent.length);
      // Verifying a connection renews it: only that proves the grant still holds.
      const verified = await b.api('POST', `/api/accounts/${id}/verify`);
      expect(verified.body).toMatchObject({ verified: true, state: 'connected' });
      expect(refreshes()).toBe(before + 2);
      await tracker.client.close();
    },
    120_000,
  );

  it.runIf(target.enabled)(
    'ends every bad or failed flow on a page that says what happened, saves nothing, and audits it',
    async () => {
      const { id: ownerId, browser: b } = await owner();
      const failedPage = async (p: Promise<{ url: string; status: number; html: string }>, words: RegExp) => {
        const page = await p;
        expect(page.status, page.url).toBe(400);
        expect(page.html).toContain('data-testid="connect-failed"');
        expect(page.html.replace(/&#x27;|&#39;/g, "'").replace(/&quot;/g, '"')).toMatch(words);
        return page;
      };
      const callback = (query: string) => b.follow(`${svc.url}/connect/callback?${query}`);
      const accountsNow = async () => (await b.api('GET', '/api/accounts')).body.accounts.length;

      await failedPage(callback('code=abc'), /no "state"/);
      await failedPage(callback('code=abc&state=not-a-state'), /matches no connection/);

      // Cancel at the provider.
      let consent = await toConsent(b, { provider: 'tracker', name: 'Jira' });
      const cancelled = await failedPage(b.consent(consent.url, consent.html, 'cancel'), /You cancelled the connection/);
      expect(cancelled.html).toContain('nothing was saved');

      // The callback replayed (a reload): the state worked once.
      consent = await toConsent(b, { provider: 'workspace', name: 'Notion' });
      const action = /<form method="post" action="([^"]+)"/.exec(consent.html)![1];
      const answer = await fetch(new URL(action, consent.url), {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams([
          ['request', /name="request" value="([^"]+)"/.exec(consent.html)![1]],
          ['decision', 'accept'],
        ]).toString(),
      });
      const back = answer.headers.get('location')!;
      // Another browser (another owner) opening it first is refused, and does not use it up.
      const stranger = new HttpBrowser(svc.url);
      await stranger.signUp();
      await failedPage(stranger.follow(back), /started in another browser/);
      expect(new URL((await b.follow(back)).url).pathname).toBe('/accounts');
      await failedPage(b.follow(back), /already come back/);

      // Too late: the service's own clock is past the flow's ten minutes.
      consent = await toConsent(b, { provider: 'tracker', name: 'Jira late' });
      await svc.store
        .collection('connect_flows')
        .updateMany({ 'holder.owner_id': ownerId, stage: 'authorizing' }, { $set: { expires_at: new Date(Date.now() - 1000) } });
      await failedPage(b.consent(consent.url, consent.html), /took too long/);

      // The token endpoint refuses, fails, or answers garbage.
      const count = await accountsNow();
      for (const [fault, words] of [
        [
          { status: 403, body: { error: 'invalid_grant', error_description: 'Invalid authorization code' } },
          /refused the grant \(invalid_grant: Invalid authorization code\)/,
        ],
        [{ status: 503, body: 'upstream connect error' }, /answered HTTP 503/],
        [{ status: 200, body: '<html>not a token</html>' }, /without a bearer access token/],
      ] as const) {
        consent = await toConsent(b, { provider: 'tracker', name: 'Jira' });
        sandboxes.atlassian.faults.push({ method: 'POST', pathPrefix: '/oauth/token', ...fault });
        await failedPage(b.consent(consent.url, consent.html), words);
      }
      // A grant that reaches no Jira site.
      consent = await toConsent(b, { provider: 'tracker', name: 'Jira' });
      sandboxes.atlassian.faults.push({ method: 'GET', pathPrefix: '/oauth/token/accessible-resources', status: 200, body: [] });
      await failedPage(b.consent(consent.url, consent.html), /no Jira site/);
      // A Supabase organization without a project.
      consent = await toConsent(b, { provider: 'database', name: 'Supabase' });
      const empty = sandboxes.supabase.organizations.find((o) => o.name === 'Side projects')!;
      await failedPage(b.consent(consent.url, consent.html, 'accept', [['organization', empty.slug]]), /has no project/);
      expect(await accountsNow()).toBe(count);

      const reasons = (await b.api('GET', '/api/audit?action=account.connect_fail')).body.events.map((e: { changes: { reason: string } }) => e.changes.reason);
      // Each in the owner's trail (the stranger's attempt too: it was the owner's connection).
      expect(reasons.sort()).toEqual(
        [
          'state_missing',
          'state_unknown',
          'access_denied',
          'state_foreign',
          'state_reused',
          'state_expired',
          'token_refused',
          'token_failed',
          'token_failed',
          'nothing_to_connect',
          'nothing_to_connect',
        ].sort(),
      );
    },
    180_000,
  );

  it.runIf(target.enabled)(
    'a flow started with an owner token first asks that owner to sign in; another owner cannot finish it',
    async () => {
      const { browser: b } = await owner();
      const token = (await b.api('POST', '/api/me/tokens', { name: 'script' })).body.token;
      const started = await svc.call('POST', '/api/accounts/connect', { token, body: { provider: 'workspace', name: 'Notion' } });
      expect(started.status).toBe(201);
      const url = started.body.authorize_url as string;
      expect(url).toMatch(new RegExp(`^${svc.url}/connect/start\\?flow=cf_\\w+$`));
      // Signed out: the sign-in page, coming back here.
      const signedOut = await fetch(url, { redirect: 'manual' });
      expect(signedOut.headers.get('location')).toBe(`/login?next=${encodeURIComponent(new URL(url).pathname + new URL(url).search)}`);
      // Another owner's browser.
      const other = new HttpBrowser(svc.url);
      await other.signUp();
      const refused = await other.follow(url);
      expect(refused.status).toBe(400);
      expect(refused.html).toContain('belongs to another account');
      // The owner's own browser goes on to Notion's consent page.
      expect((await b.follow(url)).html).toContain('would like to access');
    },
    60_000,
  );

  it.runIf(target.enabled)(
    'tells the webhook, signed, when an account needs its owner and when it is connected again; retries with backoff',
    async () => {
      const { browser: b } = await owner(100);
      const receiver = await startWebhookReceiver();
      try {
        const set = await b.api('PUT', '/api/me/webhook', { url: `${receiver.url}/hooks` });
        expect(set.status).toBe(200);
        const secret = set.body.secret as string;
        expect(secret).toMatch(/^whsec_/);
        expect(JSON.stringify((await b.api('GET', '/api/me/webhook')).body)).not.toContain(secret);
        const verify = (r: { headers: Record<string, unknown>; body: string }) =>
          expect(r.headers['x-toolserver-signature-256']).toBe(`sha256=${createHmac('sha256', secret).update(r.body).digest('hex')}`);

        // A receiver that fails first gets the event again after the first backoff.
        receiver.answers.push(500);
        expect((await b.api('POST', '/api/me/webhook/ping')).status).toBe(202);
        await expect.poll(async () => (await b.api('GET', '/api/me/webhook')).body.deliveries[0]?.attempts).toBe(1);
        expect(receiver.received).toHaveLength(1);
        expect(await svc.connect.webhooks.deliverDue(new Date(Date.now() + 5000))).toBe(0);
        expect(await svc.connect.webhooks.deliverDue(new Date(Date.now() + 11_000))).toBe(1);
        expect(receiver.received).toHaveLength(2);
        expect(receiver.received[1].body).toBe(receiver.received[0].body);
        receiver.received.forEach(verify);
        const deliveries = (await b.api('GET', '/api/me/webhook')).body.deliveries;
        expect(deliveries[0]).toMatchObject({ event: 'ping', attempts: 2, last_result: 'HTTP 200', given_up: false });
        // Delivered: later rounds leave it be (the embedded store once matched its null next_at as due, and sent it again).
        expect(await svc.connect.webhooks.deliverDue(new Date(Date.now() + 60_000))).toBe(0);
        expect(receiver.received).toHaveLength(2);
        // A delivered event is listed for KEEP_MS, then goes with the hourly sweeps.
        expect(await svc.connect.webhooks.sweep(new Date(Date.now() + KEEP_MS - 60_000))).toBe(0);
        expect(await svc.connect.webhooks.sweep(new Date(Date.now() + KEEP_MS + 60_000))).toBe(1);
        expect((await b.api('GET', '/api/me/webhook')).body.deliveries).toEqual([]);

        // A Notion account whose access is revoked at Notion: its refresh is refused, the webhook is told.
        const consent = await toConsent(b, { provider: 'workspace', name: 'Notion' });
        const id = landedOn(await b.consent(consent.url, consent.html));
        const workspace = await serverWith(b, 'search_pages', id);
        succeeded(await workspace.call({ query: '' }));
        sandboxes.notion.oauth.revokeApp(APPS.workspace.clientId);
        const refused = failed(await workspace.call({ query: '' }));
        expect(refused.code).toBe('account_needs_reauth');
        await expect.poll(() => receiver.events().filter((e) => e.type === 'account.state_changed').length).toBe(1);
        const event = receiver.events().at(-1)!;
        expect(event.data).toMatchObject({
          account: { id, name: 'Notion', kind: 'workspace', auth: 'oauth' },
          previous_state: 'connected',
          state: 'needs_reauth',
        });
        expect(event.data.reconnect_url).toBe(`${svc.url}/accounts/${id}/reconnect`);
        receiver.received.forEach(verify);

        // Reconnected in place: same account, same tool; the webhook hears it is connected again.
        const again = await b.api('POST', `/api/accounts/${id}/reconnect`, {});
        const page = await b.follow(again.body.authorize_url);
        expect(landedOn(await b.consent(page.url, page.html))).toBe(id);
        succeeded(await workspace.call({ query: '' }));
        await expect.poll(() => receiver.events().filter((e) => e.type === 'account.state_changed').length).toBe(2);
        expect(receiver.events().at(-1)!.data).toMatchObject({ previous_state: 'needs_reauth', state: 'connected' });
        receiver.received.forEach(verify);
        await workspace.client.close();
      } finally {
        await receiver.close();
      }
    },
    120_000,
  );

  it.runIf(target.enabled)(
    'a spent refresh token works again inside the leeway; outside it the grant is revoked, calls are refused with the link and cost nothing; reconnecting in place keeps the id and tools',
    async () => {
      const { browser: b } = await owner(100);
      const id = await connectJira(b);
      const tracker = await serverWith(b, 'tracker_search_issues', id);
      const accounts = svc.store.collection<any>('accounts');
      const old = (await accounts.findOne({ _id: id })).connection;
      // Rotated once; then the older pair comes back (what a lost write would leave).
      sandboxes.clock.advance(61 * MINUTE);
      succeeded(await tracker.call(SEARCH));
      await accounts.updateOne({ _id: id }, { $set: { connection: old } });
      // 5 minutes after the rotation: the spent token still works.
      sandboxes.clock.advance(5 * MINUTE);
      succeeded(await tracker.call(SEARCH));
      expect((await account(b, id)).state).toBe('connected');

      // 11 minutes after its first use: Atlassian revokes the grant's refresh tokens.
      await accounts.updateOne({ _id: id }, { $set: { connection: old } });
      sandboxes.clock.advance(6 * MINUTE);
      const balance = await balanceOf(b);
      const first = failed(await tracker.call(SEARCH));
      expect(first.code).toBe('account_needs_reauth');
      expect(first.message).toContain('Unknown or invalid refresh token');
      expect(first).toMatchObject({ account: { id, name: 'Jira' }, reconnect_url: `${svc.url}/accounts/${id}/reconnect` });
      const shown = await account(b, id);
      expect(shown).toMatchObject({ state: 'needs_reauth', state_reason: expect.stringContaining('invalid_grant') });
      // Refused before anything is sent or charged.
      const requests = sandboxes.atlassian.requests.length;
      const tokenRequests = sandboxes.atlassian.tokenRequests.length;
      const second = failed(await tracker.call(SEARCH));
      expect(second.code).toBe('account_needs_reauth');
      expect(second.message).toContain(`/accounts/${id}/reconnect`);
      expect(sandboxes.atlassian.requests.length).toBe(requests);
      expect(sandboxes.atlassian.tokenRequests.length).toBe(tokenRequests);
      expect(await balanceOf(b)).toBe(balance);
      const calls = (await b.api('GET', '/api/calls?limit=2')).body.calls;
      expect(calls.map((c: { outcome: string; code: string }) => [c.outcome, c.code])).toEqual([
        ['rejected', 'account_needs_reauth'],
        ['refunded', 'account_needs_reauth'],
      ]);
      // Verifying it renews nothing: only reconnecting mends it.
      const verify = await b.api('POST', `/api/accounts/${id}/verify`);
      expect(verify.body).toMatchObject({ verified: false, error: { code: 'account_needs_reauth' }, state: 'needs_reauth' });
      // Every page says so, with the way back.
      const page = await b.get(`${svc.url}/servers`);
      expect(page.html).toContain('data-testid="account-banner"');
      expect(page.html).toContain(`href="/accounts/${id}/reconnect"`);
      const audit = (await b.api('GET', '/api/audit?action=account.state')).body.events;
      expect(audit[0]).toMatchObject({ actor: { type: 'service' }, target: { id }, changes: { state: { from: 'connected', to: 'needs_reauth' } } });

      // Reconnected in place: the same id, the same tool; the site it had is picked again without asking.
      const again = await b.api('POST', `/api/accounts/${id}/reconnect`, {});
      expect(again.status).toBe(201);
      const consent = await b.follow(again.body.authorize_url);
      expect(landedOn(await b.consent(consent.url, consent.html))).toBe(id);
      expect(await account(b, id)).toMatchObject({ id, name: 'Jira', state: 'connected', cloud_id: sandboxes.atlassian.sites[1].cloudId });
      expect(succeeded(await tracker.call(SEARCH)).issues).toHaveLength(2);
      expect((await b.api('GET', `/api/servers/${tracker.serverId}/tools`)).body.tools[0]).toMatchObject({ id: tracker.toolId, account_id: id });
      expect((await b.get(`${svc.url}/servers`)).html).not.toContain('data-testid="account-banner"');
      await tracker.client.close();
    },
    120_000,
  );

  it.runIf(target.enabled)(
    'keeps an idle Atlassian connection alive past 90 days; one left alone dies at 90 days',
    async () => {
      const { browser: b } = await owner(100);
      const accounts = svc.store.collection('accounts');
      const kept = await connectJira(b, 'kept');
      const keptTool = await serverWith(b, 'tracker_search_issues', kept);
      // 31 days pass, three times, on both clocks; the keep-alive runs each time (it refreshes after 90 / 3 days).
      for (let month = 0; month < 3; month++) {
        sandboxes.clock.advance(31 * DAY);
        const past = new Date(Date.now() - 31 * DAY);
        await accounts.updateOne({ _id: kept }, { $set: { 'connection.refreshed_at': past, checked_at: past } });
        const before = refreshes();
        expect(await svc.connect.connections.keepAlive()).toMatchObject({ needsOwner: 0 });
        expect(refreshes()).toBeGreaterThan(before);
      }
      expect(succeeded(await keptTool.call(SEARCH)).issues).toHaveLength(2);
      expect((await account(b, kept)).state).toBe('connected');

      // Without the keep-alive, 91 days unused end a connection: the next call finds it needing its owner.
      const left = await connectJira(b, 'left alone');
      const leftTool = await serverWith(b, 'tracker_search_issues', left);
      sandboxes.clock.advance(91 * DAY);
      const dead = failed(await leftTool.call(SEARCH));
      expect(dead.code).toBe('account_needs_reauth');
      await keptTool.client.close();
      await leftTool.client.close();
    },
    120_000,
  );

  it.runIf(target.enabled)('writes no token, code or client secret in any log line, trace or audit entry', async () => {
    await svc.flush();
    const vault = new Vault(parseMasterKey(MASTER_KEY));
    const secrets = new Set<string>(Object.values(APPS).map((a) => a.clientSecret));
    for (const doc of await svc.store.collection<any>('accounts').find({ auth: 'oauth' })) {
      for (const v of Object.values(vault.open(doc.connection.tokens, `${doc._id}\0connection`))) secrets.add(v as string);
    }
    const sent = [...sandboxes.atlassian.requests, ...sandboxes.notion.requests, ...sandboxes.supabase.requests];
    for (const r of sent) {
      const bearer = /^Bearer\s+(\S+)/.exec(String(r.headers.authorization ?? ''))?.[1];
      if (bearer) secrets.add(bearer);
      for (const [k, v] of r.path.includes('token') ? [...new URLSearchParams(r.body), ...Object.entries(safeJson(r.body))] : [])
        if (['code', 'refresh_token', 'code_verifier', 'client_secret'].includes(k) && typeof v === 'string') secrets.add(v);
    }
    expect(secrets.size).toBeGreaterThan(20);
    const audit = JSON.stringify([
      (await svc.call('GET', '/api/admin/audit?limit=1000', { token: svc.operatorToken })).body,
      await svc.store.collection('audit_events').find({}),
    ]);
    await expect.poll(() => traces.bodies.length, { timeout: 15_000 }).toBeGreaterThan(0);
    const places = { logs: svc.logs.join('\n'), traces: traces.bodies.join('\n'), audit };
    for (const [place, text] of Object.entries(places)) for (const secret of secrets) expect(text.includes(secret), `${place} holds a secret`).toBe(false);
  });
});

function safeJson(text: string): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(text);
    return v && typeof v === 'object' ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

describe("the operator's OAuth apps", () => {
  let svc: TestService;
  beforeAll(async () => {
    // Tracker's app from the environment; the others not configured.
    svc = await startTestService({ OAUTH_TRACKER_CLIENT_ID: APPS.tracker.clientId, OAUTH_TRACKER_CLIENT_SECRET: APPS.tracker.clientSecret, SANDBOXES: 'off' });
  });
  afterAll(async () => {
    await svc?.close();
  });
  const operator = (method: string, p: string, body?: unknown) => svc.call(method, p, { token: svc.operatorToken, body });

  it('lists what to register at each provider, keeps client secrets to itself, and lets the environment win', async () => {
    const listed = (await operator('GET', '/api/admin/oauth-apps')).body.apps;
    expect(listed.map((a: { provider: string }) => a.provider)).toEqual(['database', 'tracker', 'workspace']);
    expect(listed.find((a: { provider: string }) => a.provider === 'tracker')).toMatchObject({
      by: 'Atlassian',
      configured: true,
      source: 'environment',
      client_id: APPS.tracker.clientId,
      redirect_uri: `${svc.url}/connect/callback`,
      scopes: ['read:jira-work', 'write:jira-work', 'read:jira-user', 'offline_access'],
      authorize_url: 'https://auth.atlassian.com/authorize',
    });
    expect(listed.find((a: { provider: string }) => a.provider === 'workspace')).toMatchObject({ configured: false, client_id: null });
    const envChange = await operator('PUT', '/api/admin/oauth-apps/tracker', { client_id: 'x', client_secret: 'y' });
    expect(envChange.status).toBe(409);
    expect(envChange.body.message).toContain('OAUTH_TRACKER_CLIENT_ID');

    // Set through the API: the secret is never shown again, logged or audited.
    const set = await operator('PUT', '/api/admin/oauth-apps/workspace', { client_id: APPS.workspace.clientId, client_secret: APPS.workspace.clientSecret });
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({ provider: 'workspace', configured: true, source: 'api', client_id: APPS.workspace.clientId });
    const stored = JSON.stringify(await svc.store.collection('oauth_apps').find({}));
    const audit = JSON.stringify((await operator('GET', '/api/admin/audit?action=oauth_app')).body);
    expect(audit).toContain('oauth_app.update');
    for (const text of [JSON.stringify(set.body), JSON.stringify((await operator('GET', '/api/admin/oauth-apps')).body), stored, audit, svc.logs.join('\n')])
      expect(text).not.toContain(APPS.workspace.clientSecret);
    expect((await operator('PUT', '/api/admin/oauth-apps/workspace', { client_id: 'two words', client_secret: 's' })).status).toBe(400);
    expect((await operator('PUT', '/api/admin/oauth-apps/automation', { client_id: 'a', client_secret: 'b' })).body.message).toContain(
      'providers that connect by OAuth: database, tracker, workspace',
    );
    expect((await operator('DELETE', '/api/admin/oauth-apps/workspace')).status).toBe(204);
    expect((await operator('DELETE', '/api/admin/oauth-apps/workspace')).status).toBe(404);
  });

  it('offers Connect only where the operator registered an app; pasted tokens keep working; n8n is token-only', async () => {
    const b = new HttpBrowser(svc.url);
    await b.signUp();
    const page = (await b.get(`${svc.url}/accounts`)).html;
    expect(page).toContain('Connect with Atlassian');
    expect(page).not.toContain('Connect with Notion');
    expect(page).not.toContain('Connect with Supabase');
    // Each connectable provider keeps its token form beside the button.
    expect(page).toMatch(
      /<details class="paste-instead">\s*<summary>Or paste credentials instead<\/summary>\s*<form class="dialog-body" data-api="POST \/api\/accounts"/,
    );
    const notion = await b.api('POST', '/api/accounts/connect', { provider: 'workspace', name: 'Notion' });
    expect(notion.status).toBe(409);
    expect(notion.body.message).toContain('has not registered an OAuth app of Notion (OAUTH_WORKSPACE_CLIENT_ID)');
    expect((await b.api('POST', '/api/accounts/connect', { provider: 'automation' })).status).toBe(400);
    expect((await b.api('GET', '/api/connect/providers')).body.providers).toEqual([
      { provider: 'database', title: 'Supabase (PostgREST Data API)', by: 'Supabase', ready: false, sandbox: false },
      { provider: 'tracker', title: 'Jira Cloud', by: 'Atlassian', ready: true, sandbox: false },
      { provider: 'workspace', title: 'Notion', by: 'Notion', ready: false, sandbox: false },
    ]);
    // A pasted account: auth token, connected, never checked yet.
    const pasted = await b.api('POST', '/api/accounts', {
      kind: 'workspace',
      name: 'pasted',
      integration_token: 'ntn_abcdefghijklmnop',
      api_url: 'https://api.notion.com',
    });
    expect(pasted.body).toMatchObject({ auth: 'token', state: 'connected', state_reason: null, checked_at: null });
    expect((await b.api('POST', `/api/accounts/${pasted.body.id}/reconnect`, {})).status).toBe(409);
  });

  it('refuses an app whose id or secret is missing from the environment', async () => {
    await expect(startTestService({ OAUTH_WORKSPACE_CLIENT_ID: 'only-the-id' })).rejects.toThrow(
      'OAUTH_WORKSPACE_CLIENT_ID and OAUTH_WORKSPACE_CLIENT_SECRET go together',
    );
  });
});

describe('sandbox connections ("Try it with sandbox accounts")', () => {
  let svc: TestService;
  beforeAll(async () => {
    // As it comes: no OAuth app, no provider, the outbound guard fully on.
    svc = await startTestService({ ALLOW_PRIVATE_NETWORKS: '' });
  });
  afterAll(async () => {
    await svc?.close();
  });

  it("connects a sandbox Jira, Notion and Supabase by OAuth through their consent pages, served on the service's own origin", async () => {
    const b = new HttpBrowser(svc.url);
    const ownerId = await b.signUp();
    await svc.call('POST', `/api/admin/owners/${ownerId}/credits`, { token: svc.operatorToken, body: { amount: 100 } });
    const connect = async (provider: string, fields: Array<[string, string]> = []) => {
      const started = await b.api('POST', '/api/accounts/connect', { provider, sandbox: true });
      expect(started.status, JSON.stringify(started.body)).toBe(201);
      const consent = await b.follow(started.body.authorize_url);
      expect(consent.url.startsWith(`${svc.url}/sandbox-consent/`), consent.url).toBe(true);
      expect(consent.status, consent.html).toBe(200);
      return b.consent(consent.url, consent.html, 'accept', fields);
    };
    const call = async (baseTool: string, accountId: string, args: Record<string, unknown>) => {
      const server = await b.api('POST', '/api/servers', { name: baseTool });
      await b.api('POST', `/api/servers/${server.body.id}/tools`, { base_tool: baseTool, account_id: accountId });
      const key = await b.api('POST', `/api/servers/${server.body.id}/api-keys`, { name: 'k' });
      const client = await connectV1(svc.url, server.body.id, key.body.key);
      try {
        return succeeded((await client.callTool({ name: baseTool, arguments: args })) as ToolResult);
      } finally {
        await client.close();
      }
    };

    const picker = await connect('tracker');
    const choice = /name="choice" value="([^"]+)"/.exec(picker.html)![1];
    const chosen = await b.api('POST', `/api/connect/flows/${new URL(picker.url).searchParams.get('flow')}/choose`, { choice });
    const jira = new URL(chosen.body.redirect_to, svc.url).searchParams.get('connected')!;
    expect((await b.api('GET', `/api/accounts/${jira}`)).body).toMatchObject({
      sandbox: true,
      auth: 'oauth',
      state: 'connected',
      name: 'Sandbox Jira (OAuth)',
    });
    expect((await call('tracker_search_issues', jira, { jql: 'project = DEMO', max_results: 1 })).issues).toHaveLength(1);

    const notion = new URL((await connect('workspace')).url).searchParams.get('connected')!;
    expect((await b.api('GET', `/api/accounts/${notion}`)).body).toMatchObject({ sandbox: true, auth: 'oauth', workspace_name: expect.any(String) });
    await call('search_pages', notion, { query: '' });

    const started = await b.api('POST', '/api/accounts/connect', { provider: 'database', sandbox: true });
    const consent = await b.follow(started.body.authorize_url);
    // The sandbox's organizations: the first has the project.
    const organization = /name="organization" value="([^"]+)"/.exec(consent.html)![1];
    const projects = await b.consent(consent.url, consent.html, 'accept', [['organization', organization]]);
    const key = /name="choice" value="([^"]+\/service_role)"/.exec(projects.html)![1];
    const made = await b.api('POST', `/api/connect/flows/${new URL(projects.url).searchParams.get('flow')}/choose`, { choice: key });
    const database = new URL(made.body.redirect_to, svc.url).searchParams.get('connected')!;
    expect((await b.api('GET', `/api/accounts/${database}`)).body).toMatchObject({
      url: expect.stringMatching(/^https:\/\/[a-z]{20}\.supabase\.co$/),
      key_name: 'service_role',
    });
    expect((await call('database_read_records', database, { table: 'todos' })).data).toHaveLength(5);

    // Another owner cannot open this owner's sandbox consent pages, nor the flow.
    const other = new HttpBrowser(svc.url);
    await other.signUp();
    expect((await other.get(`${svc.url}/sandbox-consent/automation/authorize`)).status).toBe(404);
  }, 180_000);
});
