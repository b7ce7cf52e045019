// An MCP application approved by one of the owner's end users rather than by the owner. The authorization
// request names a server whose owner lets end users connect apps (`end_user_apps`); a browser holding one of
// that owner's end-user sessions (a connect link of the owner's app opened it) is shown this consent, and the
// grant it makes acts as that person: the calls use their own accounts, the credits stay the owner's. A browser
// with no session is sent to sign in at the owner's app (`end_user_sign_in_url`), which sends the person on
// through a connect link whose return URL is the authorization request: they come back here with a session.
// Plain HTML forms (no script) with the end-user session's CSRF token.
import type Router from '@koa/router';
import type { Context } from 'koa';
import { END_USER_COOKIE, ConnectLinkRefusal, type EndUserBrowser } from '../accounts/connect-sessions.ts';
import type { ApiDeps, SignedIn } from '../api/context.ts';
import { UNRESTRICTED } from '../access/restrictions.ts';
import type { EndUserDoc } from '../access/end-users.ts';
import { requestInfo, setActor } from '../audit/request-context.ts';
import { isolated } from '../names.ts';
import { type AuthorizationRequest, REQUEST_FIELDS, checkAuthorizationRequest, withParams } from '../oauth/authorize.ts';
import type { ServerDoc } from '../servers/servers.ts';
import { CALLER_ACCOUNT } from '../servers/custom-tools.ts';
import { clientFacts, requestFields } from './consent.ts';
import { endUserForm, endUserPage } from './end-user-connect.ts';
import { contentSecurityPolicy, sendPage } from './page.ts';
import { render } from './views.ts';

const DECISION_PATH = '/oauth/authorize/end-user';

const browserOf = (d: ApiDeps, ctx: Context) => d.connect.sessions.browserOf(ctx.cookies.get(END_USER_COOKIE));

/** The person of a browser's end-user session, when it is one of the server's owner's end users who still exists. */
async function personOf(d: ApiDeps, browser: EndUserBrowser | null, server: ServerDoc): Promise<{ browser: EndUserBrowser; person: EndUserDoc } | null> {
  if (!browser || browser.ownerId !== server.owner_id) return null;
  const person = await d.endUsers.byId(browser.endUserId);
  return person && person.owner_id === server.owner_id ? { browser, person } : null;
}

/**
 * Shows the end user's consent, or where to sign in, when the request is one for them; false when it is the
 * owner's to decide (no server named, a server closed to end users, `as=owner`, or the owner signed in here
 * with no end-user session of theirs).
 */
export async function endUserAuthorization(d: ApiDeps, ctx: Context, r: AuthorizationRequest, owner: SignedIn | null): Promise<boolean> {
  if (!r.serverId || ctx.query.as === 'owner') return false;
  const server = await d.servers.lookup(r.serverId);
  if (!server?.end_user_apps) return false;
  const found = await personOf(d, await browserOf(d, ctx), server);
  const asOwner = withParams(`${d.site.publicUrl}${ctx.originalUrl}`, { as: 'owner' });
  const client = clientFacts(r);
  if (!found) {
    if (owner) return false;
    const signIn = server.end_user_sign_in_url
      ? {
          url: withParams(server.end_user_sign_in_url, { return_to: `${d.site.publicUrl}${ctx.originalUrl}` }),
          host: new URL(server.end_user_sign_in_url).host,
        }
      : null;
    sendPage(ctx, render('end-user-consent', { title: `Sign in to connect ${isolated(client.name)}` }, { signIn: signIn ?? {}, client, asOwner }));
    return true;
  }
  const { browser, person } = found;
  setActor(ctx, { type: 'end_user', id: person._id, name: person.external_id });
  const [ownerDoc, tools] = await Promise.all([d.owners.get(server.owner_id), d.tools.list(server.owner_id, server._id)]);
  // The form's answer is a redirect to the application: the browser must be allowed to follow it.
  ctx.set('Content-Security-Policy', contentSecurityPolicy([new URL(r.redirectUri).origin]));
  sendPage(
    ctx,
    render(
      'end-user-consent',
      { title: `Authorize ${isolated(client.name)}` },
      {
        client,
        asOwner,
        owner: ownerDoc?.email ?? 'the app',
        person: person.display_name ?? person.external_id,
        server: { name: server.name, active: server.active },
        tools: tools.map((t) => ({ name: t.name, yours: t.account_id === CALLER_ACCOUNT })),
        hidden: requestFields(r),
        action: DECISION_PATH,
        csrf: browser.csrfToken,
      },
    ),
  );
  return true;
}

export function endUserConsentPages(router: Router, d: ApiDeps): void {
  // The person's decision; the request is checked again, and so is who the browser is.
  router.post(
    DECISION_PATH,
    endUserPage(async (ctx) => {
      const browser = await browserOf(d, ctx);
      if (!browser)
        throw new ConnectLinkRefusal('This browser is not signed in', 'Open the app that gave you this server, then connect the application again.', 403);
      const form = await endUserForm(d, ctx, browser);
      const params = Object.fromEntries(REQUEST_FIELDS.flatMap((f) => (form.has(f) ? [[f, form.get(f)]] : [])));
      const checked = await checkAuthorizationRequest(params, d.oauth.clients, d.site.publicUrl, ctx.ip);
      if (!checked.ok) {
        if ('redirectTo' in checked) return ctx.redirect(checked.redirectTo);
        throw new ConnectLinkRefusal('Authorization refused', checked.page, checked.status ?? 400);
      }
      const r = checked.request;
      const server = r.serverId ? await d.servers.lookup(r.serverId) : null;
      const found = server?.end_user_apps ? await personOf(d, browser, server) : null;
      if (!server || !found)
        throw new ConnectLinkRefusal(
          'This server is not yours to connect',
          'The server does not let its users connect applications, or this browser belongs to someone else. Open the app that gave you this server and connect the application again.',
          403,
        );
      const { person } = found;
      setActor(ctx, { type: 'end_user', id: person._id, name: person.external_id });
      const target = { type: 'oauth_client', id: r.client.client_id, name: r.client.client_name };
      const back = (extra: Record<string, string>) => ctx.redirect(withParams(r.redirectUri, { ...extra, state: r.state, iss: d.site.publicUrl }));
      if (form.get('decision') === 'deny') {
        await d.audit.record(requestInfo(ctx), { action: 'grant.deny', owner_id: server.owner_id, target, changes: { end_user_id: person._id } });
        return back({ error: 'access_denied', error_description: 'The person denied the request' });
      }
      if (form.get('decision') !== 'approve') throw new ConnectLinkRefusal('Approve or deny', 'Go back and press Approve or Deny.', 400);
      // What the app may do is the owner's to narrow later (Connected apps); the person decides only whether.
      const code = await d.oauth.grants.issueCode({
        client: r.client,
        redirectUri: r.redirectUri,
        codeChallenge: r.codeChallenge,
        resource: r.resource,
        scope: r.scope,
        ownerId: server.owner_id,
        serverId: server._id,
        restrictions: UNRESTRICTED,
        endUserId: person._id,
      });
      await d.audit.record(requestInfo(ctx), {
        action: 'grant.approve',
        owner_id: server.owner_id,
        target,
        changes: { server_id: server._id, redirect_host: new URL(r.redirectUri).host, end_user_id: person._id },
      });
      back({ code });
    }),
  );
}
