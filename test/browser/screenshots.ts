// `npm run screenshots`: the demo data set, a few real MCP calls, then a PNG of every dashboard page in
// docs/screenshots/ as a person sees it in Chromium (1280x800).
import { randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { startDemo } from '../../runtime/demo-data.ts';
import { connectV2 } from '../support/mcp-clients.ts';
import type { Page } from 'playwright-core';
import { s256 } from '../../runtime/oauth/grants.ts';
import { launchChromium } from './chromium.ts';

const OUT = path.resolve('docs/screenshots');

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
  ];
  for (const [name, args] of calls) await client.callTool({ name, arguments: args }).catch(() => undefined);
  await client.close();
  // Keys that show restrictions: read-only with a budget, and a few tools until next week.
  const keys = `${base}/api/servers/${demo.serverId}/api-keys`;
  const headers = { authorization: `Bearer ${demo.owner.token}`, 'content-type': 'application/json' };
  const reader = { name: 'reporting agent', access: 'read', credit_limit: { credits: 200, per: 'day' } };
  const triage = { name: 'triage bot', tools: ['tracker_get_issue', 'tracker_update_issue'], expires_at: new Date(Date.now() + 5 * 86_400_000).toISOString() };
  for (const body of [reader, triage]) await fetch(keys, { method: 'POST', headers, body: JSON.stringify(body) });

  await mkdir(OUT, { recursive: true });
  const browser = await launchChromium();
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const shot = async (file: string, url: string, fullPage = true) => {
    await page.goto(base + url);
    await page.screenshot({ path: path.join(OUT, `${file}.png`), fullPage });
    console.log(`docs/screenshots/${file}.png`);
  };
  await shot('login', '/login');
  await shot('signup', '/signup');
  await page.goto(base + '/login');
  await page.fill('#email', demo.owner.email);
  await page.fill('#password', demo.owner.password);
  await Promise.all([page.waitForURL(base + '/'), page.click('button[type=submit]')]);
  await shot('overview', '/');
  await shot('accounts', '/accounts');
  await shot('servers', '/servers');
  await shot('server', `/servers/${demo.serverId}`);
  await page.getByRole('button', { name: 'New key' }).click();
  const dialog = page.getByRole('dialog', { name: 'New key for this server' });
  await dialog.getByLabel('Name').fill('nightly sync');
  await dialog.getByLabel('Only the tools checked below').check();
  for (const tool of ['database_read_records', 'database_update_records']) await dialog.getByRole('checkbox', { name: new RegExp(`^${tool}`) }).check();
  await dialog.getByLabel('Budget (optional)').fill('50');
  await page.screenshot({ path: path.join(OUT, 'key-dialog.png') });
  console.log('docs/screenshots/key-dialog.png');
  await shot('add-tool', `/servers/${demo.serverId}/tools/new`);
  await shot('add-tool-form', `/servers/${demo.serverId}/tools/new?base=tracker_search_issues`);
  await connectApp(page, base, demo.serverId);
  await shot('keys', '/keys');
  await shot('settings', '/settings');
  await shot('activity', '/activity', false);
  await browser.close();
  await demo.close();
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
  // As a laptop shows it: the decision stays in view however many tools the server has.
  await page.setViewportSize({ width: 1440, height: 900 });
  await page.goto(`${base}/oauth/authorize?${query}`);
  await page.screenshot({ path: path.join(OUT, 'oauth-consent.png') });
  await page.setViewportSize({ width: 1280, height: 800 });
  console.log('docs/screenshots/oauth-consent.png');
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
