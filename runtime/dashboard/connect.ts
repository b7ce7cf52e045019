// The connect flow's pages (runtime/accounts/connect-flows.ts): the start URL, which sends a signed-in owner
// on to the provider; the callback the provider sends them back to; the picker of a Jira site or a Supabase
// project and key; the page of an account that needs its owner, which starts its reconnection. A flow that
// ends badly ends on a page that says what happened.
import type Router from '@koa/router';
import type { Context } from 'koa';
import type { FlowOutcome } from '../accounts/connect-flows.ts';
import { accountState } from '../accounts/accounts.ts';
import { connectedUrl } from '../api/connect.ts';
import { type ApiDeps, type SignedIn, sessionActor, sessionOwner } from '../api/context.ts';
import { requestInfo, setActor } from '../audit/request-context.ts';
import type { ConnectChoice } from '../plugin-api.ts';
import { sha256 } from '../secrets.ts';
import { ToolError } from '../tool-error.ts';
import { type Frame, frameOf, notFoundPage, sendPage, signedInPageOf } from './page.ts';
import { render } from './views.ts';
import { CONSENT_PATH } from '../sandbox/sandboxes.ts';
import { CONNECT_PATH } from '../accounts/connect-sessions.ts';
import { endUserBrowser } from './end-user-connect.ts';

export function connectPages(router: Router, d: ApiDeps): void {
  const { flows } = d.connect;
  const signedInPage = signedInPageOf(d);
  /** Who is in the browser, for the flow and for the audit trail. */
  const browserOf = (ctx: Context, s: SignedIn) => {
    setActor(ctx, sessionActor(s.sessionId));
    return { ownerId: s.owner._id, session: sha256(s.sessionId) };
  };

  router.get(
    '/connect/start',
    signedInPage(async (ctx, s, frame) => {
      show(ctx, await flows.begin(String(ctx.query.flow ?? ''), browserOf(ctx, s), requestInfo(ctx)), frame);
    }),
  );

  // The provider's redirect: the code and state are in the address, so no page here may pass it on.
  router.get('/connect/callback', async (ctx) => {
    ctx.set('Referrer-Policy', 'no-referrer');
    const s = await sessionOwner(d, ctx);
    const outcome = await flows.callback(
      ctx.query,
      (endUser) => (endUser ? endUserBrowser(d, ctx) : Promise.resolve(s && browserOf(ctx, s))),
      requestInfo(ctx),
    );
    show(ctx, outcome, s ? await frameOf(d, s) : undefined);
  });

  router.get(
    '/connect/choose',
    signedInPage(async (ctx, s, frame) => {
      const view = await flows.choices(String(ctx.query.flow ?? ''), browserOf(ctx, s), requestInfo(ctx));
      if ('kind' in view) return show(ctx, view, frame);
      sendPage(
        ctx,
        render(
          'connect-choose',
          { title: `Connect “${view.name}”`, section: 'accounts', ...frame },
          { ...view, groups: grouped(view.choices), first: view.choices[0].id },
        ),
      );
    }),
  );

  // An OAuth sandbox's consent page, for the owner whose sandbox it is (its answer comes back to /connect/callback).
  router.all(`${CONSENT_PATH}/:kind/*page`, async (ctx) => {
    const s = await sessionOwner(d, ctx);
    if (!s) return ctx.method === 'GET' ? ctx.redirect(`/login?next=${encodeURIComponent(ctx.originalUrl)}`) : void (ctx.status = 401);
    let pages;
    try {
      pages = await d.sandboxes?.consentPages(s.owner._id, ctx.params.kind);
    } catch (err) {
      if (!(err instanceof ToolError)) throw err;
      return show(ctx, { kind: 'failed', title: 'The sandbox did not start', message: err.message, to: '/accounts' }, await frameOf(d, s), 503);
    }
    if (!pages) return notFoundPage(d, ctx, s);
    // The sandbox reads the request (its form) and writes its own page, headers and all.
    ctx.req.url = ctx.originalUrl.slice(`${CONSENT_PATH}/${ctx.params.kind}`.length);
    ctx.respond = false;
    await new Promise<void>((resolve) => {
      ctx.res.once('close', resolve);
      pages(ctx.req, ctx.res);
    });
  });

  router.get(
    '/accounts/:id/reconnect',
    signedInPage(async (ctx, s, frame) => {
      const doc = await d.accounts.get(s.owner._id, ctx.params.id);
      if (!doc) return notFoundPage(d, ctx, s);
      const provider = d.accounts.providersByKind.get(doc.kind);
      const connect = provider?.connect?.spec;
      // A sandbox connection reconnects to the owner's sandbox; others need the operator's OAuth app.
      const connectable = Boolean(connect) && (doc.sandbox ? doc.auth === 'oauth' : await d.connect.apps.has(provider!.spec.id));
      sendPage(
        ctx,
        render(
          'reconnect',
          { title: `Reconnect “${doc.name}”`, section: 'accounts', ...frame },
          {
            account: {
              id: doc._id,
              name: doc.name,
              provider: provider?.spec.title ?? doc.kind,
              oauth: doc.auth === 'oauth',
              state: accountState(doc),
              reason: doc.state_reason ?? '',
              checked_at: doc.checked_at ?? null,
              sandbox: doc.sandbox === true,
            },
            connect: connectable ? { by: connect!.by, body: { return_to: '/accounts' } } : null,
          },
        ),
      );
    }),
  );
}

/** A flow's outcome in the browser: on to where it goes, or the page that says what went wrong. */
function show(ctx: Context, outcome: FlowOutcome, frame: Frame | undefined, status = 400): void {
  if (outcome.kind === 'redirect') return ctx.redirect(outcome.to);
  if (outcome.kind === 'done') return ctx.redirect(connectedUrl(outcome.to, outcome.account._id));
  // An end user's flow goes back to their connect page (they have no dashboard to sign in to).
  sendPage(
    ctx,
    render('connect-failed', { title: outcome.title, section: 'accounts', ...frame }, { ...outcome, endUser: outcome.to.startsWith(CONNECT_PATH) }),
  );
  ctx.status = status;
}

/** Choices under their headings (a project's keys together), in the order given. */
function grouped(choices: ConnectChoice[]): Array<{ group: string; choices: ConnectChoice[] }> {
  const groups: Array<{ group: string; choices: ConnectChoice[] }> = [];
  for (const choice of choices) {
    const group = choice.group ?? '';
    const last = groups.at(-1);
    if (last && last.group === group) last.choices.push(choice);
    else groups.push({ group, choices: [choice] });
  }
  return groups;
}
