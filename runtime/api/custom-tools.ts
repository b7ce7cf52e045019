// Custom tools of a server: a base tool bound to an account, with defaults and locked parameters.
import type Router from '@koa/router';
import type { Context } from 'koa';
import { requestInfo } from '../audit/request-context.ts';
import { Cancellation } from '../cancellation.ts';
import { MAX_ARGUMENT_DEPTH, nestedDeeperThan } from '../json-depth.ts';
import { type CustomToolDoc, orphanReason, publicTool } from '../servers/custom-tools.ts';
import { type ApiDeps, type Guards, me, ownServer, withRoom } from './context.ts';
import { ApiError, jsonBody, notFound, onlyFields } from './http.ts';
import { checkToolBinding } from './tool-binding.ts';

const toolTarget = (t: CustomToolDoc) => ({ type: 'tool', id: t._id, name: `${t.name} on ${t.server_id}` });
const bindingView = (b: Pick<CustomToolDoc, 'name' | 'base_tool' | 'account_id' | 'defaults' | 'locked' | 'description'>): Record<string, unknown> => ({
  name: b.name,
  base_tool: b.base_tool,
  account_id: b.account_id,
  defaults: b.defaults,
  locked: b.locked,
  description: b.description,
});

export function toolsRoutes(router: Router, d: ApiDeps, g: Guards): void {
  router.post('/servers/:id/tools', g.owner, async (ctx) => {
    const body = await jsonBody(ctx, d.maxBodyBytes);
    await ownServer(d, ctx, ctx.params.id);
    onlyFields(body, ['name', 'base_tool', 'account_id', 'defaults', 'locked', 'description']);
    const binding = await checkToolBinding(d, me(ctx)._id, body);
    const tool = await withRoom(
      d,
      ctx,
      'tools',
      (owner) => d.tools.countForOwner(owner),
      () => d.tools.create({ owner_id: me(ctx)._id, server_id: ctx.params.id, ...binding }),
    );
    // What was set: the empty defaults, locks and description of a plain binding say nothing.
    const set = Object.entries(bindingView(binding)).filter(([, v]) => v !== null && !(typeof v === 'object' && Object.keys(v as object).length === 0));
    await d.audit.record(requestInfo(ctx), { action: 'tool.create', owner_id: me(ctx)._id, target: toolTarget(tool), changes: Object.fromEntries(set) });
    ctx.status = 201;
    ctx.body = publicTool(tool, d.catalog.current);
  });
  router.get('/servers/:id/tools', g.owner, async (ctx) => {
    await ownServer(d, ctx, ctx.params.id);
    ctx.body = { tools: (await d.tools.list(me(ctx)._id, ctx.params.id)).map((t) => publicTool(t, d.catalog.current)) };
  });
  const ownTool = async (ctx: Context): Promise<CustomToolDoc> => {
    await ownServer(d, ctx, ctx.params.id);
    const doc = await d.tools.get(me(ctx)._id, ctx.params.id, ctx.params.toolId);
    if (!doc) throw notFound('Tool');
    return doc;
  };
  router.get('/servers/:id/tools/:toolId', g.owner, async (ctx) => {
    ctx.body = publicTool(await ownTool(ctx), d.catalog.current);
  });
  router.patch('/servers/:id/tools/:toolId', g.owner, async (ctx) => {
    const body = await jsonBody(ctx, d.maxBodyBytes);
    const current = await ownTool(ctx);
    onlyFields(body, ['name', 'account_id', 'defaults', 'locked', 'description']);
    if (!d.catalog.current.tools.has(current.base_tool)) throw new ApiError(409, `The tool ${current.name} cannot be changed. ${orphanReason(current)}`);
    const binding = await checkToolBinding(d, me(ctx)._id, { ...current, ...body, base_tool: current.base_tool });
    const updated = (await d.tools.update(me(ctx)._id, ctx.params.id, current._id, binding))!;
    const before = bindingView(current);
    const after = bindingView(binding);
    const changes = Object.fromEntries(
      Object.keys(after)
        .filter((k) => JSON.stringify(before[k]) !== JSON.stringify(after[k]))
        .map((k) => [k, { from: before[k], to: after[k] }]),
    );
    await d.audit.record(requestInfo(ctx), { action: 'tool.update', owner_id: me(ctx)._id, target: toolTarget(updated), changes });
    ctx.body = publicTool(updated, d.catalog.current);
  });
  // "Try": the owner calls the tool as a client would, through the call pipeline (charged, recorded as from the
  // dashboard). The answer is the tools/call result as a client gets it; a failing call is still a 200 here,
  // its result saying isError, like MCP.
  router.post('/servers/:id/tools/:toolId/call', g.owner, async (ctx) => {
    const body = await jsonBody(ctx, d.maxBodyBytes, true);
    onlyFields(body, ['arguments']);
    const server = await ownServer(d, ctx, ctx.params.id);
    const doc = await ownTool(ctx);
    if (!server.active) throw new ApiError(409, `The server “${server.name}” is inactive: activate it to call its tools`);
    const args = body.arguments ?? {};
    if (args === null || typeof args !== 'object' || Array.isArray(args)) throw new ApiError(400, '"arguments" must be an object of parameter values');
    if (nestedDeeperThan(args, MAX_ARGUMENT_DEPTH)) throw new ApiError(400, `"arguments" are nested more than ${MAX_ARGUMENT_DEPTH} levels deep (the limit)`);
    // A person who leaves the page stops the call, as a client closing its connection would.
    const cancellation = new Cancellation();
    const stop = () => {
      if (!ctx.res.writableFinished) cancellation.abort();
    };
    ctx.res.once('close', stop);
    try {
      const outcome = await d.tryTool({
        ownerId: me(ctx)._id,
        serverId: server._id,
        tool: doc.name,
        arguments: args as Record<string, unknown>,
        cancellation,
      });
      if (!outcome.ok && outcome.rateLimited) {
        ctx.set(outcome.headers);
        throw new ApiError(429, `Too many calls from the dashboard (${outcome.limit ?? 'its limit'}): try again in a few seconds`);
      }
      if (!outcome.ok) throw notFound('Tool');
      ctx.body = { tool: doc.name, result: outcome.result, balance: await d.credits.balance(me(ctx)._id) };
    } finally {
      ctx.res.off('close', stop);
    }
  });
  router.delete('/servers/:id/tools/:toolId', g.ownerRevoking, async (ctx) => {
    const doc = await ownTool(ctx);
    await d.tools.delete(me(ctx)._id, ctx.params.id, doc._id);
    await d.audit.record(requestInfo(ctx), { action: 'tool.delete', owner_id: me(ctx)._id, target: toolTarget(doc) });
    ctx.status = 204;
  });
}
