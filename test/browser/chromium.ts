// Debian's Chromium driven by playwright-core (no browser download, ever). Without the browser: a loud
// warning and skipped browser tests locally; with CI=true a missing browser fails the run.
import { existsSync } from 'node:fs';
import { type Browser, type BrowserContext, type Page, chromium } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';

export const chromiumAvailable = existsSync(CHROMIUM);
if (!chromiumAvailable) {
  const message = `\n*** Browser tests need Chromium at ${CHROMIUM} (apt-get install -y chromium); they are SKIPPED ***\n`;
  if (process.env.CI === 'true') throw new Error(message);
  console.warn(message);
}

/** Flags that keep Chromium from reaching any network but the pages it is sent to (all on loopback). */
const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-default-apps',
  '--disable-extensions',
];

/** A fresh browser; playwright gives it a new, empty profile of its own. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: FLAGS, headless: true });
}

/** A page in a context of its own, and what went wrong in it that no assertion looks at. */
export interface WatchedPage {
  context: BrowserContext;
  page: Page;
  /** Script errors, and console errors other than the 4xx API answers the pages show in words. */
  problems: string[];
}

/**
 * Opens a page signed in with `session` (a session cookie for `url`). `timeoutMs` bounds each step, so that a
 * step that cannot happen fails with Playwright's own words well before the test's timeout.
 */
export async function watchedPage(
  browser: Browser,
  options: { url: string; session: { name: string; value: string }; viewport?: { width: number; height: number }; timeoutMs: number },
): Promise<WatchedPage> {
  const context = await browser.newContext({ viewport: options.viewport ?? { width: 1280, height: 900 } });
  context.setDefaultTimeout(options.timeoutMs);
  await context.addCookies([{ ...options.session, url: options.url }]);
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error' && !/status of 4\d\d/.test(m.text())) problems.push(`console error: ${m.text()}`);
  });
  return { context, page, problems };
}

/** Signs in on the sign-in page `page` shows, and waits until the service has sent the person on to `landing`. */
export async function signInOnPage(page: Page, who: { email: string; password: string }, landing: string | RegExp): Promise<void> {
  await page.getByLabel('E-mail').fill(who.email);
  await page.getByLabel('Password').fill(who.password);
  await Promise.all([page.waitForURL(landing), page.getByRole('button', { name: 'Sign in' }).click()]);
}
