// Custom tools of a server: a base tool bound to an account, with defaults and locked parameters.
import type Router from '@koa/router';
import type { Context } from 'koa';
import { type CustomToolDoc, publicTool } from '../servers/custom-tools.ts';
import { type ApiDeps, type Guards, me, ownServer } from './context.ts';
import { jsonBody, notFound, onlyFields } from './http.ts';
import { checkToolBinding } from './tool-binding.ts';

export function toolsRoutes(router: Router, d: ApiDeps, g: Guards): void {
  router.post('/servers/:id/tools', g.owner, async (ctx) => {
    const body = await jsonBody(ctx, d.maxBodyBytes);
    await ownServer(d, ctx, ctx.params.id);
    onlyFields(body, ['name', 'base_tool', 'account_id', 'defaults', 'locked', 'description']);
    const binding = await checkToolBinding(d, me(ctx)._id, body);
    ctx.status = 201;
    ctx.body = publicTool(await d.tools.create({ owner_id: me(ctx)._id, server_id: ctx.params.id, ...binding }));
  });
  router.get('/servers/:id/tools', g.owner, async (ctx) => {
    await ownServer(d, ctx, ctx.params.id);
    ctx.body = { tools: (await d.tools.list(me(ctx)._id, ctx.params.id)).map(publicTool) };
  });
  const ownTool = async (ctx: Context): Promise<CustomToolDoc> => {
    await ownServer(d, ctx, ctx.params.id);
    const doc = await d.tools.get(me(ctx)._id, ctx.params.id, ctx.params.toolId);
    if (!doc) throw notFound('Tool');
    return doc;
  };
  router.get('/servers/:id/tools/:toolId', g.owner, async (ctx) => {
    ctx.body = publicTool(await ownTool(ctx));
  });
  router.patch('/servers/:id/tools/:toolId', g.owner, async (ctx) => {
    const body = await jsonBody(ctx, d.maxBodyBytes);
    const current = await ownTool(ctx);
    onlyFields(body, ['name', 'account_id', 'defaults', 'locked', 'description']);
    const binding = await checkToolBinding(d, me(ctx)._id, { ...current, ...body, base_tool: current.base_tool });
    ctx.body = publicTool((await d.tools.update(me(ctx)._id, ctx.params.id, current._id, binding))!);
  });
  router.delete('/servers/:id/tools/:toolId', g.owner, async (ctx) => {
    const doc = await ownTool(ctx);
    await d.tools.delete(me(ctx)._id, ctx.params.id, doc._id);
    ctx.status = 204;
  });
}
