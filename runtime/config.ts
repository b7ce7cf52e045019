// Environment -> typed, validated configuration. Every problem is reported at once, by variable name.
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { type AllowList, parseAllowList } from './http/guard.ts';
import { SLOTS } from './billing/partitions.ts';
import { DEFAULT_MAX_OFFSET_MS } from './store/clock.ts';
import { DEFAULT_MONGO_OPTIONS, type MongoOptions, WeakWriteConcernError, writeConcernFor } from './store/mongo-options.ts';
import type { OwnerLimitSettings } from './access/owner-limits.ts';
import { type TracingConfig, parseTracingConfig } from './tracing/config.ts';

export interface Config {
  port: number;
  host: string;
  /** Folder of the embedded store, the generated master key and operator token. */
  dataDir: string;
  /** Keep the embedded store in memory (tests). */
  inMemory: boolean;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  mongodbUrl?: string;
  /** Pool size, timeouts and the weak-write override of the MongoDB connection. */
  mongo: MongoOptions;
  /** 32-byte key (hex or base64) for account secrets; generated into dataDir when absent. */
  masterKey?: string;
  operatorToken?: string;
  toolSpecsDir: string;
  /** Reload tool-specs/ when a file changes (a bad set keeps the last good catalog). */
  watchSpecs: boolean;
  allowPrivateNetworks: AllowList;
  allowPrivateNetworksText: string;
  /** Origins allowed to call /mcp from a browser ('*' for any). */
  allowedOrigins: string[];
  maxBodyBytes: number;
  upstreamTimeoutMs: number;
  maxResponseBytes: number;
  rateLimit: { burstPoints: number; burstSeconds: number; minutePoints: number };
  /** What one owner may use, whatever its number of keys, tokens or sessions (runtime/access/owner-limits.ts). */
  ownerLimits: OwnerLimitSettings;
  /** Worker threads converting owners' markdown (each one conversion at a time), off the shared event loop. */
  conversionThreads: number;
  /** tools/list page size. */
  toolsPageSize: number;
  /** How long a key lookup is cached (revocation reaches other instances within this time). */
  keyCacheMs: number;
  /** The service's public base URL (no trailing slash): its origin is the dashboard's own origin, its scheme decides Secure cookies. */
  publicUrl: string;
  /** Who may create an owner account: anyone (`open`) or only the operator's invitations (`invite`). */
  signup: 'open' | 'invite';
  /** Credits granted to every new owner. */
  startingCredits: number;
  /** A dashboard session ends after this long without a request, and in any case after sessionMaxDays. */
  sessionIdleMinutes: number;
  sessionMaxDays: number;
  /** A client must send its headers within headersTimeoutMs and its whole request within requestTimeoutMs (slow clients are cut off). */
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  keepAliveTimeoutMs: number;
  /** Per-call ledger records are kept this long, then rolled into hourly aggregates. */
  ledgerRetentionDays: number;
  /** On the embedded store (all in memory), at most this many per-call records; older ones are rolled up. */
  ledgerMaxRecords: number;
  /** Of those, at most this many per owner (each keeps its newest); undefined: ledgerMaxRecords. */
  ledgerMaxRecordsPerOwner?: number;
  /** Each owner's rejected calls logged one by one per minute and process; the rest are counted in one record. */
  ledgerRejectionsPerMinute: number;
  /** The ledger's housekeeping is shared out in this many partitions, each under its own lease; default by store. */
  ledgerPartitions?: number;
  /** Hourly usage aggregates are kept this long (each owner's totals keep their credits for the ledger check). */
  usageRetentionDays: number;
  /** Past this offset between an instance's clock and the store's, the instance takes no writes (store/clock.ts). */
  clockMaxOffsetSeconds: number;
  /** Records are rolled into the hourly aggregates once this old (longer than any record write can take); default by store. */
  ledgerRollAfterSeconds?: number;
  /** Behind a reverse proxy: take the client address from X-Forwarded-For (sign-in throttling is per address). */
  trustProxy: boolean;
  /**
   * How many trusted proxies append to X-Forwarded-For: the client address is the entry that many places from
   * its right end (what the outermost trusted proxy saw); anything left of it was written by the client.
   */
  trustProxyHops: number;
  /** PEM file of extra certificate authorities the outbound client trusts (providers or OAuth client hosts behind a private CA). */
  outboundCaFile?: string;
  /** Lifetimes of OAuth access tokens and refresh tokens. */
  oauthAccessMinutes: number;
  oauthRefreshDays: number;
  /** A refresh token presented again by its client this long after its first use gets a new pair instead of revoking the grant. */
  oauthRefreshReuseSeconds: number;
  /** Audit events are kept this long. */
  auditRetentionDays: number;
  /** The service's own provider sandboxes ("Try it with sandbox accounts"): on, or off for a hosted service. */
  sandboxes: { enabled: boolean; idleMinutes: number; maxSets: number; maxWriteMb: number };
  /** What the dashboard tells an owner whose credits run low or out: the operator's words and an optional link. */
  creditsHelp: { text: string; url?: string };
  /** OpenTelemetry traces over OTLP/HTTP; undefined (no SDK at all) unless an OTLP endpoint is set. */
  tracing?: TracingConfig;
}

/** What the dashboard says about getting credits when the operator says nothing. */
export const DEFAULT_CREDITS_HELP = 'Ask the operator of this service for more credits.';
const CREDITS_HELP_MAX = 500;

export class ConfigError extends Error {}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const problems: string[] = [];
  const int = (name: string, fallback: number, min: number, max: number): number => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min || n > max) {
      problems.push(`${name} must be an integer from ${min} to ${max} (got "${raw}")`);
      return fallback;
    }
    return n;
  };
  const bool = (name: string, fallback: boolean): boolean => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    if (raw === 'true' || raw === '1') return true;
    if (raw === 'false' || raw === '0') return false;
    problems.push(`${name} must be true or false (got "${raw}")`);
    return fallback;
  };
  const logLevels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
  const logLevel = (env.LOG_LEVEL ?? 'info') as Config['logLevel'];
  if (!logLevels.includes(logLevel)) problems.push(`LOG_LEVEL must be one of ${logLevels.join(', ')} (got "${env.LOG_LEVEL}")`);
  let allow: AllowList = parseAllowList(undefined);
  try {
    allow = parseAllowList(env.ALLOW_PRIVATE_NETWORKS);
  } catch (err) {
    problems.push(`ALLOW_PRIVATE_NETWORKS: ${(err as Error).message}`);
  }
  if (env.MONGODB_URL && !/^mongodb(\+srv)?:\/\//.test(env.MONGODB_URL)) problems.push('MONGODB_URL must start with mongodb:// or mongodb+srv://');
  const d = DEFAULT_MONGO_OPTIONS;
  const mongo: MongoOptions = {
    poolSize: int('MONGODB_POOL_SIZE', d.poolSize, 1, 1000),
    deadlineMs: int('MONGODB_DEADLINE_MS', d.deadlineMs, 100, 120_000),
    socketTimeoutMs: int('MONGODB_SOCKET_TIMEOUT_MS', d.socketTimeoutMs, 1000, 600_000),
    allowWeakWrites: bool('MONGODB_ALLOW_WEAK_WRITES', d.allowWeakWrites),
  };
  if (mongo.deadlineMs >= mongo.socketTimeoutMs) problems.push('MONGODB_DEADLINE_MS must be smaller than MONGODB_SOCKET_TIMEOUT_MS');
  for (const replaced of ['MONGODB_SERVER_SELECTION_MS', 'MONGODB_MAX_TIME_MS']) {
    if (env[replaced]) problems.push(`${replaced} is replaced by MONGODB_DEADLINE_MS (how long any store operation may take in all)`);
  }
  if (env.MONGODB_URL) {
    try {
      writeConcernFor(env.MONGODB_URL, mongo.allowWeakWrites);
    } catch (err) {
      if (!(err instanceof WeakWriteConcernError)) throw err;
      problems.push(err.message);
    }
  }
  if (env.MASTER_KEY && !isKey32(env.MASTER_KEY)) problems.push('MASTER_KEY must be 32 bytes as 64 hex characters or base64');
  const signup = (env.SIGNUP || 'open') as Config['signup'];
  if (signup !== 'open' && signup !== 'invite') problems.push(`SIGNUP must be open or invite (got "${env.SIGNUP}")`);
  if (env.PUBLIC_URL && !isHttpUrl(env.PUBLIC_URL))
    problems.push(`PUBLIC_URL must be an http(s) URL with no path, query or fragment (got "${env.PUBLIC_URL}")`);
  if (env.OPERATOR_TOKEN !== undefined && env.OPERATOR_TOKEN.length < 24) problems.push('OPERATOR_TOKEN must be at least 24 characters');
  const helpText = env.CREDITS_HELP_TEXT?.trim() || DEFAULT_CREDITS_HELP;
  // Shown in every page of an owner short of credits: plain text (escaped there), one line, bounded.
  if (helpText.length > CREDITS_HELP_MAX || /\p{Cc}/u.test(helpText))
    problems.push(`CREDITS_HELP_TEXT must be one line of at most ${CREDITS_HELP_MAX} characters, without control characters`);
  const helpUrl = env.CREDITS_HELP_URL?.trim() || undefined;
  if (helpUrl !== undefined && !isLinkUrl(helpUrl)) problems.push(`CREDITS_HELP_URL must be an http(s) or mailto: URL (got "${helpUrl}")`);
  const sandboxes = env.SANDBOXES || 'on';
  if (sandboxes !== 'on' && sandboxes !== 'off') problems.push(`SANDBOXES must be on or off (got "${env.SANDBOXES}")`);
  const keyLimits: Config['rateLimit'] = {
    burstPoints: int('RATE_LIMIT_BURST', 100, 1, 1_000_000),
    burstSeconds: int('RATE_LIMIT_BURST_SECONDS', 10, 1, 3600),
    minutePoints: int('RATE_LIMIT_PER_MINUTE', 1000, 1, 10_000_000),
  };
  const config: Config = {
    port: int('PORT', 3000, 0, 65535),
    host: env.HOST || '127.0.0.1',
    dataDir: path.resolve(env.DATA_DIR || '.data'),
    inMemory: false,
    logLevel,
    mongodbUrl: env.MONGODB_URL || undefined,
    mongo,
    masterKey: env.MASTER_KEY || undefined,
    operatorToken: env.OPERATOR_TOKEN || undefined,
    toolSpecsDir: path.resolve(env.TOOL_SPECS_DIR || 'tool-specs'),
    watchSpecs: bool('WATCH_SPECS', true),
    allowPrivateNetworks: allow,
    allowPrivateNetworksText: env.ALLOW_PRIVATE_NETWORKS ?? '',
    allowedOrigins: (env.ALLOWED_ORIGINS ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
    maxBodyBytes: int('MAX_BODY_BYTES', 1024 * 1024, 1024, 64 * 1024 * 1024),
    upstreamTimeoutMs: int('UPSTREAM_TIMEOUT_MS', 30_000, 100, 300_000),
    maxResponseBytes: int('MAX_RESPONSE_BYTES', 10 * 1024 * 1024, 1024, 256 * 1024 * 1024),
    rateLimit: keyLimits,
    ownerLimits: {
      // Three keys' worth unless set: an operator who raises the per-key limits raises the owner's with them.
      callsPerBurst: int('OWNER_RATE_LIMIT_BURST', 3 * keyLimits.burstPoints, 1, 10_000_000),
      callsPerMinute: int('OWNER_RATE_LIMIT_PER_MINUTE', 3 * keyLimits.minutePoints, 1, 100_000_000),
      writesPerMinute: int('MANAGEMENT_WRITES_PER_MINUTE', 120, 1, 1_000_000),
      exportsPerMinute: int('EXPORTS_PER_MINUTE', 5, 1, 10_000),
      quotas: {
        servers: int('MAX_SERVERS_PER_OWNER', 100, 1, 1_000_000),
        tools: int('MAX_TOOLS_PER_OWNER', 1000, 1, 10_000_000),
        keys: int('MAX_KEYS_PER_OWNER', 200, 1, 1_000_000),
        accounts: int('MAX_ACCOUNTS_PER_OWNER', 100, 1, 1_000_000),
        tokens: int('MAX_TOKENS_PER_OWNER', 50, 1, 100_000),
      },
      sessions: int('MAX_SESSIONS_PER_OWNER', 50, 1, 100_000),
      auditEvents: int('AUDIT_MAX_EVENTS_PER_OWNER', 10_000, 100, 100_000_000),
    },
    // Leave a core to the event loop: one thread on two cores, at most four.
    conversionThreads: int('CONVERSION_THREADS', Math.max(1, Math.min(4, availableParallelism() - 1)), 1, 64),
    toolsPageSize: int('TOOLS_PAGE_SIZE', 100, 1, 1000),
    keyCacheMs: int('KEY_CACHE_MS', 5000, 0, 30_000),
    publicUrl: '',
    signup,
    startingCredits: int('STARTING_CREDITS', 100, 0, 1_000_000_000),
    sessionIdleMinutes: int('SESSION_IDLE_MINUTES', 720, 1, 60 * 24 * 90),
    sessionMaxDays: int('SESSION_MAX_DAYS', 14, 1, 365),
    trustProxy: bool('TRUST_PROXY', false),
    trustProxyHops: int('TRUST_PROXY_HOPS', 1, 1, 10),
    ledgerRetentionDays: int('LEDGER_RETENTION_DAYS', 30, 1, 3650),
    ledgerMaxRecords: int('LEDGER_MAX_RECORDS', 10_000, 100, 10_000_000),
    ledgerMaxRecordsPerOwner: env.LEDGER_MAX_RECORDS_PER_OWNER ? int('LEDGER_MAX_RECORDS_PER_OWNER', 10_000, 10, 10_000_000) : undefined,
    ledgerRejectionsPerMinute: int('LEDGER_REJECTIONS_PER_MINUTE', 60, 1, 1_000_000),
    ledgerPartitions: env.LEDGER_PARTITIONS ? int('LEDGER_PARTITIONS', 8, 1, SLOTS) : undefined,
    usageRetentionDays: int('USAGE_RETENTION_DAYS', 400, 1, 36_500),
    clockMaxOffsetSeconds: int('CLOCK_MAX_OFFSET_SECONDS', DEFAULT_MAX_OFFSET_MS / 1000, 1, 86_400),
    ledgerRollAfterSeconds: env.LEDGER_ROLL_AFTER_SECONDS ? int('LEDGER_ROLL_AFTER_SECONDS', 60, 1, 3600) : undefined,
    headersTimeoutMs: int('HEADERS_TIMEOUT_MS', 10_000, 500, 120_000),
    requestTimeoutMs: int('REQUEST_TIMEOUT_MS', 30_000, 1000, 600_000),
    keepAliveTimeoutMs: int('KEEP_ALIVE_TIMEOUT_MS', 65_000, 1000, 600_000),
    outboundCaFile: env.OUTBOUND_CA_FILE ? path.resolve(env.OUTBOUND_CA_FILE) : undefined,
    oauthAccessMinutes: int('OAUTH_ACCESS_TOKEN_MINUTES', 60, 1, 24 * 60),
    oauthRefreshDays: int('OAUTH_REFRESH_TOKEN_DAYS', 30, 1, 365),
    oauthRefreshReuseSeconds: int('OAUTH_REFRESH_REUSE_SECONDS', 60, 0, 3600),
    auditRetentionDays: int('AUDIT_RETENTION_DAYS', 365, 1, 3650),
    sandboxes: {
      enabled: sandboxes !== 'off',
      idleMinutes: int('SANDBOX_IDLE_MINUTES', 30, 1, 1440),
      maxSets: int('SANDBOX_MAX_SETS', 50, 1, 10_000),
      maxWriteMb: int('SANDBOX_MAX_WRITE_MB', 5, 1, 10_000),
    },
    creditsHelp: { text: helpText, url: helpUrl },
    tracing: parseTracingConfig(env, problems),
  };
  config.publicUrl = env.PUBLIC_URL ? new URL(env.PUBLIC_URL).origin : defaultPublicUrl(config.host, config.port);
  if (config.headersTimeoutMs > config.requestTimeoutMs) problems.push('HEADERS_TIMEOUT_MS must not be larger than REQUEST_TIMEOUT_MS');
  if (problems.length) throw new ConfigError(`Invalid configuration:\n- ${problems.join('\n- ')}`);
  return config;
}

function isKey32(text: string): boolean {
  if (/^[0-9a-f]{64}$/i.test(text)) return true;
  try {
    return Buffer.from(text, 'base64').length === 32;
  } catch {
    return false;
  }
}

function isHttpUrl(text: string): boolean {
  try {
    const u = new URL(text);
    return (u.protocol === 'http:' || u.protocol === 'https:') && (u.pathname === '/' || u.pathname === '') && !u.search && !u.hash;
  } catch {
    return false;
  }
}

/** A link a page may show: http(s) with a host, or mailto: (never javascript: or data:). */
function isLinkUrl(text: string): boolean {
  try {
    const u = new URL(text);
    return ((u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== '') || (u.protocol === 'mailto:' && u.pathname.includes('@'));
  } catch {
    return false;
  }
}

/** What a browser on this machine would type: wildcard hosts become loopback. */
function defaultPublicUrl(host: string, port: number): string {
  const shown = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  return `http://${shown}:${port}`;
}
