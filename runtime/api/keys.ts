// API keys: server keys, global keys and their links, and what each may do (the value appears only in the
// create answer and never changes).
import type Router from '@koa/router';
import type { Context } from 'koa';
import { type ApiKeyDoc, type ApiKeys, publicKey } from '../access/keys.ts';
import { RESTRICTION_MESSAGES, RESTRICTION_PROPERTIES, type RestrictionInput, applyRestrictions, restrictionChanges } from '../access/restrictions.ts';
import { requestInfo } from '../audit/request-context.ts';
import { VISIBLE_TEXT_PATTERN } from '../names.ts';
import { connectSnippets } from '../servers/client-setup.ts';
import { bodyChecker } from './body-schema.ts';
import { type ApiDeps, type Guards, me, ownServer, withRoom } from './context.ts';
import { ApiError, jsonBody, notFound } from './http.ts';

type KeyBody = RestrictionInput & { name?: string };

const KEY_FIELDS = { name: { type: 'string', minLength: 1, maxLength: 200, pattern: VISIBLE_TEXT_PATTERN }, ...RESTRICTION_PROPERTIES };
const KEY_MESSAGES = { name: '"name" must be a non-empty string of at most 200 characters, without control or invisible characters', ...RESTRICTION_MESSAGES };
const VALUE_NEVER_CHANGES = '"key": the value of a key never changes; create a new key (and revoke this one) instead';
const checkServerKey = bodyChecker<KeyBody>({ properties: KEY_FIELDS, required: ['name'] }, KEY_MESSAGES);
const checkGlobalKey = bodyChecker<KeyBody>({ properties: KEY_FIELDS }, KEY_MESSAGES);
const checkKeyChange = bodyChecker<KeyBody>({ properties: KEY_FIELDS }, KEY_MESSAGES, { key: VALUE_NEVER_CHANGES, value: VALUE_NEVER_CHANGES });

export function keysRoutes(router: Router, d: ApiDeps, g: Guards): void {
  const createdKey = (doc: Awaited<ReturnType<ApiKeys['create']>>) => ({
    ...publicKey(doc.doc),
    key: doc.key,
    server_id: doc.doc.server_id,
  });
  /** The tool names a key's allow-list may hold: its server's, or (global key) those of every server of the owner. */
  const toolNames = async (ownerId: string, serverId: string | null): Promise<string[]> => {
    const servers = serverId ? [serverId] : (await d.servers.list(ownerId)).map((s) => s._id);
    return (await Promise.all(servers.map((s) => d.tools.list(ownerId, s)))).flat().map((t) => t.name);
  };
  /** The list view, with the credits spent in the current budget period of each key that has a budget. */
  const listed = async (docs: ApiKeyDoc[]) => {
    const limited = docs.flatMap((k) => (k.restrictions?.credit_limit ? [{ keyId: k._id, limit: k.restrictions.credit_limit }] : []));
    const spent = await d.budgets.spent(limited);
    return docs.map((k) => ({ ...publicKey(k), budget_spent: spent.get(k._id) ?? null }));
  };
  const created = async (ctx: Context, body: KeyBody, scope: { kind: 'server'; serverId: string; serverName: string } | { kind: 'global' }) => {
    const ownerId = me(ctx)._id;
    const restrictions = applyRestrictions(undefined, body, await toolNames(ownerId, scope.kind === 'server' ? scope.serverId : null));
    const made = await withRoom(
      d,
      ctx,
      'keys',
      (owner) => d.keys.countLive(owner),
      () => d.keys.create(ownerId, body.name ?? 'Global key', scope, restrictions),
    );
    const { tools, access, expires_at, credit_limit } = publicKey(made.doc);
    await d.audit.record(requestInfo(ctx), {
      action: 'key.create',
      owner_id: ownerId,
      target: { type: 'key', id: made.doc._id, name: made.doc.name },
      changes: { kind: scope.kind, server_id: made.doc.server_id, tools, access, expires_at, credit_limit },
    });
    ctx.status = 201;
    // A server's key comes with its clients' set-up, the key in it: shown together, once.
    ctx.body =
      scope.kind === 'server'
        ? { ...createdKey(made), snippets: connectSnippets(`${d.site.publicUrl}/mcp/${scope.serverId}`, scope.serverName, made.key) }
        : createdKey(made);
  };
  const changed = async (ctx: Context, key: ApiKeyDoc) => {
    const body = checkKeyChange(await jsonBody(ctx, d.maxBodyBytes));
    const ownerId = me(ctx)._id;
    const restrictions = applyRestrictions(key.restrictions, body, await toolNames(ownerId, key.server_id));
    const doc = (await d.keys.update(ownerId, key._id, { name: body.name, restrictions }))!;
    const changes: Record<string, unknown> = restrictionChanges(key.restrictions, restrictions);
    if (body.name !== undefined && body.name !== key.name) changes.name = { from: key.name, to: body.name };
    await d.audit.record(requestInfo(ctx), { action: 'key.update', owner_id: ownerId, target: { type: 'key', id: doc._id, name: doc.name }, changes });
    ctx.body = (await listed([doc]))[0];
  };
  const revoked = (ctx: Context, doc: ApiKeyDoc, serverId?: string) =>
    d.audit.record(requestInfo(ctx), {
      action: 'key.revoke',
      owner_id: me(ctx)._id,
      target: { type: 'key', id: doc._id, name: doc.name },
      changes: serverId ? { server_id: serverId } : { kind: 'global' },
    });

  router.post('/servers/:id/api-keys/revoke-all', g.ownerRevoking, async (ctx) => {
    await ownServer(d, ctx, ctx.params.id);
    // Connected apps hold credentials for the server too: "revoke all" leaves nothing that can call it.
    const keys = await d.keys.revokeAll(me(ctx)._id, ctx.params.id);
    const result = { ...keys, oauth_grants_revoked: await d.oauth.grants.revokeForServer(me(ctx)._id, ctx.params.id, 'all keys of the server revoked') };
    await d.audit.record(requestInfo(ctx), { action: 'key.revoke_all', owner_id: me(ctx)._id, target: { type: 'server', id: ctx.params.id }, changes: result });
    ctx.body = result;
  });
  router.post('/servers/:id/api-keys', g.owner, async (ctx) => {
    const body = checkServerKey(await jsonBody(ctx, d.maxBodyBytes));
    const server = await ownServer(d, ctx, ctx.params.id);
    await created(ctx, body, { kind: 'server', serverId: server._id, serverName: server.name });
  });
  router.get('/servers/:id/api-keys', g.owner, async (ctx) => {
    await ownServer(d, ctx, ctx.params.id);
    ctx.body = { api_keys: await listed(await d.keys.listForServer(me(ctx)._id, ctx.params.id)) };
  });
  router.patch('/servers/:id/api-keys/:keyId', g.owner, async (ctx) => {
    await ownServer(d, ctx, ctx.params.id);
    const key = (await d.keys.listForServer(me(ctx)._id, ctx.params.id)).find((k) => k._id === ctx.params.keyId);
    if (!key) throw notFound('API key');
    await changed(ctx, key);
  });
  router.delete('/servers/:id/api-keys/:keyId', g.ownerRevoking, async (ctx) => {
    await ownServer(d, ctx, ctx.params.id);
    const before = await d.keys.get(me(ctx)._id, ctx.params.keyId);
    const doc = await d.keys.revoke(me(ctx)._id, ctx.params.id, ctx.params.keyId);
    if (!doc) throw notFound('API key');
    if (!before?.revoked_at) await revoked(ctx, doc, ctx.params.id);
    ctx.body = { id: doc._id, revoked_at: doc.revoked_at };
  });
  router.post('/api-keys', g.owner, async (ctx) => {
    const body = checkGlobalKey(await jsonBody(ctx, d.maxBodyBytes, true));
    await created(ctx, body, { kind: 'global' });
  });
  router.get('/api-keys', g.owner, async (ctx) => {
    ctx.body = { api_keys: await listed(await d.keys.listGlobal(me(ctx)._id)) };
  });
  const globalKey = async (ctx: Context) => {
    const key = await d.keys.get(me(ctx)._id, ctx.params.keyId);
    if (!key) throw notFound('API key');
    if (key.kind !== 'global') throw new ApiError(400, 'Only global keys are linked to servers; this key belongs to one server');
    return key;
  };
  router.patch('/api-keys/:keyId', g.owner, async (ctx) => {
    const key = await d.keys.get(me(ctx)._id, ctx.params.keyId);
    if (!key) throw notFound('API key');
    await changed(ctx, key);
  });
  router.delete('/api-keys/:keyId', g.ownerRevoking, async (ctx) => {
    const key = await globalKey(ctx);
    const doc = (await d.keys.revokeGlobal(me(ctx)._id, key._id))!;
    if (!key.revoked_at) await revoked(ctx, doc);
    ctx.body = { id: doc._id, revoked_at: doc.revoked_at };
  });
  router.post('/api-keys/:keyId/servers/:serverId', g.owner, async (ctx) => {
    const key = await globalKey(ctx);
    await ownServer(d, ctx, ctx.params.serverId);
    if (key.revoked_at) throw new ApiError(409, 'This key is revoked');
    const doc = (await d.keys.link(me(ctx)._id, key._id, ctx.params.serverId))!;
    await d.audit.record(requestInfo(ctx), {
      action: 'key.link',
      owner_id: me(ctx)._id,
      target: { type: 'key', id: doc._id, name: doc.name },
      changes: { server_id: ctx.params.serverId },
    });
    ctx.body = { id: doc._id, linked_server_ids: doc.linked_server_ids };
  });
  router.delete('/api-keys/:keyId/servers/:serverId', g.ownerRevoking, async (ctx) => {
    const key = await globalKey(ctx);
    if (!key.linked_server_ids.includes(ctx.params.serverId)) throw notFound('Link to this server');
    const doc = (await d.keys.unlink(me(ctx)._id, key._id, ctx.params.serverId))!;
    await d.audit.record(requestInfo(ctx), {
      action: 'key.unlink',
      owner_id: me(ctx)._id,
      target: { type: 'key', id: doc._id, name: doc.name },
      changes: { server_id: ctx.params.serverId },
    });
    ctx.body = { id: doc._id, linked_server_ids: doc.linked_server_ids };
  });
}
