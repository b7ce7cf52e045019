// Debian's Chromium driven by playwright-core (no browser download, ever). Without the browser: a loud
// warning and skipped browser tests locally; with CI=true a missing browser fails the run.
import { existsSync } from 'node:fs';
import { type Browser, chromium } from 'playwright-core';

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
