// Driving the OAuth sandboxes' consent pages: over raw HTTP (what a browser would post), and in Chromium.
import type { Browser } from 'playwright-core';
import { expect } from 'vitest';

export interface Page {
  status: number;
  headers: Headers;
  html: string;
}

/** GETs a page without following redirects. */
export async function getPage(url: string): Promise<Page & { location: string | null }> {
  const res = await fetch(url, { redirect: 'manual' });
  return { status: res.status, headers: res.headers, html: await res.text(), location: res.headers.get('location') };
}

/** The consent form's hidden request id. */
export function requestIdOf(html: string): string {
  const id = /name="request" value="([^"]+)"/.exec(html)?.[1];
  expect(id, 'the consent page has a form with its request id').toBeTruthy();
  return id!;
}

/**
 * Opens the authorize URL, then posts the consent form as a browser would (to the form's relative action,
 * with `fields` and the decision), and returns where the sandbox sends the browser.
 */
export async function consent(authorizeUrl: string, decision: 'accept' | 'cancel' = 'accept', fields: Array<[string, string]> = []): Promise<URL> {
  const page = await getPage(authorizeUrl);
  expect(page.status, page.html).toBe(200);
  const action = /<form method="post" action="([^"]+)"/.exec(page.html)?.[1];
  expect(action).toBeTruthy();
  const res = await fetch(new URL(action!, authorizeUrl), {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams([['request', requestIdOf(page.html)], ...fields, ['decision', decision]]).toString(),
  });
  expect(res.status, await res.clone().text()).toBe(302);
  return new URL(res.headers.get('location')!);
}

/** The code of a redirect back to the app, checking that the state came back unchanged. */
export function codeOf(redirect: URL, state?: string): string {
  expect(redirect.searchParams.get('error'), redirect.search).toBeNull();
  if (state !== undefined) expect(redirect.searchParams.get('state')).toBe(state);
  return redirect.searchParams.get('code')!;
}

/**
 * Chromium opens the authorize URL, `choose` picks what the page offers, then the button named `button` is
 * clicked; resolves with the URL the browser lands on under `callback` (the app's redirect URI), and the
 * text of the page's main heading.
 */
export async function clickThrough(
  browser: Browser,
  authorizeUrl: string,
  callback: string,
  button: string,
  choose: (page: import('playwright-core').Page) => Promise<void> = async () => undefined,
): Promise<{ landed: URL; heading: string; problems: string[] }> {
  const context = await browser.newContext();
  context.setDefaultTimeout(30_000);
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('console', (m) => m.type() === 'error' && problems.push(`console error: ${m.text()}`));
  page.on('request', (r) => !r.url().startsWith(new URL(authorizeUrl).origin) && !r.url().startsWith(callback) && problems.push(`request to ${r.url()}`));
  try {
    await page.goto(authorizeUrl);
    const heading = (await page.getByRole('heading', { level: 1 }).textContent()) ?? '';
    await choose(page);
    await Promise.all([page.waitForURL((u) => u.href.startsWith(callback)), page.getByRole('button', { name: button, exact: true }).click()]);
    return { landed: new URL(page.url()), heading, problems };
  } finally {
    await context.close();
  }
}
