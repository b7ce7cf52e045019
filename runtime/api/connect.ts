// Connected accounts in the management API: the operator's OAuth apps; an owner's connect and reconnect (each
// answers the URL the owner's browser opens), the pick among several sites or projects, the health check of
// every connection now; the owner's state-change webhook.
import type Router from '@koa/router';
import type { Context } from 'koa';
import { oauthEnvName } from '../accounts/oauth-apps.ts';
import { requestInfo } from '../audit/request-context.ts';
import { sha256 } from '../secrets.ts';
import type { Provider } from '../toolspec/catalog.ts';
import { ToolError } from '../tool-error.ts';
import { type ApiDeps, type Guards, me, sessionOwner } from './context.ts';
import { ApiError, jsonBody, notFound, onlyFields, safeNext, str } from './http.ts';

export function connectRoutes(router: Router, d: ApiDeps, g: Guards): void {
  const { apps, flows, connections, webhooks } = d.connect;
  const connectable = () => [...d.catalog.current.providers.values()].filter((p) => p.connect);
  const connectableProvider = (id: unknown): Provider => {
    const provider = typeof id === 'string' ? d.catalog.current.providers.get(id) : undefined;
    if (!provider?.connect)
      throw new ApiError(
        400,
        `"provider" must be one of the providers that connect by OAuth: ${
          connectable()
            .map((p) => p.spec.id)
            .join(', ') || 'none'
        }`,
      );
    return provider;
  };
  const appView = async (p: Provider) => {
    const app = await apps.describe(p.spec.id);
    const connect = p.connect!.spec;
    return {
      provider: p.spec.id,
      title: p.spec.title,
      by: connect.by,
      configured: app !== null,
      client_id: app?.client_id ?? null,
      source: app?.source ?? null,
      updated_at: app?.updated_at ?? null,
      // What to register at the provider.
      redirect_uri: flows.redirectUri,
      scopes: connect.scopes ?? [],
      authorize_url: connect.authorize_url,
    };
  };

  // ---- The operator: OAuth apps ----
  router.get('/admin/oauth-apps', g.operator, async (ctx) => {
    ctx.body = { apps: await Promise.all(connectable().map(appView)) };
  });
  router.put('/admin/oauth-apps/:provider', g.operator, async (ctx) => {
    const provider = connectableProvider(ctx.params.provider);
    const body = await jsonBody(ctx, d.maxBodyBytes);
    onlyFields(body, ['client_id', 'client_secret']);
    if (apps.isFromEnvironment(provider.spec.id))
      throw new ApiError(409, `${provider.spec.title}'s OAuth app is set by the environment (OAUTH_${envName(provider)}_CLIENT_ID): change it there`);
    const clientId = oauthValue(body, 'client_id');
    const clientSecret = oauthValue(body, 'client_secret');
    const existed = await apps.has(provider.spec.id);
    await apps.set(provider.spec.id, { clientId, clientSecret });
    await d.audit.record(requestInfo(ctx), {
      action: 'oauth_app.update',
      owner_id: null,
      target: { type: 'oauth_app', id: provider.spec.id, name: provider.spec.title },
      changes: { client_id: clientId, client_secret: '(set)', created: !existed },
    });
    ctx.body = await appView(provider);
  });
  router.delete('/admin/oauth-apps/:provider', g.operator, async (ctx) => {
    const provider = connectableProvider(ctx.params.provider);
    if (apps.isFromEnvironment(provider.spec.id))
      throw new ApiError(409, `${provider.spec.title}'s OAuth app is set by the environment (OAUTH_${envName(provider)}_CLIENT_ID): remove it there`);
    if (!(await apps.remove(provider.spec.id))) throw notFound('OAuth app');
    await d.audit.record(requestInfo(ctx), {
      action: 'oauth_app.delete',
      owner_id: null,
      target: { type: 'oauth_app', id: provider.spec.id, name: provider.spec.title },
    });
    ctx.status = 204;
  });
  // Every connection due for a check, now (it also runs every hour): refreshed, and its health recorded.
  router.post('/admin/connections/check', g.operator, async (ctx) => {
    ctx.body = await connections.keepAlive();
  });

  // ---- Owners: connect, reconnect, pick ----
  /** Which providers an owner can connect now (the page's buttons, a script's choice). */
  router.get('/connect/providers', g.owner, async (ctx) => {
    const list = await Promise.all(
      connectable().map(async (p) => ({
        provider: p.spec.id,
        title: p.spec.title,
        by: p.connect!.spec.by,
        ready: await apps.has(p.spec.id),
        sandbox: d.sandboxes?.connectionOf(p.spec.account.kind) !== undefined,
      })),
    );
    ctx.body = { providers: list };
  });

  /** The browser session of the request (null for an owner token: the owner then signs in at the start URL). */
  const browserOf = async (ctx: Context) => {
    const signedIn = ctx.get('authorization') ? null : await sessionOwner(d, ctx);
    return signedIn ? sha256(signedIn.sessionId) : null;
  };
  const started = async (ctx: Context, body: Record<string, unknown>, provider: Provider, name: string, accountId?: string, sandbox = false) => {
    if (!sandbox && !(await apps.has(provider.spec.id)))
      throw new ApiError(
        409,
        `${provider.spec.title} cannot be connected on this service: its operator has not registered an OAuth app of ${provider.connect!.spec.by} (OAUTH_${envName(provider)}_CLIENT_ID). Add the account with its credentials instead.`,
      );
    const flow = await flows.create({
      ownerId: me(ctx)._id,
      provider,
      name,
      accountId,
      sandbox,
      browser: await browserOf(ctx),
      returnTo: safeNext(body.return_to ?? '/accounts', d.site.publicUrl),
    });
    ctx.status = 201;
    ctx.body = { authorize_url: flow.url, flow_id: flow.id, expires_at: flow.expires_at };
  };
  router.post('/accounts/connect', g.owner, async (ctx) => {
    const body = await jsonBody(ctx, d.maxBodyBytes);
    onlyFields(body, ['provider', 'name', 'return_to', 'sandbox']);
    const provider = connectableProvider(body.provider);
    if (body.sandbox !== undefined && typeof body.sandbox !== 'boolean') throw new ApiError(400, '"sandbox" must be true or false');
    // Against the owner's own OAuth sandbox of the provider: no app and no credentials needed.
    if (body.sandbox && !d.sandboxes?.connectionOf(provider.spec.account.kind))
      throw new ApiError(
        400,
        d.sandboxes ? `There is no sandbox of ${provider.connect!.spec.by} to connect to` : 'Sandboxes are turned off on this service (SANDBOXES=off)',
      );
    const name = str(body, 'name') ?? (body.sandbox ? `${d.sandboxes!.connectionOf(provider.spec.account.kind)!.name} (OAuth)` : provider.spec.title);
    // Said before the owner goes through a consent page (the account is counted again when it is made).
    await d.ownerLimits.ensureRoom('accounts', 1, () => d.accounts.count(me(ctx)._id));
    await started(ctx, body, provider, name, undefined, body.sandbox === true);
  });
  router.post('/accounts/:id/reconnect', g.owner, async (ctx) => {
    const body = await jsonBody(ctx, d.maxBodyBytes, true);
    onlyFields(body, ['return_to']);
    const account = await d.accounts.get(me(ctx)._id, ctx.params.id);
    if (!account) throw notFound('Account');
    const provider = d.accounts.providerFor(account.kind);
    if (!provider.connect)
      throw new ApiError(
        409,
        `${provider.spec.title} accounts cannot be connected by OAuth: change the account's credentials instead (PATCH /api/accounts/${account._id})`,
      );
    if (account.sandbox && account.auth !== 'oauth')
      throw new ApiError(409, `“${account.name}” is a sandbox account with credentials set by the service: there is nothing to reconnect`);
    await started(ctx, body, provider, account.name, account._id, account.sandbox === true);
  });
  // The owner's pick among several sites or projects: only in the browser session the flow is bound to.
  router.post('/connect/flows/:id/choose', g.owner, async (ctx) => {
    const body = await jsonBody(ctx, d.maxBodyBytes);
    onlyFields(body, ['choice']);
    const signedIn = ctx.get('authorization') ? null : await sessionOwner(d, ctx);
    if (!signedIn) throw new ApiError(403, 'A connection is finished in the signed-in browser session that started it, not with a token');
    let outcome;
    try {
      outcome = await flows.choose(ctx.params.id, body.choice, { ownerId: signedIn.owner._id, session: sha256(signedIn.sessionId) }, requestInfo(ctx));
    } catch (err) {
      if (err instanceof ToolError) throw new ApiError(400, err.message);
      throw err;
    }
    // The page the browser goes to next: the account (where it was asked from), or what went wrong.
    if (outcome.kind === 'failed') throw new ApiError(409, `${outcome.title}. ${outcome.message}`);
    ctx.body =
      outcome.kind === 'done' ? { account_id: outcome.account._id, redirect_to: connectedUrl(outcome.to, outcome.account._id) } : { redirect_to: outcome.to };
  });

  // ---- Owners: the state-change webhook ----
  router.get('/me/webhook', g.owner, async (ctx) => {
    const webhook = await webhooks.get(me(ctx)._id);
    ctx.body = { webhook, deliveries: (await webhooks.latest(me(ctx)._id)).map(publicDelivery) };
  });
  router.put('/me/webhook', g.owner, async (ctx) => {
    const body = await jsonBody(ctx, d.maxBodyBytes);
    onlyFields(body, ['url']);
    const url = webhookUrl(body.url);
    const { webhook, secret } = await webhooks.set(me(ctx)._id, url);
    await d.audit.record(requestInfo(ctx), { action: 'webhook.update', owner_id: me(ctx)._id, target: { type: 'webhook', id: me(ctx)._id }, changes: { url } });
    ctx.body = { webhook, secret };
  });
  router.delete('/me/webhook', g.owner, async (ctx) => {
    if (!(await webhooks.remove(me(ctx)._id))) throw notFound('Webhook');
    await d.audit.record(requestInfo(ctx), { action: 'webhook.delete', owner_id: me(ctx)._id, target: { type: 'webhook', id: me(ctx)._id } });
    ctx.status = 204;
  });
  router.post('/me/webhook/ping', g.owner, async (ctx) => {
    const delivery = await webhooks.ping(me(ctx)._id);
    if (!delivery) throw notFound('Webhook');
    ctx.status = 202;
    ctx.body = publicDelivery(delivery);
  });
}

/** Where a finished connection sends the browser: its return path, saying which account was connected. */
export function connectedUrl(to: string, accountId: string): string {
  return `${to}${to.includes('?') ? '&' : '?'}connected=${encodeURIComponent(accountId)}`;
}

const envName = (p: Provider) => oauthEnvName(p.spec.id);

function oauthValue(body: Record<string, unknown>, name: string): string {
  const v = body[name];
  // eslint-disable-next-line no-control-regex -- a value pasted with its line break
  if (typeof v !== 'string' || v.trim() === '' || v.length > 1024 || /[\s\x00-\x1f\x7f]/.test(v.trim()))
    throw new ApiError(400, `"${name}" must be the OAuth app's ${name.replace('_', ' ')}: one word of at most 1024 characters`);
  return v.trim();
}

function webhookUrl(value: unknown): string {
  if (typeof value !== 'string' || value.length > 2000 || !URL.canParse(value))
    throw new ApiError(400, '"url" must be the http(s) URL that receives the events');
  const url = new URL(value);
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new ApiError(400, '"url" must be an http(s) URL');
  if (url.username || url.password) throw new ApiError(400, '"url" must not contain credentials: the events are signed with the webhook secret instead');
  if (url.hash) throw new ApiError(400, '"url" must not have a fragment');
  return url.href;
}

function publicDelivery(doc: {
  _id: string;
  event: string;
  created_at: Date;
  attempts: number;
  delivered_at: Date | null;
  next_at: Date | null;
  last_result: string | null;
  given_up: boolean;
}) {
  return {
    id: doc._id,
    event: doc.event,
    created_at: doc.created_at,
    attempts: doc.attempts,
    delivered_at: doc.delivered_at,
    next_attempt_at: doc.delivered_at || doc.given_up ? null : doc.next_at,
    last_result: doc.last_result,
    given_up: doc.given_up,
  };
}
