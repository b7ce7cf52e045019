// What every dashboard page shares: the security headers, the frame of a signed-in page (who, the CSRF token,
// the banners of credits and of accounts that need their owner), sending a page, the 404 page.
import type { Context, Next } from 'koa';
import { awaitingVerification } from '../access/owners.ts';
import { type ApiDeps, type SignedIn, sessionOwner } from '../api/context.ts';
import { type AccountsBanner, accountsBanner } from './accounts-banner.ts';
import { type CreditBanner, creditBanner } from './credits.ts';
import { render } from './views.ts';

/**
 * The pages' Content Security Policy. `formTargets`: origins a form of the page may end up at besides this one
 * (a browser checks form-action on each redirect of a form's navigation too, so a form whose answer redirects to
 * a provider's consent page needs that provider's origin here).
 */
export function contentSecurityPolicy(formTargets: string[] = []): string {
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    `form-action ${["'self'", ...formTargets].join(' ')}`,
    "frame-ancestors 'none'",
    "base-uri 'none'",
    "object-src 'none'",
  ].join('; ');
}
const CSP = contentSecurityPolicy();

export interface Frame {
  email: string;
  csrfToken: string;
  credits: CreditBanner | null;
  accounts: AccountsBanner | null;
}

/** A signed-in page: the owner and the frame of the layout (with its banners), or a redirect to the sign-in page. */
export const signedInPageOf = (d: ApiDeps) => (handler: (ctx: Context, s: SignedIn, frame: Frame) => Promise<void>) => async (ctx: Context) => {
  const s = await sessionOwner(d, ctx);
  if (!s) return ctx.redirect(`/login?next=${encodeURIComponent(ctx.originalUrl)}`);
  if (awaitingVerification(s.owner)) return verifyNeededPage(d, ctx, s);
  await handler(ctx, s, await frameOf(d, s));
};

/** An owner who has yet to verify their address can do nothing else: every page says so. */
export function verifyNeededPage(d: ApiDeps, ctx: Context, s: SignedIn): void {
  sendPage(ctx, render('verify-needed', { title: 'Confirm your address', csrfToken: s.csrfToken }, { email: s.owner.email, mailOn: Boolean(d.mail) }));
}

export async function notFoundPage(d: ApiDeps, ctx: Context, s: SignedIn | null): Promise<void> {
  sendPage(ctx, render('not-found', { title: 'Not found', ...(s ? await frameOf(d, s) : {}) }, { path: ctx.path }));
  ctx.status = 404;
}

/** The layout's frame of a signed-in owner's page: who, the CSRF token, and the banners when due. */
export async function frameOf(d: ApiDeps, s: SignedIn): Promise<Frame> {
  const [credits, accounts] = await Promise.all([creditBanner(d, s.owner), accountsBanner(d, s.owner._id)]);
  return { email: s.owner.email, csrfToken: s.csrfToken, credits, accounts };
}

/** The page of a service that cannot answer now (its store refuses or does not answer): the message says why and when to try again. */
export function unavailablePage(ctx: Context, message: string): void {
  ctx.set('Content-Security-Policy', CSP);
  sendPage(ctx, render('unavailable', { title: 'Unavailable' }, { message }));
  ctx.status = 503;
}

export function sendPage(ctx: Context, html: string): void {
  ctx.type = 'text/html; charset=utf-8';
  ctx.set('Cache-Control', 'no-store');
  ctx.body = html;
}

export async function securityHeaders(ctx: Context, next: Next): Promise<void> {
  ctx.set('Content-Security-Policy', CSP);
  ctx.set('X-Content-Type-Options', 'nosniff');
  ctx.set('Referrer-Policy', 'same-origin');
  ctx.set('X-Frame-Options', 'DENY');
  ctx.set('Cross-Origin-Opener-Policy', 'same-origin');
  await next();
}
