// End users of an owner (the people the owner's product serves): create, list (paged, searched), read and delete
// them; their accounts and keys; the connect links their browser opens to connect accounts of their own.
import type Router from '@koa/router';
import type { Context } from 'koa';
import { DuplicateEndUserError, type EndUserDoc, type EndUserInput, MAX_EXTERNAL_ID, publicEndUser } from '../access/end-users.ts';
import { publicKey } from '../access/keys.ts';
import { applyRestrictions, RESTRICTION_MESSAGES, RESTRICTION_PROPERTIES, type RestrictionInput } from '../access/restrictions.ts';
import { publicAccount } from '../accounts/accounts.ts';
import { requestInfo } from '../audit/request-context.ts';
import { connectSnippets } from '../servers/client-setup.ts';
import { bodyChecker } from './body-schema.ts';
import { type ApiDeps, type Guards, me, ownServer, withRoom } from './context.ts';
import { ApiError, appUrl, jsonBody, notFound } from './http.ts';
import { publicGrant } from '../oauth/grants.ts';
import { listQueryReader } from './list-query.ts';

// A person's id, name and address are one line each: no control characters.
const ONE_LINE = '^[^\\x00-\\x1f\\x7f]*\\S[^\\x00-\\x1f\\x7f]*$';
const PERSON_PROPERTIES = {
  display_name: { type: ['string', 'null'], maxLength: 200, pattern: ONE_LINE },
  email: { type: ['string', 'null'], maxLength: 254, format: 'email' },
  credit_limit: RESTRICTION_PROPERTIES.credit_limit,
};
const PERSON_MESSAGES = {
  display_name: '"display_name" must be a name of at most 200 characters on one line',
  email: '"email" must be an e-mail address',
  credit_limit: RESTRICTION_MESSAGES.credit_limit,
  'credit_limit.credits': RESTRICTION_MESSAGES['credit_limit.credits'],
  'credit_limit.per': RESTRICTION_MESSAGES['credit_limit.per'],
};
const checkEndUser = bodyChecker<EndUserInput>(
  {
    properties: { external_id: { type: 'string', minLength: 1, maxLength: MAX_EXTERNAL_ID, pattern: ONE_LINE }, ...PERSON_PROPERTIES },
    required: ['external_id'],
  },
  {
    external_id: `"external_id" must be your own id for the person: a non-empty line of at most ${MAX_EXTERNAL_ID} characters`,
    ...PERSON_MESSAGES,
  },
);
// The external id stays: it is how the owner's backend names the person (X-End-User).
const checkEndUserChange = bodyChecker<Omit<EndUserInput, 'external_id'>>({ properties: PERSON_PROPERTIES }, PERSON_MESSAGES);
const checkConnectSession = bodyChecker<{ end_user_id: string; providers?: string[]; return_url?: string }>(
  {
    properties: {
      end_user_id: { type: 'string', minLength: 1, maxLength: 100 },
      providers: { type: 'array', items: { type: 'string' }, minItems: 1, maxItems: 20, uniqueItems: true },
      return_url: { type: 'string', maxLength: 2000 },
    },
    required: ['end_user_id'],
  },
  {
    end_user_id: '"end_user_id" must be the id of one of your end users (eu_...)',
    providers: '"providers" must be a non-empty list of provider ids without repeats',
    return_url: '"return_url" must be the http(s) URL of your app to return to',
  },
);
const checkEndUserKey = bodyChecker<RestrictionInput & { server_id: string; name: string }>(
  {
    properties: {
      server_id: { type: 'string', minLength: 1, maxLength: 100 },
      name: { type: 'string', minLength: 1, maxLength: 200, pattern: '\\S' },
      ...RESTRICTION_PROPERTIES,
    },
    required: ['server_id', 'name'],
  },
  {
    server_id: '"server_id" must be the id of one of your servers',
    name: '"name" must be a non-empty string of at most 200 characters',
    ...RESTRICTION_MESSAGES,
  },
);

const endUserTarget = (u: EndUserDoc) => ({ type: 'end_user', id: u._id, name: u.external_id });

export function endUsersRoutes(router: Router, d: ApiDeps, g: Guards): void {
  const { endUsers } = d;
  const ownEndUser = async (ctx: Context, id: unknown = ctx.params.id): Promise<EndUserDoc> => {
    const doc = typeof id === 'string' ? await endUsers.get(me(ctx)._id, id) : null;
    if (!doc) throw notFound('End user');
    return doc;
  };

  router.post('/end-users', g.owner, async (ctx) => {
    const body = checkEndUser(await jsonBody(ctx, d.maxBodyBytes));
    const doc = await withRoom(
      d,
      ctx,
      'end_users',
      (owner) => endUsers.count(owner),
      () => endUsers.create(me(ctx)._id, body),
    ).catch((err: unknown) => {
      throw err instanceof DuplicateEndUserError ? new ApiError(409, err.message) : err;
    });
    await d.audit.record(requestInfo(ctx), { action: 'end_user.create', owner_id: me(ctx)._id, target: endUserTarget(doc) });
    ctx.status = 201;
    ctx.body = publicEndUser(doc);
  });
  router.get('/end-users', g.owner, async (ctx) => {
    const query = listQueryReader(ctx.query, { maxLimit: 200, items: 'end user' });
    const { limit, cursor } = query.page();
    const page = await endUsers.list(me(ctx)._id, { q: query.text('q'), limit, cursor });
    if (!page) throw new ApiError(400, '"cursor" is not one this list gave: start again without it');
    ctx.body = { end_users: page.items.map(publicEndUser), next_cursor: page.next_cursor };
  });
  router.get('/end-users/:id', g.owner, async (ctx) => {
    ctx.body = publicEndUser(await ownEndUser(ctx));
  });
  router.patch('/end-users/:id', g.owner, async (ctx) => {
    const change = checkEndUserChange(await jsonBody(ctx, d.maxBodyBytes));
    if (Object.keys(change).length === 0) throw new ApiError(400, `Send what changes: ${Object.keys(PERSON_PROPERTIES).join(', ')}`);
    const before = await ownEndUser(ctx);
    const doc = await endUsers.update(me(ctx)._id, before._id, change);
    if (!doc) throw notFound('End user');
    await d.audit.record(requestInfo(ctx), { action: 'end_user.update', owner_id: me(ctx)._id, target: endUserTarget(doc), changes: change });
    ctx.body = publicEndUser(doc);
  });
  // Everything of the person goes with them, at once on every instance: their keys and the apps they approved
  // are revoked, their accounts removed, their links and browser sessions ended.
  router.delete('/end-users/:id', g.owner, async (ctx) => {
    const doc = await ownEndUser(ctx);
    const ownerId = me(ctx)._id;
    const keysRevoked = await d.keys.revokeForEndUser(ownerId, doc._id);
    const appsRevoked = await d.oauth.grants.revokeForEndUser(ownerId, doc._id);
    const accountsRemoved = await d.accounts.deleteForEndUser(ownerId, doc._id);
    await d.connect.sessions.forgetEndUser(ownerId, doc._id);
    await endUsers.delete(ownerId, doc._id);
    await d.audit.record(requestInfo(ctx), {
      action: 'end_user.delete',
      owner_id: ownerId,
      target: endUserTarget(doc),
      changes: { keys_revoked: keysRevoked, apps_revoked: appsRevoked, accounts_removed: accountsRemoved },
    });
    ctx.status = 204;
  });
  router.get('/end-users/:id/accounts', g.owner, async (ctx) => {
    const doc = await ownEndUser(ctx);
    const accounts = await d.accounts.ofEndUser(me(ctx)._id, doc._id);
    ctx.body = { accounts: accounts.map((a) => publicAccount(a, d.accounts.providersByKind.get(a.kind))) };
  });
  router.get('/end-users/:id/api-keys', g.owner, async (ctx) => {
    const doc = await ownEndUser(ctx);
    ctx.body = { api_keys: (await d.keys.listForEndUser(me(ctx)._id, doc._id)).map(publicKey) };
  });
  // The MCP apps the person approved by OAuth (each acts as them).
  router.get('/end-users/:id/apps', g.owner, async (ctx) => {
    const doc = await ownEndUser(ctx);
    ctx.body = { apps: (await d.oauth.grants.list(me(ctx)._id, doc._id)).map(publicGrant) };
  });
  // A key of one server that acts as the end user: shown once, like every key.
  router.post('/end-users/:id/api-keys', g.owner, async (ctx) => {
    const body = checkEndUserKey(await jsonBody(ctx, d.maxBodyBytes));
    const endUser = await ownEndUser(ctx);
    const server = await ownServer(d, ctx, body.server_id).catch(() => {
      throw new ApiError(400, `"server_id": no server ${body.server_id} of yours exists`);
    });
    const ownerId = me(ctx)._id;
    const tools = (await d.tools.list(ownerId, server._id)).map((t) => t.name);
    const restrictions = applyRestrictions(undefined, body, tools);
    const made = await withRoom(
      d,
      ctx,
      'keys',
      (owner) => d.keys.countLive(owner),
      () => d.keys.create(ownerId, body.name, { kind: 'server', serverId: server._id }, restrictions, { endUserId: endUser._id }),
    );
    await d.audit.record(requestInfo(ctx), {
      action: 'key.create',
      owner_id: ownerId,
      target: { type: 'key', id: made.doc._id, name: made.doc.name },
      changes: { kind: 'server', server_id: server._id, end_user_id: endUser._id },
    });
    ctx.status = 201;
    ctx.body = {
      ...publicKey(made.doc),
      key: made.key,
      snippets: connectSnippets(`${d.site.publicUrl}/mcp/${server._id}`, server.name, made.key),
    };
  });

  // A link the end user's browser opens to connect accounts of their own (no sign-in here).
  router.post('/connect-sessions', g.owner, async (ctx) => {
    const body = checkConnectSession(await jsonBody(ctx, d.maxBodyBytes));
    const endUser = await ownEndUser(ctx, body.end_user_id).catch(() => {
      throw new ApiError(400, `"end_user_id": no end user ${body.end_user_id} of yours exists`);
    });
    const known = [...d.catalog.current.providers.keys()];
    const unknown = (body.providers ?? []).filter((p) => !known.includes(p));
    if (unknown.length)
      throw new ApiError(
        400,
        `"providers": ${unknown.join(', ')} ${unknown.length > 1 ? 'are not providers' : 'is not a provider'} (providers: ${known.join(', ')})`,
      );
    const link = await d.connect.sessions.create({
      ownerId: me(ctx)._id,
      endUserId: endUser._id,
      providers: body.providers ?? null,
      returnUrl: body.return_url === undefined ? null : appUrl(body.return_url, 'return_url', 'the http(s) URL of your app to return to'),
    });
    await d.audit.record(requestInfo(ctx), {
      action: 'connect_session.create',
      owner_id: me(ctx)._id,
      target: endUserTarget(endUser),
      changes: { providers: body.providers ?? 'all', ...(body.return_url ? { return_url: body.return_url } : {}) },
    });
    ctx.status = 201;
    ctx.body = link;
  });
}
