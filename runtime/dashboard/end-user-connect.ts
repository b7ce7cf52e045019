// The page an owner's end user opens from a connect link (runtime/accounts/connect-sessions.ts): no sign-in; it
// names the owner, lists the providers the link allows with the person's account of each and its health, and
// connects each one by the connect flow (OAuth, the end user as holder) or, where the provider has no OAuth app,
// by a form of its fields. Plain HTML forms (no script), each with the end-user session's CSRF token.
import type Router from '@koa/router';
import type { Context } from 'koa';
import { AccountFieldError, accountState } from '../accounts/accounts.ts';
import type { Browser } from '../accounts/connect-flows.ts';
import { CONNECT_PATH, ConnectLinkRefusal, END_USER_COOKIE, type EndUserBrowser } from '../accounts/connect-sessions.ts';
import { type ApiDeps, crossSiteProblem } from '../api/context.ts';
import { ApiError, formBody } from '../api/http.ts';
import { requestInfo, setActor } from '../audit/request-context.ts';
import { sameSecret } from '../secrets.ts';
import { ToolError } from '../tool-error.ts';
import { accountFields } from './forms.ts';
import { contentSecurityPolicy, sendPage } from './page.ts';
import { render } from './views.ts';

/** The end user in the request's browser, as a connect flow names it (null when none). */
export async function endUserBrowser(d: ApiDeps, ctx: Context): Promise<Browser | null> {
  const b = await d.connect.sessions.browserOf(ctx.cookies.get(END_USER_COOKIE));
  return b && flowBrowser(b);
}

const flowBrowser = (b: EndUserBrowser): Browser => ({ ownerId: b.ownerId, endUserId: b.endUserId, session: b.session });

/** An end user's page: a refusal (ConnectLinkRefusal) is said on a page of its own, in words. */
export const endUserPage = (handler: (ctx: Context) => Promise<void>) => async (ctx: Context) => {
  try {
    await handler(ctx);
  } catch (err) {
    if (!(err instanceof ConnectLinkRefusal)) throw err;
    sendPage(ctx, render('connect-failed', { title: err.title }, { message: err.message, to: '', endUser: true }));
    ctx.status = err.status;
  }
};

/** A form an end user's page posted, after the checks every such post makes (same origin, the session's CSRF token). */
export async function endUserForm(d: ApiDeps, ctx: Context, browser: EndUserBrowser): Promise<URLSearchParams> {
  const foreign = crossSiteProblem(ctx, d.site.publicUrl);
  if (foreign) throw new ConnectLinkRefusal('This form was sent from another site', foreign, 403);
  const form = await formBody(ctx, d.maxBodyBytes).catch((err: unknown) => {
    if (err instanceof ApiError) throw new ConnectLinkRefusal('This form could not be read', err.message, err.status);
    throw err;
  });
  if (!sameSecret(form.get('csrf') ?? '', browser.csrfToken)) throw new ConnectLinkRefusal('This form has expired', 'Reload the page and try again.', 403);
  return form;
}

export function endUserConnectPages(router: Router, d: ApiDeps): void {
  const { sessions, flows, apps } = d.connect;

  /** The link of the URL, admitted for this browser (a backend's link binds it now), and its end user. */
  const admitted = async (ctx: Context) => {
    const link = await sessions.resolve(ctx.params.token);
    const endUser = await d.endUsers.byId(link.endUserId);
    if (!endUser || endUser.owner_id !== link.ownerId)
      throw new ConnectLinkRefusal('This connect link no longer works', 'The person it was made for is no longer known to the app that sent you here.', 410);
    const current = await sessions.browserOf(ctx.cookies.get(END_USER_COOKIE));
    const browser = await sessions.admit(link, current, async () => {
      const started = await sessions.startBrowser(link.ownerId, link.endUserId);
      ctx.cookies.set(END_USER_COOKIE, started.cookie, { httpOnly: true, sameSite: 'lax', expires: started.expires, overwrite: true, secure: ctx.secure });
      return started.browser;
    });
    setActor(ctx, { type: 'end_user', id: endUser._id, name: endUser.external_id });
    return { link, endUser, browser };
  };
  /** A page's handler, with every refusal of the link said on a page of its own. */
  const page = (handler: (ctx: Context, a: Awaited<ReturnType<typeof admitted>>) => Promise<void>) =>
    endUserPage(async (ctx) => {
      // The link's token is in the address: no other site may be told it. Not `no-referrer`: with it a browser
      // sends `Origin: null` on the page's own forms, which the same-origin check must refuse.
      ctx.set('Referrer-Policy', 'same-origin');
      await handler(ctx, await admitted(ctx));
    });
  const posted = (ctx: Context, browser: EndUserBrowser) => endUserForm(d, ctx, browser);
  const offered = (allowed: string[] | null) => [...d.catalog.current.providers.values()].filter((p) => !allowed || allowed.includes(p.spec.id));
  const here = (ctx: Context) => `${CONNECT_PATH}/${ctx.params.token}`;

  const show = async (ctx: Context, a: Awaited<ReturnType<typeof admitted>>, problem?: { provider: string; message: string }) => {
    const owner = await d.owners.get(a.link.ownerId);
    const accounts = await d.accounts.ofEndUser(a.link.ownerId, a.endUser._id);
    const connected = typeof ctx.query.connected === 'string' ? accounts.find((x) => x._id === ctx.query.connected) : undefined;
    const providers = await Promise.all(
      offered(a.link.providers).map(async (p) => {
        const account = accounts.find((x) => x.kind === p.spec.account.kind);
        const state = account ? accountState(account) : null;
        const oauth = Boolean(p.connect) && (await apps.has(p.spec.id));
        return {
          id: p.spec.id,
          title: p.spec.title,
          by: p.connect?.spec.by ?? p.spec.title,
          oauth,
          // Its OAuth form is answered with a redirect to this origin (the provider's consent page).
          consentOrigin: oauth ? new URL(p.connect!.spec.authorize_url).origin : null,
          fields: oauth ? [] : accountFields(p.spec.account.fields, `connect-${p.spec.id}`),
          account: account ? { says: account.connection?.says ?? account.name, state, reason: account.state_reason ?? '', ok: state !== 'needs_reauth' } : null,
          problem: problem?.provider === p.spec.id ? problem.message : '',
        };
      }),
    );
    ctx.set('Content-Security-Policy', contentSecurityPolicy([...new Set(providers.flatMap((p) => p.consentOrigin ?? []))]));
    sendPage(
      ctx,
      render(
        'end-user-connect',
        { title: 'Connect your accounts' },
        {
          owner: owner?.email ?? 'the app',
          person: a.endUser.display_name ?? a.endUser.external_id,
          providers,
          csrf: a.browser.csrfToken,
          action: here(ctx),
          connected: connected ? (connected.connection?.says ?? connected.name) : '',
          done: a.link.returnUrl ?? '',
        },
      ),
    );
  };

  router.get(`${CONNECT_PATH}/:token`, page(show));

  // Connect one provider by OAuth: a flow held by the end user, bound to this browser, on to the consent page.
  router.post(
    `${CONNECT_PATH}/:token/oauth`,
    page(async (ctx, a) => {
      const form = await posted(ctx, a.browser);
      const provider = offered(a.link.providers).find((p) => p.spec.id === form.get('provider') && p.connect);
      if (!provider || !(await apps.has(provider.spec.id)))
        throw new ConnectLinkRefusal('This provider cannot be connected here', 'Go back and pick one of the providers the page offers.', 400);
      const flow = await flows.create({
        ownerId: a.link.ownerId,
        endUserId: a.endUser._id,
        provider,
        name: provider.spec.title,
        sandbox: false,
        browser: a.browser.session,
        returnTo: here(ctx),
      });
      const outcome = await flows.begin(flow.id, flowBrowser(a.browser), requestInfo(ctx));
      if (outcome.kind === 'redirect') return ctx.redirect(outcome.to);
      throw new ConnectLinkRefusal(outcome.kind === 'failed' ? outcome.title : 'Not connected', outcome.kind === 'failed' ? outcome.message : '', 400);
    }),
  );

  // The pick among several sites or projects a grant reaches, as a plain form.
  router.get(
    `${CONNECT_PATH}/:token/choose`,
    page(async (ctx, a) => {
      const view = await flows.choices(String(ctx.query.flow ?? ''), flowBrowser(a.browser), requestInfo(ctx));
      if ('kind' in view) throw new ConnectLinkRefusal(view.kind === 'failed' ? view.title : 'Not connected', view.kind === 'failed' ? view.message : '', 400);
      sendPage(
        ctx,
        render(
          'end-user-choose',
          { title: view.question },
          { ...view, action: `${here(ctx)}/choose`, csrf: a.browser.csrfToken, back: here(ctx), first: view.choices[0].id },
        ),
      );
    }),
  );
  router.post(
    `${CONNECT_PATH}/:token/choose`,
    page(async (ctx, a) => {
      const form = await posted(ctx, a.browser);
      let outcome;
      try {
        outcome = await flows.choose(form.get('flow') ?? '', form.get('choice'), flowBrowser(a.browser), requestInfo(ctx));
      } catch (err) {
        if (err instanceof ToolError) throw new ConnectLinkRefusal('Pick one of the choices', err.message, 400);
        throw err;
      }
      if (outcome.kind === 'failed') throw new ConnectLinkRefusal(outcome.title, outcome.message, 400);
      ctx.redirect(outcome.kind === 'done' ? `${here(ctx)}?connected=${encodeURIComponent(outcome.account._id)}` : outcome.to);
    }),
  );

  // Where a provider has no OAuth app: the person pastes its credentials; verified before they are kept.
  router.post(
    `${CONNECT_PATH}/:token/token`,
    page(async (ctx, a) => {
      const form = await posted(ctx, a.browser);
      const provider = offered(a.link.providers).find((p) => p.spec.id === form.get('provider'));
      if (!provider) throw new ConnectLinkRefusal('This provider cannot be connected here', 'Go back and pick one of the providers the page offers.', 400);
      const fields = Object.fromEntries(provider.spec.account.fields.flatMap((f) => (form.get(f.name) ? [[f.name, form.get(f.name)!]] : [])));
      const kind = provider.spec.account.kind;
      const before = await d.accounts.ofEndUser(a.link.ownerId, a.endUser._id, kind);
      let problem: string;
      try {
        const doc = await d.accounts.create(a.link.ownerId, kind, provider.spec.title, fields, false, a.endUser._id);
        try {
          await d.engine.verify(provider, (await d.accounts.credentials(a.link.ownerId, doc._id))!);
        } catch (err) {
          await d.accounts.deleteOfEndUser(a.link.ownerId, a.endUser._id, doc._id);
          throw err;
        }
        // One account per provider: the new one replaces what the person had.
        for (const old of before) await d.accounts.deleteOfEndUser(a.link.ownerId, a.endUser._id, old._id);
        await d.accounts.markVerified(doc._id);
        return ctx.redirect(`${here(ctx)}?connected=${encodeURIComponent(doc._id)}`);
      } catch (err) {
        if (!(err instanceof ToolError || err instanceof AccountFieldError)) throw err;
        problem = err.message;
      }
      ctx.status = 400;
      await show(ctx, a, { provider: provider.spec.id, message: problem });
    }),
  );
}
