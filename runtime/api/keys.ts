// API keys: server keys, global keys and their links (the value appears only in the create answer).
import type Router from '@koa/router';
import type { Context } from 'koa';
import { type ApiKeys, publicKey } from '../access/keys.ts';
import { type ApiDeps, type Guards, me, ownServer } from './context.ts';
import { ApiError, jsonBody, notFound, str } from './http.ts';

export function keysRoutes(router: Router, d: ApiDeps, g: Guards): void {
  const createdKey = (doc: Awaited<ReturnType<ApiKeys['create']>>) => ({
    id: doc.doc._id,
    name: doc.doc.name,
    key: doc.key,
    kind: doc.doc.kind,
    server_id: doc.doc.server_id,
    created_at: doc.doc.created_at,
  });
  router.post('/servers/:id/api-keys/revoke-all', g.owner, async (ctx) => {
    await ownServer(d, ctx, ctx.params.id);
    // Connected apps hold credentials for the server too: "revoke all" leaves nothing that can call it.
    const keys = await d.keys.revokeAll(me(ctx)._id, ctx.params.id);
    ctx.body = { ...keys, oauth_grants_revoked: await d.oauth.grants.revokeForServer(me(ctx)._id, ctx.params.id, 'all keys of the server revoked') };
  });
  router.post('/servers/:id/api-keys', g.owner, async (ctx) => {
    const body = await jsonBody(ctx, d.maxBodyBytes);
    await ownServer(d, ctx, ctx.params.id);
    const name = str(body, 'name', { required: true })!;
    ctx.status = 201;
    ctx.body = createdKey(await d.keys.create(me(ctx)._id, name, { kind: 'server', serverId: ctx.params.id }));
  });
  router.get('/servers/:id/api-keys', g.owner, async (ctx) => {
    await ownServer(d, ctx, ctx.params.id);
    ctx.body = { api_keys: (await d.keys.listForServer(me(ctx)._id, ctx.params.id)).map(publicKey) };
  });
  router.delete('/servers/:id/api-keys/:keyId', g.owner, async (ctx) => {
    await ownServer(d, ctx, ctx.params.id);
    const doc = await d.keys.revoke(me(ctx)._id, ctx.params.id, ctx.params.keyId);
    if (!doc) throw notFound('API key');
    ctx.body = { id: doc._id, revoked_at: doc.revoked_at };
  });
  router.post('/api-keys', g.owner, async (ctx) => {
    const body = await jsonBody(ctx, d.maxBodyBytes, true);
    const name = str(body, 'name') ?? 'Global key';
    ctx.status = 201;
    ctx.body = createdKey(await d.keys.create(me(ctx)._id, name, { kind: 'global' }));
  });
  router.get('/api-keys', g.owner, async (ctx) => {
    ctx.body = { api_keys: (await d.keys.listGlobal(me(ctx)._id)).map(publicKey) };
  });
  const globalKey = async (ctx: Context) => {
    const key = await d.keys.get(me(ctx)._id, ctx.params.keyId);
    if (!key) throw notFound('API key');
    if (key.kind !== 'global') throw new ApiError(400, 'Only global keys are linked to servers; this key belongs to one server');
    return key;
  };
  router.delete('/api-keys/:keyId', g.owner, async (ctx) => {
    const key = await globalKey(ctx);
    const doc = (await d.keys.revokeGlobal(me(ctx)._id, key._id))!;
    ctx.body = { id: doc._id, revoked_at: doc.revoked_at };
  });
  router.post('/api-keys/:keyId/servers/:serverId', g.owner, async (ctx) => {
    const key = await globalKey(ctx);
    await ownServer(d, ctx, ctx.params.serverId);
    if (key.revoked_at) throw new ApiError(409, 'This key is revoked');
    const doc = (await d.keys.link(me(ctx)._id, key._id, ctx.params.serverId))!;
    ctx.body = { id: doc._id, linked_server_ids: doc.linked_server_ids };
  });
  router.delete('/api-keys/:keyId/servers/:serverId', g.owner, async (ctx) => {
    const key = await globalKey(ctx);
    if (!key.linked_server_ids.includes(ctx.params.serverId)) throw notFound('Link to this server');
    const doc = (await d.keys.unlink(me(ctx)._id, key._id, ctx.params.serverId))!;
    ctx.body = { id: doc._id, linked_server_ids: doc.linked_server_ids };
  });
}
