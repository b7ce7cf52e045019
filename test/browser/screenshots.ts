// `npm run screenshots`: the demo data set, a few real MCP calls, then a PNG of every dashboard page in
// docs/screenshots/ as a person sees it in Chromium (1280x800).
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { startDemo } from '../../runtime/demo-data.ts';
import { connectV2 } from '../support/mcp-clients.ts';
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

  await mkdir(OUT, { recursive: true });
  const browser = await launchChromium();
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const shot = async (file: string, url: string) => {
    await page.goto(base + url);
    await page.screenshot({ path: path.join(OUT, `${file}.png`), fullPage: true });
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
  await shot('add-tool', `/servers/${demo.serverId}/tools/new`);
  await shot('add-tool-form', `/servers/${demo.serverId}/tools/new?base=tracker_search_issues`);
  await shot('keys', '/keys');
  await shot('settings', '/settings');
  await browser.close();
  await demo.close();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
