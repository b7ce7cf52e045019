// The dashboard: server-rendered pages for owners. Each page reads the service's own store through the same
// repositories as the management API (never a provider); every change is made by the page's script calling
// the management API itself (/api/...), so the business rules live in one place.
import Router from '@koa/router';
import type { Context, Next } from 'koa';
import { publicKey, type ApiKeyDoc } from '../access/keys.ts';
import { publicAccount } from '../accounts/accounts.ts';
import { type ApiDeps, type SignedIn, sessionOwner } from '../api/context.ts';
import { safeNext } from '../api/http.ts';
import { publicServer, type ServerDoc } from '../servers/servers.ts';
import { CALLER_ACCOUNT, exposedInputSchema, orphanReason } from '../servers/custom-tools.ts';
import { ALERT_KINDS, ALERT_LABELS, awaitingVerification, creditAlert } from '../access/owners.ts';
import { maySignUp, signUpMode } from '../access/signup.ts';
import { callNames } from '../api/calls.ts';
import { checkAuthorizationRequest } from '../oauth/authorize.ts';
import { publicGrant } from '../oauth/grants.ts';
import { isolated } from '../names.ts';
import { providerTitles } from '../toolspec/catalog.ts';
import { connectSnippets, oauthSnippet } from '../servers/client-setup.ts';
import { consentView } from './consent.ts';
import { endUserAuthorization, endUserConsentPages } from './end-user-consent.ts';
import { accountFields, schemaFields, sentences } from './forms.ts';
import { CHART_DAYS, CHART_SIZE, overviewFigures, usageBy } from './overview.ts';
import { activityView } from './activity.ts';
import { callView, callsView } from './calls.ts';
import { RATE_DAYS, creditOutlook, outlookShort } from './credits.ts';
import { type ToolChoice, expiresWithin, restrictionBadges, restrictionForm, toolChoices } from './restrictions-form.ts';
import { assets, render } from './views.ts';
import { notFoundPage, securityHeaders, sendPage, signedInPageOf, verifyNeededPage } from './page.ts';
import { connectPages } from './connect.ts';
import { endUserConnectPages } from './end-user-connect.ts';
import { endUsersView } from './end-users.ts';

/** How a page names the account of a tool bound to the caller's own. */
const CALLERS_OWN = "each caller's own";

/** Paths the dashboard never answers, so their own 404s and errors stay JSON. */
const NOT_PAGES = /^\/(api|mcp|\.well-known|healthz|readyz|metrics)(\/|$)/;

export function createDashboardRouter(d: ApiDeps): Router {
  const router = new Router();
  router.use(securityHeaders);

  router.get('/assets/:file', (ctx) => {
    const asset = assets.get(ctx.params.file);
    if (!asset) return;
    ctx.set('Cache-Control', ctx.query.v === asset.hash ? 'public, max-age=31536000, immutable' : 'no-cache');
    ctx.set('ETag', `"${asset.hash}"`);
    if (ctx.get('if-none-match') === `"${asset.hash}"`) {
      ctx.status = 304;
      return;
    }
    ctx.type = asset.type;
    ctx.body = asset.body;
  });

  // Signed-out pages: a signed-in visitor goes straight on.
  const signedOutPage = (page: string, title: string) => async (ctx: Context) => {
    const next = safeNext(ctx.query.next, d.site.publicUrl);
    if (await sessionOwner(d, ctx)) return ctx.redirect(next);
    const site = { ...d.site, mailOn: Boolean(d.mail) };
    sendPage(
      ctx,
      render(
        page,
        { title },
        {
          next,
          signupOpen: maySignUp(site, ctx.ip),
          signupMode: signUpMode(site),
          mailOn: site.mailOn,
          providers: providerTitles(d.catalog.current, 'and'),
        },
      ),
    );
  };
  router.get('/login', signedOutPage('login', 'Sign in'));
  router.get('/signup', signedOutPage('signup', 'Create your account'));
  router.get('/invite', signedOutPage('invite', 'Set your password'));
  router.get('/forgot-password', signedOutPage('forgot-password', 'Reset your password'));
  // Pages of the links in e-mails: their token is in the fragment (or, for unsubscribing, the query), and they
  // work signed in or out.
  router.get('/reset-password', (ctx) => sendPage(ctx, render('reset-password', { title: 'Choose a new password' }, { mailOn: Boolean(d.mail) })));
  router.get('/verify-email', (ctx) => sendPage(ctx, render('verify-email', { title: 'Confirm your address' }, { mailOn: Boolean(d.mail) })));
  router.get('/unsubscribe', (ctx) => {
    const target = d.mail?.alerts.readUnsubscribeToken(ctx.query.token);
    sendPage(
      ctx,
      render('unsubscribe', { title: 'Stop e-mail alerts' }, { alert: target ? ALERT_LABELS[target.kind] : null, token: String(ctx.query.token ?? '') }),
    );
    if (!target) ctx.status = 400;
  });

  const signedInPage = signedInPageOf(d);

  router.get(
    '/',
    signedInPage(async (ctx, s, frame) => {
      const ownerId = s.owner._id;
      const since = new Date(Date.now() - CHART_DAYS * 86_400_000);
      const [balance, rows, calls, servers, accounts, keys, names] = await Promise.all([
        d.credits.balance(ownerId),
        d.ledger.usage(ownerId, { from: since }),
        d.ledger.latest(ownerId, 20),
        d.servers.list(ownerId),
        d.accounts.list(ownerId),
        d.keys.listGlobal(ownerId),
        callNames(d, ownerId),
      ]);
      const serverNames = new Map(servers.map((sv) => [sv._id, sv.name]));
      const toolCounts = await Promise.all(servers.map((sv) => d.tools.list(ownerId, sv._id)));
      const serverKeys = await Promise.all(servers.map((sv) => d.keys.listForServer(ownerId, sv._id)));
      // Keys that stop working within a week, so that nobody learns it from a failing agent.
      const expiring = [...new Map([...keys, ...serverKeys.flat()].map((k) => [k._id, k])).values()]
        .filter((k) => !k.revoked_at && expiresWithin(k.restrictions, 7))
        .map((k) => ({
          name: k.name,
          server: k.server_id ? (serverNames.get(k.server_id) ?? k.server_id) : null,
          days: Math.max(1, Math.ceil((k.restrictions!.expires_at!.getTime() - Date.now()) / 86_400_000)),
        }));
      const steps = [
        { done: accounts.length > 0, text: `Add an account: your ${providerTitles(d.catalog.current, 'or')} credentials`, href: '/accounts' },
        { done: servers.length > 0, text: 'Create a server', href: '/servers' },
        {
          done: toolCounts.some((t) => t.length > 0),
          text: 'Add a tool to the server, bound to the account',
          href: servers[0] ? `/servers/${servers[0]._id}` : '/servers',
        },
        {
          done: keys.length > 0 || serverKeys.some((k) => k.length > 0),
          text: 'Create an API key and connect your MCP client',
          href: servers[0] ? `/servers/${servers[0]._id}#keys` : '/keys',
        },
      ];
      sendPage(
        ctx,
        render(
          'overview',
          { title: 'Overview', section: 'overview', ...frame },
          {
            balance,
            outlook: outlookShort(creditOutlook(rows, balance)),
            rateDays: RATE_DAYS,
            figures: overviewFigures(rows),
            chartSize: CHART_SIZE,
            usage: {
              servers: usageBy(rows, 'server_id', (id) => (id ? (names.servers.get(id) ?? `${id} (deleted)`) : 'not known (interrupted calls)')),
              keys: usageBy(rows, 'key_id', (id) => (id ? (names.keys.get(id) ?? `${id} (revoked or deleted)`) : 'not known (interrupted calls)')),
            },
            calls: calls.map((c) => ({ ...c, server_name: c.server_id ? (serverNames.get(c.server_id) ?? c.server_id) : '' })),
            steps,
            gettingStarted: steps.some((st) => !st.done),
            expiring,
            // Without accounts of their own, sandbox accounts are the quickest first call: offered first.
            sandbox: d.sandboxes && {
              idleMinutes: d.sandboxes.idleMinutes,
              prominent: accounts.length === 0,
              connect: sandboxConnections(d),
            },
          },
        ),
      );
    }),
  );

  router.get(
    '/accounts',
    signedInPage(async (ctx, s, frame) => {
      const providers = [...d.catalog.current.providers.values()];
      const docs = await d.accounts.list(s.owner._id);
      const ready = await connectableProviders(d);
      const accounts = docs.map((doc) => {
        const provider = d.accounts.providersByKind.get(doc.kind);
        const view = publicAccount(doc, provider);
        const oauth = doc.auth === 'oauth';
        return {
          ...view,
          provider: provider?.spec.title ?? doc.kind,
          // A sandbox account's fields are the service's, a connected one's its connection's: their edit form has the name only.
          fields: provider && !doc.sandbox && !oauth ? accountFields(provider.spec.account.fields, `edit-${doc._id}`, view) : [],
          connectedBy: oauth ? (provider?.connect?.spec.by ?? doc.kind) : null,
          // What the connection reaches (a site, a workspace, a project), in words.
          connectedTo: oauth ? (doc.connection?.says ?? '') : null,
          reconnectable: provider?.connect !== undefined && (oauth || (!doc.sandbox && ready.has(provider.spec.id))),
          reconnectBody: { return_to: '/accounts' },
        };
      });
      const kinds = providers.map((p) => ({
        kind: p.spec.account.kind,
        title: p.spec.title,
        fields: accountFields(p.spec.account.fields, `new-${p.spec.account.kind}`),
        connect: ready.has(p.spec.id) ? { provider: p.spec.id, by: p.connect!.spec.by } : null,
        sandboxConnect: sandboxConnections(d).find((c) => c.provider === p.spec.id) ?? null,
      }));
      const sandboxNote = docs.some((doc) => doc.sandbox) ? sandboxState(d) : null;
      // Back from a connection: the account it made or reconnected.
      const connected = accounts[docs.findIndex((doc) => doc._id === ctx.query.connected)];
      sendPage(
        ctx,
        render(
          'accounts',
          { title: 'Accounts', section: 'accounts', ...frame },
          { accounts, kinds, sandboxNote, providers: providerTitles(d.catalog.current, 'or'), connected: connected ?? null },
        ),
      );
    }),
  );

  router.get(
    '/servers',
    signedInPage(async (ctx, s, frame) => {
      const servers = await d.servers.list(s.owner._id);
      const rows = await Promise.all(
        servers.map(async (sv) => ({
          ...publicServer(sv),
          tools: (await d.tools.list(s.owner._id, sv._id)).length,
          keys: (await d.keys.listForServer(s.owner._id, sv._id)).filter((k) => !k.revoked_at).length,
        })),
      );
      sendPage(ctx, render('servers', { title: 'Servers', section: 'servers', ...frame }, { servers: rows, publicUrl: d.site.publicUrl }));
    }),
  );

  /** The owner's server or the 404 page (another owner's server is "not found" too). */
  const ownServer = async (ctx: Context, s: SignedIn): Promise<ServerDoc | null> => {
    const server = await d.servers.get(s.owner._id, ctx.params.id);
    if (!server) await notFoundPage(d, ctx, s);
    return server;
  };

  router.get(
    '/servers/:id',
    signedInPage(async (ctx, s, frame) => {
      const server = await ownServer(ctx, s);
      if (!server) return;
      const ownerId = s.owner._id;
      const [tools, keys, globals, accounts] = await Promise.all([
        d.tools.list(ownerId, server._id),
        d.keys.listForServer(ownerId, server._id),
        d.keys.listGlobal(ownerId),
        d.accounts.list(ownerId),
      ]);
      const accountsById = new Map(accounts.map((a) => [a._id, a]));
      const catalog = d.catalog.current.tools;
      const url = `${d.site.publicUrl}/mcp/${server._id}`;
      const choices = toolChoices(tools, d.catalog.current);
      const allChoices = toolChoices(await allTools(ownerId), d.catalog.current);
      const listed = await withRestrictions(keys, (k) => (k.kind === 'global' ? allChoices : choices));
      const sandboxTools = tools.some((t) => t.account_id && accountsById.get(t.account_id)?.sandbox);
      sendPage(
        ctx,
        render(
          'server',
          { title: server.name, section: 'servers', ...frame },
          {
            server: publicServer(server),
            url,
            tools: tools.map((t) => ({
              ...t,
              id: t._id,
              account: t.account_id === CALLER_ACCOUNT ? CALLERS_OWN : t.account_id ? (accountsById.get(t.account_id)?.name ?? t.account_id) : null,
              sandbox: Boolean(t.account_id && accountsById.get(t.account_id)?.sandbox),
              credits: catalog.get(t.base_tool)?.spec.credits,
              orphaned: catalog.has(t.base_tool) ? null : orphanReason(t),
              custom_description: t.description,
              defaults: Object.entries(t.defaults).map(([k, v]) => ({ k, v: JSON.stringify(v), locked: t.locked.includes(k) })),
            })),
            keys: listed,
            newKeyForm: restrictionForm('new-key', undefined, choices),
            linkable: globals.filter((k) => !k.revoked_at && !k.linked_server_ids.includes(server._id)).map(keyView),
            // OAuth first: a client that signs in needs only the URL.
            snippets: [oauthSnippet(url), ...connectSnippets(url, server.name)],
            sandboxNote: sandboxTools ? sandboxState(d) : null,
          },
        ),
      );
    }),
  );

  router.get(
    '/servers/:id/tools/new',
    signedInPage(async (ctx, s, frame) => {
      const server = await ownServer(ctx, s);
      if (!server) return;
      const catalog = d.catalog.current;
      const base = typeof ctx.query.base === 'string' ? catalog.tools.get(ctx.query.base) : undefined;
      if (base) {
        const kind = base.provider.spec.account.kind;
        const accounts = (await d.accounts.list(s.owner._id)).filter((a) => a.kind === kind);
        // An account can be connected from here too; the connection comes back here with it chosen.
        const canConnect = (await connectableProviders(d)).has(base.provider.spec.id);
        const here = `/servers/${encodeURIComponent(server._id)}/tools/new?base=${encodeURIComponent(base.spec.id)}`;
        sendPage(
          ctx,
          render(
            'tool-new',
            { title: `Add ${base.spec.id}`, section: 'servers', ...frame },
            {
              server: publicServer(server),
              base: {
                id: base.spec.id,
                title: base.spec.title,
                description: base.spec.description,
                credits: base.spec.credits,
                provider: base.provider.spec.title,
                kind,
                needsAccount: (base.spec.account ?? 'required') !== 'none',
              },
              accounts: accounts.map((a) => ({ id: a._id, name: a.name, sandbox: a.sandbox === true, selected: a._id === ctx.query.connected })),
              connect: canConnect
                ? { by: base.provider.connect!.spec.by, body: { provider: base.provider.spec.id, name: base.provider.spec.title, return_to: here } }
                : null,
              fields: schemaFields(base.spec.input as never, 'defaults', 'param'),
            },
          ),
        );
        return;
      }
      const groups = [...catalog.providers.values()].map((p) => ({
        title: p.spec.title,
        kind: p.spec.account.kind,
        tools: [...catalog.tools.values()]
          .filter((t) => t.provider === p)
          .map((t) => ({ id: t.spec.id, title: t.spec.title, description: t.spec.description, credits: t.spec.credits })),
      }));
      sendPage(ctx, render('catalog', { title: 'Add a tool', section: 'servers', ...frame }, { server: publicServer(server), groups }));
    }),
  );

  // A tool of a server: try it (a form from its schema, run through the call pipeline) and change its settings
  // (description, defaults, locked parameters). The server's page opens both parts in a dialog.
  router.get(
    '/servers/:id/tools/:toolId',
    signedInPage(async (ctx, s, frame) => {
      const server = await ownServer(ctx, s);
      if (!server) return;
      const tool = await d.tools.get(s.owner._id, server._id, ctx.params.toolId);
      if (!tool) return notFoundPage(d, ctx, s);
      const base = d.catalog.current.tools.get(tool.base_tool);
      // Orphaned (its spec is gone): nothing to try or edit; the server's page says so and offers to remove it.
      if (!base) return ctx.redirect(`/servers/${server._id}`);
      const account = tool.account_id ? await d.accounts.get(s.owner._id, tool.account_id) : null;
      const editFields = schemaFields(base.spec.input as never, 'defaults', `edit-${tool._id}`, tool.defaults).map((f) => ({
        ...f,
        locked: tool.locked.includes(f.key),
      }));
      // What a caller may set, said with the base tool's own words and default; this server's defaults are said apart.
      const exposed = exposedInputSchema(base, tool.defaults, tool.locked) as { properties?: Record<string, Record<string, unknown>> };
      const baseProperties = (base.spec.input as { properties?: Record<string, Record<string, unknown>> }).properties ?? {};
      for (const [name, property] of Object.entries(exposed.properties ?? {})) {
        if (baseProperties[name]?.default === undefined) delete property.default;
        else property.default = baseProperties[name].default;
      }
      const tryFields = schemaFields(exposed as never, 'arguments', `try-${tool._id}`, {}, { required: true }).map((f) =>
        Object.hasOwn(tool.defaults, f.key)
          ? {
              ...f,
              placeholder: JSON.stringify(tool.defaults[f.key]),
              description: sentences(f.description, `This server's default: ${JSON.stringify(tool.defaults[f.key])}.`),
            }
          : f,
      );
      sendPage(
        ctx,
        render(
          'tool',
          { title: tool.name, section: 'servers', ...frame },
          {
            server: publicServer(server),
            tool: {
              id: tool._id,
              name: tool.name,
              base: base.spec.id,
              provider: base.provider.spec.title,
              credits: base.spec.credits,
              description: tool.description,
              baseDescription: base.spec.description,
              account: account
                ? { name: account.name, sandbox: account.sandbox === true }
                : tool.account_id === CALLER_ACCOUNT
                  ? { name: CALLERS_OWN, sandbox: false }
                  : null,
              readOnly: base.spec.annotations?.readOnlyHint === true,
            },
            tryFields,
            editFields,
            always: JSON.stringify({ defaults: {}, locked: [] }),
          },
        ),
      );
    }),
  );

  router.get(
    '/end-users',
    signedInPage(async (ctx, s, frame) => {
      sendPage(ctx, render('end-users', { title: 'End users', section: 'end-users', ...frame }, await endUsersView(d, s.owner._id, ctx.query)));
    }),
  );

  router.get(
    '/calls',
    signedInPage(async (ctx, s, frame) => {
      sendPage(ctx, render('calls', { title: 'Calls', section: 'calls', ...frame }, await callsView(d, s.owner._id, ctx.query)));
    }),
  );

  router.get(
    '/calls/:id',
    signedInPage(async (ctx, s, frame) => {
      const view = await callView(d, s.owner._id, ctx.params.id);
      if (!view) return notFoundPage(d, ctx, s);
      sendPage(ctx, render('call', { title: `Call ${view.call.tool ?? view.call.id}`, section: 'calls', ...frame }, view));
    }),
  );

  router.get(
    '/keys',
    signedInPage(async (ctx, s, frame) => {
      const ownerId = s.owner._id;
      const servers = await d.servers.list(ownerId);
      const names = new Map(servers.map((sv) => [sv._id, sv.name]));
      const perServer = await Promise.all(servers.map((sv) => d.keys.listForServer(ownerId, sv._id)));
      const serverKeys = perServer.flat().filter((k) => k.kind === 'server');
      const [globals, grants, toolLists] = await Promise.all([
        d.keys.listGlobal(ownerId),
        d.oauth.grants.list(ownerId),
        Promise.all(servers.map((sv) => d.tools.list(ownerId, sv._id))),
      ]);
      const choicesOf = new Map(servers.map((sv, i) => [sv._id, toolChoices(toolLists[i], d.catalog.current)]));
      const allChoices = toolChoices(toolLists.flat(), d.catalog.current);
      const serverChoices = (id: string | null) => (id ? (choicesOf.get(id) ?? []) : allChoices);
      const withNames = async (list: ApiKeyDoc[]) =>
        (await withRestrictions(list, (k) => serverChoices(k.server_id))).map((k, i) => ({
          ...k,
          server_name: list[i].server_id ? names.get(list[i].server_id!) : undefined,
          links: list[i].linked_server_ids.map((id) => ({ id, name: names.get(id) ?? id })),
          linkable: servers.filter((sv) => !list[i].linked_server_ids.includes(sv._id)).map((sv) => ({ id: sv._id, name: sv.name })),
        }));
      const spent = await d.budgets.spent(grants.flatMap((g) => (g.restrictions?.credit_limit ? [{ keyId: g._id, limit: g.restrictions.credit_limit }] : [])));
      // Apps an end user approved act as that person: the list says who.
      const approvers = new Map(
        await Promise.all(
          [...new Set(grants.flatMap((g) => g.end_user_id ?? []))].map(async (id) => {
            const person = await d.endUsers.get(ownerId, id);
            return [id, person ? (person.display_name ?? person.external_id) : 'a deleted end user'] as const;
          }),
        ),
      );
      const apps = grants.map((g) => ({
        ...publicGrant(g),
        approved_by: g.end_user_id ? approvers.get(g.end_user_id) : undefined,
        server_name: names.get(g.server_id) ?? g.server_id,
        restrictions: restrictionBadges(g.restrictions, spent.get(g._id) ?? null),
        form: restrictionForm(`app-${g._id}`, g.restrictions, serverChoices(g.server_id)),
        idle_expired: g.idle_expires_at ? g.idle_expires_at.getTime() < Date.now() : false,
      }));
      sendPage(
        ctx,
        render(
          'keys',
          { title: 'API keys', section: 'keys', ...frame },
          {
            servers: servers.map(publicServer),
            serverKeys: await withNames(serverKeys),
            globalKeys: await withNames(globals),
            apps,
            newGlobalForm: restrictionForm('new-global', undefined, allChoices),
            newServerKeyForm: restrictionForm(
              'new-server-key',
              undefined,
              servers.map((sv) => ({ serverId: sv._id, serverName: sv.name, choices: serverChoices(sv._id) })),
            ),
          },
        ),
      );
    }),
  );

  // OAuth consent (the authorization endpoint). A request naming an unknown client or redirect URI is shown
  // here and never redirected; any other bad request goes back to the client with the RFC's error.
  router.get('/oauth/authorize', async (ctx) => {
    const checked = await checkAuthorizationRequest(ctx.query, d.oauth.clients, d.site.publicUrl, ctx.ip);
    if (!checked.ok && 'redirectTo' in checked) return ctx.redirect(checked.redirectTo);
    const s = await sessionOwner(d, ctx);
    if (!checked.ok) {
      sendPage(
        ctx,
        render('consent', { title: 'Authorization refused', csrfToken: s?.csrfToken }, { problem: checked.page, email: s?.owner.email, switchUrl: '/login' }),
      );
      ctx.status = checked.status ?? 400;
      return;
    }
    if (await endUserAuthorization(d, ctx, checked.request, s)) return;
    if (!s) return ctx.redirect(`/login?next=${encodeURIComponent(ctx.originalUrl)}`);
    if (awaitingVerification(s.owner)) return verifyNeededPage(d, ctx, s);
    const view = await consentView(d, s, checked.request, `/login?next=${encodeURIComponent(ctx.originalUrl)}`);
    sendPage(ctx, render('consent', { title: `Authorize ${isolated(checked.request.client.client_name)}`, csrfToken: s.csrfToken }, view));
  });

  connectPages(router, d);
  endUserConnectPages(router, d);
  endUserConsentPages(router, d);

  router.get(
    '/activity',
    signedInPage(async (ctx, s, frame) => {
      sendPage(ctx, render('activity', { title: 'Activity', section: 'activity', ...frame }, await activityView(d, s.owner._id, ctx.query)));
    }),
  );

  router.get(
    '/settings',
    signedInPage(async (ctx, s, frame) => {
      const [tokens, balance, webhook, deliveries] = await Promise.all([
        d.owners.listTokens(s.owner._id),
        d.credits.balance(s.owner._id),
        d.connect.webhooks.get(s.owner._id),
        d.connect.webhooks.latest(s.owner._id),
      ]);
      const alert = creditAlert(s.owner);
      sendPage(
        ctx,
        render(
          'settings',
          { title: 'Settings', section: 'settings', ...frame },
          {
            changed: ctx.query.changed === '1',
            owner: { email: s.owner.email, created_at: s.owner.created_at },
            credits: {
              balance,
              alert: alert.threshold,
              custom: alert.custom ? alert.threshold : null,
              fallback: alert.fallback,
              lastGrant: s.owner.last_grant ?? null,
              help: d.site.creditsHelp,
            },
            tokens: tokens.map((t) => ({ id: t._id, name: t.name, prefix: t.prefix, created_at: t.created_at, last_used_at: t.last_used_at })),
            mailOn: Boolean(d.mail),
            alerts: ALERT_KINDS.map((kind) => ({ kind, label: ALERT_LABELS[kind], on: !s.owner.alerts_off?.includes(kind) })),
            webhook,
            deliveries,
          },
        ),
      );
    }),
  );

  /** Every tool of every server of the owner (what a global key may be allowed). */
  async function allTools(ownerId: string) {
    const servers = await d.servers.list(ownerId);
    return (await Promise.all(servers.map((sv) => d.tools.list(ownerId, sv._id)))).flat();
  }

  /** Keys with what the lists show of their restrictions (and the budget spent) and the form that edits them. */
  async function withRestrictions(keys: ApiKeyDoc[], choicesFor: (k: ApiKeyDoc) => ToolChoice[]) {
    const spent = await d.budgets.spent(keys.flatMap((k) => (k.restrictions?.credit_limit ? [{ keyId: k._id, limit: k.restrictions.credit_limit }] : [])));
    return keys.map((k) => ({
      ...keyView(k),
      restrictions: restrictionBadges(k.restrictions, spent.get(k._id) ?? null),
      form: restrictionForm(`key-${k._id}`, k.restrictions, choicesFor(k)),
    }));
  }

  return router;
}

/** Any other page a person types in gets a page that says so; machines keep their JSON 404. */
export function pageNotFound(d: ApiDeps) {
  return async (ctx: Context, next: Next): Promise<void> => {
    if (!isPageRequest(ctx)) return next();
    await securityHeaders(ctx, async () => notFoundPage(d, ctx, await sessionOwner(d, ctx)));
  };
}

/**
 * Whether a request is for a page (a browser's GET of a dashboard path): what the service answers it when it
 * cannot serve (unavailablePage) is a page too.
 */
export const isPageRequest = (ctx: Context) => ctx.method === 'GET' && !NOT_PAGES.test(ctx.path) && ctx.accepts('json', 'html') === 'html';

function keyView(k: ApiKeyDoc) {
  return { ...publicKey(k), linked_server_ids: k.linked_server_ids };
}

/** The providers an owner can connect by OAuth on this service now (their operator registered the app). */
async function connectableProviders(d: ApiDeps): Promise<Set<string>> {
  const connectable = [...d.catalog.current.providers.values()].filter((p) => p.connect);
  const ready = await Promise.all(connectable.map((p) => d.connect.apps.has(p.spec.id)));
  return new Set(connectable.filter((_, i) => ready[i]).map((p) => p.spec.id));
}

/** The providers whose OAuth sandbox an owner can connect to ("Try it with sandbox accounts"), with what the button posts. */
function sandboxConnections(d: ApiDeps) {
  return [...d.catalog.current.providers.values()]
    .filter((p) => p.connect && d.sandboxes?.connectionOf(p.spec.account.kind))
    .map((p) => ({ provider: p.spec.id, title: p.spec.title, by: p.connect!.spec.by, body: { provider: p.spec.id, sandbox: true } }));
}

/** What a page says about sandbox accounts: how soon their data resets, or that the operator turned them off. */
const sandboxState = (d: ApiDeps) => (d.sandboxes ? { idleMinutes: d.sandboxes.idleMinutes } : { off: true });
