// The Koa application: the request-id and access-log middleware, then every route in order: health and
// metrics, the MCP endpoint, OAuth, the management API, the dashboard, and the 404s.
import { randomUUID } from 'node:crypto';
import Router from '@koa/router';
import Koa from 'koa';
import { createApiRouter } from './api/router.ts';
import type { Components } from './components.ts';
import type { Config } from './config.ts';
import { createDashboardRouter, pageNotFound } from './dashboard/routes.ts';
import type { Logger } from './log.ts';
import { createMcpEndpoint, sendJson } from './mcp/endpoint.ts';
import { rpcError } from './mcp/protocol.ts';
import { SCOPE } from './oauth/grants.ts';
import { createOAuthRouter, resourceMetadataUrl } from './oauth/routes.ts';
import { sameSecret } from './secrets.ts';
import { providerTitles } from './toolspec/catalog.ts';

export const SERVICE_INFO = { name: 'tool-server', title: 'Tool Server', version: '0.1.0' };

/** What shutdown needs to know of the requests: whether it began, and how many are still being handled. */
export interface Lifecycle {
  closing: boolean;
  inFlight: number;
}

export function createApp(config: Config, c: Components, logs: { logger: Logger; accessLog: Logger }, lifecycle: Lifecycle): Koa {
  const { logger, accessLog } = logs;
  // Only the entries the trusted proxies appended count: the left-most one is whatever the client sent.
  const app = new Koa({ proxy: config.trustProxy, maxIpsCount: config.trustProxyHops });
  app.silent = true;
  app.on('error', (err) => logger.error({ err }, 'request failed'));
  // On every answer: no content-type sniffing; with an https public URL, browsers keep to https for a year.
  const always: Record<string, string> = {
    'X-Content-Type-Options': 'nosniff',
    ...(config.publicUrl.startsWith('https:') ? { 'Strict-Transport-Security': 'max-age=31536000' } : {}),
  };
  app.use(async (ctx, next) => {
    const started = performance.now();
    ctx.set(always);
    // A caller's request id is kept when it is a plain token, so logs can be joined across services.
    const given = ctx.get('x-request-id');
    const requestId = /^[\w.:-]{1,64}$/.test(given) ? given : randomUUID();
    ctx.set('X-Request-Id', requestId);
    if (lifecycle.closing) ctx.set('Connection', 'close');
    lifecycle.inFlight++;
    try {
      await next();
    } catch (err) {
      // Koa's own error answer starts from no headers: these stay on it.
      if (err instanceof Error) Object.assign(err, { headers: { ...(err as { headers?: object }).headers, ...always } });
      throw err;
    } finally {
      lifecycle.inFlight--;
      const ms = performance.now() - started;
      c.metrics.request(ctx.path, ctx.status, ms / 1000);
      const line = {
        requestId,
        method: ctx.method,
        path: ctx.path,
        status: ctx.status,
        ms: Math.round(ms * 10) / 10,
        keyId: ctx.state.keyId,
        tool: ctx.state.tool,
      };
      if (ctx.status >= 500) accessLog.warn(line, 'request');
      else accessLog.info(line, 'request');
    }
  });

  const router = new Router();
  router.get('/healthz', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  router.get('/readyz', async (ctx) => {
    if (lifecycle.closing) {
      ctx.status = 503;
      ctx.body = { status: 'shutting down' };
      return;
    }
    await c.store.collection('owners').countDocuments({ _id: '__readyz' });
    ctx.body = { status: 'ready', store: c.store.kind, tools: c.catalog.current.tools.size };
  });
  router.get('/metrics', async (ctx) => {
    const token = /^Bearer +(\S+)$/i.exec(ctx.get('authorization'))?.[1];
    if (!token || !sameSecret(token, c.operatorToken)) {
      ctx.set('WWW-Authenticate', 'Bearer');
      ctx.status = 401;
      ctx.body = { error: 'Unauthorized', message: 'The operator token is required for metrics' };
      return;
    }
    ctx.type = c.metrics.registry.contentType;
    ctx.body = await c.metrics.registry.metrics();
  });
  router.post(
    '/mcp/:serverId',
    createMcpEndpoint({
      backend: c.pipeline,
      logger,
      maxBodyBytes: config.maxBodyBytes,
      allowedOrigins: config.allowedOrigins,
      pageSize: config.toolsPageSize,
      toolsTtlMs: 30_000,
      serverInfo: SERVICE_INFO,
      instructions: () =>
        `Tools of this server act on third-party accounts (${providerTitles(c.catalog.current, 'and')}). Each call costs credits, shown in the tool description.`,
      resourceMetadataUrl: (serverId) => resourceMetadataUrl(c.site.publicUrl, serverId),
      scope: SCOPE,
      tracing: c.tracing,
    }),
  );
  router.all('/mcp/:serverId', (ctx) => {
    // Stateless server: no GET stream, no session to DELETE.
    ctx.set('Allow', 'POST');
    sendJson(ctx, 405, rpcError(null, -32000, 'Method not allowed.'));
  });
  const api = createApiRouter(c);
  app.use(router.routes()).use(router.allowedMethods());
  app.use(createOAuthRouter({ ...c.oauth, signInLimits: c.signInLimits, site: c.site, maxBodyBytes: config.maxBodyBytes }).routes());
  app.use(api.routes()).use(api.allowedMethods());
  app.use(createDashboardRouter(c).routes());
  app.use(pageNotFound(c));
  app.use((ctx) => {
    ctx.status = 404;
    ctx.body = { error: 'Not Found', message: `No route for ${ctx.method} ${ctx.path}` };
  });
  return app;
}
