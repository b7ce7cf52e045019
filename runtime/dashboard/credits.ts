// What the pages say about an owner's credits: the banner of every page when the balance is below the owner's
// alert (or at 0, with what to do, in the operator's words), and how long the balance lasts at the rate of the
// last days.
import { type OwnerDoc, creditAlert } from '../access/owners.ts';
import type { ApiDeps } from '../api/context.ts';
import type { UsageRow } from '../billing/ledger.ts';

const DAY = 86_400_000;
/** The rate is the credits kept over this many days, per day. */
export const RATE_DAYS = 7;

export interface CreditBanner {
  empty: boolean;
  balance: number;
  threshold: number;
  /** How long the balance lasts at the recent rate, in words; empty without recent use. */
  outlook: string;
  help: { text: string; url?: string };
}

/** Credits kept per day over the last RATE_DAYS days, and the whole days the balance lasts at that rate. */
export function creditOutlook(rows: UsageRow[], balance: number, now = Date.now()): { perDay: number; daysLeft: number | null } {
  const since = now - RATE_DAYS * DAY;
  const spent = rows.filter((r) => r.hour.getTime() >= since).reduce((s, r) => s + r.credits, 0);
  const perDay = spent / RATE_DAYS;
  return { perDay, daysLeft: perDay > 0 ? Math.floor(balance / perDay) : null };
}

/** "At the last 7 days' rate (about 12 credits a day) they last about 3 days." or '' without recent use. */
export function outlookText(o: { perDay: number; daysLeft: number | null }): string {
  if (o.daysLeft === null) return '';
  const rate = o.perDay >= 10 ? Math.round(o.perDay).toLocaleString('en-US') : String(Math.round(o.perDay * 10) / 10);
  const days = o.daysLeft === 0 ? 'less than a day' : `about ${o.daysLeft.toLocaleString('en-US')} day${o.daysLeft === 1 ? '' : 's'}`;
  return `At the last ${RATE_DAYS} days' rate (about ${rate} credit${rate === '1' ? '' : 's'} a day) they last ${days}.`;
}

/** "lasts about 3 days at the last 7 days' rate", or '' without recent use (the overview's balance). */
export function outlookShort(o: { perDay: number; daysLeft: number | null }): string {
  if (o.daysLeft === null) return '';
  return `${o.daysLeft === 0 ? 'less than a day' : `about ${o.daysLeft.toLocaleString('en-US')} day${o.daysLeft === 1 ? '' : 's'}`} left at the last ${RATE_DAYS} days' rate`;
}

/** The banner of every signed-in page, or null while the balance is at or above the owner's alert. */
export async function creditBanner(d: ApiDeps, owner: OwnerDoc): Promise<CreditBanner | null> {
  const balance = await d.credits.balance(owner._id);
  const { threshold } = creditAlert(owner);
  if (balance > 0 && balance >= threshold) return null;
  // Only an owner short of credits pays for the usage read.
  const rows = balance > 0 ? await d.ledger.usage(owner._id, { from: new Date(Date.now() - RATE_DAYS * DAY) }) : [];
  return { empty: balance <= 0, balance, threshold, outlook: outlookText(creditOutlook(rows, balance)), help: d.site.creditsHelp };
}
