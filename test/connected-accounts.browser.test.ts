// Connected accounts in a real browser (Debian's Chromium through playwright-core): from the Accounts page
// through each provider's consent page (the OAuth sandboxes on loopback, the operator's apps in the
// environment) and back; then the official MCP client's calls reach the sandboxes with the bearer token. The
// path from "Add account" to a first call is measured in clicks and seconds (printed). An account that needs
// its owner shows it on every page, and is reconnected in place from there.
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumAvailable, launchChromium, watchedPage } from './browser/chromium.ts';
import { APP_ENV, APPS, HttpBrowser, type OAuthSandboxes, startOAuthSandboxes } from './support/connect.ts';
import { connectV1 } from './support/mcp-clients.ts';
import { type ToolResult, failed, succeeded } from './support/tool-calls.ts';
import { type TestService, startTestService } from './support/service.ts';

describe.skipIf(!chromiumAvailable)('connected accounts in Chromium', () => {
  let sandboxes: OAuthSandboxes;
  let svc: TestService;
  let browser: Browser;

  beforeAll(async () => {
    sandboxes = await startOAuthSandboxes();
    svc = await startTestService({ ...APP_ENV, TOOL_SPECS_DIR: sandboxes.specsDir, STARTING_CREDITS: '100', KEY_CACHE_MS: '0' });
    sandboxes.register(svc.url);
    browser = await launchChromium();
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await svc?.close();
    await sandboxes?.close();
  });

  /** A signed-in owner's page in Chromium (the session made over HTTP), and the owner's HTTP view. */
  async function signedIn() {
    const http = new HttpBrowser(svc.url);
    await http.signUp();
    const [name, value] = http.cookie.split('=');
    const watched = await watchedPage(browser, { url: svc.url, session: { name, value }, timeoutMs: 30_000 });
    return { ...watched, http };
  }

  /** The account a connection landed on: the Accounts page says it is connected. */
  async function landed(page: Page): Promise<string> {
    await page.waitForURL(/\/accounts\?connected=/);
    await page.getByTestId('connected').waitFor();
    return new URL(page.url()).searchParams.get('connected')!;
  }

  /** One official client's call of a base tool bound to the account, on a server made over HTTP. */
  async function callThrough(http: HttpBrowser, baseTool: string, accountId: string, args: Record<string, unknown>): Promise<ToolResult> {
    const server = await http.api('POST', '/api/servers', { name: baseTool });
    await http.api('POST', `/api/servers/${server.body.id}/tools`, { base_tool: baseTool, account_id: accountId });
    const key = await http.api('POST', `/api/servers/${server.body.id}/api-keys`, { name: 'k' });
    const client = await connectV1(svc.url, server.body.id, key.body.key);
    try {
      return (await client.callTool({ name: baseTool, arguments: args })) as ToolResult;
    } finally {
      await client.close();
    }
  }

  it('connects Jira, Notion and Supabase from the Accounts page through their consent pages; calls reach each provider with the bearer', async () => {
    const { context, page, problems, http } = await signedIn();
    try {
      // Jira, measured from "Add account" to a first call through the account (the dashboard's Try).
      let clicks = 0;
      const click = (target: Locator) => {
        clicks++;
        return target.click();
      };
      await page.goto(`${svc.url}/accounts`);
      const started = performance.now();
      await click(page.getByRole('button', { name: 'Add Jira Cloud account' }));
      const jiraDialog = page.getByRole('dialog', { name: 'Add a Jira Cloud account' });
      await Promise.all([
        page.waitForURL(`${sandboxes.atlassian.authUrl}/authorize?**`),
        click(jiraDialog.getByRole('button', { name: 'Connect with Atlassian' })),
      ]);
      expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Tool Server is requesting access to your Atlassian account');
      await Promise.all([page.waitForURL(/\/connect\/choose\?flow=/), click(page.getByRole('button', { name: 'Accept', exact: true }))]);
      expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Which Jira site should this account use?');
      await click(page.getByRole('radio', { name: /acme-labs/ }));
      await click(page.getByRole('button', { name: 'Connect', exact: true }));
      const jiraId = await landed(page);
      expect(await page.getByTestId('connected').textContent()).toContain('“Jira Cloud” is connected');
      expect(await page.getByRole('row', { name: /Jira Cloud/ }).textContent()).toMatch(/OAuth.*connected through Atlassian.*connected/s);

      await click(page.getByRole('link', { name: 'Servers' }));
      await click(page.getByRole('button', { name: 'Create your first server' }));
      await page.getByRole('dialog', { name: 'New server' }).getByLabel('Name').fill('Support agent');
      await Promise.all([page.waitForURL(/\/servers\/\w+$/), click(page.getByRole('button', { name: 'Create server' }))]);
      await click(page.getByRole('link', { name: 'Add a tool' }).first());
      await click(page.getByRole('link', { name: 'tracker_search_issues' }));
      expect(await page.getByLabel('Jira Cloud account').inputValue()).toBe(jiraId);
      await Promise.all([page.waitForURL(/\/servers\/\w+$/), click(page.getByRole('button', { name: 'Add tool' }))]);
      await click(page.getByRole('link', { name: 'Try tracker_search_issues' }));
      const tryDialog = page.getByRole('dialog', { name: 'Try tracker_search_issues' });
      await tryDialog.getByLabel('jql').fill('project = DEMO ORDER BY created DESC');
      await click(tryDialog.getByRole('button', { name: 'Run the call' }));
      await tryDialog.getByTestId('try-result').getByText('isError: false').waitFor();
      const seconds = (performance.now() - started) / 1000;
      console.log(`connected account path: ${clicks} clicks, ${seconds.toFixed(1)} s from "Add account" to a first call through the connected account`);
      expect(clicks).toBeLessThanOrEqual(13);
      const site = sandboxes.atlassian.sites[1];
      const searched = site.jira.requests.filter((r) => r.path === '/rest/api/3/search/jql');
      expect(searched.length).toBeGreaterThan(0);
      expect(String(searched[0].headers.authorization)).toMatch(/^Bearer /);

      // Notion: the person ticks the page to share.
      await page.goto(`${svc.url}/accounts`);
      await page.getByRole('button', { name: 'Add Notion account' }).click();
      await Promise.all([
        page.waitForURL(`${sandboxes.notion.url}/v1/oauth/authorize?**`),
        page.getByRole('dialog', { name: 'Add a Notion account' }).getByRole('button', { name: 'Connect with Notion' }).click(),
      ]);
      const shared = page.getByRole('checkbox').first();
      const title = ((await shared.locator('xpath=..').textContent()) ?? '').trim();
      await shared.check();
      await page.getByRole('button', { name: 'Allow access' }).click();
      const notionId = await landed(page);

      // Supabase: the organization at Supabase, then the project and key here (said plainly).
      await page.getByRole('button', { name: 'Add Supabase (PostgREST Data API) account' }).click();
      await Promise.all([
        page.waitForURL(`${sandboxes.supabase.url}/v1/oauth/authorize?**`),
        page.getByRole('dialog', { name: 'Add a Supabase (PostgREST Data API) account' }).getByRole('button', { name: 'Connect with Supabase' }).click(),
      ]);
      await page.getByRole('radio', { name: /Acme/ }).check();
      await Promise.all([page.waitForURL(/\/connect\/choose\?flow=/), page.getByRole('button', { name: 'Authorize Tool Server' }).click()]);
      expect(await page.getByText('Bypasses row-level security').first().isVisible()).toBe(true);
      await page.getByRole('radio', { name: /^service_role key/ }).check();
      await page.getByRole('button', { name: 'Connect', exact: true }).click();
      const supabaseId = await landed(page);

      // The official client: each call reaches its sandbox with the connection's bearer token.
      const pages = succeeded(await callThrough(http, 'search_pages', notionId, { query: title }));
      expect(pages.results.map((r: { title: string }) => r.title)).toContain(title);
      expect(String(sandboxes.notion.requests.at(-1)!.headers.authorization)).toMatch(/^Bearer /);
      expect(succeeded(await callThrough(http, 'database_read_records', supabaseId, { table: 'todos' })).data).toHaveLength(5);
      const issues = succeeded(await callThrough(http, 'tracker_search_issues', jiraId, { jql: 'project = DEMO', max_results: 3 })).issues;
      expect(issues).toHaveLength(3);
      expect(problems).toEqual([]);
    } finally {
      await context.close();
    }
  }, 240_000);

  it('says on every page that an account needs its owner, and reconnects it in place from there; a cancelled connection says so', async () => {
    const { context, page, problems, http } = await signedIn();
    try {
      // A connection cancelled at Notion ends on a page that says so.
      await page.goto(`${svc.url}/accounts`);
      await page.getByRole('button', { name: 'Add Notion account' }).click();
      await Promise.all([
        page.waitForURL(`${sandboxes.notion.url}/v1/oauth/authorize?**`),
        page.getByRole('dialog', { name: 'Add a Notion account' }).getByRole('button', { name: 'Connect with Notion' }).click(),
      ]);
      await Promise.all([page.waitForURL(/\/connect\/callback/), page.getByRole('button', { name: 'Cancel' }).click()]);
      expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('You cancelled the connection');
      // The code and state left the address bar.
      await expect.poll(() => new URL(page.url()).search).toBe('');

      // A Notion account whose access its user revoked at Notion.
      await page.getByRole('link', { name: 'Accounts', exact: true }).first().click();
      await page.getByRole('button', { name: 'Add Notion account' }).click();
      await page.locator('#connect-workspace-name').fill('Team wiki');
      await Promise.all([
        page.waitForURL(`${sandboxes.notion.url}/v1/oauth/authorize?**`),
        page.getByRole('dialog', { name: 'Add a Notion account' }).getByRole('button', { name: 'Connect with Notion' }).click(),
      ]);
      await page.getByRole('button', { name: 'Allow access' }).click();
      const id = await landed(page);
      sandboxes.notion.oauth.revokeApp(APPS.workspace.clientId);
      const refused = failed(await callThrough(http, 'search_pages', id, { query: '' }));
      expect(refused.code).toBe('account_needs_reauth');

      await page.goto(`${svc.url}/servers`);
      const banner = page.getByTestId('account-banner');
      expect(await banner.textContent()).toContain('“Team wiki” (Notion)');
      await banner.getByRole('link', { name: 'Reconnect “Team wiki”' }).click();
      await page.waitForURL(`${svc.url}/accounts/${id}/reconnect`);
      expect(await page.getByRole('heading', { level: 2 }).first().textContent()).toBe('It needs you');
      await Promise.all([
        page.waitForURL(`${sandboxes.notion.url}/v1/oauth/authorize?**`),
        page.getByRole('button', { name: 'Reconnect with Notion' }).click(),
      ]);
      await page.getByRole('button', { name: 'Allow access' }).click();
      expect(await landed(page)).toBe(id);
      expect(await page.getByTestId('account-banner').count()).toBe(0);
      expect(await page.getByRole('row', { name: /Team wiki/ }).textContent()).toContain('connected');
      succeeded(await callThrough(http, 'search_pages', id, { query: '' }));
      expect(problems).toEqual([]);
    } finally {
      await context.close();
    }
  }, 180_000);
});
