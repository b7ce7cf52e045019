// Least privilege in the dashboard, in Chromium: the key dialog with restrictions (tools grouped by provider
// with read/write marked, read-only, expiry, budget), the overview's warning about keys that expire soon, the
// OAuth consent page with the same choices (destructive tools marked, Approve in view on a laptop screen),
// connected apps edited afterwards, and the Activity page with its filters, paging and export.
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listenOnLoopback, type RunningSandbox } from '../sandboxes/harness.ts';
import { type JiraSandbox, startJiraSandbox } from '../sandboxes/jira/jira-sandbox.ts';
import { s256 } from '../runtime/oauth/grants.ts';
import { chromiumAvailable, launchChromium, watchedPage } from './browser/chromium.ts';
import { connectV1 } from './support/mcp-clients.ts';
import { type TestService, createServer, startTestService } from './support/service.ts';

const PASSWORD = 'a long enough passphrase';
const VERIFIER = 'w'.repeat(60);

describe.skipIf(!chromiumAvailable)('restrictions and activity in Chromium', () => {
  let svc: TestService;
  let jira: JiraSandbox;
  let callback: RunningSandbox;
  let browser: Browser;
  let session: { name: string; value: string };
  let token = '';
  let serverId = '';
  let otherServerId = '';

  beforeAll(async () => {
    [svc, jira] = await Promise.all([startTestService({ KEY_CACHE_MS: '0', STARTING_CREDITS: '100' }), startJiraSandbox()]);
    callback = await listenOnLoopback((_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('Signed in.'));
    browser = await launchChromium();
    // An owner signed up through the API; the browser gets the same session cookie.
    const signup = await fetch(`${svc.url}/api/auth/signup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: `least-${Date.now()}@example.com`, password: PASSWORD }),
    });
    const [name, value] = signup.headers.get('set-cookie')!.split(';')[0].split('=');
    session = { name, value };
    const csrf = ((await signup.json()) as { csrf_token: string }).csrf_token;
    const issued = await fetch(`${svc.url}/api/me/tokens`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', cookie: `${name}=${value}`, 'x-csrf-token': csrf, origin: svc.url },
      body: '{"name":"setup"}',
    });
    token = ((await issued.json()) as { token: string }).token;
    const owner = { id: '', token };
    const account = { kind: 'tracker', name: 'Jira', site_url: jira.url, email: jira.credentials.email, api_token: jira.credentials.apiToken };
    ({ serverId } = await createServer(svc, owner, {
      accounts: { jira: account },
      tools: ['tracker_get_issue', 'tracker_delete_issue', 'tracker_search_issues'].map((base_tool) => ({ base_tool, account: 'jira' })),
    }));
    const accountId = (await svc.call('GET', '/api/accounts', { token })).body.accounts[0].id;
    ({ serverId: otherServerId } = await createServer(svc, owner, { tools: [] }));
    await svc.call('POST', `/api/servers/${otherServerId}/tools`, { token, body: { base_tool: 'tracker_get_projects', account_id: accountId } });
  });
  afterAll(async () => {
    await browser?.close();
    await Promise.all([svc?.close(), jira?.close(), callback?.close()]);
  });

  const newPage = (viewport?: { width: number; height: number }) => watchedPage(browser, { url: svc.url, session, viewport, timeoutMs: 8_000 });

  const keyByName = async (name: string) =>
    ((await svc.call('GET', `/api/servers/${serverId}/api-keys`, { token })).body.api_keys as Array<Record<string, any>>).find((k) => k.name === name)!;

  it('creates a read-only key with an expiry and a budget in the key dialog, then narrows it to one tool', async () => {
    const { context, page, problems } = await newPage();
    await page.goto(`${svc.url}/servers/${serverId}`);
    await page.getByRole('button', { name: 'New key' }).click();
    const dialog = page.getByRole('dialog', { name: 'New key for this server' });
    // The server's tools, grouped by provider, read and write marked, the destructive one flagged.
    expect(await dialog.getByRole('group', { name: 'Jira Cloud' }).textContent()).toMatch(/tracker_delete_issue\s*write\s*destructive/);
    expect(await dialog.getByText('tracker_get_issue').locator('..').textContent()).toMatch(/read/);
    await dialog.getByLabel('Name').fill('reader');
    await dialog.getByLabel('Read-only').check();
    const day = new Date(Date.now() + 10 * 86_400_000).toISOString().slice(0, 10);
    await dialog.getByLabel('Expires after (optional)').fill(day);
    await dialog.getByLabel('Budget (optional)').fill('3');
    await dialog.getByLabel('Budget period').selectOption('day');
    await dialog.getByRole('button', { name: 'Create key' }).click();
    const reveal = page.getByRole('dialog', { name: 'Your new API key' });
    const key = (await reveal.locator('#reveal-value').textContent())!;
    expect(key).toMatch(/^mcpk_/);
    await reveal.getByRole('button', { name: 'Done' }).click();
    await page.getByRole('row', { name: /reader/ }).waitFor();

    expect(await keyByName('reader')).toMatchObject({
      access: 'read',
      tools: null,
      credit_limit: { credits: 3, per: 'day' },
      expires_at: `${day}T23:59:59.000Z`,
    });
    const row = page.getByRole('row', { name: /reader/ });
    expect(await row.textContent()).toMatch(/read-only.*0 \/ 3 credits per day.*expires in 1[01] days/s);
    const client = await connectV1(svc.url, serverId, key);
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['tracker_get_issue', 'tracker_search_issues']);
    await client.close();

    // Edit: "only these tools" with none checked is refused next to the list; then one tool.
    await row.getByRole('button', { name: 'Edit reader' }).click();
    const edit = page.getByRole('dialog', { name: 'Edit “reader”' });
    await edit.getByLabel('Only the tools checked below').check();
    await edit.getByRole('button', { name: 'Save' }).click();
    await expect.poll(() => edit.locator('[id$="-tools-error"]').textContent()).toContain('Tools must be a list of at least one tool');
    await edit.getByRole('checkbox', { name: /^tracker_get_issue/ }).check();
    await Promise.all([page.waitForEvent('load'), edit.getByRole('button', { name: 'Save' }).click()]);
    // The expiry nobody touched keeps its exact time; the budget stays.
    expect(await keyByName('reader')).toMatchObject({
      access: 'all',
      tools: ['tracker_get_issue'],
      credit_limit: { credits: 3, per: 'day' },
      expires_at: `${day}T23:59:59.000Z`,
    });
    expect(await page.getByRole('row', { name: /reader/ }).textContent()).toContain('1 tool');
    expect(problems).toEqual([]);
    await context.close();
  });

  it('on the Keys page: a global key limited by checking a tool, a server key with the chosen server’s tools, and the overview’s warning', async () => {
    const { context, page, problems } = await newPage();
    await page.goto(`${svc.url}/keys`);
    await page.getByRole('button', { name: 'New global key' }).click();
    const global = page.getByRole('dialog', { name: 'New global key' });
    await global.getByLabel('Name').fill('projects only');
    // Checking a tool selects "only the tools checked below" by itself.
    await global.getByRole('checkbox', { name: /^tracker_get_projects/ }).check();
    expect(await global.getByLabel('Only the tools checked below').isChecked()).toBe(true);
    await global.getByRole('button', { name: 'Create key' }).click();
    await Promise.all([page.waitForEvent('load'), page.getByRole('dialog', { name: 'Your new global key' }).getByRole('button', { name: 'Done' }).click()]);
    const globals = (await svc.call('GET', '/api/api-keys', { token })).body.api_keys as Array<Record<string, unknown>>;
    expect(globals.find((k) => k.name === 'projects only')).toMatchObject({ tools: ['tracker_get_projects'] });

    await page.getByRole('button', { name: 'New server key' }).click();
    const server = page.getByRole('dialog', { name: 'New server key' });
    await server.getByLabel('Server').selectOption(otherServerId);
    // Only the chosen server's tools are shown (and sent).
    expect(await server.getByRole('checkbox', { name: /^tracker_get_issue/ }).isVisible()).toBe(false);
    await server.getByLabel('Name').fill('other projects');
    await server.getByRole('checkbox', { name: /^tracker_get_projects/ }).check();
    await server.getByRole('button', { name: 'Create key' }).click();
    await Promise.all([page.waitForEvent('load'), page.getByRole('dialog', { name: 'Your new server key' }).getByRole('button', { name: 'Done' }).click()]);
    const others = (await svc.call('GET', `/api/servers/${otherServerId}/api-keys`, { token })).body.api_keys as Array<Record<string, unknown>>;
    expect(others.find((k) => k.name === 'other projects')).toMatchObject({ tools: ['tracker_get_projects'] });

    // A key that expires in three days is flagged on the overview.
    await svc.call('POST', `/api/servers/${serverId}/api-keys`, {
      token,
      body: { name: 'short-lived', expires_at: new Date(Date.now() + 3 * 86_400_000).toISOString() },
    });
    await page.goto(`${svc.url}/`);
    expect(await page.getByTestId('expiring-keys').textContent()).toMatch(/“short-lived” \(test server\) in 3 days/);
    expect(problems).toEqual([]);
    await context.close();
  });

  it('the consent page offers the same choices with Approve in view on a 1440x900 screen; the app is then edited under Connected apps', async () => {
    const redirect = `${callback.url}/callback`;
    const registered = await fetch(`${svc.url}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_name: 'Scoped agent', redirect_uris: [redirect], token_endpoint_auth_method: 'none' }),
    });
    const clientId = ((await registered.json()) as { client_id: string }).client_id;
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: clientId,
      redirect_uri: redirect,
      code_challenge: s256(VERIFIER),
      code_challenge_method: 'S256',
      resource: `${svc.url}/mcp/${serverId}`,
      state: 's',
    });
    const { context, page, problems } = await newPage({ width: 1440, height: 900 });
    await page.goto(`${svc.url}/oauth/authorize?${query}`);
    const approve = page.getByRole('button', { name: 'Approve' });
    const box = (await approve.boundingBox())!;
    expect(box.y + box.height).toBeLessThanOrEqual(900);
    expect(await page.getByRole('group', { name: 'Jira Cloud' }).textContent()).toMatch(/tracker_delete_issue\s*write\s*destructive/);
    await page.getByLabel('Only the tools checked below').check();
    await page.getByRole('checkbox', { name: /^tracker_get_issue/ }).check();
    await page.getByLabel('Budget (optional)').fill('5');
    await page.getByLabel('Budget period').selectOption('month');
    // Still in view after choosing.
    expect(((await approve.boundingBox())!.y ?? 0) + box.height).toBeLessThanOrEqual(900);
    await Promise.all([page.waitForURL(`${redirect}**`), approve.click()]);
    const code = new URL(page.url()).searchParams.get('code')!;
    const tokens = (await (
      await fetch(`${svc.url}/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'authorization_code', client_id: clientId, code, redirect_uri: redirect, code_verifier: VERIFIER }),
      })
    ).json()) as { access_token: string };
    const list = await fetch(`${svc.url}/mcp/${serverId}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${tokens.access_token}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(((await list.json()) as { result: { tools: Array<{ name: string }> } }).result.tools.map((t) => t.name)).toEqual(['tracker_get_issue']);

    await page.goto(`${svc.url}/keys`);
    const apps = page.getByRole('region', { name: 'Connected apps' });
    const row = apps.getByRole('row', { name: /Scoped agent/ });
    expect(await row.textContent()).toMatch(/1 tool.*0 \/ 5 credits per month/s);
    await row.getByRole('button', { name: 'Edit what Scoped agent may do' }).click();
    const edit = page.getByRole('dialog', { name: /What “Scoped agent” may do/ });
    expect(await edit.getByRole('checkbox', { name: /^tracker_get_issue/ }).isChecked()).toBe(true);
    await edit.getByLabel('Read-only').check();
    await edit.getByLabel('Budget (optional)').fill('');
    await Promise.all([page.waitForEvent('load'), edit.getByRole('button', { name: 'Save' }).click()]);
    const grant = ((await svc.call('GET', '/api/oauth/grants', { token })).body.grants as Array<Record<string, unknown>>).find(
      (g) => g.client_name === 'Scoped agent',
    );
    expect(grant).toMatchObject({ access: 'read', tools: null, credit_limit: null });
    expect(await apps.getByRole('row', { name: /Scoped agent/ }).textContent()).toContain('read-only');
    expect(problems).toEqual([]);
    await context.close();
  });

  it('the Activity page lists, filters, pages and exports the trail', async () => {
    const made = await svc.call('POST', `/api/servers/${serverId}/api-keys`, { token, body: { name: 'audited', access: 'read' } });
    await svc.call('PATCH', `/api/servers/${serverId}/api-keys/${made.body.id}`, { token, body: { access: 'all' } });
    // Enough events for two pages (50 a page).
    for (let i = 0; i < 55; i++) await svc.call('PATCH', `/api/servers/${otherServerId}`, { token, body: { name: `renamed ${i}` } });
    const { context, page, problems } = await newPage();
    await page.goto(`${svc.url}/`);
    await page.getByRole('link', { name: 'Activity' }).click();
    await page.waitForURL(`${svc.url}/activity`);
    const table = page.getByTestId('activity');
    expect(await table.getByRole('row').nth(1).textContent()).toMatch(/server\.update.*renamed 53 → renamed 54/s);
    // Older events on the next page, then back to the newest.
    await Promise.all([page.waitForURL(/cursor=/), page.getByRole('link', { name: 'Older' }).click()]);
    expect(await table.textContent()).toContain('key.create');
    await Promise.all([page.waitForURL(`${svc.url}/activity`), page.getByRole('link', { name: 'Newest' }).click()]);

    // Filter by kind of action and time range.
    await page.getByLabel('Action').selectOption('key');
    await page.getByLabel('From').fill(new Date(Date.now() - 86_400_000).toISOString().slice(0, 10));
    await page.getByLabel('To').fill(new Date().toISOString().slice(0, 10));
    await Promise.all([page.waitForURL(/action=key/), page.getByRole('button', { name: 'Apply' }).click()]);
    const actions = await table.locator('tbody tr td:nth-child(2)').allTextContents();
    expect(actions.length).toBeGreaterThanOrEqual(4);
    expect(actions.every((a) => a.trim().startsWith('key.'))).toBe(true);
    expect(await table.textContent()).toContain('access: read → all');

    // The exports download what the filter selects.
    const href = (await page.getByRole('link', { name: 'Export CSV' }).getAttribute('href'))!;
    expect(href).toMatch(/^\/api\/audit\?action=key&from=.+&to=.+T23%3A59%3A59\.999Z&format=csv$/);
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Export CSV' }).click()]);
    expect(download.suggestedFilename()).toMatch(/^audit-.+\.csv$/);
    const csv = await (await page.request.get(svc.url + href)).text();
    expect(csv.split('\r\n').filter(Boolean).length).toBe(actions.length + 1);
    const json = await (await page.request.get(svc.url + (await page.getByRole('link', { name: 'Export JSON' }).getAttribute('href'))!)).json();
    expect(json.events.map((e: { action: string }) => e.action)).toEqual(actions.map((a) => a.trim()));

    // A bad filter is said in words.
    await page.goto(`${svc.url}/activity?from=someday`);
    expect(await page.getByRole('alert').first().textContent()).toContain('"from" must be an ISO 8601 time');
    expect(problems).toEqual([]);
    await context.close();
  });
});
