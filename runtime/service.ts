// The service's life: start reads as the list of its steps; close undoes them in reverse order.
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pluginRegistry } from '../plugins/registry.ts';
import { type Lifecycle, createApp } from './app.ts';
import { type Components, backgroundFailure, buildComponents, serviceSecrets } from './components.ts';
import type { Config } from './config.ts';
import { RATE_LIMIT_INDEXES, sweepExpiredCounters } from './access/rate-limit.ts';
import { signUpSaid } from './access/signup.ts';
import { RETIRED_INDEXES, STORE_INDEXES } from './indexes.ts';
import { type LogDestination, type Logger, createLoggers } from './log.ts';
import type { PluginRegistry } from './plugin-api.ts';
import type { Sandboxes } from './sandbox/sandboxes.ts';
import { WARN_OFFSET_MS, describeOffset, enforceClockBound } from './store/clock.ts';
import { CHANGES_INDEXES } from './store/changes.ts';
import { openStore } from './store/open-store.ts';
import type { Store } from './store/port.ts';
import { LiveCatalog } from './toolspec/live.ts';

export { SERVICE_INFO } from './app.ts';

const FLUSH_EVERY_MS = 2000;
/** Settlement and roll-up of the ledger (each partition by one instance at a time), so pages read aggregates and a minute of records. */
const LEDGER_EVERY_MS = 60_000;
/** How often the offset of this host's clock to the store's is measured (store/clock.ts). */
const CLOCK_EVERY_MS = 60_000;
const SWEEP_EVERY_MS = 3_600_000;
/** Connected accounts due for a refresh or a check (connections.ts), by one instance at a time. */
const KEEPALIVE_EVERY_MS = 3_600_000;
/** State-change webhook events waiting for a retry. */
const WEBHOOKS_EVERY_MS = 5000;
/** How many orphaned custom tools the warning names (it counts them all). */
const ORPHANS_NAMED = 50;

export interface ServiceOptions {
  config: Config;
  /** Where logs go (see LogDestination): stdout by default. */
  logDestination?: LogDestination;
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
  /** The service's own provider sandboxes (absent when SANDBOXES=off). */
  sandboxes?: Sandboxes;
  /** E-mail (absent without SMTP_URL): the outbox, and the alerts the accounts code tells (AccountAlerts). */
  mail?: Components['mail'];
  /** Writes buffered last-used times of keys and OAuth grants, waits for the ledger records being written, gives back credit blocks and budget reservations. */
  flush(): Promise<void>;
  /** Runs the hourly sweeps now (retention of sessions, OAuth tokens, audit events, budget counters, connect flows). */
  housekeeping(): Promise<void>;
  /** Connected accounts: their connections (keepAlive), connect flows and state-change webhooks (deliverDue). */
  connect: Components['connect'];
  close(): Promise<void>;
}

export async function startService(opts: ServiceOptions): Promise<RunningService> {
  const { config } = opts;
  const logs = createLoggers(config.logLevel, opts.logDestination);
  const { logger } = logs;
  const plugins = opts.plugins ?? pluginRegistry;
  const catalog = await LiveCatalog.open({ dir: config.toolSpecsDir, plugins, logger });
  const store = await openStore({
    mongodbUrl: config.mongodbUrl,
    mongo: config.mongo,
    dataDir: config.dataDir,
    inMemory: config.inMemory,
    events: {
      onUnavailable: (reason, err) => logger.error({ reason, err }, 'the store cannot take writes: calls and changes answer 503 until it does again'),
      onAvailable: (unavailableForMs) => logger.warn({ unavailableForMs }, 'the store takes writes again'),
    },
    maxClockOffsetMs: config.clockMaxOffsetSeconds * 1000,
  });
  reportClock(store, logger);
  let c: Components | undefined;
  try {
    await store.ensureIndexes([...STORE_INDEXES, ...RETIRED_INDEXES, ...CHANGES_INDEXES, ...(store.kind === 'mongodb' ? RATE_LIMIT_INDEXES : [])]);
    c = await buildComponents(config, store, catalog, await serviceSecrets(config, store), logger);
    await settleInterruptedCalls(c, logger);
  } catch (err) {
    await c?.sandboxes?.close();
    await store.close();
    throw err;
  }
  const lifecycle: Lifecycle = { closing: false, inFlight: 0 };
  const server = await listen(createApp(config, c, logs, lifecycle).callback(), config);
  const { port } = server.address() as AddressInfo;
  const host = config.host.includes(':') ? `[${config.host}]` : config.host === '0.0.0.0' ? '127.0.0.1' : config.host;
  if (config.port === 0 && c.site.publicUrl.endsWith(':0')) c.site.publicUrl = `http://${host}:${port}`;
  // `final`: also the records counting rejections of the minute under way (at shutdown, and when a caller asks),
  // the budget reservations and the credit blocks this process holds.
  const flush = (final = false) =>
    Promise.all([c.keys.flush(), c.oauth.grants.flush(), c.ledger.flush(final), ...(final ? [c.budgets.giveBackIdle(true)] : [])]).then(() => undefined);
  const sweeps = sweepsOf(c, config, logger);
  const stopTimers = startTimers(c, sweeps, flush, logger);
  catalog.onReload(() => void warnOrphans(c, logger));
  if (config.watchSpecs) catalog.watch();
  c.mail?.outbox.start();
  logger.info({ port, store: store.kind, tools: catalog.current.tools.size, providers: catalog.current.providers.size }, 'tool server listening');
  logMailAndSignUp(c, config, logger);
  void warnOrphans(c, logger);

  return {
    url: `http://${host}:${port}`,
    port,
    operatorToken: c.operatorToken,
    catalog,
    store,
    logger,
    sandboxes: c.sandboxes,
    mail: c.mail,
    flush: () => flush(true),
    housekeeping: sweeps,
    connect: c.connect,
    async close() {
      if (lifecycle.closing) return;
      lifecycle.closing = true;
      stopTimers();
      catalog.close();
      await drain(server, lifecycle, config.upstreamTimeoutMs + 5000);
      await flush(true);
      await c.mail?.outbox.close();
      for (const client of c.http) client.close();
      await c.offLoop.close();
      await c.sandboxes?.close();
      // The spans of the last calls, bounded by the export timeout.
      await c.tracing?.shutdown();
      await store.close();
    },
  };
}

/**
 * Charges of calls that a stop interrupted are refunded (and recorded). On the embedded store this process is the
 * only one and nothing is running yet: every open charge was interrupted, and is refunded before any new call
 * (a minute's records at most: the housekeeping settles every minute). On MongoDB other instances may be running
 * calls: the ledger's housekeeping settles only charges older than any call can last, starting now in the
 * background (the start does not wait for it), and every minute.
 */
async function settleInterruptedCalls(c: Components, logger: Logger): Promise<void> {
  if (c.store.kind === 'embedded') {
    const refunded = await c.ledger.settleAfterStop();
    if (refunded) logger.warn({ refunded }, 'refunded the charges of calls interrupted by a stop');
    return;
  }
  void housekeepLedger(c, logger);
}

/**
 * After a measurement of the clock: past the bound the store refuses this instance's writes (and takes them again
 * once it is back), said as an error; past a few seconds a warning.
 */
function reportClock(store: Store, logger: Logger): void {
  const { offsetMs, roundTripMs } = store.clock.offset;
  const fields = { clockOffsetMs: offsetMs, roundTripMs, maxOffsetSeconds: store.clock.maxOffsetMs / 1000 };
  const refused = enforceClockBound(store);
  if (refused) logger.error(fields, refused);
  else if (Math.abs(offsetMs) > WARN_OFFSET_MS)
    logger.warn(
      fields,
      `this host's clock is ${describeOffset(offsetMs)} the store's: the service reads the store's time for everything it decides, but synchronize this host's time (NTP); past CLOCK_MAX_OFFSET_SECONDS it takes no writes`,
    );
}

async function measureClock(store: Store, logger: Logger): Promise<void> {
  try {
    await store.clock.measure();
    reportClock(store, logger);
  } catch (err) {
    // The last measurement stands, carried forward by the monotonic clock.
    logger.warn({ err }, "could not measure the offset of this host's clock to the store's");
  }
}

async function housekeepLedger(c: Components, logger: Logger): Promise<void> {
  // An instance that takes no writes (its clock too far from the store's) leaves the work to the others.
  if (c.store.clock.refusal()) return;
  try {
    const done = await c.ledger.housekeep();
    if (done?.refunded) logger.warn({ refunded: done.refunded }, 'refunded the charges of calls interrupted by a stop');
  } catch (err) {
    backgroundFailure(logger, 'ledger housekeeping failed')(err);
  }
}

/** What e-mail and sign-up are on this service, said once at start (what is off without SMTP_URL, and why). */
function logMailAndSignUp(c: Components, config: Config, logger: Logger): void {
  const signup = signUpSaid({ signup: config.signup, publicUrl: c.site.publicUrl, mailOn: Boolean(config.mail) });
  if (config.mail)
    logger.info({ smtp: config.mail.smtpShown, from: config.mail.from }, `e-mail on: address verification, password reset by e-mail, e-mail alerts; ${signup}`);
  else
    logger.warn(
      `e-mail off (no SMTP_URL): no address verification, no password reset by e-mail, no e-mail alerts (the dashboard still shows low credits); ${signup}`,
    );
}

/** One warning line naming the custom tools whose base tool is gone from the catalog (at start, after each reload). */
async function warnOrphans(c: Components, logger: Logger): Promise<void> {
  try {
    const orphans = await c.tools.orphans();
    if (!orphans.length) return;
    logger.warn(
      { count: orphans.length, tools: orphans.slice(0, ORPHANS_NAMED).map((t) => `${t.server_id}/${t.name} (${t.base_tool})`) },
      'custom tools orphaned: their tool spec is gone; restore the spec or remove the tools (tools/list leaves them out, calls get tool_unavailable)',
    );
  } catch (err) {
    logger.error({ err }, 'cannot look for orphaned custom tools');
  }
}

function listen(handler: Parameters<typeof createServer>[1], config: Config): Promise<Server> {
  return new Promise((resolve, reject) => {
    // Slow clients (slowloris) cannot hold a connection: headers and the whole request have deadlines, and
    // connections are checked every second (Node's default is every 30 s). The answer itself is not limited:
    // a webhook tool may wait up to 300 s.
    const server = createServer(
      { headersTimeout: config.headersTimeoutMs, requestTimeout: config.requestTimeoutMs, connectionsCheckingInterval: 1000 },
      handler,
    );
    server.keepAliveTimeout = config.keepAliveTimeoutMs;
    server.listen(config.port, config.host, () => resolve(server));
    server.once('error', reject);
  });
}

/**
 * Buffered writes every 2 s; webhook retries every 5 s; the clock's offset and the ledger's housekeeping every
 * minute; connections' keep-alive and the sweeps every hour. Returns what stops them.
 */
function startTimers(c: Components, sweeps: () => Promise<void>, flush: () => Promise<void>, logger: Logger): () => void {
  const timers = [
    setInterval(() => flush().catch(backgroundFailure(logger, 'flush failed')), FLUSH_EVERY_MS),
    setInterval(() => void measureClock(c.store, logger), CLOCK_EVERY_MS),
    // Failures are not logged: a store that cannot be read says so elsewhere, and lookups then live KEY_CACHE_MS.
    setInterval(() => c.changes.poll().catch(() => undefined), c.changes.pollMs),
    setInterval(() => void housekeepLedger(c, logger), LEDGER_EVERY_MS),
    setInterval(() => void sweeps(), SWEEP_EVERY_MS),
    setInterval(() => c.connect.connections.keepAlive().catch((err) => logger.error({ err }, 'connection keep-alive failed')), KEEPALIVE_EVERY_MS),
    setInterval(() => c.connect.webhooks.deliverDue().catch((err) => logger.error({ err }, 'webhook delivery failed')), WEBHOOKS_EVERY_MS),
  ];
  for (const timer of timers) timer.unref();
  return () => timers.forEach(clearInterval);
}

/**
 * Expired sessions and tokens, audit events past retention, counters of past budget periods. Each task reports
 * its own failure and never stops the others.
 */
function sweepsOf(c: Components, config: Config, logger: Logger): () => Promise<void> {
  return async () => {
    const task = (name: string, run: () => Promise<unknown>) => run().catch(backgroundFailure(logger, `${name} failed`));
    await Promise.all([
      task('session sweep', () => c.sessions.sweep()),
      task('OAuth token sweep', () => c.oauth.grants.sweep()),
      task('audit retention', () => c.audit.sweep(new Date(c.store.clock.now() - config.auditRetentionDays * 86_400_000))),
      task('audit volume', () => c.audit.trim()),
      task('budget sweep', () => c.budgets.sweep()),
      task('connect flow sweep', () => c.connect.flows.sweep()),
      task('connect link sweep', () => c.connect.sessions.sweep()),
      task('webhook delivery sweep', () => c.connect.webhooks.sweep()),
      task('request state sweep', () => c.requestStates.sweep()),
      ...(c.mail ? [task('e-mail link sweep', () => c.mail!.links.sweep()), task('mail outbox sweep', () => c.mail!.outbox.sweep())] : []),
      ...(c.store.kind === 'mongodb' ? [task('rate-limit counter sweep', () => sweepExpiredCounters(c.store))] : []),
      task('cache change sweep', () => c.changes.sweep()),
    ]);
  };
}

/**
 * Stops accepting; in-flight requests finish, then every connection is closed (keep-alive ones would otherwise
 * hold the process); after the grace period nothing is waited for.
 */
async function drain(server: Server, lifecycle: Lifecycle, graceMs: number): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  const sweeper = setInterval(() => (lifecycle.inFlight === 0 ? server.closeAllConnections() : server.closeIdleConnections()), 50);
  const deadline = setTimeout(() => server.closeAllConnections(), graceMs);
  server.closeIdleConnections();
  await closed;
  clearInterval(sweeper);
  clearTimeout(deadline);
}
