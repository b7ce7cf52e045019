// What every route module gets: the repositories, the guards and the current owner.
import type { Context, Next } from 'koa';
import type { Accounts } from '../accounts/accounts.ts';
import type { ConnectFlows } from '../accounts/connect-flows.ts';
import type { ConnectSessions } from '../accounts/connect-sessions.ts';
import type { Connections } from '../accounts/connections.ts';
import type { OAuthApps } from '../accounts/oauth-apps.ts';
import type { StateWebhooks } from '../accounts/state-webhooks.ts';
import type { Budgets } from '../access/budgets.ts';
import type { EmailLinks } from '../access/email-links.ts';
import type { EndUsers } from '../access/end-users.ts';
import type { MailLimits } from '../access/mail-limits.ts';
import type { ApiKeys } from '../access/keys.ts';
import type { OwnerLimits, QuotaKind, Refusal } from '../access/owner-limits.ts';
import { type OwnerDoc, type Owners, awaitingVerification } from '../access/owners.ts';
import { SESSION_COOKIE, type Sessions, csrfTokenOf } from '../access/sessions.ts';
import type { SignInLimits } from '../access/sign-in-limits.ts';
import type { AuditTrail } from '../audit/audit-trail.ts';
import { setActor } from '../audit/request-context.ts';
import type { Credits } from '../billing/credits.ts';
import type { Cancellation } from '../cancellation.ts';
import type { Ledger } from '../billing/ledger.ts';
import type { Engine } from '../engine/engine.ts';
import type { LinkMail } from '../mail/link-mail.ts';
import type { OwnerAlerts } from '../mail/owner-alerts.ts';
import type { Outbox } from '../mail/outbox.ts';
import type { OAuthClients } from '../oauth/clients.ts';
import type { OAuthGrants } from '../oauth/grants.ts';
import type { Sandboxes } from '../sandbox/sandboxes.ts';
import { sameSecret, sha256 } from '../secrets.ts';
import type { ServerDoc, Servers } from '../servers/servers.ts';
import type { CustomTools } from '../servers/custom-tools.ts';
import type { LiveCatalog } from '../toolspec/live.ts';
import { ApiError, bearer, notFound } from './http.ts';

export interface ApiDeps {
  owners: Owners;
  servers: Servers;
  keys: ApiKeys;
  budgets: Budgets;
  audit: AuditTrail;
  tools: CustomTools;
  accounts: Accounts;
  credits: Credits;
  ledger: Ledger;
  catalog: LiveCatalog;
  engine: Engine;
  sessions: Sessions;
  signInLimits: SignInLimits;
  /** What one owner may change, download and keep. */
  ownerLimits: OwnerLimits;
  oauth: { clients: OAuthClients; grants: OAuthGrants };
  /** E-mail (SMTP_URL): the outbox, single-use links, their e-mails, the owners' alerts; absent when e-mail is off. */
  mail?: { outbox: Outbox; links: EmailLinks; linkMail: LinkMail; alerts: OwnerAlerts; limits: MailLimits };
  /** Connected accounts: the operator's OAuth apps, connect flows, connections' health, state-change webhooks, end users' connect links. */
  connect: { apps: OAuthApps; flows: ConnectFlows; connections: Connections; webhooks: StateWebhooks; sessions: ConnectSessions };
  /** The owners' end users. */
  endUsers: EndUsers;
  /** The service's own provider sandboxes; absent when SANDBOXES=off. */
  sandboxes?: Sandboxes;
  operatorToken: string;
  maxBodyBytes: number;
  /** Public base URL (links, the dashboard's own origin), sign-up policy and credits of a new owner. */
  site: { publicUrl: string; signup: 'open' | 'invite'; startingCredits: number; creditsHelp: { text: string; url?: string } };
  /**
   * Runs a tool of an owner's server as that owner (the dashboard's "Try"): through the call pipeline, charged
   * and recorded like any call and marked as from the dashboard; answered as an MCP client gets it.
   */
  tryTool: (call: { ownerId: string; serverId: string; tool: string; arguments: Record<string, unknown>; cancellation: Cancellation }) => Promise<TryOutcome>;
}

/** What a "Try" came to: the tools/call result as a client gets it, or the rate limit's refusal. */
export type TryOutcome =
  | { ok: true; result: { content: unknown[]; structuredContent?: unknown; isError: boolean } }
  | { ok: false; rateLimited: true; headers: Record<string, string>; limit?: string }
  | { ok: false; rateLimited: false };

type Guard = (ctx: Context, next: Next) => Promise<void>;

export interface Guards {
  /** The operator token. */
  operator: Guard;
  /**
   * An owner token or session of an owner whose address is verified (or needs none); the owner is then
   * `me(ctx)`. A change counts against the owner's writes a minute.
   */
  owner: Guard;
  /**
   * `owner` for changes that take something away (delete, revoke, sign out, change the password): never
   * refused by the writes limit, so that a runaway script of the owner's cannot keep it from stopping a leak.
   */
  ownerRevoking: Guard;
  /**
   * Also for an owner who has yet to verify their address: only what verifying needs (who am I, a new link)
   * and signing out use it. Not counted against the writes limit either (a new link has its own throttle).
   */
  ownerVerifying: Guard;
}

export function guards(d: ApiDeps): Guards {
  /**
   * `verified`: an owner who must still verify their address is refused (403, saying so); `metered`: a change
   * counts against the owner's writes a minute.
   */
  async function ownerGuard(ctx: Context, next: Next, o: { verified: boolean; metered: boolean }): Promise<void> {
    const token = bearer(ctx);
    let found: OwnerDoc | null = null;
    if (token) {
      const auth = await d.owners.authenticateToken(token);
      found = auth?.owner ?? null;
      if (auth) setActor(ctx, { type: 'token', id: auth.token._id, name: auth.token.name });
    } else if (ctx.cookies.get(SESSION_COOKIE)) {
      const session = await sessionOwner(d, ctx);
      if (session && !SAFE_METHODS.has(ctx.method)) {
        const refused = crossSiteProblem(ctx, d.site.publicUrl);
        if (refused) throw new ApiError(403, refused);
        if (!sameSecret(ctx.get('x-csrf-token'), session.csrfToken))
          throw new ApiError(403, 'Missing or wrong CSRF token (X-CSRF-Token header): reload the page and try again');
      }
      found = session?.owner ?? null;
      if (session) setActor(ctx, sessionActor(session.sessionId));
    }
    if (!found) {
      ctx.set('WWW-Authenticate', 'Bearer');
      throw new ApiError(401, 'Sign in, or send an owner token (Authorization: Bearer mcpo_...)');
    }
    if (o.verified && awaitingVerification(found))
      throw new ApiError(403, `Confirm your e-mail address first: open the link we sent to ${found.email} (the dashboard sends a new one)`);
    // Every change an owner makes counts against its writes a minute, whichever token or session makes it.
    if (o.metered && !SAFE_METHODS.has(ctx.method)) refuseWhenLimited(ctx, await d.ownerLimits.write(found._id));
    ctx.state.owner = found;
    await next();
  }
  return {
    async operator(ctx, next) {
      const token = bearer(ctx);
      if (!token || !sameSecret(token, d.operatorToken)) {
        ctx.set('WWW-Authenticate', 'Bearer');
        throw new ApiError(401, 'An operator token is required');
      }
      setActor(ctx, { type: 'operator' });
      await next();
    },
    owner: (ctx, next) => ownerGuard(ctx, next, { verified: true, metered: true }),
    ownerRevoking: (ctx, next) => ownerGuard(ctx, next, { verified: true, metered: false }),
    ownerVerifying: (ctx, next) => ownerGuard(ctx, next, { verified: false, metered: false }),
  };
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** A refusal of an owner's limit: 429 with Retry-After and the limit in words. */
export function refuseWhenLimited(ctx: Context, refusal: Refusal | null): void {
  if (!refusal) return;
  ctx.set('Retry-After', String(refusal.waitSeconds));
  throw new ApiError(429, refusal.message);
}

/**
 * Creates `needed` things of a kind when the calling owner's quota has room (403 naming the limit otherwise),
 * counting what it has with `count`.
 */
export function withRoom<T>(
  d: ApiDeps,
  ctx: Context,
  kind: QuotaKind,
  count: (ownerId: string) => Promise<number>,
  create: () => Promise<T>,
  needed = 1,
): Promise<T> {
  const ownerId = me(ctx)._id;
  return d.ownerLimits.withRoom(ownerId, kind, needed, () => count(ownerId), create);
}

/**
 * Why a browser request is not from the service's own pages, or null when it is. The own origin is the
 * public URL's, or the one the request was addressed to (http://localhost:3000 when PUBLIC_URL says
 * 127.0.0.1): a foreign page cannot send either as its Origin.
 */
export function crossSiteProblem(ctx: Context, publicUrl: string): string | null {
  const origin = ctx.get('origin');
  if (origin)
    return origin === publicUrl || origin === `${ctx.protocol}://${ctx.host}` ? null : `Cross-site request refused: ${origin} is not this service's origin`;
  const site = ctx.get('sec-fetch-site');
  if (site === 'same-origin') return null;
  return site
    ? `Cross-site request refused (Sec-Fetch-Site: ${site})`
    : 'Cross-site request refused: a signed-in request must carry an Origin or Sec-Fetch-Site header';
}

export interface SignedIn {
  owner: OwnerDoc;
  sessionId: string;
  csrfToken: string;
}

/** The owner signed in by the session cookie (its idle expiry slid forward), or null. Memoised per request. */
export async function sessionOwner(d: Pick<ApiDeps, 'sessions' | 'owners'>, ctx: Context): Promise<SignedIn | null> {
  if (ctx.state.signedIn !== undefined) return ctx.state.signedIn as SignedIn | null;
  const id = ctx.cookies.get(SESSION_COOKIE);
  const session = id ? await d.sessions.resume(id) : null;
  const owner = session ? await d.owners.get(session.owner_id) : null;
  const signedIn = owner && id ? { owner, sessionId: id, csrfToken: csrfTokenOf(id) } : null;
  ctx.state.signedIn = signedIn;
  return signedIn;
}

/** A session as the audit trail names it: a short fingerprint of its stored hash (nothing that resumes it). */
export const sessionActor = (sessionId: string) => ({ type: 'session' as const, id: sha256(sessionId).slice(0, 12) });

export const me = (ctx: Context): OwnerDoc => ctx.state.owner as OwnerDoc;

/** The calling owner's server, or 404 (another owner's server is "not found" too). */
export async function ownServer(d: ApiDeps, ctx: Context, id: string): Promise<ServerDoc> {
  const server = await d.servers.get(me(ctx)._id, id);
  if (!server) throw notFound('Server');
  return server;
}
