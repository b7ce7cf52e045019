// E-mail as a person meets it, in Chromium against the real service and Mailpit: sign up, read the mail,
// open its link, create a key; forget the password, reset it from the mail, sign in; get an alert and
// unsubscribe from it, then turn it on again on Settings. Screenshots of each new page go to the temp folder.
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumAvailable, launchChromium, signInOnPage, watchedPage } from './browser/chromium.ts';
import { MAIL_ENV, freshAddress, linkIn, mailpitAvailable, waitForMail } from './support/mailpit.ts';
import { Browser as ApiClient } from './support/session-client.ts';
import { startTestService, type TestService } from './support/service.ts';

const PASSWORD = 'a long enough passphrase';
/** Each browser step may wait this long on a busy machine; the test's own timeout is far above. */
const STEP_MS = 30_000;

describe.skipIf(!chromiumAvailable || !mailpitAvailable)('e-mail in the dashboard (Chromium, Mailpit)', { timeout: 180_000 }, () => {
  let svc: TestService;
  let browser: Browser;
  const shots: string[] = [];

  beforeAll(async () => {
    [svc, browser] = await Promise.all([startTestService({ ...MAIL_ENV, STARTING_CREDITS: '25' }), launchChromium()]);
  });
  afterAll(async () => {
    await browser?.close();
    await svc?.close();
    if (shots.length) console.log(`e-mail pages: ${shots.join(', ')}`);
  });

  async function freshPage(): Promise<{ page: Page; problems: string[]; close: () => Promise<void> }> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    context.setDefaultTimeout(STEP_MS);
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
    page.on('console', (m) => {
      if (m.type() === 'error' && !/status of 4\d\d/.test(m.text())) problems.push(`console error: ${m.text()}`);
    });
    return { page, problems, close: () => context.close() };
  }

  async function shot(page: Page, name: string): Promise<void> {
    const file = path.join(tmpdir(), `email-${name}.png`);
    await page.screenshot({ path: file, fullPage: true });
    shots.push(file);
  }

  it('signs up, confirms the address from the e-mail, then creates a key', async () => {
    const { page, problems, close } = await freshPage();
    const email = freshAddress('browser-signup');
    await page.goto(`${svc.url}/signup`);
    await expect.poll(() => page.getByText('We will e-mail you a link to confirm the address').isVisible()).toBe(true);
    await page.getByLabel('E-mail').fill(email);
    await page.getByLabel('Password').fill(PASSWORD);
    await Promise.all([page.waitForURL(`${svc.url}/`), page.getByRole('button', { name: 'Create account' }).click()]);
    // Every page says what to do first.
    await page.getByRole('heading', { name: 'Confirm your e-mail address' }).waitFor();
    await expect.poll(() => page.locator('main').textContent()).toContain(`We sent a link to ${email}`);
    await shot(page, 'verify-needed');
    await page.goto(`${svc.url}/keys`);
    await page.getByRole('heading', { name: 'Confirm your e-mail address' }).waitFor();

    const mail = await waitForMail(email, /Confirm your e-mail address/);
    await page.goto(linkIn(mail, `${svc.url}/verify-email#`));
    await page.getByText('Your address is confirmed.').waitFor();
    await shot(page, 'verify-email');
    await Promise.all([page.waitForURL(`${svc.url}/`), page.getByRole('link', { name: 'Continue to the dashboard' }).click()]);
    await page.getByRole('heading', { name: 'Overview' }).waitFor();

    await page.goto(`${svc.url}/keys`);
    await page.getByRole('button', { name: 'New global key' }).click();
    const dialog = page.getByRole('dialog', { name: 'New global key' });
    await dialog.getByLabel('Name').fill('my agent');
    await dialog.getByRole('button', { name: 'Create key' }).click();
    const revealed = page.getByRole('dialog', { name: 'Your new global key' });
    await expect.poll(() => revealed.locator('#reveal-value').textContent()).toMatch(/^mcpk_/);
    expect(problems).toEqual([]);
    await close();
  });

  it('resets a forgotten password from the e-mail and signs in with the new one', async () => {
    const email = freshAddress('browser-reset');
    const api = new ApiClient(svc);
    await api.send('POST', '/api/auth/signup', { email, password: PASSWORD });
    const verification = linkIn(await waitForMail(email, /Confirm your e-mail address/), `${svc.url}/verify-email#`).split('#')[1];
    await api.send('POST', '/api/auth/verify-email', { token: verification });

    const { page, problems, close } = await freshPage();
    await page.goto(`${svc.url}/login`);
    await page.getByRole('link', { name: 'Forgot your password?' }).click();
    await page.getByLabel('E-mail').fill(email);
    await page.getByRole('button', { name: 'Send me a link' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toContain(`If an account uses ${email}, a link to choose a new password is on its way.`);
    await shot(page, 'forgot-password');

    const mail = await waitForMail(email, /Reset your Tool Server password/);
    await page.goto(linkIn(mail, `${svc.url}/reset-password#`));
    await page.getByLabel('New password').fill('short');
    await page.getByRole('button', { name: 'Set password and sign in' }).click();
    await expect.poll(() => page.locator('#password-error').textContent()).toContain('at least 10 characters');
    await page.getByLabel('New password').fill('a fresh new passphrase');
    await shot(page, 'reset-password');
    await Promise.all([page.waitForURL(`${svc.url}/`), page.getByRole('button', { name: 'Set password and sign in' }).click()]);
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
    // The session of the API client (another browser) ended with the reset.
    expect((await api.send('GET', '/api/me')).status).toBe(401);
    await Promise.all([page.waitForURL(`${svc.url}/login`), page.getByRole('button', { name: 'Sign out' }).click()]);
    await signInOnPage(page, { email, password: 'a fresh new passphrase' }, `${svc.url}/`);
    expect(problems).toEqual([]);
    await close();
  });

  it('unsubscribes from an alert with the link of its e-mail, and turns it on again on Settings', async () => {
    const email = freshAddress('browser-alert');
    const api = new ApiClient(svc);
    const signedUp = await api.send('POST', '/api/auth/signup', { email, password: PASSWORD });
    const verification = linkIn(await waitForMail(email, /Confirm your e-mail address/), `${svc.url}/verify-email#`).split('#')[1];
    await api.send('POST', '/api/auth/verify-email', { token: verification });
    await svc.mail!.alerts.accountNeedsReconnect({
      ownerId: signedUp.body.id,
      account: { id: 'acct_demo', name: 'Team Notion' },
      provider: 'Notion',
      reason: 'Notion answered 401: the integration was removed from the workspace.',
      reconnectUrl: `${svc.url}/accounts`,
    });
    const alert = await waitForMail(email, /Reconnect your Notion account/);
    expect(alert.HTML).toContain('Reconnect the account');

    const session = { name: 'ts_session', value: api.cookie.split('=')[1] };
    const { context, page, problems } = await watchedPage(browser, { url: svc.url, session, timeoutMs: STEP_MS });
    await page.goto(linkIn(alert, `${svc.url}/unsubscribe?token=`));
    await expect.poll(() => page.locator('main').textContent()).toContain('Stop the e-mails sent when: An account needs reconnecting?');
    await shot(page, 'unsubscribe');
    await page.getByRole('button', { name: 'Unsubscribe' }).click();
    await page.getByText('Done: you will no longer get these e-mails.').waitFor();
    expect((await api.send('GET', '/api/me')).body.email_alerts.account_reconnect).toBe(false);

    await page.getByRole('link', { name: 'E-mail alerts in your settings' }).click();
    const reconnect = page.getByRole('checkbox', { name: 'An account needs reconnecting' });
    await expect.poll(() => reconnect.isChecked()).toBe(false);
    expect(await page.getByRole('checkbox', { name: 'My credits fall below my alert' }).isChecked()).toBe(true);
    await reconnect.check();
    await page.getByRole('button', { name: 'Save alerts' }).click();
    await page.getByText('Saved.').waitFor();
    await shot(page, 'settings-alerts');
    expect((await api.send('GET', '/api/me')).body.email_alerts.account_reconnect).toBe(true);
    expect(problems).toEqual([]);
    await context.close();
  });
});
