// The Koa application: the request-id and access-log middleware, then every route in order: health and
// metrics, the MCP endpoint, OAuth, the management API, the dashboard, and the 404s.
import { randomUUID } from 'node:crypto';
import Router from '@koa/router';
import Koa, { type Context } from 'koa';
import { createApiRouter } from './api/router.ts';
import type { Components } from './components.ts';
import type { Config } from './config.ts';
import { unavailablePage } from './dashboard/page.ts';
import { createDashboardRouter, isPageRequest, pageNotFound } from './dashboard/routes.ts';
import type { Logger } from './log.ts';
import type { Unavailable } from './mcp/backend.ts';
import { createMcpEndpoint, sendJson } from './mcp/endpoint.ts';
import { rpcError } from './mcp/protocol.ts';
import { SCOPE } from './oauth/grants.ts';
import { createOAuthRouter, resourceMetadataUrl } from './oauth/routes.ts';
import { UnrecordedCallError } from './pipeline/call-pipeline.ts';
import { sameSecret } from './secrets.ts';
import { StoreUnavailableError } from './store/port.ts';
import { providerTitles } from './toolspec/catalog.ts';

export const SERVICE_INFO = { name: 'tool-server', title: 'Tool Server', version: '0.1.0' };
/** An MCP endpoint's path, as the router matches `/mcp/:serverId` (any case, an optional trailing slash). */
const MCP_PATH = /^\/mcp\/([^/]+?)\/?$/i;
/** /readyz answers within a second, whatever the store does. */
const READINESS_WITHIN_MS = 700;

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
      const unavailable = unavailableOf(err);
      if (unavailable) return answerUnavailable(ctx, unavailable);
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
    const store = await c.store.status(READINESS_WITHIN_MS);
    if (!store.ok) {
      ctx.status = 503;
      ctx.set('Retry-After', String(store.retryAfterSeconds));
      ctx.body = { status: 'unavailable', store: c.store.kind, reason: store.reason };
      return;
    }
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
  // Nearly every request is an MCP call: matched here by one expression, ahead of the router, which would match
  // every route's pattern and build a middleware chain for each request. Other methods go on to the router's 405.
  const mcpEndpoint = createMcpEndpoint({
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
    unavailable: unavailableOf,
  });
  app.use((ctx, next) => {
    const serverId = ctx.method === 'POST' ? MCP_PATH.exec(ctx.path)?.[1] : undefined;
    if (serverId === undefined) return next();
    ctx.params = { serverId: decodedSegment(serverId) };
    return mcpEndpoint(ctx);
  });
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

/**
 * The service's one answer to a store that refuses writes (a full disk, Store.refuseWrites) or does not answer
 * within its deadline, wherever it happens: the MCP endpoint, the management API, OAuth, the pages. A call that
 * reached its provider first says so: it may have acted, and its credits are settled by the ledger.
 */
export function unavailableOf(err: unknown): Unavailable | undefined {
  if (!(err instanceof StoreUnavailableError)) return undefined;
  const again = `Try again in ${err.retryAfterSeconds} s.`;
  if (err instanceof UnrecordedCallError) {
    return {
      message:
        `The tool ran (its provider was reached and may have acted), but the service could not record the call: ${err.message}. ` +
        `Its credits are refunded unless its record reached the store; check what the call did before repeating it. ${again}`,
      retryAfterSeconds: err.retryAfterSeconds,
      providerReached: true,
    };
  }
  return { message: `The service cannot take this request now: ${err.message}. ${again}`, retryAfterSeconds: err.retryAfterSeconds, providerReached: false };
}

/** A path segment percent-decoded, or as it is when its escapes are malformed (as the router decodes parameters). */
function decodedSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

function answerUnavailable(ctx: Context, unavailable: Unavailable): void {
  ctx.set('Retry-After', String(unavailable.retryAfterSeconds));
  if (isPageRequest(ctx)) return unavailablePage(ctx, unavailable.message);
  ctx.status = 503;
  ctx.body = { error: 'Service Unavailable', message: unavailable.message };
}
