// Every dashboard page and its main states (dialogs open, errors shown, a result in place) in Chromium, on a
// laptop (1440x900) and on a phone (390x844), from the demo data set: no page is wider than the screen, every
// open dialog fits in it, and axe-core finds no serious or critical accessibility violation. The navigation
// menu of narrow screens works from the keyboard. The counts per page are printed at the end.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Demo, startDemo } from '../runtime/demo-data.ts';
import { s256 } from '../runtime/oauth/grants.ts';
import { chromiumAvailable, launchChromium, signInOnPage } from './browser/chromium.ts';
import { connectV2 } from './support/mcp-clients.ts';

const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
const SIZES = { laptop: { width: 1440, height: 900 }, phone: { width: 390, height: 844 } } as const;
type Size = keyof typeof SIZES;

interface State {
  name: string;
  path: string;
  signedOut?: boolean;
  /** A new owner with nothing yet but an empty server, and no credits left. */
  newcomer?: boolean;
  /** Brings the loaded page into the state (opens a dialog, submits a form...). */
  prepare?: (page: Page, size: Size) => Promise<void>;
}

interface Violation {
  id: string;
  impact: string | null;
  help: string;
  nodes: Array<{ target: string[] }>;
}

describe.skipIf(!chromiumAvailable)('every page at 1440 and 390 px wide', () => {
  let demo: Demo;
  let base: string;
  let browser: Browser;
  let toolId: string;
  let failedCall: string;
  let consent: string;
  let newcomer: { cookie: { name: string; value: string }; serverId: string };
  let endUserId: string;
  /** A connect link per width: each is bound to the first browser that opens it. */
  let connectLinks: Record<Size, string>;
  const counts = new Map<string, Record<Size, number>>();

  beforeAll(async () => {
    [demo, browser] = await Promise.all([startDemo({ PORT: '0', LOG_LEVEL: 'warn', HOST: '127.0.0.1' }), launchChromium()]);
    base = demo.service.url;
    const client = await connectV2(base, demo.serverId, demo.apiKey);
    for (const [name, args] of [
      ['database_read_records', { table: 'todos', limit: 5 }],
      ['tracker_get_issue', { issue_key: 'NOPE-1' }],
      ['tracker_get_issue', {}],
    ] as const)
      await client.callTool({ name, arguments: args });
    await client.close();
    const api = async (method: string, path: string, body?: unknown) =>
      (await fetch(base + path, {
        method,
        headers: { authorization: `Bearer ${demo.owner.token}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      }).then((r) => r.json())) as any;
    const tools = (await api('GET', `/api/servers/${demo.serverId}/tools`)).tools as Array<{ id: string; name: string }>;
    toolId = tools.find((t) => t.name === 'database_read_records')!.id;
    await api('PATCH', `/api/servers/${demo.serverId}/tools/${toolId}`, { defaults: { table: 'todos', limit: 3 }, locked: ['table'] });
    failedCall = (await api('GET', '/api/calls?outcome=tool_error&limit=1')).calls[0].id;
    endUserId = (await api('GET', '/api/end-users?q=ada')).end_users[0].id;
    const linkPath = async () =>
      new URL((await api('POST', '/api/connect-sessions', { end_user_id: endUserId, return_url: 'https://app.example/' })).url).pathname;
    connectLinks = { laptop: await linkPath(), phone: await linkPath() };
    await api('POST', `/api/servers/${demo.serverId}/api-keys`, { name: 'reader', access: 'read', credit_limit: { credits: 50, per: 'day' } });
    const registered = await fetch(`${base}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_name: 'Layout client', redirect_uris: ['http://127.0.0.1:9/cb'], token_endpoint_auth_method: 'none' }),
    }).then((r) => r.json() as Promise<{ client_id: string }>);
    // A newcomer: signed up, one empty server, every credit spent.
    const signup = await fetch(`${base}/api/auth/signup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: `newcomer-${Date.now()}@example.com`, password: 'a long enough passphrase' }),
    });
    const [name, value] = signup.headers.getSetCookie()[0].split(';')[0].split('=');
    const { id, csrf_token } = (await signup.json()) as { id: string; csrf_token: string };
    const empty = await fetch(`${base}/api/servers`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', cookie: `${name}=${value}`, 'x-csrf-token': csrf_token, origin: base },
      body: JSON.stringify({ name: 'Empty' }),
    }).then((r) => r.json() as Promise<{ id: string }>);
    await fetch(`${base}/api/admin/owners/${id}/credits`, {
      method: 'POST',
      headers: { authorization: `Bearer ${demo.service.operatorToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ amount: -1_000_000 }),
    });
    newcomer = { cookie: { name, value }, serverId: empty.id };
    consent = `/oauth/authorize?${new URLSearchParams({
      response_type: 'code',
      client_id: registered.client_id,
      redirect_uri: 'http://127.0.0.1:9/cb',
      code_challenge: s256(randomBytes(32).toString('base64url')),
      code_challenge_method: 'S256',
      resource: `${base}/mcp/${demo.serverId}`,
      state: 'layout',
    })}`;
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await demo?.close();
    if (counts.size) {
      const rows = [...counts].map(([name, c]) => `  ${name.padEnd(30)} ${String(c.laptop ?? '-').padStart(6)} ${String(c.phone ?? '-').padStart(6)}`);
      console.log(
        `axe serious + critical violations per page and state:\n  ${'page'.padEnd(30)} ${'1440'.padStart(6)} ${'390'.padStart(6)}\n${rows.join('\n')}`,
      );
    }
  });

  const dialog = (page: Page, name: string | RegExp) => page.getByRole('dialog', { name });
  /** The Add-account dialog of Jira, open, and its button that connects the sandbox Atlassian. */
  const sandboxJiraButton = async (page: Page) => {
    await page.getByRole('button', { name: 'Add Jira Cloud account' }).click();
    return dialog(page, 'Add a Jira Cloud account').getByRole('button', { name: 'Connect a sandbox Jira Cloud account' });
  };
  const STATES: State[] = [
    { name: 'sign-in', path: '/login', signedOut: true },
    {
      name: 'sign-in, errors',
      path: '/login',
      signedOut: true,
      prepare: async (page) => {
        await page.getByRole('button', { name: 'Sign in' }).click();
        await page.locator('#password-error:not(:empty)').waitFor();
      },
    },
    { name: 'sign-up', path: '/signup', signedOut: true },
    {
      name: 'sign-up, errors',
      path: '/signup',
      signedOut: true,
      prepare: async (page) => {
        await page.getByLabel('E-mail').fill('not an address');
        await page.getByLabel('Password').fill('short');
        await page.getByRole('button', { name: 'Create account' }).click();
        await page.locator('#password-error:not(:empty)').waitFor();
      },
    },
    { name: 'invitation', path: '/invite', signedOut: true },
    { name: 'not found, signed out', path: '/no-such-page', signedOut: true },
    { name: 'consent, refused request', path: '/oauth/authorize?client_id=nobody', signedOut: true },
    { name: 'overview', path: '/' },
    {
      name: 'overview, chart value',
      path: '/',
      prepare: async (page) => {
        await page.getByTestId('chart-calls').locator('.bar').last().focus();
        await page.locator('.chart-tip:not([hidden])').first().waitFor();
      },
    },
    {
      name: 'menu open',
      path: '/',
      prepare: async (page, size) => {
        if (size === 'laptop') return;
        await page.getByRole('button', { name: 'Menu' }).click();
        await page.getByRole('link', { name: 'Calls', exact: true }).waitFor();
      },
    },
    { name: 'accounts', path: '/accounts' },
    {
      name: 'accounts, add dialog',
      path: '/accounts',
      prepare: async (page) => {
        await page.getByRole('button', { name: 'Add Supabase (PostgREST Data API) account' }).click();
        await dialog(page, /Add a Supabase/)
          .getByRole('button', { name: 'Save account' })
          .click();
        await dialog(page, /Add a Supabase/)
          .locator('.field-error:not(:empty)')
          .first()
          .waitFor();
      },
    },
    {
      name: 'accounts, connect dialog',
      path: '/accounts',
      prepare: (page) => sandboxJiraButton(page).then((button) => button.waitFor()),
    },
    {
      // The sandbox Atlassian's consent page, served through the service's origin, then the site picker.
      name: 'connect, pick a site',
      path: '/accounts',
      prepare: async (page) => {
        await (await sandboxJiraButton(page)).click();
        await page.waitForURL(/\/sandbox-consent\//);
        await Promise.all([page.waitForURL(/\/connect\/choose\?/), page.getByRole('button', { name: 'Accept', exact: true }).click()]);
      },
    },
    { name: 'connect, failed', path: '/connect/callback?code=x&state=unknown' },
    { name: 'reconnect an account', path: 'reconnect' },
    { name: 'servers', path: '/servers' },
    {
      name: 'servers, new server dialog',
      path: '/servers',
      prepare: async (page) => {
        await page.getByRole('button', { name: 'New server' }).click();
        await dialog(page, 'New server').waitFor();
      },
    },
    { name: 'a server', path: '' },
    {
      name: 'a server, new key dialog',
      path: '',
      prepare: async (page) => {
        await page.getByRole('button', { name: 'New key' }).click();
        await dialog(page, 'New key for this server').getByLabel('Only the tools checked below').check();
      },
    },
    {
      name: 'a server, key created',
      path: '',
      prepare: async (page, size) => {
        await page.getByRole('button', { name: 'New key' }).click();
        await dialog(page, 'New key for this server').getByLabel('Name').fill(`layout ${size}`);
        await page.getByRole('button', { name: 'Create key' }).click();
        await dialog(page, 'Your new API key').getByRole('tab', { name: 'Claude Code' }).waitFor();
      },
    },
    {
      name: 'a server, try a tool',
      path: '',
      prepare: async (page) => {
        await page.getByRole('link', { name: 'Try database_read_records' }).click();
        const tryIt = dialog(page, 'Try database_read_records');
        await tryIt.getByRole('button', { name: 'Run the call' }).click();
        await tryIt.getByTestId('try-result').getByText('isError: false').waitFor();
      },
    },
    {
      name: 'a server, edit a tool',
      path: '',
      prepare: async (page) => {
        await page.getByRole('link', { name: 'Edit database_read_records' }).click();
        await dialog(page, 'Settings of database_read_records').waitFor();
      },
    },
    {
      name: 'a server, confirm',
      path: '',
      prepare: async (page) => {
        await page.getByRole('button', { name: 'Revoke reader' }).click();
        await dialog(page, 'Are you sure?').waitFor();
      },
    },
    { name: 'a tool', path: 'tool' },
    { name: 'add a tool', path: 'catalog' },
    { name: 'add-tool form', path: 'form' },
    {
      name: 'add-tool form, errors',
      path: 'form',
      prepare: async (page) => {
        await page.getByLabel('max_results').fill('5000');
        await page.locator('input[data-lock-for="param-jql"]').check();
        await page.getByRole('button', { name: 'Add tool' }).click();
        await page.locator('#param-max_results-error:not(:empty)').waitFor();
      },
    },
    { name: 'keys', path: '/keys' },
    {
      name: 'keys, new global key dialog',
      path: '/keys',
      prepare: async (page) => {
        await page.getByRole('button', { name: 'New global key' }).click();
        await dialog(page, 'New global key').waitFor();
      },
    },
    { name: 'calls', path: '/calls' },
    { name: 'calls, filtered', path: '/calls?outcome=tool_error' },
    { name: 'calls, nothing matches', path: '/calls?tool=tracker_delete_issue' },
    { name: 'a call', path: 'call' },
    { name: 'end users', path: '/end-users' },
    { name: 'end users, nothing matches', path: '/end-users?q=nobody' },
    { name: "an end user's calls", path: 'end-user-calls' },
    { name: 'connect page (end user)', path: 'connect-link', signedOut: true },
    { name: 'activity', path: '/activity' },
    { name: 'settings', path: '/settings' },
    { name: 'consent', path: 'consent' },
    { name: 'not found', path: '/no-such-page' },
    { name: 'newcomer: overview, no credits', path: '/', newcomer: true },
    { name: 'newcomer: an empty server', path: 'empty', newcomer: true },
    { name: 'newcomer: add-tool, no account', path: 'empty-form', newcomer: true },
    { name: 'newcomer: calls', path: '/calls', newcomer: true },
    { name: 'newcomer: keys', path: '/keys', newcomer: true },
    { name: 'newcomer: end users', path: '/end-users', newcomer: true },
  ];

  const pathOf = (s: State, size: Size) =>
    ({
      '': `/servers/${demo.serverId}`,
      tool: `/servers/${demo.serverId}/tools/${toolId}`,
      catalog: `/servers/${demo.serverId}/tools/new`,
      form: `/servers/${demo.serverId}/tools/new?base=tracker_search_issues`,
      call: `/calls/${failedCall}`,
      consent,
      reconnect: `/accounts/${demo.accounts.tracker}/reconnect`,
      empty: `/servers/${newcomer.serverId}`,
      'empty-form': `/servers/${newcomer.serverId}/tools/new?base=tracker_search_issues`,
      'end-user-calls': `/calls?end_user=${endUserId}`,
      'connect-link': connectLinks[size],
    })[s.path] ?? s.path;

  /** Serious and critical violations on the page as it is now (open dialogs included). */
  async function axeProblems(page: Page): Promise<Violation[]> {
    // Evaluated through the DevTools protocol: the page's CSP (no inline scripts) does not apply to it.
    await page.evaluate(AXE);
    const { violations } = await page.evaluate(() => (window as any).axe.run(document, { resultTypes: ['violations'] }));
    return (violations as Violation[]).filter((v) => v.impact === 'serious' || v.impact === 'critical');
  }

  for (const size of Object.keys(SIZES) as Size[]) {
    it(`at ${SIZES[size].width}x${SIZES[size].height}: fits the screen, dialogs included, with no serious or critical axe finding`, async () => {
      const signedOut = await browser.newContext({ viewport: SIZES[size] });
      const signedIn = await browser.newContext({ viewport: SIZES[size] });
      const newcomers = await browser.newContext({ viewport: SIZES[size] });
      await newcomers.addCookies([{ ...newcomer.cookie, url: base }]);
      for (const context of [signedOut, signedIn, newcomers]) context.setDefaultTimeout(20_000);
      const login = await signedIn.newPage();
      await login.goto(`${base}/login`);
      await signInOnPage(login, demo.owner, `${base}/`);
      await login.close();
      const failures: string[] = [];
      for (const state of STATES) {
        const page = await (state.signedOut ? signedOut : state.newcomer ? newcomers : signedIn).newPage();
        const errors: string[] = [];
        page.on('pageerror', (err) => errors.push(err.message));
        await page.goto(base + pathOf(state, size));
        await state.prepare?.(page, size);
        const fit = await page.evaluate(() => {
          const width = document.documentElement.clientWidth;
          const open = [...document.querySelectorAll('dialog[open]')].map((d) => {
            const box = d.getBoundingClientRect();
            return { id: d.id, fits: box.left >= 0 && box.right <= width && d.scrollWidth <= d.clientWidth };
          });
          return { width, page: document.documentElement.scrollWidth, dialogs: open };
        });
        if (fit.page > fit.width) failures.push(`${state.name}: the page is ${fit.page}px wide in a ${fit.width}px window`);
        for (const d of fit.dialogs) if (!d.fits) failures.push(`${state.name}: dialog #${d.id} does not fit the window`);
        const problems = await axeProblems(page);
        counts.set(state.name, { ...(counts.get(state.name) ?? ({} as Record<Size, number>)), [size]: problems.length });
        for (const v of problems) failures.push(`${state.name}: axe ${v.impact} ${v.id} (${v.help}) at ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
        for (const e of errors) failures.push(`${state.name}: page error ${e}`);
        await page.close();
      }
      await Promise.all([signedOut.close(), signedIn.close(), newcomers.close()]);
      expect(failures).toEqual([]);
    }, 300_000);
  }

  it('opens and closes the menu of a narrow screen from the keyboard', async () => {
    const context = await browser.newContext({ viewport: SIZES.phone });
    context.setDefaultTimeout(20_000);
    const page = await context.newPage();
    await page.goto(`${base}/login`);
    await signInOnPage(page, demo.owner, `${base}/`);
    const menu = page.getByRole('button', { name: 'Menu' });
    const calls = page.getByRole('navigation', { name: 'Dashboard' }).getByRole('link', { name: 'Calls' });
    expect(await menu.getAttribute('aria-expanded')).toBe('false');
    expect(await calls.isVisible()).toBe(false);
    // Skip link, then the menu button.
    await page.keyboard.press('Tab');
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent?.trim())).toBe('Menu');
    await page.keyboard.press('Enter');
    expect(await menu.getAttribute('aria-expanded')).toBe('true');
    await calls.waitFor();
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Overview');
    await page.keyboard.press('Escape');
    expect(await menu.getAttribute('aria-expanded')).toBe('false');
    expect(await calls.isVisible()).toBe(false);
    expect(await page.evaluate(() => document.activeElement?.textContent?.trim())).toBe('Menu');
    // Open again, and follow a link.
    await menu.press('Enter');
    await Promise.all([page.waitForURL(`${base}/calls`), calls.click()]);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Calls');
    await context.close();
  }, 60_000);

  it("shows each day's figures over its bar on hover and keyboard focus, and moves with the arrow keys", async () => {
    const context = await browser.newContext({ viewport: SIZES.laptop });
    context.setDefaultTimeout(20_000);
    const page = await context.newPage();
    await page.goto(`${base}/login`);
    await signInOnPage(page, demo.owner, `${base}/`);
    const chart = page.getByTestId('chart-calls');
    const card = page.locator('.chart', { has: chart });
    const tip = card.locator('.chart-tip');
    // The value axis has numbers (not "max 1"), from 0 up.
    expect(await card.locator('.y-axis').textContent()).toMatch(/^0\d/);
    const today = new Date().toISOString().slice(0, 10);
    const bars = chart.locator('.bar');
    expect(await bars.count()).toBe(30);
    // Hover: today's bar says its calls, by tool.
    await bars.last().hover();
    await expect.poll(() => tip.textContent()).toMatch(new RegExp(`^${today}: \\d+ calls \\(.*database_read_records \\d+`));
    expect(await tip.isVisible()).toBe(true);
    await page.mouse.move(0, 0);
    await expect.poll(() => tip.isHidden()).toBe(true);
    // Keyboard: one tab stop (today), then the arrow keys move day by day.
    await bars.last().focus();
    await expect.poll(() => tip.textContent()).toContain(today);
    await page.keyboard.press('ArrowLeft');
    const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
    await expect.poll(() => tip.textContent()).toBe(`${yesterday}: 0 calls`);
    expect(await bars.nth(28).getAttribute('tabindex')).toBe('0');
    expect(await bars.last().getAttribute('tabindex')).toBe('-1');
    await page.keyboard.press('Home');
    await expect.poll(() => tip.textContent()).toMatch(/: 0 calls$/);
    await context.close();
  }, 60_000);
});
