// Findings of the attack run that live in the page, in a real browser (Debian's Chromium through
// playwright-core) against the service on loopback: the redirect after sign-in, and the Settings page's
// choice to revoke management tokens with a password change.
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listenOnLoopback, type RunningSandbox } from '../sandboxes/harness.ts';
import { chromiumAvailable, launchChromium, signInOnPage } from './browser/chromium.ts';
import { startTestService, type TestService } from './support/service.ts';

const PASSWORD = 'a long enough passphrase';

describe.skipIf(!chromiumAvailable)('attack findings in Chromium', () => {
  let svc: TestService;
  let browser: Browser;
  /** Another origin on loopback standing in for the attacker's host; it records every request it gets. */
  let elsewhere: RunningSandbox;
  const visits: string[] = [];

  beforeAll(async () => {
    [svc, browser, elsewhere] = await Promise.all([
      startTestService(),
      launchChromium(),
      listenOnLoopback((req, res) => {
        visits.push(req.url ?? '');
        res.writeHead(200, { 'content-type': 'text/html' }).end('<h1>Elsewhere</h1>');
      }),
    ]);
  });
  afterAll(async () => {
    await browser?.close();
    await Promise.all([svc?.close(), elsewhere?.close()]);
  });

  async function newPage(): Promise<Page> {
    const context = await browser.newContext();
    context.setDefaultTimeout(8_000);
    return context.newPage();
  }

  async function signUpByApi(): Promise<string> {
    const email = `redirect-${Date.now()}-${Math.random().toString(36).slice(2)}@example.com`;
    const res = await svc.call('POST', '/api/auth/signup', { body: { email, password: PASSWORD } });
    expect(res.status).toBe(201);
    return email;
  }

  /** Signs in on /login?next=<next> and waits until the page is on the dashboard or on the other host. */
  async function signInWithNext(next: string): Promise<URL> {
    const email = await signUpByApi();
    const page = await newPage();
    await page.goto(`${svc.url}/login?next=${encodeURIComponent(next)}`);
    await page.getByLabel('E-mail').fill(email);
    await page.getByLabel('Password').fill(PASSWORD);
    await Promise.all([
      page.waitForURL((u) => u.origin === elsewhere.url || (u.origin === svc.url && u.pathname !== '/login')),
      page.getByRole('button', { name: 'Sign in' }).click(),
    ]);
    const landed = new URL(page.url());
    await page.context().close();
    return landed;
  }

  it('a next of /<tab>/<host> (or another disguise of //<host>) ends on the dashboard, never at the other host', async () => {
    const host = new URL(elsewhere.url).host;
    for (const next of [`/\t/${host}/landed`, `/\n/${host}/landed`, `/\r/${host}/landed`, `//${host}/landed`, `/\\${host}/landed`, `/\t\\${host}/landed`]) {
      const landed = await signInWithNext(next);
      expect(landed.origin, JSON.stringify(next)).toBe(svc.url);
      expect(landed.pathname, JSON.stringify(next)).toBe('/');
    }
    expect(visits).toEqual([]);
  });

  it('a next that is a path of the service still leads there after sign-in', async () => {
    const landed = await signInWithNext('/servers?from=login');
    expect(landed.pathname + landed.search).toBe('/servers?from=login');
  });

  it('Settings: "Also revoke management tokens" is checked by default and revokes them with the password change', async () => {
    const email = await signUpByApi();
    const page = await newPage();
    await page.goto(`${svc.url}/login?next=%2Fsettings`);
    await signInOnPage(page, { email, password: PASSWORD }, `${svc.url}/settings`);
    /** A management token made by the page's own script path (session cookie and CSRF token). */
    const newToken = () =>
      page.evaluate(async () => {
        const csrf = document.querySelector<HTMLMetaElement>('meta[name="csrf-token"]')!.content;
        const res = await fetch('/api/me/tokens', {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-csrf-token': csrf },
          body: '{"name":"script"}',
        });
        return ((await res.json()) as { token: string }).token;
      });
    const works = async (token: string) => (await svc.call('GET', '/api/me', { token })).status === 200;

    const kept = await newToken();
    await page.reload();
    const revoke = page.getByLabel('Also revoke management tokens');
    expect(await revoke.isChecked()).toBe(true);
    await revoke.uncheck();
    await page.getByLabel('Current password').fill(PASSWORD);
    await page.getByLabel('New password').fill('second long passphrase');
    await Promise.all([page.waitForURL(/changed=1/), page.getByRole('button', { name: 'Change password' }).click()]);
    expect(await works(kept)).toBe(true);

    await page.goto(`${svc.url}/settings`);
    expect(await page.getByLabel('Also revoke management tokens').isChecked()).toBe(true);
    await page.getByLabel('Current password').fill('second long passphrase');
    await page.getByLabel('New password').fill('third long passphrase');
    await Promise.all([page.waitForURL(/changed=1/), page.getByRole('button', { name: 'Change password' }).click()]);
    expect(await works(kept)).toBe(false);
    expect(await page.getByText('No tokens.').isVisible()).toBe(true);
    await page.context().close();
  });
});
