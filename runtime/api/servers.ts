// Tool servers, and what an owner needs to compose them (the catalog).
import type Router from '@koa/router';
import { requestInfo } from '../audit/request-context.ts';
import { SERVER_ID_PATTERN, type ServerChanges, publicServer } from '../servers/servers.ts';
import { type ApiDeps, type Guards, me, ownServer, withRoom } from './context.ts';
import { ApiError, appUrl, jsonBody, notFound, onlyFields, str } from './http.ts';

export function serversRoutes(router: Router, d: ApiDeps, g: Guards): void {
  router.get('/catalog', g.owner, (ctx) => {
    const catalog = d.catalog.current;
    ctx.body = {
      tools: [...catalog.tools.values()].map((t) => ({
        id: t.spec.id,
        provider: t.spec.provider,
        account_kind: t.provider.spec.account.kind,
        title: t.spec.title,
        credits: t.spec.credits,
        input: t.spec.input,
      })),
      account_kinds: [...catalog.providers.values()].map((p) => ({ kind: p.spec.account.kind, title: p.spec.title, fields: p.spec.account.fields })),
    };
  });

  router.post('/servers', g.owner, async (ctx) => {
    const body = await jsonBody(ctx, d.maxBodyBytes);
    const name = str(body, 'name', { required: true })!;
    const id = str(body, 'id', { pattern: SERVER_ID_PATTERN, what: '1-64 letters, digits, "_" or "-", starting with a letter or digit' });
    const server = await withRoom(
      d,
      ctx,
      'servers',
      (owner) => d.servers.count(owner),
      () => d.servers.create(me(ctx)._id, name, id),
    );
    await d.audit.record(requestInfo(ctx), { action: 'server.create', owner_id: me(ctx)._id, target: { type: 'server', id: server._id, name } });
    ctx.status = 201;
    ctx.body = publicServer(server);
  });
  router.get('/servers', g.owner, async (ctx) => {
    ctx.body = { servers: (await d.servers.list(me(ctx)._id)).map(publicServer) };
  });
  router.get('/servers/:id', g.owner, async (ctx) => {
    ctx.body = publicServer(await ownServer(d, ctx, ctx.params.id));
  });
  router.patch('/servers/:id', g.owner, async (ctx) => {
    const body = await jsonBody(ctx, d.maxBodyBytes);
    onlyFields(body, ['name', 'active', 'end_user_apps', 'end_user_sign_in_url']);
    const changes: ServerChanges = {};
    if (body.name !== undefined) changes.name = str(body, 'name', { required: true })!;
    for (const flag of ['active', 'end_user_apps'] as const)
      if (body[flag] !== undefined) {
        if (typeof body[flag] !== 'boolean') throw new ApiError(400, `"${flag}" must be true or false`);
        changes[flag] = body[flag];
      }
    if (body.end_user_sign_in_url !== undefined) {
      const url = body.end_user_sign_in_url;
      if (url !== null && (typeof url !== 'string' || url.length > 2000))
        throw new ApiError(400, '"end_user_sign_in_url" must be the URL of your app where your users sign in, or null');
      changes.end_user_sign_in_url = url === null ? null : appUrl(url, 'end_user_sign_in_url', 'the http(s) URL of your app where your users sign in');
    }
    const before = await ownServer(d, ctx, ctx.params.id);
    const updated = await d.servers.update(me(ctx)._id, ctx.params.id, changes);
    if (!updated) throw notFound('Server');
    await d.audit.record(requestInfo(ctx), {
      action: 'server.update',
      owner_id: me(ctx)._id,
      target: { type: 'server', id: updated._id, name: updated.name },
      changes: Object.fromEntries(Object.entries(changes).map(([k, v]) => [k, { from: before[k], to: v }])),
    });
    ctx.body = publicServer(updated);
  });
  router.delete('/servers/:id', g.ownerRevoking, async (ctx) => {
    const server = await ownServer(d, ctx, ctx.params.id);
    // Its keys and connected apps die with it and global keys forget it (a new server may take its id later).
    const keys = await d.keys.revokeAll(me(ctx)._id, ctx.params.id);
    const grants = await d.oauth.grants.revokeForServer(me(ctx)._id, ctx.params.id, 'server deleted');
    await d.tools.deleteForServer(me(ctx)._id, ctx.params.id);
    await d.servers.delete(me(ctx)._id, ctx.params.id);
    await d.audit.record(requestInfo(ctx), {
      action: 'server.delete',
      owner_id: me(ctx)._id,
      target: { type: 'server', id: server._id, name: server.name },
      changes: { keys_revoked: keys.revoked, keys_unlinked: keys.unlinked, oauth_grants_revoked: grants },
    });
    ctx.status = 204;
  });
}
