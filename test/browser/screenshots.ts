// `npm run screenshots`: the demo data set, a few real MCP calls, then a PNG of every dashboard page and its
// main states in docs/screenshots/ as a person sees them in Chromium: on a laptop (1440x900, the whole page:
// `<page>.png`) and on a phone (390x844, the first screen as the phone shows it: `<page>-phone.png`; the rest
// of each page at that width is checked by test/dashboard-layout.browser.test.ts). The e-mail pages (forgot and
// reset password, confirm an address, unsubscribe) are shot with e-mail on: run it with SMTP_URL and MAIL_FROM
// set (`npm run -s peer:mail -- start` gives an SMTP_URL); without them they are left out, and said so.
import { randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { startDemo } from '../../runtime/demo-data.ts';
import { s256 } from '../../runtime/oauth/grants.ts';
import { connectV2 } from '../support/mcp-clients.ts';
import { launchChromium } from './chromium.ts';

const OUT = path.resolve('docs/screenshots');
const SIZES = { laptop: { width: 1440, height: 900 }, phone: { width: 390, height: 844 } } as const;

async function main(): Promise<void> {
  const demo = await startDemo({ ...process.env, PORT: '0', LOG_LEVEL: 'warn' });
  const base = demo.service.url;
  const client = await connectV2(base, demo.serverId, demo.apiKey);
  const calls: Array<[string, Record<string, unknown>]> = [
    ['database_read_records', { table: 'todos', limit: 5 }],
    ['tracker_search_issues', { jql: 'project = DEMO', max_results: 5 }],
    ['search_pages', { query: 'Roadmap' }],
    ['automation_List_Workflows', {}],
    ['database_read_records', { table: 'no_such_table' }],
    ['tracker_get_issue', { issue_key: 'DEMO-1' }],
    ['tracker_get_issue', { issue_key: 'NOPE-404' }],
  ];
  for (const [name, args] of calls) await client.callTool({ name, arguments: args }).catch(() => undefined);
  await client.close();
  // Keys that show restrictions: read-only with a budget, and a few tools until next week.
  const owner = { authorization: `Bearer ${demo.owner.token}`, 'content-type': 'application/json' };
  const api = async (method: string, p: string, body?: unknown) =>
    (await fetch(base + p, { method, headers: owner, body: body === undefined ? undefined : JSON.stringify(body) })).json() as Promise<any>;
  const keys = `/api/servers/${demo.serverId}/api-keys`;
  await api('POST', keys, { name: 'reporting agent', access: 'read', credit_limit: { credits: 200, per: 'day' } });
  await api('POST', keys, {
    name: 'triage bot',
    tools: ['tracker_get_issue', 'tracker_update_issue'],
    expires_at: new Date(Date.now() + 5 * 86_400_000).toISOString(),
  });
  const tools = (await api('GET', `/api/servers/${demo.serverId}/tools`)).tools as Array<{ id: string; name: string }>;
  const readRecords = tools.find((t) => t.name === 'database_read_records')!;
  await api('PATCH', `/api/servers/${demo.serverId}/tools/${readRecords.id}`, { defaults: { table: 'todos', limit: 5 }, locked: ['table'] });
  const [failed] = (await api('GET', '/api/calls?outcome=tool_error&limit=1')).calls as Array<{ id: string }>;

  await mkdir(OUT, { recursive: true });
  const browser = await launchChromium();
  const page = await browser.newPage({ viewport: SIZES.laptop });
  /** One state of a page at both sizes: `prepare` brings the page into it (opens a dialog...) after loading. */
  const shot = async (
    file: string,
    url: string,
    o: { fullPage?: boolean; prepare?: (page: Page) => Promise<void>; sizes?: Array<keyof typeof SIZES> } = {},
  ) => {
    for (const [size, viewport] of Object.entries(SIZES).filter(([size]) => !o.sizes || o.sizes.includes(size as keyof typeof SIZES))) {
      await page.setViewportSize(viewport);
      await page.goto(base + url);
      await o.prepare?.(page);
      // A field focused lower down scrolled the page: a whole-page picture starts at its top.
      const fullPage = size === 'laptop' && (o.fullPage ?? !o.prepare);
      if (fullPage || !o.prepare) await page.evaluate(() => window.scrollTo(0, 0));
      const name = size === 'laptop' ? `${file}.png` : `${file}-phone.png`;
      await page.screenshot({ path: path.join(OUT, name), fullPage });
      console.log(`docs/screenshots/${name}`);
    }
    await page.setViewportSize(SIZES.laptop);
  };
  await shot('login', '/login');
  await shot('signup', '/signup');
  const mail = demo.service.mail;
  if (mail) {
    await shot('forgot-password', '/forgot-password', {
      prepare: async (p) => {
        await p.getByLabel('E-mail').fill(demo.owner.email);
        await p.getByRole('button', { name: 'Send me a link' }).click();
        await p.getByRole('status').waitFor();
      },
    });
    await shot('reset-password', '/reset-password#not-a-real-token');
    await shot('unsubscribe', `/unsubscribe?token=${mail.alerts.unsubscribeToken(demo.owner.id, 'credits_low')}`);
    // A new owner's first page until the address is confirmed (a browser of its own).
    const newcomer = await browser.newPage({ viewport: SIZES.laptop });
    await newcomer.goto(base + '/signup');
    await newcomer.fill('#email', `newcomer-${Date.now()}@example.com`);
    await newcomer.fill('#password', 'a long enough passphrase');
    await Promise.all([newcomer.waitForURL(base + '/'), newcomer.click('button[type=submit]')]);
    for (const [size, viewport] of Object.entries(SIZES)) {
      await newcomer.setViewportSize(viewport);
      await newcomer.reload();
      const name = size === 'laptop' ? 'verify-needed.png' : 'verify-needed-phone.png';
      await newcomer.screenshot({ path: path.join(OUT, name) });
      console.log(`docs/screenshots/${name}`);
    }
    await newcomer.close();
  } else console.log('e-mail pages left out: set SMTP_URL and MAIL_FROM (npm run -s peer:mail -- start gives an SMTP_URL)');
  await page.goto(base + '/login');
  await page.fill('#email', demo.owner.email);
  await page.fill('#password', demo.owner.password);
  await Promise.all([page.waitForURL(base + '/'), page.click('button[type=submit]')]);
  await shot('overview', '/');
  await shot('menu', '/', { sizes: ['phone'], prepare: (p) => p.getByRole('button', { name: 'Menu' }).click() });
  await shot('accounts', '/accounts');
  await connectedAccounts(shot, page, base, demo);
  await shot('servers', '/servers');
  await shot('server', `/servers/${demo.serverId}`);
  await shot('key-dialog', `/servers/${demo.serverId}`, {
    prepare: async (p) => {
      await p.getByRole('button', { name: 'New key' }).click();
      const dialog = p.getByRole('dialog', { name: 'New key for this server' });
      await dialog.getByLabel('Name').fill('nightly sync');
      await dialog.getByLabel('Only the tools checked below').check();
      for (const tool of ['database_read_records', 'database_update_records']) await dialog.getByRole('checkbox', { name: new RegExp(`^${tool}`) }).check();
      await dialog.getByLabel('Budget (optional)').fill('50');
    },
  });
  await shot('key-created', `/servers/${demo.serverId}`, {
    prepare: async (p) => {
      await p.getByRole('button', { name: 'New key' }).click();
      await p
        .getByRole('dialog', { name: 'New key for this server' })
        .getByLabel('Name')
        .fill(p.viewportSize()!.width < 600 ? 'phone' : 'laptop');
      await p.getByRole('button', { name: 'Create key' }).click();
      await p.getByRole('dialog', { name: 'Your new API key' }).getByRole('tab', { name: 'Claude Code' }).waitFor();
    },
  });
  await shot('tool-try', `/servers/${demo.serverId}`, {
    prepare: async (p) => {
      await p.getByRole('link', { name: 'Try tracker_search_issues' }).click();
      const dialog = p.getByRole('dialog', { name: 'Try tracker_search_issues' });
      await dialog.getByLabel('jql').fill('project = DEMO ORDER BY created DESC');
      await dialog.getByLabel('max_results').fill('2');
      await dialog.getByRole('button', { name: 'Run the call' }).click();
      await dialog.getByTestId('try-result').getByText('isError: false').waitFor();
    },
  });
  await shot('tool-edit', `/servers/${demo.serverId}`, {
    prepare: async (p) => {
      await p.getByRole('link', { name: 'Edit database_read_records' }).click();
      await p.getByRole('dialog', { name: 'Settings of database_read_records' }).waitFor();
    },
  });
  await shot('tool', `/servers/${demo.serverId}/tools/${readRecords.id}`);
  await shot('add-tool', `/servers/${demo.serverId}/tools/new`);
  await shot('add-tool-form', `/servers/${demo.serverId}/tools/new?base=tracker_search_issues`);
  // Every problem at once, each next to its field, in the field's words.
  await shot('add-tool-errors', `/servers/${demo.serverId}/tools/new?base=tracker_search_issues`, {
    fullPage: true,
    prepare: async (p) => {
      await p.getByLabel('max_results').fill('5000');
      await p.locator('input[data-lock-for="param-jql"]').check();
      await p.getByRole('button', { name: 'Add tool' }).click();
      await p.locator('.field-error:not(:empty)').first().waitFor();
    },
  });
  await shot('calls', '/calls');
  await shot('call', `/calls/${failed.id}`);
  await endUsers(shot, api, demo);
  await connectApp(page, base, demo.serverId);
  await shot('keys', '/keys');
  await shot('settings', '/settings');
  await shot('activity', '/activity');
  await shot('not-found', '/no-such-page');
  // Spent down below the alert (a tenth of the 1,000 granted): the banner of every page.
  await fetch(`${base}/api/admin/owners/${demo.owner.id}/credits`, {
    method: 'POST',
    headers: { authorization: `Bearer ${demo.service.operatorToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ amount: -940 }),
  });
  await shot('credits-low', '/');
  await browser.close();
  await demo.close();
}

type Shot = (file: string, url: string, o?: { fullPage?: boolean; prepare?: (page: Page) => Promise<void> }) => Promise<void>;

/**
 * Connected accounts: the Add-account dialog of a provider whose OAuth app the operator registered (the demo
 * never goes on to Atlassian itself), then connections to the service's own OAuth sandboxes: their consent
 * page on the service's origin, the pickers of a Jira site and of a Supabase project and key, a connected
 * account, a cancelled connection, an account that needs its owner and its reconnect page.
 */
async function connectedAccounts(shot: Shot, page: Page, base: string, demo: Awaited<ReturnType<typeof startDemo>>): Promise<void> {
  await fetch(`${base}/api/admin/oauth-apps/tracker`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${demo.service.operatorToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ client_id: 'demo-atlassian-app', client_secret: randomBytes(16).toString('hex') }),
  });
  const dialogOf = (p: Page, title: string) => p.getByRole('dialog', { name: `Add a ${title} account` });
  const toSandboxConsent = async (p: Page, title: string) => {
    await p.getByRole('button', { name: `Add ${title} account` }).click();
    await Promise.all([
      p.waitForURL(/\/sandbox-consent\//),
      dialogOf(p, title)
        .getByRole('button', { name: `Connect a sandbox ${title} account` })
        .click(),
    ]);
  };
  await shot('accounts-connect', '/accounts', { prepare: (p) => p.getByRole('button', { name: 'Add Jira Cloud account' }).click() });
  await shot('connect-consent', '/accounts', { prepare: (p) => toSandboxConsent(p, 'Jira Cloud') });
  await shot('connect-choose', '/accounts', {
    prepare: async (p) => {
      await toSandboxConsent(p, 'Jira Cloud');
      await Promise.all([p.waitForURL(/\/connect\/choose/), p.getByRole('button', { name: 'Accept', exact: true }).click()]);
    },
  });
  await shot('connect-choose-supabase', '/accounts', {
    prepare: async (p) => {
      await toSandboxConsent(p, 'Supabase (PostgREST Data API)');
      await p.getByRole('radio', { name: /^Sandbox/ }).check();
      await Promise.all([p.waitForURL(/\/connect\/choose/), p.getByRole('button', { name: 'Authorize Tool Server' }).click()]);
    },
  });
  await shot('connect-failed', '/accounts', {
    prepare: async (p) => {
      await toSandboxConsent(p, 'Notion');
      await Promise.all([p.waitForURL(/\/connect\/callback/), p.getByRole('button', { name: 'Cancel' }).click()]);
    },
  });
  // One connection made: where it lands.
  await page.goto(`${base}/accounts`);
  await toSandboxConsent(page, 'Jira Cloud');
  await Promise.all([page.waitForURL(/\/connect\/choose/), page.getByRole('button', { name: 'Accept', exact: true }).click()]);
  await Promise.all([page.waitForURL(/\/accounts\?connected=/), page.getByRole('button', { name: 'Connect', exact: true }).click()]);
  const landing = new URL(page.url());
  const id = landing.searchParams.get('connected')!;
  await shot('accounts-connected', landing.pathname + landing.search);
  // Its provider will not renew it: every page says so; its page tells why and reconnects it.
  const accounts = demo.service.store.collection('accounts');
  await accounts.updateOne(
    { _id: id },
    { $set: { state: 'needs_reauth', state_reason: "Atlassian's token endpoint refused the grant (invalid_grant: Unknown or invalid refresh token.)" } },
  );
  await shot('account-needs-you', '/accounts');
  await shot('reconnect', `/accounts/${id}/reconnect`);
  await accounts.updateOne({ _id: id }, { $set: { state: 'connected', state_reason: null } });
}

/** The End users page (one account unreachable for the moment), one person's calls, and the connect page a person opens. */
async function endUsers(shot: Shot, api: (method: string, p: string, body?: unknown) => Promise<any>, demo: Awaited<ReturnType<typeof startDemo>>) {
  const [ada] = (await api('GET', '/api/end-users?q=ada')).end_users as Array<{ id: string }>;
  const workspace = ((await api('GET', `/api/end-users/${ada.id}/accounts`)).accounts as Array<{ id: string; kind: string }>).find(
    (a) => a.kind === 'workspace',
  )!;
  const accounts = demo.service.store.collection('accounts');
  await accounts.updateOne(
    { _id: workspace.id },
    { $set: { state: 'unreachable', state_reason: 'Notion answered 503 Service Unavailable; the next call tries again' } },
  );
  await shot('end-users', '/end-users');
  await accounts.updateOne({ _id: workspace.id }, { $set: { state: 'connected', state_reason: null } });
  await shot('end-user-calls', `/calls?end_user=${ada.id}`);
  const link = (await api('POST', '/api/connect-sessions', { end_user_id: ada.id, return_url: 'https://app.example/settings' })).url as string;
  await shot('end-user-connect', new URL(link).pathname);
}

/** An MCP client signs in with OAuth: its consent page (shot), approved, the code exchanged: a connected app. */
async function connectApp(page: Page, base: string, serverId: string): Promise<void> {
  const redirect = 'http://127.0.0.1:9/callback';
  const registered = await fetch(`${base}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_name: 'Claude Desktop', redirect_uris: [redirect], token_endpoint_auth_method: 'none' }),
  });
  const { client_id } = (await registered.json()) as { client_id: string };
  const verifier = randomBytes(32).toString('base64url');
  const query = new URLSearchParams({
    response_type: 'code',
    client_id,
    redirect_uri: redirect,
    code_challenge: s256(verifier),
    code_challenge_method: 'S256',
    resource: `${base}/mcp/${serverId}`,
    state: 'demo',
  });
  // The decision stays in view however many tools the server has.
  for (const [size, viewport] of Object.entries(SIZES)) {
    await page.setViewportSize(viewport);
    await page.goto(`${base}/oauth/authorize?${query}`);
    const name = size === 'laptop' ? 'oauth-consent.png' : 'oauth-consent-phone.png';
    await page.screenshot({ path: path.join(OUT, name) });
    console.log(`docs/screenshots/${name}`);
  }
  await page.setViewportSize(SIZES.laptop);
  // Nothing listens at the redirect URI: the browser is answered there by the script, which reads the code.
  await page.route(`${redirect}**`, (route) => route.fulfill({ status: 200, contentType: 'text/plain', body: 'Signed in.' }));
  await Promise.all([page.waitForURL(`${redirect}**`), page.getByRole('button', { name: 'Approve' }).click()]);
  const code = new URL(page.url()).searchParams.get('code')!;
  await fetch(`${base}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'authorization_code', client_id, code, redirect_uri: redirect, code_verifier: verifier }),
  });
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
