// The dashboard in daily use, in Chromium against the service and the fixture provider on loopback: the call
// log filtered down to a failing call and that call's page; an interrupted call said honestly; the credits
// banner after spending below the owner's alert, and at 0 with the operator's words; a tool's defaults
// edited in place and the tool tried from the page; forms that say every problem at once in the fields' words.
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumAvailable, launchChromium, watchedPage } from './browser/chromium.ts';
import { connectV1 } from './support/mcp-clients.ts';
import { type Owner, type TestService, createServer, startTestService } from './support/service.ts';
import { takeBlock } from './support/ledger.ts';
import { rpc } from './support/tool-calls.ts';
import { DEMO_SPECS, useDemoUpstream } from './support/upstream.ts';

const PASSWORD = 'a long enough passphrase';
const HELP = { CREDITS_HELP_TEXT: 'Top up in the billing portal; credits arrive within a minute.', CREDITS_HELP_URL: 'https://billing.example.com/top-up' };

describe.skipIf(!chromiumAvailable)('the dashboard in daily use', () => {
  const demo = useDemoUpstream();
  let svc: TestService;
  let browser: Browser;

  beforeAll(async () => {
    [svc, browser] = await Promise.all([startTestService({ ...DEMO_SPECS, ...HELP, STARTING_CREDITS: '40' }), launchChromium()]);
  });
  afterAll(async () => {
    await browser?.close();
    await svc?.close();
  });

  /** An owner who signed up (a session for the browser, a management token for set-up) with a server of demo_echo. */
  async function signedUpOwner(service: TestService): Promise<{ owner: Owner; cookie: { name: string; value: string } }> {
    const signup = await fetch(`${service.url}/api/auth/signup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: `daily-${Date.now()}-${Math.random().toString(36).slice(2)}@example.com`, password: PASSWORD }),
    });
    expect(signup.status).toBe(201);
    const [name, value] = signup.headers.getSetCookie()[0].split(';')[0].split('=');
    const { id, csrf_token } = (await signup.json()) as { id: string; csrf_token: string };
    const token = await fetch(`${service.url}/api/me/tokens`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', cookie: `${name}=${value}`, 'x-csrf-token': csrf_token, origin: service.url },
      body: JSON.stringify({ name: 'set-up' }),
    }).then((r) => r.json() as Promise<{ token: string }>);
    return { owner: { id, token: token.token }, cookie: { name, value } };
  }

  const browse = (service: TestService, session: { name: string; value: string }) => watchedPage(browser, { url: service.url, session, timeoutMs: 15_000 });

  it('filters the call log down to a failing call, whose page gives its error, provider status and what became of its credits', async () => {
    const { owner, cookie } = await signedUpOwner(svc);
    const server = await createServer(svc, owner, { accounts: demo.account(), tools: [{ base_tool: 'demo_echo', account: 'demo' }] });
    const client = await connectV1(svc.url, server.serverId, server.key);
    await client.callTool({ name: 'demo_echo', arguments: { message: 'fine' } });
    const failed = await client.callTool({ name: 'demo_echo', arguments: { message: 'down', status: 503 } });
    expect(failed.isError).toBe(true);
    await client.callTool({ name: 'demo_echo', arguments: { message: 'missing', status: 404 } });
    await client.close();

    const { context, page, problems } = await browse(svc, cookie);
    await page.goto(`${svc.url}/`);
    await Promise.all([page.waitForURL(`${svc.url}/calls`), page.getByRole('link', { name: 'Calls', exact: true }).click()]);
    const rows = page.getByTestId('calls').locator('tbody tr');
    expect(await rows.count()).toBe(3);
    await page.getByLabel('Outcome').selectOption('refunded');
    await page.getByLabel('Server').selectOption(server.serverId);
    await page.getByLabel('Tool').selectOption('demo_echo');
    await Promise.all([page.waitForURL(/outcome=refunded/), page.getByRole('button', { name: 'Apply' }).click()]);
    expect(await rows.count()).toBe(1);
    expect(await rows.first().textContent()).toMatch(/test server.*test key.*demo_echo.*refunded · provider_error.*0\s*of 2/s);
    // The export takes the same filter.
    const csv = await (await page.request.get(svc.url + (await page.getByRole('link', { name: 'Export CSV' }).getAttribute('href'))!)).text();
    expect(csv.trim().split('\r\n')).toHaveLength(2);
    expect(csv).toContain(',refunded,provider_error,2,0,');

    await Promise.all([page.waitForURL(/\/calls\/call_/), rows.first().getByRole('link').click()]);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toMatch(/demo_echo\s+refunded/);
    expect(await page.getByTestId('call-explanation').textContent()).toBe(
      'Refunded: the provider failed on its side (HTTP 503). The 2 credits charged at the start were given back.',
    );
    const facts = (await page.getByTestId('call-facts').textContent())!;
    expect(facts).toMatch(/Code\s*provider_error/);
    expect(facts).toMatch(/Message\s*.*503/);
    expect(facts).toMatch(/Provider status\s*HTTP 503/);
    expect(facts).toMatch(/Credits\s*0 kept of 2 charged/);
    expect(facts).toMatch(/Latency\s*\d+ ms/);
    expect(await page.getByRole('link', { name: 'test server' }).getAttribute('href')).toBe(`/servers/${server.serverId}`);
    expect(await page.locator('main').textContent()).toContain('test key');
    expect(problems).toEqual([]);
    await context.close();
  }, 60_000);

  it('says what is known of a call the service stopped in: refunded, its tool not known', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'daily-interrupted-'));
    let disk = await startTestService({ ...DEMO_SPECS, STARTING_CREDITS: '40' }, { onDisk: dir });
    try {
      const { owner, cookie } = await signedUpOwner(disk);
      // What a stop in the middle of a call leaves: a charge on the credit line, no record. Settled at the next start.
      expect(await takeBlock(disk.store, owner.id, 2)).not.toBeNull();
      await disk.close();
      disk = await startTestService({ ...DEMO_SPECS, STARTING_CREDITS: '40' }, { onDisk: dir });
      const { context, page } = await browse(disk, cookie);
      await page.goto(`${disk.url}/calls`);
      const row = page.getByTestId('calls').locator('tbody tr').first();
      expect(await row.textContent()).toMatch(/not known.*not known.*not known \(interrupted\).*refunded · interrupted/s);
      await Promise.all([page.waitForURL(/\/calls\/interrupted_/), row.getByRole('link').click()]);
      expect(await page.getByRole('heading', { level: 1 }).textContent()).toMatch(/An interrupted call/);
      expect(await page.getByTestId('call-explanation').textContent()).toBe(
        'Refunded: the service stopped during this call; which tool it was is not known. The 2 credits charged at the start were given back.',
      );
      expect(await page.locator('main').textContent()).toContain('which server, key and tool it was is not known');
      await context.close();
    } finally {
      await disk.close();
    }
  }, 60_000);

  it('warns on every page once spending takes the balance below the alert, and at 0 says what to do', async () => {
    const { owner, cookie } = await signedUpOwner(svc);
    const server = await createServer(svc, owner, { accounts: demo.account(), tools: [{ base_tool: 'demo_echo', account: 'demo' }] });
    const { context, page, problems } = await browse(svc, cookie);
    // 40 starting credits: the default alert is a tenth of them. The owner raises it on Settings.
    await page.goto(`${svc.url}/settings`);
    expect(await page.getByLabel('Warn me below').getAttribute('placeholder')).toBe('4');
    await page.getByLabel('Warn me below').fill('30');
    await Promise.all([page.waitForEvent('load'), page.getByRole('region', { name: 'Credits' }).getByRole('button', { name: 'Save' }).click()]);
    expect(await page.getByLabel('Warn me below').inputValue()).toBe('30');
    expect(await page.getByTestId('credit-banner').count()).toBe(0);

    // Six calls of 2 credits: 28 left, below 30.
    for (let i = 0; i < 6; i++) await rpc(svc.url, server.serverId, server.key, 'tools/call', { name: 'demo_echo', arguments: { message: `m${i}` } });
    for (const where of ['/', '/servers', '/calls', `/servers/${server.serverId}`]) {
      await page.goto(svc.url + where);
      const banner = page.getByTestId('credit-banner');
      expect(await banner.textContent(), where).toMatch(
        /Credits are running low:\s*28 left, below your alert at 30\. At the last 7 days' rate \(about 1\.7 credits a day\) they last about 16 days\./,
      );
      expect(await banner.textContent()).toContain(HELP.CREDITS_HELP_TEXT);
      expect(await banner.getByRole('link', { name: 'Get more credits' }).getAttribute('href')).toBe(HELP.CREDITS_HELP_URL);
    }
    expect(await page.getByTestId('credit-banner').getByRole('link', { name: 'Change the alert' }).getAttribute('href')).toBe('/settings#credits');

    // Spent to the last credit: every page says calls are refused, and what to do.
    for (let i = 0; i < 14; i++) await rpc(svc.url, server.serverId, server.key, 'tools/call', { name: 'demo_echo', arguments: { message: `n${i}` } });
    const refused = await rpc(svc.url, server.serverId, server.key, 'tools/call', { name: 'demo_echo', arguments: { message: 'one more' } });
    expect(refused.body.result.content[0].text).toMatch(/^Insufficient credits/);
    await page.goto(`${svc.url}/keys`);
    const empty = page.getByTestId('credit-banner');
    expect(await empty.textContent()).toMatch(
      /No credits left\.\s*Every tool call is refused \(insufficient_credits\) until credits are added\.\s*Top up in the billing portal/,
    );
    await page.goto(`${svc.url}/`);
    expect(await page.getByTestId('balance').textContent()).toBe('0');
    expect(problems).toEqual([]);
    await context.close();
  }, 60_000);

  it("edits a tool's defaults, lock and description in place, then tries it from the page like a client would", async () => {
    const { owner, cookie } = await signedUpOwner(svc);
    const server = await createServer(svc, owner, { accounts: demo.account(), tools: [{ base_tool: 'demo_echo', account: 'demo' }] });
    const { context, page, problems } = await browse(svc, cookie);
    await page.goto(`${svc.url}/servers/${server.serverId}`);

    await page.getByRole('link', { name: 'Edit demo_echo' }).click();
    const edit = page.getByRole('dialog', { name: 'Settings of demo_echo' });
    // Locking a parameter without a value, and a value out of range: both said at once, in the fields' words.
    await edit.locator('input[data-lock-for$="-channel"]').check();
    await edit.getByLabel('status').fill('700');
    await edit.getByRole('button', { name: 'Save changes' }).click();
    await expect.poll(() => edit.locator('[id$="-channel-error"]').textContent()).toBe('Give channel a value to lock it, or uncheck “Lock”.');
    expect(await edit.locator('[id$="-status-error"]').textContent()).toBe('status must be at most 599.');
    expect(await edit.locator('.form-error').textContent()).toBe('2 fields need a look: status, channel.');
    await edit.getByLabel('status').fill('');
    await edit.getByLabel('message').fill('hello from the page');
    await edit.getByLabel('channel').selectOption('random');
    await edit.getByLabel('Description').fill('Echo for the daily test');
    await Promise.all([page.waitForEvent('load'), edit.getByRole('button', { name: 'Save changes' }).click()]);
    const row = page.getByTestId('tools').getByRole('row', { name: /demo_echo/ });
    expect(await row.textContent()).toMatch(/Echo for the daily test.*message = "hello from the page".*channel = "random" · locked/s);
    // What a client sees now: the description, the default, the locked parameter gone.
    const client = await connectV1(svc.url, server.serverId, server.key);
    const [listed] = (await client.listTools()).tools;
    expect(listed.description).toContain('Echo for the daily test');
    expect(listed.inputSchema.properties).not.toHaveProperty('channel');
    expect((listed.inputSchema.properties as Record<string, { default?: unknown }>).message.default).toBe('hello from the page');
    await client.close();

    // Try: the form has what a caller may set; left empty, the server's default is used.
    await page.getByRole('link', { name: 'Try demo_echo' }).click();
    const tryIt = page.getByRole('dialog', { name: 'Try demo_echo' });
    expect(await tryIt.getByLabel('channel').count()).toBe(0);
    expect(await tryIt.getByLabel('message').getAttribute('placeholder')).toBe('"hello from the page"');
    await tryIt.getByRole('button', { name: 'Run the call' }).click();
    const result = tryIt.getByTestId('try-result');
    await expect.poll(() => result.textContent()).toContain('isError: false');
    expect(await result.textContent()).toContain(JSON.stringify({ echo: 'hello from the page', channel: 'random' }));
    expect(await result.textContent()).toContain('Balance: 38 credits');
    // A failure the provider answered: as the client gets it, error code and message.
    await tryIt.getByLabel('status').fill('503');
    await tryIt.getByRole('button', { name: 'Run the call' }).click();
    await expect.poll(() => result.textContent()).toContain('isError: true · provider_error');
    expect(await result.textContent()).toContain('(provider answered HTTP 503)');
    expect(await result.textContent()).toMatch(/"code": "provider_error"/);
    // Out of range: refused in the page, next to the field, before any call.
    await tryIt.getByLabel('status').fill('99');
    await tryIt.getByRole('button', { name: 'Run the call' }).click();
    await expect.poll(() => tryIt.locator('[id$="-status-error"]').textContent()).toBe('status must be at least 200.');
    await tryIt.getByRole('button', { name: 'Close' }).click();

    // Both tries are in the log, charged like any call and marked as from the dashboard.
    const calls = (await svc.call('GET', '/api/calls?key=dashboard', { token: owner.token })).body.calls;
    expect(calls.map((c: { outcome: string; via: string }) => [c.outcome, c.via])).toEqual([
      ['refunded', 'dashboard'],
      ['ok', 'dashboard'],
    ]);
    await page.goto(`${svc.url}/calls/${calls[1].id}`);
    expect(await page.locator('main').textContent()).toMatch(/Dashboard \(you\)\s*from the dashboard/);

    // An inactive server refuses the try, and the page says why.
    await svc.call('PATCH', `/api/servers/${server.serverId}`, { token: owner.token, body: { active: false } });
    await page.goto(
      `${svc.url}/servers/${server.serverId}/tools/${(await svc.call('GET', `/api/servers/${server.serverId}/tools`, { token: owner.token })).body.tools[0].id}`,
    );
    expect(await page.getByRole('button', { name: 'Run the call' }).isDisabled()).toBe(true);
    expect(await page.locator('#try').textContent()).toContain('This server is inactive');
    expect(problems).toEqual([]);
    await context.close();
  }, 60_000);

  it('says every problem of a form at once, next to its field, in the words of its label', async () => {
    const { cookie } = await signedUpOwner(svc);
    const { context, page } = await browse(svc, cookie);
    await page.goto(`${svc.url}/settings`);
    await page.getByRole('button', { name: 'Change password' }).click();
    await expect.poll(() => page.locator('#current-password-error').textContent()).toBe('Current password is required.');
    expect(await page.locator('#new-password-error').textContent()).toBe('New password is required.');
    expect(await page.getByLabel('Current password').getAttribute('aria-invalid')).toBe('true');
    // The API's own answer, in the same words.
    await page.getByLabel('Current password').fill('not the password at all');
    await page.getByLabel('New password').fill('another long passphrase');
    await page.getByRole('button', { name: 'Change password' }).click();
    await expect.poll(() => page.locator('#current-password-error').textContent()).toBe('Current password does not match your password.');
    expect(await page.locator('#new-password-error').textContent()).toBe('');

    await context.clearCookies();
    await page.goto(`${svc.url}/signup`);
    await page.getByLabel('E-mail').fill('not an address');
    await page.getByLabel('Password').fill('short');
    await page.getByRole('button', { name: 'Create account' }).click();
    await expect.poll(() => page.locator('#email-error').textContent()).toBe('E-mail must be an e-mail address, e.g. ada@example.com.');
    expect(await page.locator('#password-error').textContent()).toBe('Password must be at least 10 characters long.');
    expect(await page.locator('.form-error').textContent()).toBe('2 fields need a look: E-mail, Password.');
    await context.close();
  }, 60_000);
});
