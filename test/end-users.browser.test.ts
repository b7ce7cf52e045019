// "Connect your account" inside a call, as a person meets it: the official SDK v2 client on 2026-07-28 with
// URL elicitation declared calls a tool bound to the caller's own Jira; the call answers input_required; the
// client's elicitation handler opens the URL in Chromium (the browser that already holds the person's end-user
// session), the person connects Jira at the Atlassian sandbox's consent page and picks a site; the SDK retries
// with inputResponses and the requestState, and the call succeeds, charged once. A client without URL support
// gets the ordinary isError result with the link. (The same paths over bare HTTP, and on MongoDB:
// end-users.test.ts.)
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UrlElicitationRequiredError } from '@modelcontextprotocol/sdk/types.js';
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumAvailable, launchChromium } from './browser/chromium.ts';
import { APP_ENV, type HttpBrowser, type OAuthSandboxes, startOAuthSandboxes } from './support/connect.ts';
import { balanceOf, callersServer, ownerWithCredits } from './support/end-users.ts';
import { connectV2 } from './support/mcp-clients.ts';
import { MemoryOAuthClient } from './support/oauth-client.ts';
import { listenOnLoopback } from '../sandboxes/harness.ts';
import { type TestService, startTestService } from './support/service.ts';
import { type ToolResult, failed, succeeded } from './support/tool-calls.ts';

const JQL = { jql: 'project = DEMO ORDER BY created DESC', max_results: 1 };

describe.skipIf(!chromiumAvailable)('connect your account inside a call, in Chromium', () => {
  let sandboxes: OAuthSandboxes;
  let svc: TestService;
  let browser: Browser;

  beforeAll(async () => {
    [sandboxes, browser] = await Promise.all([startOAuthSandboxes(), launchChromium()]);
    svc = await startTestService({ ...APP_ENV, MASTER_KEY: randomBytes(32).toString('hex'), TOOL_SPECS_DIR: sandboxes.specsDir, KEY_CACHE_MS: '0' });
    sandboxes.register(svc.url);
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await svc?.close();
    await sandboxes?.close();
  });

  /** A person's browser (page errors collected). */
  async function personBrowser() {
    const context = await browser.newContext({ viewport: { width: 900, height: 900 } });
    context.setDefaultTimeout(30_000);
    const problems: string[] = [];
    context.on('page', (p) => p.on('pageerror', (err) => problems.push(err.message)));
    return { context, problems };
  }

  /** The person on a connect page at `url`: Jira Cloud with the Atlassian sandbox's consent, then `site` picked. */
  async function connectJiraIn(page: Page, url: string, site: { cloudId: string }) {
    await page.goto(url);
    await Promise.all([page.waitForURL((u) => u.origin !== svc.url), page.getByRole('button', { name: /^Connect Jira Cloud with/ }).click()]);
    await Promise.all([page.waitForURL(/\/choose\?/), page.getByRole('button', { name: 'Accept', exact: true }).click()]);
    await page.locator(`input[name="choice"][value="${site.cloudId}"]`).check();
    await Promise.all([page.waitForURL(/connected=/), page.getByRole('button', { name: 'Connect', exact: true }).click()]);
    await page.getByTestId('connected').waitFor();
  }

  /** A browser that opened a connect link of the owner's app before (its settings page): it holds the person's session. */
  async function withSession(b: HttpBrowser, endUserId: string) {
    const person = await personBrowser();
    const first = await person.context.newPage();
    await first.goto((await b.api('POST', '/api/connect-sessions', { end_user_id: endUserId, providers: ['workspace'] })).body.url);
    await first.getByTestId('end-user-connect').waitFor();
    await first.close();
    return person;
  }

  it('SDK v2 on 2026-07-28: input_required, the connect page and the consent in Chromium, then the retry succeeds and is charged once', async () => {
    const { b } = await ownerWithCredits(svc);
    const serverId = await callersServer(b);
    const ada = (await b.api('POST', '/api/end-users', { external_id: 'ada', display_name: 'Ada Lovelace' })).body;
    const key = (await b.api('POST', `/api/end-users/${ada.id}/api-keys`, { server_id: serverId, name: "Ada's agent" })).body.key as string;
    const site = sandboxes.atlassian.sites[1];

    const { context, problems } = await withSession(b, ada.id);

    const asked: Array<Record<string, unknown>> = [];
    // Searches on Ada's site: only the call sends them (the connection checks itself otherwise).
    const searches = () => site.jira.requests.filter((r) => r.path.endsWith('/search/jql')).length;
    let connectedAt = -1;
    const client = new ClientV2(
      { name: 'url-elicitation-v2', version: '1.0.0' },
      { capabilities: { elicitation: { url: {} } }, versionNegotiation: { mode: { pin: '2026-07-28' } } as never },
    );
    // The person follows the URL: the service's own page, Jira's consent, the site picker, back connected.
    client.setRequestHandler('elicitation/create', async (request) => {
      const params = request.params as Record<string, unknown>;
      asked.push(params);
      const page = await context.newPage();
      await connectJiraIn(page, String(params.url), site);
      await page.close();
      connectedAt = searches();
      return { action: 'accept' };
    });
    await client.connect(new TransportV2(new URL(`${svc.url}/mcp/${serverId}`), { requestInit: { headers: { Authorization: `Bearer ${key}` } } }));

    const before = await balanceOf(b);
    const searchesBefore = searches();
    const result = succeeded((await client.callTool({ name: 'search_issues', arguments: JQL })) as ToolResult);
    expect(result).toBeTruthy();
    expect(asked).toEqual([expect.objectContaining({ mode: 'url', url: expect.stringMatching(new RegExp(`^${svc.url}/connect/s/c\\.`)) })]);
    // The first round reached nothing; the retry reached Ada's own site once.
    expect(searchesBefore).toBe(0);
    expect(searches()).toBe(connectedAt + 1);
    expect(sandboxes.atlassian.sites[0].jira.requests.some((r) => r.path.includes('/search'))).toBe(false);
    const calls = (await b.api('GET', `/api/calls?end_user=${ada.id}`)).body.calls as Array<{ outcome: string; charged: number }>;
    const paid = calls.filter((c) => c.charged > 0);
    expect(paid).toHaveLength(1);
    expect(paid[0].outcome).toBe('ok');
    expect(before - (await balanceOf(b))).toBe(paid[0].charged);
    expect((await b.api('GET', `/api/end-users/${ada.id}/accounts`)).body.accounts).toMatchObject([{ kind: 'tracker', auth: 'oauth', state: 'connected' }]);
    expect(problems).toEqual([]);
    await client.close();
    await context.close();
  }, 180_000);

  it('SDK v1 on 2025-11-25: -32042 with the URL, the connect page and the consent in Chromium, then the retry succeeds and is charged once', async () => {
    const { b } = await ownerWithCredits(svc);
    const serverId = await callersServer(b);
    const hedy = (await b.api('POST', '/api/end-users', { external_id: 'hedy', display_name: 'Hedy Lamarr' })).body;
    const key = (await b.api('POST', `/api/end-users/${hedy.id}/api-keys`, { server_id: serverId, name: "Hedy's agent" })).body.key as string;
    const site = sandboxes.atlassian.sites[0];
    const searches = () => site.jira.requests.filter((r) => r.path.endsWith('/search/jql')).length;
    const { context, problems } = await withSession(b, hedy.id);

    const client = new ClientV1({ name: 'url-elicitation-v1', version: '1.0.0' }, { capabilities: { elicitation: { url: {} } } });
    await client.connect(new TransportV1(new URL(`${svc.url}/mcp/${serverId}`), { requestInit: { headers: { Authorization: `Bearer ${key}` } } }));
    const before = await balanceOf(b);
    const refused = await client.callTool({ name: 'search_issues', arguments: JQL }).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(UrlElicitationRequiredError);
    const [elicitation] = (refused as UrlElicitationRequiredError).elicitations;
    expect(elicitation).toMatchObject({ mode: 'url', url: expect.stringMatching(new RegExp(`^${svc.url}/connect/s/c\\.`)) });
    expect(await balanceOf(b)).toBe(before);
    const searched = searches();

    // The client opens the URL; the person connects, then the client calls again.
    const page = await context.newPage();
    await connectJiraIn(page, elicitation.url, site);
    expect(succeeded((await client.callTool({ name: 'search_issues', arguments: JQL })) as ToolResult)).toBeTruthy();
    expect(searches()).toBe(searched + 1);
    const paid = ((await b.api('GET', `/api/calls?end_user=${hedy.id}`)).body.calls as Array<{ charged: number }>).filter((c) => c.charged > 0);
    expect(paid).toHaveLength(1);
    expect(before - (await balanceOf(b))).toBe(paid[0].charged);
    expect(problems).toEqual([]);
    await Promise.all([client.close(), context.close()]);
  }, 180_000);

  it("an SDK client that signs in by OAuth, approved by the end user in their own browser, calls with that person's account", async () => {
    const { b } = await ownerWithCredits(svc);
    const serverId = await callersServer(b);
    expect((await b.api('PATCH', `/api/servers/${serverId}`, { end_user_apps: true })).status).toBe(200);
    const grace = (await b.api('POST', '/api/end-users', { external_id: 'grace', display_name: 'Grace Hopper' })).body;
    const site = sandboxes.atlassian.sites[0];
    const searches = () => site.jira.requests.filter((r) => r.path.endsWith('/search/jql')).length;

    // Grace connects her Jira through a link of the owner's app, in her browser.
    const { context, problems } = await personBrowser();
    const page = await context.newPage();
    await connectJiraIn(page, (await b.api('POST', '/api/connect-sessions', { end_user_id: grace.id, providers: ['tracker'] })).body.url, site);

    // Her desktop client knows only the server's URL: discovery, registration, then her consent.
    let landed: URL | undefined;
    const callback = await listenOnLoopback((req, res) => {
      // Only the callback: the browser asks for a favicon too.
      const url = new URL(req.url!, 'http://127.0.0.1');
      if (url.pathname === '/callback') landed = url;
      res.writeHead(200, { 'content-type': 'text/html' }).end('<p>Signed in. You can close this window.</p>');
    });
    const oauthClient = new MemoryOAuthClient(() => `${callback.url}/callback`, "Grace's desktop agent");
    const mcpUrl = new URL(`${svc.url}/mcp/${serverId}`);
    const client = new ClientV1({ name: 'grace-desktop', version: '1.0.0' });
    await expect(client.connect(new TransportV1(mcpUrl, { authProvider: oauthClient }))).rejects.toBeInstanceOf(UnauthorizedError);
    await page.goto(oauthClient.authorizationUrl!.toString());
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe("Grace's desktop agent wants to act as you");
    expect(await page.getByTestId('end-user-consent').textContent()).toContain('Grace Hopper');
    await page.screenshot({ path: path.join(tmpdir(), 'end-user-consent.png'), fullPage: true });
    await Promise.all([page.waitForURL(`${callback.url}/callback**`), page.getByRole('button', { name: 'Approve' }).click()]);
    await new TransportV1(mcpUrl, { authProvider: oauthClient }).finishAuth(landed!.searchParams.get('code')!);
    await client.connect(new TransportV1(mcpUrl, { authProvider: oauthClient }));

    const before = await balanceOf(b);
    const searched = searches();
    expect(succeeded((await client.callTool({ name: 'search_issues', arguments: JQL })) as ToolResult)).toBeTruthy();
    expect(searches()).toBe(searched + 1);
    const calls = (await b.api('GET', `/api/calls?end_user=${grace.id}`)).body.calls as Array<{ charged: number }>;
    expect(calls).toHaveLength(1);
    expect(before - (await balanceOf(b))).toBe(calls[0].charged);
    expect(problems).toEqual([]);
    await Promise.all([client.close(), context.close(), callback.close()]);
  }, 180_000);

  it('SDK v2 without URL elicitation: an ordinary isError result whose text carries the link, nothing charged', async () => {
    const { b } = await ownerWithCredits(svc);
    const serverId = await callersServer(b);
    const bob = (await b.api('POST', '/api/end-users', { external_id: 'bob' })).body;
    const key = (await b.api('POST', `/api/end-users/${bob.id}/api-keys`, { server_id: serverId, name: "Bob's agent" })).body.key as string;
    const before = await balanceOf(b);
    for (const era of ['modern', 'legacy'] as const) {
      const client = await connectV2(svc.url, serverId, key, era);
      const error = failed((await client.callTool({ name: 'search_issues', arguments: JQL })) as ToolResult) as unknown as Record<string, string>;
      expect(error).toMatchObject({ code: 'account_not_connected', connect_url: expect.stringMatching(/\/connect\/s\/c\./) });
      expect(error.message).toContain(error.connect_url);
      await client.close();
    }
    expect(await balanceOf(b)).toBe(before);
  });
});
