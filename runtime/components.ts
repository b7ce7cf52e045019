// The service's parts, built once at start from the config, the store and the tool catalog: the outbound
// HTTP clients, the engine, every repository and the call pipeline. Nothing here listens or runs on a timer.
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { readFile } from 'node:fs/promises';
import { Accounts, Vault, parseMasterKey } from './accounts/accounts.ts';
import { CALLBACK_PATH, ConnectFlows } from './accounts/connect-flows.ts';
import { ConnectSessions } from './accounts/connect-sessions.ts';
import { Connections } from './accounts/connections.ts';
import { OAuthApps, oauthEnvName } from './accounts/oauth-apps.ts';
import { StateWebhooks } from './accounts/state-webhooks.ts';
import { TokenEndpoint } from './accounts/token-endpoint.ts';
import { Budgets } from './access/budgets.ts';
import { EmailLinks } from './access/email-links.ts';
import { EndUsers } from './access/end-users.ts';
import { KeyNetworks } from './access/key-networks.ts';
import { MailLimits } from './access/mail-limits.ts';
import { ApiKeys } from './access/keys.ts';
import { OwnerLimits } from './access/owner-limits.ts';
import { RequestStates } from './access/request-states.ts';
import { Owners } from './access/owners.ts';
import { passwordChecks } from './access/passwords.ts';
import { KeyRateLimiter } from './access/rate-limit.ts';
import { Sessions } from './access/sessions.ts';
import { SignInLimits } from './access/sign-in-limits.ts';
import type { ApiDeps } from './api/context.ts';
import { AuditTrail } from './audit/audit-trail.ts';
import { SERVICE_INFO } from './app.ts';
import { Credits } from './billing/credits.ts';
import { Ledger } from './billing/ledger.ts';
import type { Config, MailConfig } from './config.ts';
import { Engine } from './engine/engine.ts';
import { type HttpClient, createHttpClient } from './http/client.ts';
import type { Logger } from './log.ts';
import { type AccountAlerts, OwnerAlerts } from './mail/owner-alerts.ts';
import { LinkMail } from './mail/link-mail.ts';
import { Outbox } from './mail/outbox.ts';
import { smtpTransport } from './mail/transport.ts';
import { Metrics } from './metrics.ts';
import { LATEST_LEGACY_VERSION } from './mcp/protocol.ts';
import { callResult } from './mcp/tool-wire.ts';
import { METADATA_FETCH_LIMITS, OAuthClients } from './oauth/clients.ts';
import { OffLoop } from './off-loop.ts';
import { OAuthGrants } from './oauth/grants.ts';
import { CallPipeline } from './pipeline/call-pipeline.ts';
import { Sandboxes } from './sandbox/sandboxes.ts';
import { generatedSecret, randomToken } from './secrets.ts';
import { CustomTools } from './servers/custom-tools.ts';
import { Servers } from './servers/servers.ts';
import { ChangeFeed } from './store/changes.ts';
import { type Store, StoreUnavailableError } from './store/port.ts';
import type { LiveCatalog } from './toolspec/live.ts';
import type { Provider } from './toolspec/catalog.ts';
import { type Tracing, startTracing } from './tracing/tracing.ts';

/** A conversion (of the largest input the tool specs take: 250,000 characters of a Notion page) is stopped after this long. */
const CONVERSION_TIMEOUT_MS = 10_000;

/**
 * What background work (flushes, housekeeping, sweeps) does with a failure: logs it, unless the store refused
 * or did not answer (the store says why once, StoreEvents; this would repeat it every few seconds).
 */
export function backgroundFailure(logger: Logger, what: string): (err: unknown) => void {
  return (err) => {
    if (err instanceof StoreUnavailableError) logger.debug({ err }, what);
    else logger.error({ err }, what);
  };
}

/** No call lasts longer: the longest webhook wait (300 s) plus the retries and the answer, with margin. */
export const MAX_CALL_MS = 15 * 60_000;
/** A partition's housekeeping lease: renewed every 20 s while a run lasts, so a holder that dies delays its partition by at most a minute. */
const HOUSEKEEPING_LEASE_MS = 60_000;
/** A credit block hands out ranges for at most this long (billing/credit-blocks.ts); after a crash its rest comes back MAX_CALL_MS later. */
const BLOCK_LEASE_MS = 30_000;

export interface Components extends ApiDeps {
  store: Store;
  /** Changes of the lookups' entries, announced through the store (polled every second). */
  changes: ChangeFeed;
  pipeline: CallPipeline;
  requestStates: RequestStates;
  metrics: Metrics;
  /** The outbound clients, closed at shutdown. */
  http: HttpClient[];
  /** The worker threads of plugins' long work (markdown conversions), stopped at shutdown. */
  offLoop: OffLoop;
  /** OpenTelemetry traces; undefined (no SDK loaded) unless an OTLP endpoint is configured. Flushed at shutdown. */
  tracing?: Tracing;
}

/** The master key (encrypting stored accounts) and the operator token: from the config, or generated once into DATA_DIR. */
export async function serviceSecrets(config: Config, store: Store): Promise<{ masterKey: string; operatorToken: string }> {
  if (store.kind === 'mongodb' && !config.masterKey) {
    throw new Error('MASTER_KEY is required with MONGODB_URL: every instance must decrypt the same accounts');
  }
  const secretFile = (file: string, make: () => string) => (config.inMemory ? Promise.resolve(make()) : generatedSecret(config.dataDir, file, make));
  return {
    masterKey: config.masterKey ?? (await secretFile('master.key', () => randomBytes(32).toString('hex'))),
    operatorToken: config.operatorToken ?? (await secretFile('operator-token', () => randomToken('mcpop_'))),
  };
}

/** Connected accounts: the operator's OAuth apps, the token endpoints, connections, their flows and webhooks. */
function connectedAccounts(
  config: Config,
  c: {
    store: Store;
    catalog: LiveCatalog;
    vault: Vault;
    accounts: Accounts;
    engine: Engine;
    http: HttpClient;
    audit: AuditTrail;
    logger: Logger;
    site: { publicUrl: string };
    instance: string;
    sandboxes: Sandboxes | undefined;
    ownerLimits: OwnerLimits;
    masterKey: Buffer;
    /** E-mail alerts (absent when e-mail is off): an owner's account that needs reconnecting. */
    alerts: AccountAlerts | undefined;
  },
): Components['connect'] {
  const connectable = new Set([...c.catalog.current.providers.values()].filter((p) => p.connect).map((p) => oauthEnvName(p.spec.id)));
  for (const name of config.oauthApps.keys())
    if (!connectable.has(name))
      c.logger.warn(
        { variable: `OAUTH_${name}_CLIENT_ID` },
        'no provider with a connect block has this name: the OAuth app is not used (the name is the provider id in upper case)',
      );
  const apps = new OAuthApps(c.store, c.vault, config.oauthApps, config.keyCacheMs);
  // A sandbox connection is made with the app this service is at the owner's OAuth sandbox of the provider.
  const appFor = async (provider: Provider, sandboxOwner: string | undefined) => {
    if (sandboxOwner === undefined) return apps.get(provider.spec.id);
    const sandbox = c.sandboxes?.connectionOf(provider.spec.account.kind);
    return sandbox ? c.sandboxes!.oauthApp(sandboxOwner, sandbox) : null;
  };
  // A sandbox's consent page is served through the service's own origin (a browser cannot reach the sandbox).
  const browserUrl = (url: URL, provider: Provider, sandboxOwner: string | undefined) => {
    const sandbox = sandboxOwner === undefined ? undefined : c.sandboxes?.connectionOf(provider.spec.account.kind);
    return sandbox ? new URL(c.site.publicUrl + c.sandboxes!.consentPath(sandbox, url)) : url;
  };
  const tokens = new TokenEndpoint(c.http);
  const webhooks = new StateWebhooks(c.store, c.vault, c.http, c.logger);
  const timeoutMs = config.upstreamTimeoutMs;
  const connections = new Connections({ ...c, tokens, appFor, webhooks, timeoutMs });
  const flows = new ConnectFlows({ ...c, connections, tokens, appFor, browserUrl, timeoutMs });
  // End users' connect links made inside calls are signed with a key derived from the master key.
  const sessions = new ConnectSessions(c.store, createHmac('sha256', c.masterKey).update('end-user connect links').digest(), c.site);
  return { apps, flows, connections, webhooks, sessions };
}

export async function buildComponents(
  config: Config,
  store: Store,
  catalog: LiveCatalog,
  secrets: { masterKey: string; operatorToken: string },
  logger: Logger,
): Promise<Components> {
  const ca = config.outboundCaFile ? await readFile(config.outboundCaFile, 'utf8') : undefined;
  const masterKey = parseMasterKey(secrets.masterKey);
  // The public URL is completed once the port is known (PORT=0 in tests); e-mails read it when written.
  const site = { publicUrl: config.publicUrl, signup: config.signup, startingCredits: config.startingCredits, creditsHelp: config.creditsHelp };
  const sandboxes = config.sandboxes.enabled
    ? new Sandboxes({
        // Owners' sandbox credentials are derived from the master key: the same after a restart, unguessable.
        secret: createHmac('sha256', masterKey).update('sandbox credentials').digest(),
        idleMs: config.sandboxes.idleMinutes * 60_000,
        maxSets: config.sandboxes.maxSets,
        maxWriteBytes: config.sandboxes.maxWriteMb * 1_048_576,
        logger,
        catalog,
        redirectUri: () => site.publicUrl + CALLBACK_PATH,
      })
    : undefined;
  const http = createHttpClient({
    timeoutMs: config.upstreamTimeoutMs,
    maxResponseBytes: config.maxResponseBytes,
    allow: config.allowPrivateNetworks,
    retries: 2,
    maxRetryAfterMs: 3000,
    ca,
    sandboxes,
  });
  // OAuth client ID metadata documents: the same guard, no retries, a small document only.
  const metadataHttp = createHttpClient({ ...METADATA_FETCH_LIMITS, allow: config.allowPrivateNetworks, retries: 0, maxRetryAfterMs: 0, ca });
  // Converting an owner's markdown can take long: in worker threads, off the event loop all owners share.
  const offLoop = new OffLoop({ workers: config.conversionThreads, timeoutMs: CONVERSION_TIMEOUT_MS });
  const engine = new Engine(http, { defaultTimeoutMs: config.upstreamTimeoutMs, offLoop });
  const vault = new Vault(masterKey);
  const instance = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  const metrics = new Metrics(passwordChecks);
  const owners = new Owners(store);
  // The lookups of a call may outlive KEY_CACHE_MS: every instance hears of a change through the store.
  const changes = new ChangeFeed(store, store.kind === 'mongodb' ? config.mongo.deadlineMs : 0);
  const keys = new ApiKeys(store, config.keyCacheMs, changes);
  const servers = new Servers(store, config.keyCacheMs, changes);
  const tools = new CustomTools(store, catalog, config.keyCacheMs, changes);
  const accounts = new Accounts(store, catalog, vault, config.keyCacheMs, changes);
  // Shared counters on MongoDB (in the store's time); in memory on the embedded store.
  const sharedCounters = store.kind === 'mongodb' ? store : undefined;
  const mail = config.mail && buildMail(config.mail, { store, vault, masterKey, owners, keys, servers, site, metrics, instance, logger, sharedCounters });
  const credits = new Credits(store, mail && ((ownerId, balance) => mail.alerts.creditsCharged(ownerId, balance)));
  // Device cookies (browsers that signed in before) are signed with a key derived from the master key.
  const signInLimits = new SignInLimits({ deviceSecret: createHmac('sha256', masterKey).update('sign-in devices').digest(), shared: sharedCounters });
  const audit = new AuditTrail(store, logger, config.ownerLimits.auditEvents);
  const ownerLimits = new OwnerLimits(config.ownerLimits, sharedCounters);
  const connect = connectedAccounts(config, {
    store,
    catalog,
    vault,
    accounts,
    engine,
    http,
    audit,
    logger,
    site,
    instance,
    sandboxes,
    ownerLimits,
    masterKey,
    alerts: mail?.alerts,
  });
  const endUsers = new EndUsers(store);
  const budgets = new Budgets(store, backgroundFailure(logger, 'giving back a budget reservation failed'));
  const oauth = {
    clients: new OAuthClients(store, metadataHttp, (address) => signInLimits.fetchMetadata(address)),
    grants: new OAuthGrants(store, {
      accessMs: config.oauthAccessMinutes * 60_000,
      refreshMs: config.oauthRefreshDays * 86_400_000,
      cacheMs: config.keyCacheMs,
      reuseMs: config.oauthRefreshReuseSeconds * 1000,
      successorSecret: createHmac('sha256', masterKey).update('oauth refresh successors').digest(),
      audit,
    }),
  };
  // A record is made when its call ends and written milliseconds later on the embedded store; a replica set's
  // write may take seconds (timeouts, a failover): roll only what no pending write can precede.
  const settledMs = (config.ledgerRollAfterSeconds ?? (store.kind === 'embedded' ? 10 : 60)) * 1000;
  // A write given up at its deadline may still be applied until its connection's socket timeout.
  const slowestWriteMs = config.mongo.deadlineMs + config.mongo.socketTimeoutMs;
  if (store.kind === 'mongodb' && settledMs <= slowestWriteMs) {
    logger.warn(
      { ledgerRollAfterSeconds: settledMs / 1000, slowestWriteSeconds: slowestWriteMs / 1000 },
      'LEDGER_ROLL_AFTER_SECONDS is shorter than a record write may take (MONGODB_DEADLINE_MS + MONGODB_SOCKET_TIMEOUT_MS): the roll-up may pass over a record another instance is still writing, and usage would miss it',
    );
  }
  // The embedded store keeps every document in memory: there the ledger keeps at most LEDGER_MAX_RECORDS
  // records, fairly shared between owners (older ones live on as hourly aggregates). One process there: one
  // partition of the housekeeping; on MongoDB the instances share out several.
  const ledger = new Ledger(store, credits, {
    maxRecords: store.kind === 'embedded' ? config.ledgerMaxRecords : Infinity,
    maxRecordsPerOwner: config.ledgerMaxRecordsPerOwner,
    retentionMs: config.ledgerRetentionDays * 86_400_000,
    usageRetentionMs: config.usageRetentionDays * 86_400_000,
    rejectionsPerMinute: config.ledgerRejectionsPerMinute,
    partitions: config.ledgerPartitions ?? (store.kind === 'embedded' ? 1 : 8),
    leaseMs: HOUSEKEEPING_LEASE_MS,
    maxCallMs: MAX_CALL_MS,
    blockLeaseMs: BLOCK_LEASE_MS,
    feed: changes,
    settledMs,
    instance,
    onBackgroundError: backgroundFailure(logger, 'ledger housekeeping failed'),
    onHousekeeping: (run) => logger.debug(run, 'ledger housekeeping'),
  });
  const onRateFallback = (window: string, ms: number) =>
    logger.warn(
      { window, ms },
      `rate limits: the store did not answer a reservation in time (or failed): this instance judges calls by its own limits for ${ms / 1000} s (N instances admit up to N times the limit)`,
    );
  const rateLimiter = new KeyRateLimiter(config.rateLimit, sharedCounters, onRateFallback);
  const { callsPerBurst, callsPerMinute } = config.ownerLimits;
  const ownerRateLimiter = new KeyRateLimiter(
    { burstPoints: callsPerBurst, burstSeconds: config.rateLimit.burstSeconds, minutePoints: callsPerMinute },
    sharedCounters,
    onRateFallback,
  );
  const ownerRateWords = `${callsPerBurst} requests per ${config.rateLimit.burstSeconds} s and ${callsPerMinute} per minute`;
  const requestStates = new RequestStates(store, createHmac('sha256', masterKey).update('MCP request states').digest());
  const pipeline = new CallPipeline({
    keys,
    oauth: oauth.grants,
    budgets,
    servers,
    tools,
    accounts,
    credits,
    ledger,
    rateLimiter,
    ownerRateLimiter,
    ownerRateWords,
    keyNetworks: mail?.keyNetworks,
    engine,
    clock: store.clock,
    logger,
    metrics,
    endUsers,
    connectLinks: connect.sessions,
    requestStates,
  });
  return {
    store,
    changes,
    catalog,
    pipeline,
    requestStates,
    metrics,
    http: [http, metadataHttp],
    offLoop,
    tracing: config.tracing && (await startTracing(config.tracing, logger, SERVICE_INFO.version)),
    owners,
    endUsers,
    servers,
    keys,
    budgets,
    audit,
    tools,
    accounts,
    credits,
    ledger,
    engine,
    sessions: new Sessions(store, {
      idleMs: config.sessionIdleMinutes * 60_000,
      maxMs: config.sessionMaxDays * 86_400_000,
      perOwner: config.ownerLimits.sessions,
    }),
    signInLimits,
    ownerLimits,
    oauth,
    sandboxes,
    operatorToken: secrets.operatorToken,
    maxBodyBytes: config.maxBodyBytes,
    connect,
    site,
    mail,
    async tryTool(call) {
      const principal = pipeline.dashboardCaller(call.ownerId, call.serverId);
      const limited = await pipeline.rateLimit(principal);
      if (!limited.allowed) return { ok: false, rateLimited: true, headers: limited.headers, limit: limited.limit };
      const outcome = await pipeline.callTool(principal, call.tool, call.arguments, { cancellation: call.cancellation, progress: () => undefined });
      if (!outcome) return { ok: false, rateLimited: false };
      // As the clients of today get it (the revision most of them speak): content, structuredContent, isError.
      return { ok: true, result: callResult(outcome, LATEST_LEGACY_VERSION) as { content: unknown[]; isError: boolean } };
    },
  };
}

/**
 * E-mail, when SMTP_URL is set: the outbox and its SMTP transport, the single-use links, the address and
 * password mails, the owners' alerts and the networks keys are used from (what the new-network alert needs).
 */
function buildMail(
  config: MailConfig,
  c: {
    store: Store;
    vault: Vault;
    masterKey: Buffer;
    owners: Owners;
    keys: ApiKeys;
    servers: Servers;
    site: ApiDeps['site'];
    metrics: Metrics;
    instance: string;
    logger: Logger;
    sharedCounters: Store | undefined;
  },
): NonNullable<ApiDeps['mail']> & { keyNetworks: KeyNetworks } {
  const outbox = new Outbox(c.store, {
    transport: smtpTransport(config.smtpUrl, config.from),
    vault: c.vault,
    logger: c.logger,
    metrics: {
      sent: (kind) => c.metrics.mailResult(kind, 'sent'),
      failedAttempt: (kind) => c.metrics.mailResult(kind, 'failed_attempt'),
      givenUp: (kind) => c.metrics.mailResult(kind, 'given_up'),
    },
    instance: c.instance,
    retryMs: config.retryMs,
    attempts: config.attempts,
  });
  c.metrics.watchMailQueue(() => outbox.queued());
  const links = new EmailLinks(c.store);
  const keyNetworks = new KeyNetworks(c.store, (event) => alerts.keyUsedFromNewNetwork(event), c.logger);
  const alerts: OwnerAlerts = new OwnerAlerts({
    outbox,
    owners: c.owners,
    keys: c.keys,
    servers: c.servers,
    networks: keyNetworks,
    site: c.site,
    secret: createHmac('sha256', c.masterKey).update('unsubscribe links').digest(),
    logger: c.logger,
  });
  const linkMail = new LinkMail({ outbox, links, owners: c.owners, site: c.site, logger: c.logger });
  return { outbox, links, alerts, linkMail, limits: new MailLimits(c.sharedCounters), keyNetworks };
}
