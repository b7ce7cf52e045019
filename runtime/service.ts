// Composition: config -> store -> spec catalog -> repositories -> Koa app -> listen.
import { randomBytes, randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import Router from '@koa/router';
import Koa from 'koa';
import type { DestinationStream } from 'pino';
import { pluginRegistry } from '../plugins/registry.ts';
import { Accounts, Vault, parseMasterKey } from './accounts/accounts.ts';
import { ApiKeys } from './access/keys.ts';
import { Owners } from './access/owners.ts';
import { Sessions } from './access/sessions.ts';
import { SignInLimits } from './access/sign-in-limits.ts';
import { KeyRateLimiter } from './access/rate-limit.ts';
import { createApiRouter } from './api/router.ts';
import { createDashboardRouter, pageNotFound } from './dashboard/routes.ts';
import { Credits } from './billing/credits.ts';
import { Ledger } from './billing/ledger.ts';
import type { Config } from './config.ts';
import { Engine } from './engine/engine.ts';
import { createHttpClient } from './http/client.ts';
import { type Logger, createLoggers } from './log.ts';
import { Metrics } from './metrics.ts';
import { createMcpEndpoint, sendJson } from './mcp/endpoint.ts';
import { rpcError } from './mcp/protocol.ts';
import type { PluginRegistry } from './plugin-api.ts';
import { METADATA_FETCH_LIMITS, OAuthClients } from './oauth/clients.ts';
import { OAuthGrants, SCOPE } from './oauth/grants.ts';
import { createOAuthRouter, resourceMetadataUrl } from './oauth/routes.ts';
import { generatedSecret, randomToken, sameSecret } from './secrets.ts';
import { CallPipeline } from './pipeline/call-pipeline.ts';
import { Servers } from './servers/servers.ts';
import { CustomTools } from './servers/custom-tools.ts';
import { LiveCatalog } from './toolspec/live.ts';
import { loadCatalog } from './toolspec/loader.ts';
import { openStore } from './store/open-store.ts';
import type { Store } from './store/port.ts';

/** No call lasts longer: the longest webhook wait (300 s) plus the retries and the answer, with margin. */
const MAX_CALL_MS = 15 * 60_000;

export const SERVICE_INFO = { name: 'tool-server', title: 'Tool Server', version: '0.1.0' };

export interface ServiceOptions {
  config: Config;
  /** Where logs go (tests read them); stdout by default. */
  logDestination?: DestinationStream;
  plugins?: PluginRegistry;
}

export interface RunningService {
  url: string;
  port: number;
  operatorToken: string;
  /** The tool catalog in use (replaced by hot reloads of tool-specs/). */
  catalog: LiveCatalog;
  store: Store;
  logger: Logger;
  /** Writes buffered last-used times of keys and prunes settled charges now. */
  flush(): Promise<void>;
  close(): Promise<void>;
}

const INDEXES = [
  { collection: 'owners', fields: ['email'], unique: true },
  { collection: 'owner_tokens', fields: ['hash'], unique: true },
  { collection: 'owner_tokens', fields: ['owner_id'] },
  { collection: 'owners', fields: ['invite_hash'], unique: true, sparse: true },
  { collection: 'sessions', fields: ['owner_id'] },
  { collection: 'sessions', fields: ['expires_at'] },
  { collection: 'servers', fields: ['owner_id'] },
  { collection: 'api_keys', fields: ['hash'], unique: true },
  { collection: 'api_keys', fields: ['owner_id'] },
  { collection: 'accounts', fields: ['owner_id'] },
  { collection: 'tools', fields: ['server_id', 'name'], unique: true },
  { collection: 'usage', fields: ['owner_id', 'hour'] },
  { collection: 'calls', fields: ['owner_id', 'at'] },
  { collection: 'calls', fields: ['at'] },
  { collection: 'oauth_grants', fields: ['owner_id', 'server_id'] },
  { collection: 'oauth_access_tokens', fields: ['grant_id'] },
  { collection: 'oauth_access_tokens', fields: ['expires_at'] },
  { collection: 'oauth_refresh_tokens', fields: ['grant_id'] },
  { collection: 'oauth_refresh_tokens', fields: ['expires_at'] },
  { collection: 'oauth_codes', fields: ['expires_at'] },
];

export async function startService(opts: ServiceOptions): Promise<RunningService> {
  const { config } = opts;
  const { logger, accessLog } = createLoggers(config.logLevel, opts.logDestination);
  const plugins = opts.plugins ?? pluginRegistry;
  const catalog = new LiveCatalog(await loadCatalog(config.toolSpecsDir, plugins));
  const store = await openStore({ mongodbUrl: config.mongodbUrl, dataDir: config.dataDir, inMemory: config.inMemory });
  await store.ensureIndexes(INDEXES);

  const secretFile = (file: string, make: () => string) => (config.inMemory ? Promise.resolve(make()) : generatedSecret(config.dataDir, file, make));
  if (store.kind === 'mongodb' && !config.masterKey) {
    await store.close();
    throw new Error('MASTER_KEY is required with MONGODB_URL: every instance must decrypt the same accounts');
  }
  const masterKey = config.masterKey ?? (await secretFile('master.key', () => randomBytes(32).toString('hex')));
  const operatorToken = config.operatorToken ?? (await secretFile('operator-token', () => randomToken('mcpop_')));

  const ca = config.outboundCaFile ? await readFile(config.outboundCaFile, 'utf8') : undefined;
  const http = createHttpClient({
    timeoutMs: config.upstreamTimeoutMs,
    maxResponseBytes: config.maxResponseBytes,
    allow: config.allowPrivateNetworks,
    retries: 2,
    maxRetryAfterMs: 3000,
    ca,
  });
  // OAuth client ID metadata documents: the same guard, no retries, a small document only.
  const metadataHttp = createHttpClient({ ...METADATA_FETCH_LIMITS, allow: config.allowPrivateNetworks, retries: 0, maxRetryAfterMs: 0, ca });
  const engine = new Engine(http, { defaultTimeoutMs: config.upstreamTimeoutMs });
  const owners = new Owners(store);
  const sessions = new Sessions(store, { idleMs: config.sessionIdleMinutes * 60_000, maxMs: config.sessionMaxDays * 86_400_000 });
  const servers = new Servers(store, config.keyCacheMs);
  const keys = new ApiKeys(store, config.keyCacheMs);
  const tools = new CustomTools(store, catalog, config.keyCacheMs);
  const accounts = new Accounts(store, catalog, new Vault(parseMasterKey(masterKey)), config.keyCacheMs);
  const credits = new Credits(store);
  const oauth = {
    clients: new OAuthClients(store, metadataHttp),
    grants: new OAuthGrants(store, {
      accessMs: config.oauthAccessMinutes * 60_000,
      refreshMs: config.oauthRefreshDays * 86_400_000,
      cacheMs: config.keyCacheMs,
    }),
  };
  // The embedded store keeps every document in memory: there the ledger keeps at most LEDGER_MAX_RECORDS
  // records (older ones live on as hourly aggregates).
  const ledger = new Ledger(store, credits, {
    maxRecords: store.kind === 'embedded' ? config.ledgerMaxRecords : Infinity,
    onBackgroundError: (err) => logger.error({ err }, 'ledger housekeeping failed'),
  });
  // Charges of calls that a crash interrupted are refunded (and recorded) before any new call. On MongoDB
  // other instances may be running calls: only charges older than any call can last are settled, at start
  // and then periodically.
  const reconcile = async () => {
    const refunded = await ledger.reconcile(store.kind === 'embedded' ? new Date() : new Date(Date.now() - MAX_CALL_MS));
    if (refunded) logger.warn({ refunded }, 'refunded the charges of calls interrupted by a stop');
  };
  await reconcile();
  const rateLimiter = new KeyRateLimiter(config.rateLimit, store.mongo);
  const metrics = new Metrics();
  const pipeline = new CallPipeline({ keys, oauth: oauth.grants, servers, tools, accounts, credits, ledger, rateLimiter, engine, logger, metrics });

  const app = new Koa({ proxy: config.trustProxy });
  app.silent = true;
  app.on('error', (err) => logger.error({ err }, 'request failed'));
  let closing = false;
  /** Requests being handled, so shutdown knows when nothing is left to finish. */
  let inFlight = 0;
  app.use(async (ctx, next) => {
    const started = performance.now();
    // A caller's request id is kept when it is a plain token, so logs can be joined across services.
    const given = ctx.get('x-request-id');
    const requestId = /^[\w.:-]{1,64}$/.test(given) ? given : randomUUID();
    ctx.set('X-Request-Id', requestId);
    if (closing) ctx.set('Connection', 'close');
    inFlight++;
    try {
      await next();
    } finally {
      inFlight--;
      const ms = performance.now() - started;
      metrics.request(ctx.path, ctx.status, ms / 1000);
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

  // The public URL is completed once the port is known (PORT=0 in tests).
  const site = { publicUrl: config.publicUrl, signup: config.signup, startingCredits: config.startingCredits };
  const router = new Router();
  router.get('/healthz', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  router.get('/readyz', async (ctx) => {
    if (closing) {
      ctx.status = 503;
      ctx.body = { status: 'shutting down' };
      return;
    }
    await store.collection('owners').countDocuments({ _id: '__readyz' });
    ctx.body = { status: 'ready', store: store.kind, tools: catalog.current.tools.size };
  });
  router.get('/metrics', async (ctx) => {
    const token = /^Bearer +(\S+)$/i.exec(ctx.get('authorization'))?.[1];
    if (!token || !sameSecret(token, operatorToken)) {
      ctx.set('WWW-Authenticate', 'Bearer');
      ctx.status = 401;
      ctx.body = { error: 'Unauthorized', message: 'The operator token is required for metrics' };
      return;
    }
    ctx.type = metrics.registry.contentType;
    ctx.body = await metrics.registry.metrics();
  });
  router.post(
    '/mcp/:serverId',
    createMcpEndpoint({
      backend: pipeline,
      logger,
      maxBodyBytes: config.maxBodyBytes,
      allowedOrigins: config.allowedOrigins,
      pageSize: config.toolsPageSize,
      toolsTtlMs: 30_000,
      serverInfo: SERVICE_INFO,
      instructions: 'Tools of this server act on third-party accounts (Jira, n8n, Notion, Supabase). Each call costs credits, shown in the tool description.',
      resourceMetadataUrl: (serverId) => resourceMetadataUrl(site.publicUrl, serverId),
      scope: SCOPE,
    }),
  );
  router.all('/mcp/:serverId', (ctx) => {
    // Stateless server: no GET stream, no session to DELETE.
    ctx.set('Allow', 'POST');
    sendJson(ctx, 405, rpcError(null, -32000, 'Method not allowed.'));
  });
  const signInLimits = new SignInLimits(undefined, store.mongo);
  const apiDeps = {
    owners,
    servers,
    keys,
    tools,
    accounts,
    credits,
    ledger,
    catalog,
    engine,
    sessions,
    signInLimits,
    oauth,
    operatorToken,
    maxBodyBytes: config.maxBodyBytes,
    site,
  };
  const api = createApiRouter(apiDeps);
  const dashboard = createDashboardRouter(apiDeps);
  app.use(router.routes()).use(router.allowedMethods());
  app.use(createOAuthRouter({ ...oauth, signInLimits, site, maxBodyBytes: config.maxBodyBytes }).routes());
  app.use(api.routes()).use(api.allowedMethods());
  app.use(dashboard.routes());
  app.use(pageNotFound(apiDeps));
  app.use((ctx) => {
    ctx.status = 404;
    ctx.body = { error: 'Not Found', message: `No route for ${ctx.method} ${ctx.path}` };
  });

  const server: Server = await new Promise((resolve, reject) => {
    // Slow clients (slowloris) cannot hold a connection: headers and the whole request have deadlines, and
    // connections are checked every second (Node's default is every 30 s). The answer itself is not limited:
    // a webhook tool may wait up to 300 s.
    const s = createServer(
      { headersTimeout: config.headersTimeoutMs, requestTimeout: config.requestTimeoutMs, connectionsCheckingInterval: 1000 },
      app.callback(),
    );
    s.keepAliveTimeout = config.keepAliveTimeoutMs;
    s.listen(config.port, config.host, () => resolve(s));
    s.once('error', reject);
  });
  const { port } = server.address() as AddressInfo;
  const host = config.host.includes(':') ? `[${config.host}]` : config.host === '0.0.0.0' ? '127.0.0.1' : config.host;
  if (config.port === 0 && site.publicUrl.endsWith(':0')) site.publicUrl = `http://${host}:${port}`;

  const flush = async () => {
    await Promise.all([keys.flush(), oauth.grants.flush(), ledger.flush()]);
  };
  const flusher = setInterval(() => flush().catch((err) => logger.error({ err }, 'flush failed')), 2000);
  flusher.unref();
  // Hourly housekeeping: expired sessions, ledger records past retention rolled into hourly aggregates,
  // and (on MongoDB) charges left open by instances that died.
  const sessionSweeper = setInterval(() => {
    sessions.sweep().catch((err) => logger.error({ err }, 'session sweep failed'));
    oauth.grants.sweep().catch((err) => logger.error({ err }, 'OAuth token sweep failed'));
    ledger.rollUp(new Date(Date.now() - config.ledgerRetentionDays * 86_400_000)).catch((err) => logger.error({ err }, 'ledger roll-up failed'));
    if (store.kind === 'mongodb') reconcile().catch((err) => logger.error({ err }, 'ledger reconciliation failed'));
  }, 3_600_000);
  sessionSweeper.unref();
  if (config.watchSpecs) catalog.watch(config.toolSpecsDir, plugins, logger);
  logger.info({ port, store: store.kind, tools: catalog.current.tools.size, providers: catalog.current.providers.size }, 'tool server listening');

  return {
    url: `http://${host}:${port}`,
    port,
    operatorToken,
    catalog,
    store,
    logger,
    flush,
    async close() {
      if (closing) return;
      closing = true;
      clearInterval(flusher);
      clearInterval(sessionSweeper);
      catalog.close();
      // Stop accepting; in-flight requests finish, then every connection is closed (keep-alive ones would
      // otherwise hold the process); after the grace period nothing is waited for.
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      const sweeper = setInterval(() => (inFlight === 0 ? server.closeAllConnections() : server.closeIdleConnections()), 50);
      const deadline = setTimeout(() => server.closeAllConnections(), config.upstreamTimeoutMs + 5000);
      server.closeIdleConnections();
      await closed;
      clearInterval(sweeper);
      clearTimeout(deadline);
      await flush();
      http.close();
      metadataHttp.close();
      await store.close();
    },
  };
}
