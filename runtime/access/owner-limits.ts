// What one owner may use of the service, whatever its number of keys, tokens or sessions, so that no owner
// can spend the resources of the others: its MCP calls across all its keys (the pipeline, with the keys' own
// limiter), its management writes and downloads per minute, and how many servers, tools, keys, accounts and
// management tokens it may keep. Sessions beyond their limit end oldest first (never refusing a sign-in) and
// the audit trail keeps an owner's newest events (runtime/audit/audit-trail.ts). The counters are
// window-counter.ts's, in MongoDB when the service runs on it (every instance counts the same, in the store's time).
import { RateLimiterRes } from 'rate-limiter-flexible';
import type { Store } from '../store/port.ts';
import { type WindowCounter, windowCounter } from './window-counter.ts';

/** What an owner may keep of each kind (live ones: revoked keys do not count). */
export interface OwnerQuotas {
  servers: number;
  tools: number;
  keys: number;
  accounts: number;
  tokens: number;
}

export type QuotaKind = keyof OwnerQuotas;

export interface OwnerLimitSettings {
  /** MCP requests of all the owner's keys, apps and dashboard tries together, per RATE_LIMIT_BURST_SECONDS and per minute. */
  callsPerBurst: number;
  callsPerMinute: number;
  /** Changes through the management API (POST, PUT, PATCH, DELETE by the owner's token or session). */
  writesPerMinute: number;
  /** Downloads of the call log or the audit trail (format=csv or json). */
  exportsPerMinute: number;
  quotas: OwnerQuotas;
  /** Dashboard sessions at once; a new sign-in beyond it ends the oldest. */
  sessions: number;
  /** Audit events kept per owner, newest first (a tenth of them for events of nobody signed in, such as failed sign-ins). */
  auditEvents: number;
}

/** How each kind is named in an answer. */
const KIND_WORDS: Record<QuotaKind, string> = {
  servers: 'servers',
  tools: 'tools (on all servers together)',
  keys: 'API keys that are not revoked',
  accounts: 'accounts',
  tokens: 'management tokens',
};

/** A quota refused a create: the message names the limit, what the owner has, and what to do. */
export class QuotaExceededError extends Error {
  constructor(
    readonly kind: QuotaKind,
    readonly limit: number,
    have: number,
    needed: number,
  ) {
    const more = needed > 1 ? ` and this needs ${needed} more` : '';
    super(`An owner may have at most ${limit} ${KIND_WORDS[kind]} on this service; you have ${have}${more}: delete ${needed > 1 ? 'some' : 'one'} first`);
  }
}

/** A rate limit refused: the seconds to wait and the limit, in words. */
export interface Refusal {
  waitSeconds: number;
  message: string;
}

export class OwnerLimits {
  private readonly writes: WindowCounter;
  private readonly exports: WindowCounter;
  /** Creates of one owner and kind, one after the other in this process: parallel creates cannot all pass the count. */
  private readonly creating = new Map<string, Promise<unknown>>();

  constructor(
    readonly settings: OwnerLimitSettings,
    /** Where the counters are shared (MongoDB); in memory without it. */
    shared?: Store,
  ) {
    this.writes = windowCounter(settings.writesPerMinute, 60, 'owner-writes', shared);
    this.exports = windowCounter(settings.exportsPerMinute, 60, 'owner-exports', shared);
  }

  /** Counts one management write of the owner; the refusal when the minute's are used up. */
  write(ownerId: string): Promise<Refusal | null> {
    return refused(this.writes, ownerId, `Too many changes: an owner may make ${this.settings.writesPerMinute} a minute through the management API`);
  }

  /** Counts one download of the owner; the refusal when the minute's are used up. */
  export(ownerId: string): Promise<Refusal | null> {
    return refused(this.exports, ownerId, `Too many downloads: an owner may download ${this.settings.exportsPerMinute} exports a minute`);
  }

  /**
   * Creates `needed` things of a kind when the owner has room for them: `count` says how many it has, `create`
   * makes them. One owner's creates of a kind run one after the other in this process, so parallel requests
   * cannot all pass the count (instances of a scale-out may each pass one).
   */
  async withRoom<T>(ownerId: string, kind: QuotaKind, needed: number, count: () => Promise<number>, create: () => Promise<T>): Promise<T> {
    const slot = `${kind}\0${ownerId}`;
    const previous = this.creating.get(slot) ?? Promise.resolve();
    const mine = previous
      .catch(() => undefined)
      .then(async () => {
        await this.ensureRoom(kind, needed, count);
        return create();
      });
    this.creating.set(slot, mine);
    try {
      return await mine;
    } finally {
      if (this.creating.get(slot) === mine) this.creating.delete(slot);
    }
  }

  /** Throws QuotaExceededError unless the owner, having `count()` of a kind, may add `needed` more. */
  async ensureRoom(kind: QuotaKind, needed: number, count: () => Promise<number>): Promise<void> {
    if (needed <= 0) return;
    const limit = this.settings.quotas[kind];
    const have = await count();
    if (have + needed > limit) throw new QuotaExceededError(kind, limit, have, needed);
  }
}

async function refused(limiter: WindowCounter, key: string, what: string): Promise<Refusal | null> {
  try {
    await limiter.consume(key);
    return null;
  } catch (err) {
    if (!(err instanceof RateLimiterRes)) throw err;
    const waitSeconds = Math.max(1, Math.ceil(err.msBeforeNext / 1000));
    // A refused request is not counted: it changed nothing.
    await limiter.reward(key, 1);
    return { waitSeconds, message: `${what}; try again in ${waitSeconds} s` };
  }
}
